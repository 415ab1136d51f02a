"""The rows of a causal mask written out: a sum over the allowed keys of row i as a sum over a
range of keys.

Under ``causal`` row i allows keys 1..i, so Σ_t M[i, t]·f(t) = Σ_{t=1}^{i} f(t) and the row has
i allowed keys; under ``causal_window(W)`` a row allows keys 1..i while i ≤ W and i − W + 1..i
after, W of them: two regimes, each proved on its own (i = W − k with k ≥ 0, i = W + k with
k ≥ 1). Two sides equal in every regime are equal on every row of the mask. Only sums whose
terms carry the mask factor M[i, t] and whose range is the row's (1..n) or ends at i are
rewritten; anything else leaves the sides alone (no proof from here).
"""

from __future__ import annotations

import re

import sympy as sp

from derive.model.attention import M, i, n

__all__ = ["on_mask_rows"]


def _regimes(mask):
    """(substitution for i, first key, last key) of each regime of the mask's rows, or None."""
    text = str(mask).strip()
    if text == "causal":
        return [({}, sp.S.One, i)]
    m = re.fullmatch(r"causal_window\((\d+)\)", text)
    if m:
        w = int(m.group(1))
        k0, k1 = sp.Symbol("k", integer=True, nonnegative=True), sp.Symbol("k", integer=True, positive=True)
        if w == 1:
            return None  # one key per row: derive.claims.one_key
        early = {i: sp.Integer(w) - k0}  # rows 1..W (k ≤ W − 1 is not needed: the keys are 1..i either way)
        late = {i: sp.Integer(w) + k1}
        return [(early, sp.S.One, i.xreplace(early)), (late, i.xreplace(late) - w + 1, i.xreplace(late))]
    return None


class _Open(Exception):
    pass


def _rewrite(e, lo, hi, sub):
    if isinstance(e, sp.Sum) and len(e.limits) == 1:
        var, a, b = e.limits[0]
        body = _rewrite(e.function, lo, hi, sub)
        if M[i, var].xreplace(sub) not in sp.Mul.make_args(body):
            raise _Open
        if a != 1 or b not in (n, i.xreplace(sub), hi):
            raise _Open
        rest = sp.Mul(*[f for f in sp.Mul.make_args(body) if f != M[i, var].xreplace(sub)])
        if rest.has(M[i.xreplace(sub), var]):
            raise _Open
        return sp.Sum(rest, (var, lo, hi)).doit() if not rest.free_symbols & {var} and rest.is_number \
            else sp.Sum(rest, (var, lo, hi))
    if not e.args:
        return e
    args = [_rewrite(x, lo, hi, sub) for x in e.args]
    return e.func(*args) if any(x is not y for x, y in zip(args, e.args)) else e


def on_mask_rows(expr: sp.Expr, mask) -> list | None:
    """``expr`` in each regime of the mask's rows, every sum over the allowed keys written as a
    sum over a range; None when the mask has no such regimes or a sum does not fit."""
    regimes = _regimes(mask)
    if not regimes:
        return None
    out = []
    for sub, lo, hi in regimes:
        try:
            out.append(_rewrite(sp.sympify(expr).xreplace(sub), lo, hi, sub))
        except _Open:
            return None
    return out
