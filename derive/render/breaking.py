"""Long displays broken into lines for LaTeX, never scaled down.

A display is offered to TeX in three forms (``\\fitmath{one}{two}{many}`` in
``templates/document.tex.j2``), and TeX sets the first that fits the line:

* ``one``: as written;
* ``two``: the left side on one line, the relation and the right side on the next;
* ``many``: as ``two``, with the right side (and a long left side) broken before each of its
  top-level ``+`` and ``-``.

The split is made on the LaTeX text at brace depth 0 outside ``\\left … \\right``, so a
fraction, a sum's body or a bracket is never cut.
"""

from __future__ import annotations

import re

__all__ = ["cell_args", "fit_args", "linear", "split_top"]

_RELATIONS = (" = ", " \\neq ", " \\le ", " \\ge ", " < ", " > ")
_TERMS = (" + ", " - ")
_LEFT, _RIGHT = re.compile(r"\\left\b"), re.compile(r"\\right\b")


def _factors(latex: str) -> list[str]:
    """``latex`` cut between top-level factors that end in a bracket: ``\\left(a\\right) \\theta(b)``."""
    pieces = split_top(latex, (" ",))
    out: list[str] = []
    for _, piece in pieces:
        if out and out[-1].endswith(("\\right)", "\\right]")) and not piece.startswith(("+", "-", "=")):
            out.append(piece)
        elif out:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def split_top(latex: str, seps: tuple[str, ...]) -> list[tuple[str, str]]:
    """[(separator before the piece, piece), …] of ``latex`` cut at top-level ``seps``;
    the first piece has the separator ''."""
    out, depth, start, sep, k = [], 0, 0, "", 0
    while k < len(latex):
        ch = latex[k]
        if ch == "\\" and _LEFT.match(latex, k):
            depth += 1
            k += 5
            continue
        if ch == "\\" and _RIGHT.match(latex, k):
            depth -= 1
            k += 6
            continue
        if ch == "\\" and k + 1 < len(latex):  # an escaped character such as \{ or \}
            k += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0 and k > 0:
            hit = next((s for s in seps if latex.startswith(s, k)), None)
            if hit is not None and latex[start:k].strip():
                out.append((sep, latex[start:k].strip()))
                sep, start = hit.strip(), k + len(hit)
                k += len(hit)
                continue
        k += 1
    out.append((sep, latex[start:].strip()))
    return out


PACK = 90  # characters of LaTeX per line when terms are packed: an estimate, TeX measures the result


def _pack(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Consecutive terms joined while their text stays within :data:`PACK` characters."""
    out: list[tuple[str, str]] = []
    for sep, piece in pieces:
        if out and len(out[-1][1]) + len(piece) + 3 <= PACK:
            out[-1] = (out[-1][0], f"{out[-1][1]} {sep} {piece}")
        else:
            out.append((sep, piece))
    return out


def _lines(pieces: list[tuple[str, str]], indent: str) -> list[str]:
    return [f"&{indent}{{}}{sep} {piece}" if sep else f"&{indent}{piece}" for sep, piece in _pack(pieces)]


def fit_args(latex: str) -> str:
    """``{one}{two}{many}``: the arguments of ``\\fitmath`` for the display ``latex``."""
    one = latex.strip()
    if one.startswith("\\begin{aligned}"):
        return "{" + one + "}{" + one + "}{" + one + "}"  # already in lines (chains, definitions)
    sides = split_top(one, _RELATIONS)
    if len(sides) < 2:
        terms = split_top(one, _TERMS)
        many = one if len(terms) < 2 else r"\begin{aligned}" + " \\\\ ".join(_lines(terms, "")) + r"\end{aligned}"
        return "{" + one + "}{" + one + "}{" + many + "}"
    first, rest = sides[0][1], sides[1:]
    two = (r"\begin{aligned}&" + first + " \\\\ "
           + " \\\\ ".join(f"&\\quad{{}}{sep} {piece}" for sep, piece in rest) + r"\end{aligned}")
    lines = _lines(split_top(first, _TERMS), "")
    for sep, piece in rest:
        terms = _pack(split_top(piece, _TERMS))
        if len(terms) == 1 and len(factors := _factors(piece)) > 1:  # a product: one factor a line
            lines.append(f"&\\quad{{}}{sep} {factors[0]}")
            lines += [f"&\\qquad{{}}\\cdot {f}" for f in factors[1:]]
            continue
        lines.append(f"&\\quad{{}}{sep} {terms[0][1]}")
        lines += _lines(terms[1:], "\\qquad")
    many = r"\begin{aligned}" + " \\\\ ".join(lines) + r"\end{aligned}"
    return "{" + one + "}{" + two + "}{" + many + "}"


_FRAC = re.compile(r"\\frac\{((?:[^{}]|\{[^{}]*\})*)\}\{((?:[^{}]|\{[^{}]*\})*)\}")


def linear(latex: str) -> str:
    """``latex`` on one line that TeX may break: ``\\frac{a}{b}`` as ``a/b`` (compound parts in
    brackets), ``\\left``/``\\right`` dropped, a break allowed after each comma."""
    def frac(m: re.Match) -> str:
        part = lambda x: x if re.fullmatch(r"[\w\\{}^]*|\\sqrt\{\w*\}|\\langle (?:(?!\\[lr]angle)(?:[^{}]|\{[^{}]*\}))* \\rangle", x) else f"({x})"  # noqa: E731
        return f"{part(m.group(1))}/{part(m.group(2))}"

    while _FRAC.search(latex):
        latex = _FRAC.sub(frac, latex)
    latex = re.sub(r"\\(?:left|right)(?=[()\[\]|.])", "", latex)
    return latex.replace(", ", ",\\allowbreak ")


def cell_args(latex: str) -> str:
    """``{whole}{linear}``: the arguments of ``\\fitcell`` for a formula in a table cell. A fraction is
    set at display size when the whole fits (a text-size \\frac in a cell is script size, too small to
    read), else on one line as a/b."""
    whole = ("\\displaystyle " + latex) if "\\frac" in latex else latex
    return "{$" + whole + "$}{$" + linear(latex) + "$}"
