"""torchls: a language server that brings a Chinese PyTorch API handbook into the editor."""

__version__ = "0.1.0"
