"""Readable in a sitting: the four derivation documents keep their main text within LIMIT words
(``benchmarks/doc_words.py`` defines main text and word), reference material in the appendix."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import doc_words  # noqa: E402


@pytest.mark.parametrize("name", doc_words.HELD)
def test_main_text_within_the_limit(name):
    md = (ROOT / "docs" / name).read_text(encoding="utf-8")
    assert doc_words.main_words(md) <= doc_words.LIMIT, f"{name}: {doc_words.main_words(md)} words of main text"


@pytest.mark.parametrize("name", doc_words.HELD)
def test_results_first_and_the_appendix_after_the_references(name):
    md = (ROOT / "docs" / name).read_text(encoding="utf-8")
    sections = [ln for ln in md.splitlines() if ln.startswith("## ")]
    assert sections[0] == "## Results", sections[:3]
    refs, appendix = md.find("## References"), md.find('<a id="appendix"></a>')
    assert 0 < refs < appendix and "## Appendix" in md[appendix:]


def test_the_measure_counts_what_it_says():
    md = ("# T\n\nOne two $`x + y`$ [three](other.md#a).\n\n```math\na + b = c\n```\n\n<a id=\"z\"></a>\n"
          "## References\n\n- not counted\n")
    assert doc_words.main_words(md) == 5  # T, One, two, the formula, three
    assert doc_words.words(md) == 8  # … and References, not, counted
