"""Bounds on a weight by a term of its own score: 0 ≤ p_j ≤ g(x_j) with g(−∞) = 0 gives abstention
whatever the other scores do (stick-breaking: p_j ≤ σ(x_j))."""

from __future__ import annotations

import sympy as sp

from derive.model.attention import M, X, i, j
from derive.normalizers import limits
from derive.normalizers.algebra import Derivation, shown, weight
from derive.normalizers.continuity import limit_at_infinity
from derive.prove.memo import simplify
from derive.prove.verdict import PROVED, UNDECIDED, Verdict

__all__ = ["bounded_limit", "limit_any_path", "own_score_bound"]


def own_score_bound(W) -> sp.Expr | None:
    """g when the weight is M_j·g(x_j)·∏ f_t with g ≥ 0, g(−∞) = 0 and every factor f_t in [0, 1]
    for M_t ∈ {0, 1} and every real score (stick-breaking: g = σ, f_t = 1 − M_t σ(x_t)): then
    0 ≤ p_j ≤ g(x_j), and every weight tends to 0 as its own score does, whatever the others do.
    None when the weight has another shape or a condition is not proved."""
    products = [f for f in sp.Mul.make_args(W) if isinstance(f, sp.Product)]
    if not products:
        return None
    y = sp.Symbol("y", real=True)
    for prod in products:
        t = prod.limits[0][0]
        f = prod.function.xreplace({X[i, t]: y})
        for m in (0, 1):
            fm = simplify(f.subs(M[i, t], m))
            if fm.free_symbols - {y} or fm.is_nonnegative is not True or simplify(1 - fm).is_nonnegative is not True:
                return None
    rest = sp.Mul(*[f for f in sp.Mul.make_args(W) if not isinstance(f, sp.Product)])
    g = rest.subs(M[i, j], 1).xreplace({X[i, j]: y})
    if rest != M[i, j] * rest.subs(M[i, j], 1) or g.free_symbols - {y} or simplify(g).is_nonnegative is not True:
        return None
    return g if _limit_is_zero(g, y) else None


def _limit_is_zero(g: sp.Expr, y: sp.Symbol) -> bool:
    direct = limit_at_infinity(g, y, -sp.oo)
    return (direct if direct is not None and direct.is_Rational else limits.limit_of(g, y, -sp.oo)) == 0


def limit_any_path(entry, params) -> Derivation:
    """:func:`limits.limit_any_path`, or the own-score bound where it decides nothing."""
    return bounded_limit(limits.limit_any_path(entry, params), entry, params, "0")


def bounded_limit(der: Derivation, entry, params, zero) -> Derivation:
    """An undecided limit as all scores → −∞ decided by :func:`own_score_bound`: 0 ≤ p_j ≤ g(x_j) → 0,
    along any path, so along the uniform one too."""
    g = None if der.verdict.status != UNDECIDED else own_score_bound(weight(entry, params))
    if g is None:
        return der
    der.step("each weight is its own score's term times a product of factors in $[0, 1]$, so "
             "$0 \\le p_j \\le g(x_j)$, whatever the other scores do, and $g(y) \\to 0$ as $y \\to -\\infty$",
             sp.Eq(shown("g(y)"), g, evaluate=False))
    der.verdict = Verdict(PROVED, "every weight is at most a term of its own score, which → 0",
                          method="bound by an own-score term, limit")
    der.value = zero
    return der
