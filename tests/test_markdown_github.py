"""docs/*.md as GitHub shows them: rendered with cmarkgfm (GitHub's own cmark-gfm parser).

GitHub turns ``$`…`$`` into math after parsing; everything else must be plain GFM. These
tests catch emphasis nobody meant (``a*b*c``), math that did not become math (a bare ``$``,
``\\langle`` or ``_{`` in the text), math inside link text (GitHub does not render it) and
links that land inside a collapsed ``<details>``.
"""

import html
import re
from pathlib import Path

import pytest

from derive.render.markup import to_gfm

cmarkgfm = pytest.importorskip("cmarkgfm")
from cmarkgfm.cmark import Options  # noqa: E402

DOCS = Path(__file__).parent.parent / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md") if p.name != "spec.md")


def to_html(markdown: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


_MATH = re.compile(r"\$<code>.*?</code>\$", re.S)
_CODE = re.compile(r"<pre[^>]*>.*?</pre>|<code>.*?</code>", re.S)


def problems(page_html: str) -> list[str]:
    """What is wrong with a page as GitHub would show it."""
    out = []
    for m in re.finditer(r"(\w)<em>|</em>(\w)", page_html):
        out.append(f"emphasis inside a word: …{page_html[max(0, m.start() - 40): m.end() + 40]}…")
    for m in re.finditer(r"<a [^>]*>(.*?)</a>", page_html, re.S):
        if "$<code>" in m.group(1):
            out.append(f"math inside link text: {m.group(0)[:120]}")
    text = html.unescape(re.sub(r"<[^>]+>", " ", _CODE.sub(" ", _MATH.sub(" MATH ", page_html))))
    for what, pat in (("a bare $", r"\$"), ("a TeX command", r"\\[A-Za-z]{2,}"), ("raw sub/superscript", r"[_^]\{"),
                      ("bold markers", r"\*\*")):
        for m in re.finditer(pat, text):
            out.append(f"{what} outside math: …{text[max(0, m.start() - 50): m.end() + 50]}…")
    depth = 0
    for m in re.finditer(r"<details>|</details>|<a id=\"([^\"]+)\"", page_html):
        if m.group(0) == "<details>":
            depth += 1
        elif m.group(0) == "</details>":
            depth -= 1
        elif depth:
            out.append(f"link target {m.group(1)!r} is inside a collapsed <details>")
    return out


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_cleanly_on_github(page):
    assert problems(to_html((DOCS / page).read_text())) == []


@pytest.mark.parametrize("markdown, found", [
    ("a*b*c", "emphasis inside a word"),
    ("[see $`x`$](#x)", "math inside link text"),
    ("cost $5", "a bare $"),
    ("the \\langle bracket", "a TeX command"),
    ("M_{i,1}", "raw sub/superscript"),
    ("<details><summary>s</summary>\n<a id=\"x\"></a>\n\nbody\n</details>", "link target 'x'"),
])
def test_problems_are_found(markdown, found):
    assert any(p.startswith(found) for p in problems(to_html(markdown)))


@pytest.mark.parametrize("prose", [
    "A reason with x*2 and *emphasis* and b_Q·b_K and e^{−c}.",
    "Steps:\n\n1. first $x_i$\n2. second with s_star",
    "A [link to √d](#x) and a [link with $\\sqrt{d}$](#y).",
    "[bias_kv with s^*_i ↦ s^*_i − c](#x)",
])
def test_rendered_prose_is_clean_on_github(prose):
    assert problems(to_html(to_gfm(prose))) == []
