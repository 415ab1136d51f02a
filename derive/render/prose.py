"""Prose for both targets, one pipeline: references are resolved when a block is added
(:meth:`derive.document.api.Document.resolve`), then the text is parsed as Markdown
(:mod:`derive.render.markup`) and printed as GitHub Markdown or LaTeX.

Markdown gets ``$`…`$`` math (the form GitHub and GitLab both render, safe with ``_`` and
``\\\\``); LaTeX gets ``$…$`` with the text around it escaped.
"""

from __future__ import annotations

from derive.render.markup import tex_text, to_gfm, to_tex

__all__ = ["escape_latex_text", "md_math", "md_table_math", "to_latex", "to_markdown"]


def md_math(latex: str) -> str:
    return f"$`{latex}`$"


def md_table_math(latex: str) -> str:
    """Inline math inside a Markdown table cell: a bare ``|`` would end the cell."""
    return md_math(latex.replace("|", r"\vert "))


def to_markdown(text: str, *, inline: bool = False) -> str:
    """GitHub Markdown for prose (paragraphs and lists; ``inline`` for a cell or a title)."""
    return to_gfm(text, inline=inline)


def escape_latex_text(text: str) -> str:
    """Plain text with no markup as LaTeX (specials escaped, Unicode symbols as math)."""
    return tex_text(text)


def to_latex(text: str, *, inline: bool = False, cell: bool = False) -> str:
    """LaTeX for prose; ``[text](#anchor)`` becomes a hyperlink to a section's anchor, and a
    link into another document (``[text](other.md#anchor)``) keeps its text only."""
    return to_tex(text, inline=inline, cell=cell)
