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


_BROKEN_AT = {"nonzero": ("is 0", lambda x: x.is_zero), "positive": ("is ≤ 0", lambda x: x.is_nonpositive),
              "nonnegative": ("is negative", lambda x: x.is_negative)}
_NEEDS = {"nonzero": "a divisor", "positive": "the argument of log", "nonnegative": "the argument of sqrt"}


def undefined_on_diagonal(guards: list, mask) -> str | None:
    """Why an expression is undefined in *every* row, or ``None``: a guard of its domain (see
    :func:`derive.language.translate.translate`) fails for every value at a key the mask allows in
    every row — the key j = i (none, causal, the windows, prefix_lm, document(IDS), a mask_mod
    whose condition holds at j = i) or the first key j = 1 (none, causal, prefix_lm: every row
    sees it). Then no row's weights are defined: ``(i - j)/(i - j)`` under a causal mask, or
    ``(j**2 - 1)/((j - 1)*(j + 1))``, 0/0 at j = 1, which SymPy leaves as it is and a proof cancels.
    One-sided and sound: decided only when SymPy proves the mask allows the key and the value there."""
    from derive.model.attention import i, j

    cond = getattr(mask, "condition", None)
    for key, name in ((i, "j = i"), (sp.S.One, "j = 1")):
        if cond is not None and cond.xreplace({j: key}) != sp.true:
            continue
        for kind, g in guards:
            if j not in g.free_symbols:
                continue
            what, broken = _BROKEN_AT[kind]
            at = _signed(sp.simplify(g.xreplace({j: key})))
            if broken(at):
                return (f"undefined in every row: {_NEEDS[kind]}, {g}, {what} at the key {name}, which the mask "
                        f"{mask} allows in every row")
    return None
