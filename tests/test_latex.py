"""The LaTeX output compiles with pdflatex (required in CI)."""

from pathlib import Path

import pytest
from conftest import require_tool

from derive.build import build, compile_pdf

ROOT = Path(__file__).parent.parent


@pytest.mark.latex
def test_qk_bias_compiles_to_pdf(tmp_path):
    require_tool("pdflatex")
    build([str(ROOT / "proofs" / "qk_bias.py")], docs=tmp_path / "docs", out=tmp_path / "build", pdf=False,
          log=lambda m: None)
    pdf = compile_pdf(tmp_path / "build" / "qk-bias.tex")
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert pdf.stat().st_size > 20_000
