"""One notation: the documents' formulas use the sheet's spellings (derive/render/notation.py),
never one it retired, and the sheet is printed once (docs/notation.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sympy as sp

from derive.render.latex import tex
from derive.render.notation import RETIRED, SHEET, SYMBOLS

DOCS = Path(__file__).resolve().parent.parent / "docs"
GENERATED = sorted(p for p in DOCS.glob("*.md") if p.name not in ("spec.md", "notation.md"))


def _math(md: str) -> list[str]:
    return re.findall(r"\$`([^`]*)`\$", md) + re.findall(r"```math\n(.*?)```", md, flags=re.S)


@pytest.mark.parametrize("path", GENERATED, ids=lambda p: p.name)
def test_no_retired_spelling(path):
    found = sorted({old for m in _math(path.read_text(encoding="utf-8")) for old in RETIRED
                    if re.search(re.escape(old) + r"(?![A-Za-z])", m)})
    assert found == [], f"{path.name} writes {found}; the sheet writes {[RETIRED[f] for f in found]}"


def test_the_printer_reads_the_sheet():
    for name, latex in SYMBOLS.items():
        assert tex(sp.Symbol(name)) == latex
    assert tex(sp.Heaviside(sp.Symbol("y"))) == r"H\left(y\right)"


def test_the_sheet_is_printed_once_and_linked():
    sheet = (DOCS / "notation.md").read_text(encoding="utf-8")
    for s in SHEET:
        assert f"$`{s.latex}`$" in sheet, s.key
    for name in ("qk-bias.md", "softmax-one.md", "kernels.md"):
        assert "(notation.md#notation)" in (DOCS / name).read_text(encoding="utf-8"), name


def test_a_retired_spelling_is_caught():
    md = "a score $`s_{ij}`$ and $`x_{i,j}`$"
    assert [old for m in _math(md) for old in RETIRED if re.search(re.escape(old) + r"(?![A-Za-z])", m)] == ["s_{ij}"]
