r"""Every generated document writes mathematics as math spans, never as pseudo-math in the text.

The committed ``docs/*.md`` (all generated except the hand-written ``spec.md``) are read as GitHub
shows them: fenced blocks, ``$`…`$`` math, code spans, HTML tags and link targets are removed, and
what remains, the running text, must not contain

- a Unicode superscript or subscript, ``·``, ``⟨``, ``⟩``, ``√``, ``∂``, ``Σ`` or ``−`` glued to a
  math span (``q⁰·$`b_K`$``: half a formula in text, half in math), or a function's name glued to
  its math argument (``F($`x_k`$)``);
- two math spans side by side or joined by one relation or operator (``$`M_{i,1}`$ = $`M_{i,2}`$``,
  ``$`\Sigma_t`$ $`M_t`$``): one formula cut in pieces;
- a braced subscript or superscript (``M_{i,1}``, ``e^{−c}``): LaTeX outside math;
- a hyphen used as a minus sign before a digit (``c = -1``, ``[0, -1]``) after a space, bracket,
  ``=``, ``,``, ``;`` or ``:``; a word's hyphen (``non-empty``, ``1e-12``) is not one;
- math inside a link's or an image's text, which GitHub does not render there;
- a Python or SymPy spelling: a one-element tuple ``(1,)``, ``True``, ``False``, ``None``, ``EXPR``;
- in a table cell and in a verdict line (``**Proved:** …``, the reasons of ``derive check``), a
  formula written as text: ``⟨``, ``⟩``, ``√``, ``∂``, ``Σ``, ``∑``, a product dot between two
  symbols (``ulps·eps``) or a one-letter subscript (``k_j``), where a math span belongs.

The PDFs are scanned for the same class in ``tests/test_latex.py`` (``raw_markup``).
"""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
HAND_WRITTEN = {"spec.md"}

_SCRIPT = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ᵀⁿ₀₁₂₃₄₅₆₇₈₉ᵢⱼₖₜ₊₋"
FORBIDDEN = {
    "text glued to a math span": re.compile(rf"[{_SCRIPT}·⟨⟩√−∂Σ]\$`|`\$[{_SCRIPT}·⟨⟩]|[A-Za-z]\(\$`"),
    "a formula split across math spans": re.compile(r"`\$ *(?:[=<>≤≥≠+−·/×→] *)?\$`"),
    "math inside link or image text": re.compile(r"\[[^\]\n]*\$`[^\]\n]*\]\("),
    "a braced subscript or superscript outside math": re.compile(r"[_^]\{"),
    "a hyphen as a minus sign": re.compile(r"(?:^|(?<=[\s(\[=,;:]))-(?=\d)"),
    "a Python or SymPy spelling": re.compile(r"\(\d+,\)|\b(?:True|False|None|EXPR)\b"),
    "a formula as text in a table cell or verdict": re.compile(r"[⟨⟩√∂Σ∑]|\S·\S|(?<![\w\\])[A-Za-z]_[A-Za-z0-9]\b"),
}
# where the last rule applies: table rows and the verdict lines of check reports
_CELL_OR_VERDICT = re.compile(r"^\s*\||^\*\*(?:Proved|Refuted|Undecided):\*\*")
_LINK = re.compile(r"!?\[[^\]\n]*\]\([^)\s]*\)")
_ONLY_THERE = {"a formula as text in a table cell or verdict"}
# Known and pinned, not yet rewritten: (document, rule, line); none left.
KNOWN: set = set()
KNOWN_RULES: set = set()

_ON_RAW = {"text glued to a math span", "a formula split across math spans", "math inside link or image text"}
_FENCE = re.compile(r"^( *)(```|~~~).*?^\1\2[ \t]*$", re.S | re.M)
_REMOVED = re.compile(r"\$`.*?`\$|``.+?``|`[^`\n]*`|<[^>\n]*>|\]\([^)\s]*\)")


def prose_lines(markdown: str) -> list[str]:
    """The running text of a Markdown document, line by line (math, code and markup removed)."""
    text = _FENCE.sub("", markdown)
    return [_REMOVED.sub(" ", line) for line in text.splitlines()]


def pseudo_math(markdown: str) -> list[tuple[str, str]]:
    """(what, line) for every forbidden spelling in the running text of ``markdown``."""
    found = []
    for raw, line in zip(_FENCE.sub("", markdown).splitlines(), prose_lines(markdown)):
        for what, pat in FORBIDDEN.items():
            if what in _ONLY_THERE:  # link text shows no math on GitHub: it is read aloud, by design
                if _CELL_OR_VERDICT.match(raw) and pat.search(_REMOVED.sub(" ", _LINK.sub(" ", raw))):
                    found.append((what, line.strip()))
                continue
            if pat.search(raw if what in _ON_RAW else line):
                found.append((what, line.strip()))
    return found


@pytest.mark.parametrize("text, what", [
    ("| q⁰·$`b_K`$ | x |", "text glued to a math span"),
    ("shifts by ⟨$`q_i`$, $`b_K`$⟩", "text glued to a math span"),
    ("a sink logit −$`c_i`$", "text glued to a math span"),
    ("| ∂$`p_j/\\partial x_j`$ > 0 |", "text glued to a math span"),
    ("F($`x_k`$) → 0", "text glued to a math span"),
    ("($`M_{i,1}`$ = $`M_{i,2}`$ = 1)", "a formula split across math spans"),
    ("$`\\Sigma_t`$ $`M_t`$ counts", "a formula split across math spans"),
    ("allowed keys (M_{i,1} = 1)", "a braced subscript or superscript outside math"),
    ("the 1 becomes e^{−c}", "a braced subscript or superscript outside math"),
    ("Counterexample: d = 2, c = -1.", "a hyphen as a minus sign"),
    ("x = [[2, 1], [0, -1]]", "a hyphen as a minus sign"),
    ("shape (1,) of the row", "a Python or SymPy spelling"),
    ("![Weight along $`x = -t`$ (4 keys)](a.svg)", "math inside link or image text"),
    ("the limits are [$`1/N_i`$](normalizers.md#x)", "math inside link or image text"),
    ("the claim is True", "a Python or SymPy spelling"),
    ("(EXPR at key j_1)", "a Python or SymPy spelling"),
    ("| a | ✅ proved | the score changes by a key-dependent term: ⟨Δb_q, k_j⟩/√d |",
     "a formula as text in a table cell or verdict"),
    ("**Proved:** the score changes by a key-dependent term: j·Δm", "a formula as text in a table cell or verdict"),
    ("**Refuted:** the key-dependent part k_j remains", "a formula as text in a table cell or verdict"),
    ("| float32 | ulps·eps |", "a formula as text in a table cell or verdict"),
])
def test_pseudo_math_is_found(text, what):
    assert what in {w for w, _ in pseudo_math(text)}


@pytest.mark.parametrize("text", [
    "the factor $`e^{c_i}`$ and $`M_{i,1} = M_{i,2} = 1`$, a sink logit $`-c_i`$",
    "keys $`j`$ and $`k`$, with $`d = 1`$; $`n = 2`$, the weight $`p_j`$ (of key $`j`$)",
    "a non-empty set, tolerance 1e-12, softmax₁ and step 2-3",
    "```math\ne^{-c} = M_{i,1}\n```",
    "   ```json\n   {\"x\": [-1, 2], \"ok\": true}\n   ```",
    "run `python build_docs.py --no-pdf` with `c = -1`",
    "- a list item and <sub>✔ proved: expanding ⟨·,·⟩ by bilinearity</sub>",
    "[1/N_i](normalizers.md#nrm-x_{1}) and ![x = −t·1](a.svg) next to $`x`$",
    "| a | ✅ proved | the score changes by a key-dependent term: $`\\frac{\\langle \\Delta b_{q}, k_{j} \\rangle}{\\sqrt{d}}`$ |",
    "**Proved:** the weights do not involve $`b_v`$ · cross-checked, `zero_token`",
    "the score is ⟨q_i, k_j⟩/√d in running text outside tables",
    "| limit | [✅ 1/N_i](#nrm-x) | [✅ min(1, max(0, (ζ − γ + γ N_i)/N_i))](#nrm-y) |",
])
def test_clean_prose_passes(text):
    assert pseudo_math(text) == []


@pytest.mark.parametrize("path", sorted(p for p in DOCS.glob("*.md") if p.name not in HAND_WRITTEN), ids=lambda p: p.name)
def test_documents_write_math_as_math(path):
    found = [(w, line) for w, line in pseudo_math(path.read_text(encoding="utf-8"))
             if (path.name, w, line) not in KNOWN and (path.name, w) not in KNOWN_RULES]
    assert found == [], f"{path.name}: pseudo-math in the running text:\n" + "\n".join(f"{w}: {ln}" for w, ln in found[:20])


def test_the_impl_rules_are_math_in_documents_and_read_aloud_on_the_terminal():
    from derive.impl.forms.kernel import KERNEL_TOLERANCE_RULE
    from derive.impl.exact.masked import rules
    from derive.impl.report.row import TOLERANCE_RULE
    from derive.render.markup import plain_math, to_gfm

    aloud = plain_math(TOLERANCE_RULE)
    assert aloud.startswith("|y − p| ≤ abs + ulps · eps · (1 + κ) · |p|, where p is the exact weight")
    assert "κ = 2 max_j |x_j| + max_a |a| + (n − 1)" in aloud  # a over the parameters (θ is not on the notation sheet)
    assert plain_math(KERNEL_TOLERANCE_RULE).startswith("|y − p| ≤ abs + ulps · eps · (1 + κ) · m per entry")
    RULES = rules()
    assert plain_math(RULES["softmax"].says) == ("no value (the formula has none with no allowed key: every sum "
                                                 "over the keys is 0 and n = 0)")
    for rule in (TOLERANCE_RULE, KERNEL_TOLERANCE_RULE, *(r.says for r in RULES.values())):
        assert not any(c in plain_math(rule) for c in "$\\{}")
        assert pseudo_math(to_gfm(rule, inline=True)) == []
