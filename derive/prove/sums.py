"""Sums over a row written one way: the dummy named t, the factors free of it taken out.

``Σ_u M_u e^{x_u} / (1 + Σ_t M_t e^{x_t})`` and ``(Σ_t M_t e^{x_t}) / (1 + Σ_t M_t e^{x_t})``
are the same number; :func:`canon_sums` writes both as the second, so that a rational
rewriting sees one generator Σ_t M_t e^{x_t} where there were two. Both rewrites are
identities: renaming a bound index (only where the new name is not captured by a binder
inside, nor free in the body or the range) and Σ_t c·f(t) = c·Σ_t f(t) for c free of t.

    >>> import sympy as sp
    >>> from derive.model.attention import M, i, n, t, u
    >>> x = sp.IndexedBase("x")
    >>> canon_sums(sp.Sum(2 * x[i, u], (u, 1, n)))
    2*Sum(x[i, t], (t, 1, n))
"""

from __future__ import annotations

import sympy as sp

from derive.model.attention import t
from derive.model.reductions import RowExtremum
from derive.prove.memo import memoized

__all__ = ["canon_sums"]


def _binds(node: sp.Basic) -> set:
    """The indices ``node`` binds: a Σ's or Π's dummies, a lambda's arguments, a row extremum's key."""
    if isinstance(node, RowExtremum):
        return {node.var}
    return set(getattr(node, "bound_symbols", ()) or ())


def renames_safely(body: sp.Expr, var: sp.Symbol, new: sp.Symbol, limits: tuple = ()) -> bool:
    """Whether writing ``new`` for the bound index ``var`` in ``body`` keeps its meaning: ``new``
    is not free in the body or in the range, and no binder of ``new`` inside has ``var`` free."""
    if new in body.free_symbols or any(new in sp.sympify(b).free_symbols for b in limits):
        return False
    return not any(new in _binds(node) and var in node.free_symbols for node in sp.preorder_traversal(body))


@memoized
def _fix(s: sp.Sum) -> sp.Expr:
    if len(s.limits) != 1:
        return s  # a sum over several indices is left as it is
    body, (var, lo, hi) = s.function, s.limits[0]
    if var != t:
        if not renames_safely(body, var, t, (lo, hi)):
            return s
        body = body.xreplace({var: t})
    dep, ind = [], []
    for a in sp.Mul.make_args(sp.expand(body, power_exp=True, mul=False, multinomial=False)):
        (dep if t in a.free_symbols else ind).append(a)
    return sp.Mul(*ind) * sp.Sum(sp.Mul(*dep), (t, lo, hi))


def canon_sums(e: sp.Expr) -> sp.Expr:
    """Every Σ with dummy t, its factors free of t taken out (an identity; nested sums too,
    up to three levels)."""
    for _ in range(3):
        new = e.replace(lambda z: isinstance(z, sp.Sum), _fix)
        if new == e:
            break
        e = new
    return e
