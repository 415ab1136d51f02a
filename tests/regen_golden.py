#!/usr/bin/env python3
"""Rewrite tests/golden/ (the demo document and the check reports); review the diff like code."""

import subprocess
import sys
from pathlib import Path

from derive.build import load_document
from derive.render import render_document

HERE = Path(__file__).parent

if __name__ == "__main__":
    rendered = render_document(load_document(HERE / "data" / "demo.py"))
    for name in ("demo.md", "demo.json"):
        (HERE / "golden" / name).write_bytes(rendered.docs[name])
    (HERE / "golden" / "demo.tex").write_bytes(rendered.build["demo.tex"])
    for fmt in ("md", "json", "github", "sarif"):
        report = subprocess.run([sys.executable, "-m", "derive", "check", "tests/specs/golden.toml", "--format", fmt],
                                cwd=HERE.parent, capture_output=True, check=False).stdout
        (HERE / "golden" / f"check_report.{fmt}").write_bytes(report)
