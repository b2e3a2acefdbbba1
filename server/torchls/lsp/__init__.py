"""The LSP layer: the only package that imports pygls and lsprotocol. Handlers convert and delegate."""
