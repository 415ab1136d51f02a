"""Arguments that are out of a function's domain for every value: ``sqrt(-d)``, ``log(-x**2)``.

Such an expression is nowhere real, so the spec is bad input. The decision is one-sided
and sound: it is made only when SymPy's assumption system *proves* the sign, after each
``⟨a, a⟩`` is replaced by a nonnegative symbol and every other ``⟨a, b⟩`` by a real one
(d, n, i, j are positive integers, declared scalars carry their sign, exp is positive,
squares and abs are nonnegative). When the sign is not proved, the spec is accepted.
"""

from __future__ import annotations

import sympy as sp

from derive.model.vectors import Dot

__all__ = ["nowhere_real"]


def _signed(expr: sp.Expr) -> sp.Expr:
    def repl(e):
        a, b = e.args
        return sp.Dummy("dot", nonnegative=True) if a == b else sp.Dummy("dot", real=True)

    return expr.replace(lambda e: isinstance(e, Dot), repl)


def nowhere_real(fn: str, arg: sp.Expr) -> str | None:
    """Why ``fn(arg)`` is nowhere real (``fn`` is ``sqrt`` or ``log``), or ``None``."""
    x = _signed(arg)
    if fn == "sqrt" and x.is_negative:
        return "sqrt() of an argument that is negative for every value: the expression is nowhere real"
    if fn == "log" and x.is_nonpositive:
        return "log() of an argument that is ≤ 0 for every value: the expression is nowhere real"
    return None
