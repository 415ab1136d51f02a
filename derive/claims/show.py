"""Printing engine expressions for reports: one-line Unicode text and LaTeX."""

from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar

import sympy as sp
from sympy.printing.latex import LatexPrinter, greek_letters_set
from sympy.printing.str import StrPrinter

from derive.model.vectors import Dot, Rot
from derive.timeout import TimeLimit, time_limit

__all__ = ["apart", "latex", "math", "text"]

# Display-only replacements active while one spec is checked (see ``apart``).
_APART: ContextVar[dict | None] = ContextVar("derive_show_apart", default=None)
_LATEX_NAMES = {"τ": r"\tau", "ω": r"\omega", "𝕄": r"\mathbb{M}"}


@contextmanager
def apart(replacements: dict):
    """Show internal objects under other names while checking one spec (``Σ_τ`` when the
    spec declares its own ``t``): ``replacements`` maps an engine object to its stand-in."""
    token = _APART.set(dict(replacements))
    try:
        yield
    finally:
        _APART.reset(token)


def _shown(expr):
    rep = _APART.get()
    return expr.xreplace(rep) if rep and isinstance(expr, sp.Basic) else expr


class _Text(StrPrinter):
    def _print_Dot(self, e):
        return f"⟨{self._print(e.args[0])}, {self._print(e.args[1])}⟩"

    def _print_Rot(self, e):
        return f"R({self._print(e.args[0])})·{self.parenthesize(e.args[1], 50)}"

    def _print(self, expr, **kwargs):
        if isinstance(expr, sp.Indexed):  # Indexed has its own _sympystr, which would win
            idx = ",".join(self._print(a) for a in expr.indices)
            label = expr.base.label
            return f"{label}_{idx}" if len(idx) == 1 else f"{label}[{idx}]"
        return super()._print(expr, **kwargs)


def _identifier(name: str, upright: str) -> str | None:
    """LaTeX of a multi-word identifier (a traced table ``alibi_slopes_h``, a spec's ``rel_bias``):
    the words upright with their underscores, a one-character last part as the subscript. None for
    the names SymPy prints well itself: one letter or a Greek letter, with or without subscripts."""
    parts = name.split("_")
    head = parts[0]
    if len(parts) < 2 or len(head) < 2 or not head.isalpha() or head.lower() in greek_letters_set:
        return None
    sub = parts.pop() if len(parts[-1]) == 1 else None
    word = r"\_".join(parts)
    return rf"{upright}{{{word}}}" + (f"_{{{sub}}}" if sub else "")


class _Latex(LatexPrinter):
    def _hprint_Function(self, func: str) -> str:
        if func.endswith("'"):  # a fresh copy r' of a function r: r'(j − i), not \operatorname{r'}
            return self._hprint_Function(func[:-1]) + "'"
        return _identifier(func, r"\operatorname") or super()._hprint_Function(func)

    def _print_Dot(self, e, exp=None):
        out = rf"\langle {self._print(e.args[0])}, {self._print(e.args[1])} \rangle"
        return out if exp is None else f"{out}^{{{exp}}}"

    def _print_Symbol(self, e, style="plain"):
        if e.name in _LATEX_NAMES:
            return _LATEX_NAMES[e.name]
        if "." in e.name:  # a normalizer's own parameter: sigmoid.b → b_{sigmoid}
            head, tail = e.name.split(".", 1)
            return rf"{self._print_Symbol(sp.Symbol(tail))}_{{\mathrm{{{head}}}}}"
        if e.name.startswith("Δ"):
            return r"\Delta " + self._print_Symbol(sp.Symbol(e.name[1:]))
        if e.name.endswith("'"):
            return self._print_Symbol(sp.Symbol(e.name[:-1])) + "'"
        return _identifier(e.name, r"\mathrm") or super()._print_Symbol(e)


MAX_TERMS = 12


def _head(expr: sp.Basic) -> tuple[sp.Basic, int]:
    """At most MAX_TERMS terms of a long sum, and how many were left out."""
    if isinstance(expr, sp.Add) and len(expr.args) > MAX_TERMS:
        return sp.Add(*expr.args[:MAX_TERMS], evaluate=False), len(expr.args) - MAX_TERMS
    return expr, 0


PRINT_SECONDS = 2.0  # SymPy orders terms by evaluating them: exp(-exp(10**12)) never finishes


def text(expr: sp.Basic) -> str:
    if not isinstance(expr, sp.Basic):
        return str(expr)
    try:
        with time_limit(PRINT_SECONDS):
            head, more = _head(_shown(expr))
            out = _Text().doprint(head)
    except TimeLimit:
        return "(an expression SymPy cannot print in time)"
    return _typeset(out) + (f" + … ({more} more terms)" if more else "")


def _typeset(out: str) -> str:
    """SymPy's ASCII operators as a reader writes them: j·Δm, √d, x^2, and a minus sign, not a hyphen.

    >>> _typeset("-r(-i + j)*x**2/sqrt(d) - 1.0e-5")
    '−r(−i + j)·x^2/√d − 1.0e-5'
    """
    out = out.replace("**", "^")
    out = re.sub(r"\bsqrt\((\w+)\)", r"√\1", out)
    out = re.sub(r"(?<=[\w)])\*(?=[A-Za-z0-9(Δ√⟨])", "·", out)
    return re.sub(r"(?<![0-9]e)-", "−", out)


def latex(expr: sp.Basic) -> str:
    try:
        with time_limit(PRINT_SECONDS):
            head, more = _head(_shown(expr))
            out = _Latex().doprint(head)
    except TimeLimit:
        return r"\text{(an expression SymPy cannot print in time)}"
    return out + (r" + \dots" if more else "")


def math(expr: sp.Basic) -> str:
    """``expr`` as one inline math span of prose markup (``$\\langle q_i, k_j \\rangle$``), for
    reasons and messages: rendered as math in Markdown and LaTeX, read aloud elsewhere
    (:func:`derive.render.markup.plain_math`)."""
    return f"${latex(expr)}$"


_ = (Dot, Rot)
