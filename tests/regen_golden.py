#!/usr/bin/env python3
"""Rewrite tests/golden/ from tests/data/demo.py; review the diff like code."""

from pathlib import Path

from derive.build import load_document
from derive.render import render_document

HERE = Path(__file__).parent

if __name__ == "__main__":
    rendered = render_document(load_document(HERE / "data" / "demo.py"))
    for name in ("demo.md", "demo.json"):
        (HERE / "golden" / name).write_bytes(rendered.docs[name])
    (HERE / "golden" / "demo.tex").write_bytes(rendered.build["demo.tex"])
