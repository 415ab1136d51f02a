"""Rendering: golden files for a demo document, prose conversion, escaping, determinism."""

from pathlib import Path

import pytest
import sympy as sp

from derive.build import load_document
from derive.render import render_document
from derive.render.prose import md_table_math, to_latex, to_markdown

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"


@pytest.fixture(scope="module")
def demo():
    return render_document(load_document(HERE / "data" / "demo.py"))


@pytest.mark.parametrize("name", ["demo.md", "demo.json"])
def test_demo_matches_golden(demo, name):
    golden = GOLDEN / name
    assert demo.docs[name].decode() == golden.read_text(), f"update {golden} if the change is intended"


def test_demo_tex_matches_golden(demo):
    assert demo.build["demo.tex"].decode() == (GOLDEN / "demo.tex").read_text()


def test_rendering_is_deterministic(demo):
    again = render_document(load_document(HERE / "data" / "demo.py"))
    assert again.docs == demo.docs and again.build == demo.build


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a $x_i$ b", "a $`x_i`$ b"),
        ("two $a$ and $b$", "two $`a`$ and $`b`$"),
        ("no math", "no math"),
        ("a \\* b is a product, b_Q·b_K too", r"a \* b is a product, $`b_Q\cdot b_K`$ too"),
        ("a*b*c", "a*b*c"),  # CommonMark: intraword * is emphasis; the Markdown keeps it
        ("*bias-free* **row**", "*bias-free* **row**"),
        ("1. one\n2. two", "1. one\n2. two"),
        ("[$\\sqrt{d}$ scaling](#s)", "[√d scaling](#s)"),
    ],
)
def test_markdown_inline_math(text, expected):
    assert to_markdown(text) == expected


def test_pipe_in_table_math_is_escaped():
    assert md_table_math(r"|x|") == r"$`\vert x\vert `$"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("50% & #1 x", r"50\% \& \#1 x"),
        ("*bias-free* and a literal \\* star", r"\emph{bias-free} and a literal * star"),
        ("1. first step\n2. second step", "\\begin{enumerate}\n\\item first step\n\\item second step\n\\end{enumerate}"),
        ("the 1 becomes e^{−c} for M_{i,1}", r"the 1 becomes $e^{-c}$ for $M_{i,1}$"),
        ("∂p⁽¹⁾_j/∂x_j", r"$\partial$$p^{(1)}_j/\partial x_j$"),
        ("s_star = 1 in tests/test_kernels.py", r"\texttt{s\_star} = 1 in \texttt{tests/test\_kernels.py}"),
        ("a − b", "a $-$ b"),
        ("[see](#sec-2) and [other](other.md#x)", r"\hyperlink{sec-2}{see} and \href{other.pdf\#x}{other}"),
        ("math $a_b$ stays", "math $a_b$ stays"),
        ("**bold** and `code`", r"\textbf{bold} and \texttt{code}"),
        ("k⁰₁ → √d", r"k$^{0}_{1}$ $\to$ $\sqrt{d}$"),
    ],
)
def test_latex_prose(text, expected):
    assert to_latex(text) == expected


def test_pdf_figures_embed_truetype_not_type3():
    from derive.render.figures import render_figure

    pdf = render_figure(lambda ax: (ax.plot([0, 1], [1, 2]), ax.set_title("weights")), "pdf")
    assert b"/Type3" not in pdf and b"/FontFile2" in pdf


def test_svg_clip_ids_do_not_depend_on_numpy():
    """matplotlib hashes str() of numpy floats into clip-path ids; numpy 1 and 2 print them differently."""
    import re

    from derive.render.figures import render_figure

    svg = render_figure(lambda ax: ax.plot([0, 1], [1, 2]), "svg")
    assert re.search(rb'id="p[0-9a-f]{10}"', svg) is None
    refs, ids = set(re.findall(rb"url\(#([^)]+)\)", svg)), set(re.findall(rb'id="([^"]+)"', svg))
    assert refs and refs <= ids


def test_a_figure_drawn_once_for_both_formats_has_the_bytes_of_each_drawn_alone():
    """The build draws a figure once and saves SVG and PDF from it; that must not change a byte."""
    from derive.render.figures import render_figure, render_figures

    def draw(ax):
        ax.plot([0, 1, 2], [1, 2, 0], label="p")
        ax.set_title("weights")
        ax.legend()

    both = render_figures(draw, ("svg", "pdf"))
    assert both == {"svg": render_figure(draw, "svg"), "pdf": render_figure(draw, "pdf")}


@pytest.mark.parametrize(("expr", "tex"), [
    (sp.Symbol("alibi_slopes_h"), r"\mathrm{alibi\_slopes}_{h}"),  # a traced per-head table
    (sp.Symbol("alibi_slopes_h'"), r"\mathrm{alibi\_slopes}_{h}'"),
    (sp.Symbol("doc_ids"), r"\mathrm{doc\_ids}"),
    (sp.Function("rel_bias")(sp.Symbol("i") - sp.Symbol("j")), r"\operatorname{rel\_bias}{\left(i - j \right)}"),
    (sp.Symbol("b_K"), "b_{K}"),  # one letter, or a Greek one, keeps SymPy's own subscripts
    (sp.Symbol("theta_h"), r"\theta_{h}"),
    (sp.Symbol("k_star"), "k_{star}"),
])
def test_multi_word_identifiers_print_upright_with_their_underscores(expr, tex):
    from derive.claims.show import latex

    assert latex(expr) == tex


def test_figures_use_the_fonts_matplotlib_ships_not_a_system_copy():
    """A system DejaVuSans.ttf of another version numbers its glyphs differently (the SVG names
    glyphs by index: U+2212 is 0xc9c in matplotlib's copy, 0xc9d in Debian's), and which copy
    the font cache offers first depends on the machine."""
    import matplotlib
    from matplotlib import font_manager

    from derive.render.figures import render_figure

    render_figure(lambda ax: ax.plot([0, 1], [0, -1]), "svg")
    found = Path(font_manager.findfont("DejaVu Sans")).resolve()
    assert found.parent == Path(matplotlib.get_data_path(), "fonts", "ttf").resolve()
