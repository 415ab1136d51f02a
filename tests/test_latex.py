"""The PDFs: they compile, use Latin Modern (no Type 3 fonts), fit the page, and show no raw markup.

Each check is a function of its own so it can be pinned on a small, hand-made input too
(an overfull log line, a pdffonts table, a page of text with a leaked ``**``).
"""

import re
import subprocess
from pathlib import Path

import pytest
from conftest import require_tool

from derive.build import build

ROOT = Path(__file__).parent.parent

_BOX = re.compile(r"^(?:Overfull \\[hv]box \([0-9.]+pt too (?:wide|high)\)|Underfull \\[hv]box \(badness \d+\))", re.M)


def bad_boxes(log: str) -> list[str]:
    """The overfull- and underfull-box warnings of a pdflatex log: a line pushed into the margin,
    or stretched thin (TeX reports a box whose badness passes \\hbadness, 1000)."""
    return [m.group(0) for m in _BOX.finditer(log)]


def type3_fonts(pdffonts_output: str) -> list[str]:
    """Rows of ``pdffonts`` output whose font type is Type 3 (bitmap-like, blurry on screen)."""
    return [ln for ln in pdffonts_output.splitlines()[2:] if re.search(r"\bType 3\b", ln)]


# Markup that must never reach the page: Markdown, TeX and SymPy/Python spellings.
_RAW = {
    "bold markers": re.compile(r"\*\*"),
    "emphasis markers": re.compile(r"(?<![\w*])\*[A-Za-z][^*\n]*\*(?![\w*])"),
    "a TeX command": re.compile(r"\\[A-Za-z]+"),
    "a dollar sign": re.compile(r"\$"),
    "a braced subscript or superscript": re.compile(r"[_^]\{"),
    "a Python boolean": re.compile(r"\b(?:True|False)\b"),
    "a Python tuple": re.compile(r"\(\d+,\)"),
    "a caret": re.compile(r"\w\^\w|ˆ"),
    # math typesets a minus as U+2212; an ASCII hyphen before a digit is text where math was meant
    "a hyphen as a minus sign": re.compile(r"(?:^|(?<=[\s(\[=,;:]))-(?=\d)"),
}


def raw_markup(text: str) -> list[str]:
    """Lines of PDF text that show raw markup, each with what was found."""
    found = []
    for line in text.splitlines():
        for what, pat in _RAW.items():
            if pat.search(line):
                found.append(f"{what}: {line.strip()}")
    return found


@pytest.mark.parametrize("log, expected", [
    ("Overfull \\hbox (0.80116pt too wide) in paragraph at lines 66--78\n", ["Overfull \\hbox (0.80116pt too wide)"]),
    ("Overfull \\hbox (12.5pt too wide) in paragraph at lines 1--2\n", ["Overfull \\hbox (12.5pt too wide)"]),
    ("Overfull \\vbox (3.0pt too high) has occurred\n", ["Overfull \\vbox (3.0pt too high)"]),
    ("Underfull \\hbox (badness 10000) in paragraph\n", ["Underfull \\hbox (badness 10000)"]),
    ("Underfull \\vbox (badness 1231) has occurred\n", ["Underfull \\vbox (badness 1231)"]),
    ("LaTeX Font Info: Overfull is a word here\n", []),
])
def test_bad_boxes(log, expected):
    assert bad_boxes(log) == expected


def test_type3_fonts():
    table = ("name type encoding emb sub uni object ID\n---- ----\n"
             "[none]                               Type 3            Custom           yes no  no       8  0\n"
             "KWXQTX+LMRoman10-Regular             Type 1            Builtin          yes yes yes     11  0\n")
    assert len(type3_fonts(table)) == 1 and type3_fonts(table)[0].startswith("[none]")


@pytest.mark.parametrize("line, what", [
    ("the **bold** leaked", "bold markers"),
    ("a *bias-free* shift", "emphasis markers"),
    ("an empty \\sqrt{} before d", "a TeX command"),
    ("cost $x$", "a dollar sign"),
    ("M_{i,1} = 1", "a braced subscript or superscript"),
    ("e^{−c}", "a braced subscript or superscript"),
    ("the claim is True", "a Python boolean"),
    ("shape (1,)", "a Python tuple"),
    ("kˆ0", "a caret"),
    ("Counterexample: d = 2, c = -1", "a hyphen as a minus sign"),
    ("x = [[2, 1], [0, -1]]", "a hyphen as a minus sign"),
])
def test_raw_markup_is_found(line, what):
    assert any(f.startswith(what) for f in raw_markup(line))


def test_clean_text_has_no_raw_markup():
    assert raw_markup("Row i has a query qi = xi WQ + bQ; |a − b| ≤ 10−12, p ∗ q, 3 × 4, c = −1.") == []
    assert raw_markup("a non-empty set, tolerance 1e-12, keys 1-3") == []


def _check_pdf(pdf: Path) -> str:
    log = pdf.with_suffix(".log").read_text(errors="replace")
    assert bad_boxes(log) == [], f"{pdf.name}: lines wider than the page or stretched thin"
    fonts = subprocess.run([require_tool("pdffonts"), str(pdf)], capture_output=True, text=True, check=True).stdout
    assert type3_fonts(fonts) == [], f"{pdf.name}: Type 3 fonts (T1 without lmodern, or a figure's fonts)"
    assert "LMRoman" in fonts, f"{pdf.name}: not set in Latin Modern"
    text = subprocess.run([require_tool("pdftotext"), "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert raw_markup(text) == [], f"{pdf.name}: raw markup on the page"
    return text


@pytest.mark.slow
@pytest.mark.latex
def test_qk_bias_compiles_to_a_clean_pdf(tmp_path):
    require_tool("pdflatex")
    report = build([str(ROOT / "proofs" / "qk_bias.py")], docs=tmp_path / "docs", out=tmp_path / "build",
                   log=lambda m: None)  # a PDF build: the figures' PDFs are drawn for it
    assert report.pdfs == 1
    pdf = tmp_path / "build" / "qk-bias.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert pdf.stat().st_size > 20_000
    _check_pdf(pdf)


@pytest.mark.latex
@pytest.mark.slow
@pytest.mark.parametrize("module", ["softmax_one", "kernels", "normalizers", "atlas", "notation"])  # impl-check shows Python code
def test_every_pdf_is_clean(tmp_path, module):
    require_tool("pdflatex")
    report = build([str(ROOT / "proofs" / f"{module}.py")], docs=tmp_path / "docs", out=tmp_path / "build",
                   log=lambda m: None)
    assert report.pdfs == 1
    (pdf,) = [p for p in (tmp_path / "build").glob("*.pdf") if p.with_suffix(".tex").exists()]
    text = _check_pdf(pdf)
    if module == "kernels":  # a command as typed: two hyphens, never an en dash (a TeX ligature)
        assert "derive impl --form online" in text and "impl –form" not in text


# -- derive check --format tex: the same markup pipeline as the documents -----------------

SPECIALS_SPEC = '''name = "50% of *bias* & $cost$ #1: s_star 𝕄 é"
score = "dot(q + b_q, k + b_k) / sqrt(d)"
[symbols]
b_q = "vector"
b_k = "vector"
[claims]
"k_bias*free$&%#" = "invariant(b_k)"
q_bias_matters = "depends(b_q)"
'''


@pytest.fixture(scope="module")
def specials_tex(tmp_path_factory):
    from derive.cli import main

    d = tmp_path_factory.mktemp("specials")
    (d / "s.toml").write_text(SPECIALS_SPEC, encoding="utf-8")
    assert main(["check", str(d / "s.toml"), "--format", "tex", "--output", str(d / "s.tex")]) == 0
    return d / "s.tex"


def test_check_tex_escapes_names_and_reasons(specials_tex):
    tex = specials_tex.read_text(encoding="utf-8")
    assert r"\section*{50\% of *bias* \& \$cost\$ \#1: s\_star $\mathbb{M}$ é}" in tex
    assert r"\texttt{k\_\allowbreak{}bias*free\$\&\%\#} & \texttt{invariant(b\_k)} & proved \\" in tex
    assert r"\subsection*{k\_bias*free\$\&\%\#: proved}" in tex
    assert "\\texttt{dot(q + b\\_q, k + b\\_k) / sqrt(d)}" in tex
    # no character pdflatex cannot set: Unicode symbols are math, the rest is ASCII or Latin
    assert all(ord(c) < 128 or c == "é" for c in tex)


@pytest.mark.latex
def test_check_tex_with_specials_compiles(specials_tex):
    proc = subprocess.run([require_tool("pdflatex"), "-interaction=nonstopmode", "-halt-on-error", specials_tex.name],
                          cwd=specials_tex.parent, capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]
    text = subprocess.run([require_tool("pdftotext"), specials_tex.with_suffix(".pdf").name, "-"],
                          cwd=specials_tex.parent, capture_output=True, text=True, check=True).stdout
    assert "50% of *bias* & $cost$ #1: s_star M é" in text
    assert "k_bias*free$&%#: proved" in text
