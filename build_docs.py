#!/usr/bin/env python3
"""Build every derivation document: ``python build_docs.py`` (``--check`` for staleness)."""

import sys

from derive.cli import main

if __name__ == "__main__":
    sys.exit(main(["build", *sys.argv[1:]]))
