"""Prose markup for both targets: ``$…$`` inline math, ``**bold**``, `` `code` ``.

Markdown gets ``$`…`$`` (the form GitHub and GitLab both render, safe with ``_`` and
``\\\\``); LaTeX gets ``$…$`` with the text around it escaped.
"""

from __future__ import annotations

import re

__all__ = ["escape_latex_text", "md_math", "md_table_math", "to_latex", "to_markdown"]

_MATH = re.compile(r"\$([^$]+)\$")
_TEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "#": r"\#", "_": r"\_", "{": r"\{",
    "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "$": r"\$",
}
_TEX_UNICODE = {
    "→": r"$\to$", "−": "-", "·": r"$\cdot$", "√": r"$\sqrt{\ }$", "≠": r"$\neq$", "≤": r"$\leq$",
    "≥": r"$\geq$", "∞": r"$\infty$", "—": "---", "–": "--", "…": r"\dots{}", "≡": r"$\equiv$",
    "‖": r"$\|$", "⟨": r"$\langle$", "⟩": r"$\rangle$", "×": r"$\times$", "“": "``", "”": "''",
    "’": "'", "✅": r"$\checkmark$", "❌": r"$\times$", "❓": "?", "⟂": r"$\perp$",
    "γ": r"$\gamma$", "δ": r"$\delta$", "ζ": r"$\zeta$", "σ": r"$\sigma$", "Σ": r"$\Sigma$",
    "∂": r"$\partial$", "≈": r"$\approx$", "±": r"$\pm$", "∈": r"$\in$",
    "τ": r"$\tau$", "κ": r"$\kappa$", "ν": r"$\nu$", "ρ": r"$\rho$", "β": r"$\beta$", "ε": r"$\varepsilon$",
    "∘": r"$\circ$", "∉": r"$\notin$", "ℓ": r"$\ell$", "λ": r"$\lambda$", "⇒": r"$\Rightarrow$",
    "≢": r"$\not\equiv$", "⌈": r"$\lceil$", "⌉": r"$\rceil$", "∑": r"$\Sigma$", "′": "'",
    "←": r"$\leftarrow$", "ᵀ": r"$^{T}$",
}
_TEX_UNICODE.update({c: f"$^{{{k}}}$" for c, k in zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾", "0123456789+-()")})
_TEX_UNICODE.update({c: f"$_{{{k}}}$" for c, k in zip("₀₁₂₃₄₅₆₇₈₉ᵢⱼₖ", "0123456789ijk")})


def md_math(latex: str) -> str:
    return f"$`{latex}`$"


def md_table_math(latex: str) -> str:
    """Inline math inside a Markdown table cell: a bare ``|`` would end the cell."""
    return md_math(latex.replace("|", r"\vert "))


def to_markdown(text: str) -> str:
    return _MATH.sub(lambda m: md_math(m.group(1)), text)


def escape_latex_text(text: str) -> str:
    out = "".join(_TEX_SPECIAL.get(c, c) for c in text)
    return "".join(_TEX_UNICODE.get(c, c) for c in out)


_LINK = re.compile(r"\[([^\]]+)\]\(([A-Za-z0-9_.-]*)#([A-Za-z0-9_-]+)\)")


def to_latex(text: str) -> str:
    """LaTeX for prose; ``[text](#anchor)`` becomes a hyperlink to a section's anchor, and a
    link into another document (``[text](other.md#anchor)``) keeps its text only."""
    parts, pos = [], 0
    for m in _LINK.finditer(text):
        parts.append(_plain_to_latex(text[pos:m.start()]))
        label = _plain_to_latex(m.group(1))
        parts.append(rf"\hyperlink{{{m.group(3)}}}{{{label}}}" if not m.group(2) else label)
        pos = m.end()
    parts.append(_plain_to_latex(text[pos:]))
    return "".join(parts)


def _plain_to_latex(text: str) -> str:
    parts, pos = [], 0
    for m in _MATH.finditer(text):
        parts.append(_text_latex(text[pos:m.start()]))
        parts.append(f"${m.group(1)}$")
        pos = m.end()
    parts.append(_text_latex(text[pos:]))
    return "".join(parts)


def _text_latex(text: str) -> str:
    text = escape_latex_text(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"\\textbf{\1}", text)
    return re.sub(r"`(.+?)`", r"\\texttt{\1}", text)
