"""Limits at ±∞ by the limit laws, where every step is determinate.

``lim_{v→±∞} e`` is computed bottom-up: v tends to ±∞, an expression free of v is its own
limit (when it is finite), and a sum, product, integer power, ``exp`` or ``tanh`` of
convergent parts tends to the same operation on their limits whenever that operation is
continuous there or the form is determinate (finite + ∞, a nonzero finite · ∞, 1/∞,
e^{−∞} = 0, tanh(±∞) = ±1, |±∞| = ∞, min/max of finite limits). Any other case (0·∞, ∞ − ∞, a
denominator tending to 0, a function not listed) gives None and the caller falls back to
SymPy's ``limit``. Every rule is a theorem of elementary analysis, so a value returned is
the limit, proved; it is only cheaper than the Gruntz algorithm.

    >>> import sympy as sp
    >>> x, c = sp.Symbol("x", real=True), sp.Symbol("c", positive=True)
    >>> limit_at_infinity(sp.exp(c * sp.tanh(x / c)) / (sp.exp(c * sp.tanh(x / c)) + 1), x, -sp.oo)
    exp(-c)/(1 + exp(-c))
    >>> limit_at_infinity(sp.exp(x) / (sp.exp(x) + sp.exp(2 * x)), x, -sp.oo) is None  # 0/0: not by these laws
    True
"""

from __future__ import annotations

import sympy as sp

__all__ = ["limit_at_infinity"]


def limit_at_infinity(expr: sp.Expr, var: sp.Symbol, point) -> sp.Expr | None:
    """The finite limit of ``expr`` as ``var`` → ``point`` (±∞) by the limit laws, or None."""
    if point not in (sp.oo, -sp.oo) or not var.is_extended_real:
        return None
    out = _lim(expr, var, point)
    return out if out is not None and out.is_finite else None


def _sign(v) -> int | None:
    return 1 if v.is_extended_positive else -1 if v.is_extended_negative else None


def _lim(e, var, point):  # noqa: C901 - one branch per operation
    if not e.has(var):
        return e if e.is_finite else None
    if e == var:
        return point
    if isinstance(e, (sp.Add, sp.Mul, sp.Min, sp.Max, sp.exp, sp.tanh, sp.Abs)):
        parts = [_lim(a, var, point) for a in e.args]
        if any(p is None for p in parts):
            return None
        infinite = [p for p in parts if p.is_infinite]
        if infinite and any(p.is_finite is not True and not p.is_infinite for p in parts):
            return None
        if not infinite:  # continuous where every argument is finite
            return e.func(*parts) if all(p.is_finite for p in parts) else None
        if isinstance(e, sp.Add):
            return infinite[0] if all(p == infinite[0] for p in infinite) else None
        if isinstance(e, sp.Mul):
            signs = [_sign(p) for p in parts]
            if None in signs:
                return None  # a factor tending to 0 (0·∞) or of unknown sign
            return sp.oo if sp.prod(signs) > 0 else -sp.oo
        if isinstance(e, sp.exp):
            return sp.S.Zero if parts[0] == -sp.oo else sp.oo
        if isinstance(e, sp.tanh):
            return sp.S.One if parts[0] == sp.oo else sp.S.NegativeOne
        if isinstance(e, sp.Abs):
            return sp.oo
        return None
    if isinstance(e, sp.Pow):
        base, ex = e.args
        if ex.has(var) or not ex.is_integer:
            return None
        b = _lim(base, var, point)
        if b is None:
            return None
        if b.is_infinite:
            if ex.is_negative:
                return sp.S.Zero
            if not ex.is_positive:
                return None  # x^k with k = 0 tends to 1, with k < 0 to 0
            return sp.oo if (b == sp.oo or ex.is_even) else (-sp.oo if ex.is_odd else None)
        if ex.is_nonnegative is not True and b.is_zero is not False:
            return None  # a denominator that may tend to 0
        return b**ex
    return None
