"""Rows of one key: under a mask that allows key i alone in every row (``sliding_window(1)``,
``causal_window(1)``, a mask_mod ``q_idx == kv_idx``), a weight of row i is its normalizer's
weight on a row of one key, a function of the one score x_i. Two sides that agree there agree on
every row of the mask: a proof for every n, by collapsing each reduction over the row to its one
term.

The collapse is exact: a sum or product over the row runs over the allowed keys (each term
carries the mask factor M[i, t], which is 0 at every t ≠ i), so a sum over 1..n is its term at
t = i, one over j + 1..n (j = i, the row's key) has no term, a product over the row is its factor
at t = i when its masked factors are 1. Anything else (a range the collapse cannot place, a term
without the mask factor) is left alone: no proof.
"""

from __future__ import annotations

import sympy as sp

from derive.model.attention import M, i, j, n

__all__ = ["collapse", "one_key_rows"]


def one_key_rows(mask) -> bool:
    """Does the mask allow exactly the key j = i in every row i (decided on the integer positions)?"""
    from derive.model.masks import Undecidable, decide_same_keys

    cond = getattr(mask, "condition", None)
    if cond is None or getattr(mask, "data", None):
        return False
    try:
        same, _, _ = decide_same_keys(cond, sp.Eq(i, j))
    except Undecidable:
        return False
    return same


class _Open(Exception):
    """A reduction the collapse cannot place."""


def collapse(expr: sp.Expr) -> sp.Expr | None:
    """``expr`` (a weight of key j of row i, or a sum over the row) on a row whose one allowed key
    is i, with j = i; None when a reduction cannot be collapsed exactly."""
    try:
        out = _collapse(sp.sympify(expr).xreplace({j: i}))
    except _Open:
        return None
    out = out.xreplace({M[i, i]: sp.S.One})
    return None if out.has(M) else out


def _collapse(e):
    if isinstance(e, (sp.Sum, sp.Product)):
        return _one(e)
    if not e.args:
        return e
    args = [_collapse(a) for a in e.args]
    return e.func(*args) if any(a is not b for a, b in zip(args, e.args)) else e


def _one(e):
    body = _collapse(e.function)
    (var, lo, hi), = e.limits
    inside = _in_range(lo, hi)
    if isinstance(e, sp.Sum):
        if not _masked_factor(body, var):
            raise _Open
        return body.xreplace({var: i}) if inside else sp.S.Zero
    off = body.xreplace({M[i, var]: sp.S.Zero})  # a masked key's factor must be 1
    if sp.simplify(off - 1) != 0:
        raise _Open
    return body.xreplace({var: i}) if inside else sp.S.One


def _in_range(lo, hi) -> bool:
    """Is the row's key i in lo..hi (with j = i already put in)?"""
    if (lo, hi) in ((sp.S.One, n), (i, n)):
        return True
    if lo == i + 1 and hi == n:
        return False
    if lo == sp.S.One and hi == i - 1:
        return False
    raise _Open


def _masked_factor(body, var) -> bool:
    """Is the mask factor M[i, var] a factor of every term of ``body`` (0 at a masked key)?"""
    return all(M[i, var] in sp.Mul.make_args(term) for term in sp.Add.make_args(sp.expand(body, deep=False)))
