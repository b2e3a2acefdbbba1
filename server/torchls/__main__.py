"""``python -m torchls``: the same command line as the ``torchls`` script."""

from torchls.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
