"""Sums over the same range merged: SymPy's ``sum_simplify`` with its cost bounded.

``sympy.simplify.simplify.sum_simplify`` simplifies each sum of an expanded expression,
then combines them pair by pair with ``sum_add``: first sums over the same limits
(Σf + Σg = Σ(f + g)), then sums of one summand over adjacent ranges
(Σ_{a}^{b} f + Σ_{b+1}^{c} f = Σ_{a}^{c} f). For the second kind ``sum_add`` calls
``simplify`` on the difference of the two summands for every ordered pair, before it
looks at the ranges; in a proof with ten sums that is ninety ``simplify`` calls, and the
ranges of the documents' sums are almost never adjacent.

:func:`merge_sums` hands the same pairs, in the same order, to the same ``sum_add``, but
asks it for the adjacent-range merge only where the two ranges are adjacent; elsewhere
``sum_add`` would return ``a + b`` whatever ``simplify`` said, and that sum is formed
directly. Each sum is prepared as ``Sum._eval_simplify`` does (summand expanded, inner sums
merged, factors free of the index taken out) except that its summand is not handed to
``simplify`` (most of the pass's cost): the pass merges sums, and the proof's last pass
simplifies the whole. Every step is an equality, so the result equals the input; where
the summands are already in SymPy's simplest form it is ``sum_simplify``'s, byte for byte.
Each sum is prepared once per process (:func:`~derive.prove.memo.memoized`).

    >>> import sympy as sp
    >>> from sympy.simplify.simplify import sum_simplify
    >>> t, n, m = sp.symbols("t n m", integer=True)
    >>> f = sp.Function("f")
    >>> e = sp.Sum(f(t), (t, 1, n)) + sp.Sum(f(t), (t, n + 1, m)) + 2 * sp.Sum(t * f(t), (t, 1, n))
    >>> merge_sums(e) == sum_simplify(e)
    True
"""

from __future__ import annotations

import sympy as sp
from sympy.simplify.simplify import factor_sum, sum_add

from derive.prove.memo import memoized

__all__ = ["merge_sums"]


@memoized
def _simplified(s: sp.Sum) -> sp.Expr:
    """``s`` with its summand expanded, the sums inside it treated alike and merged, and the
    factors free of its indices taken out (``factor_sum``): ``Sum._eval_simplify`` without its
    ``simplify`` of the summand. A summand left unsimplified is still equal to itself, so the
    merged form equals ``s``; the later passes (up to ``simplify`` of the whole) see the rest."""
    terms = sp.Add.make_args(sp.expand(s.function))
    inner, others = [], []
    for term in terms:
        if term.has(sp.Sum):
            inner.append(sp.Mul(*[_simplified(f) if isinstance(f, sp.Sum) else f
                                  for f in sp.Mul.make_args(sp.expand(term))]))
        else:
            others.append(term)
    return factor_sum(sp.Add(_combine(inner), *others), limits=s.limits)


def merge_sums(e: sp.Expr) -> sp.Expr:
    """``e`` with its sums over the same limits merged, as ``sympy.simplify.simplify.sum_simplify(e)``
    merges them, with less work (see above)."""
    if not isinstance(e, sp.Add):
        e = e.xreplace({a: merge_sums(a) for a in e.atoms(sp.Add) if a.has(sp.Sum)})
    e = sp.expand(e)
    if not isinstance(e, sp.Add):
        return e
    sums, others = [], []
    for term in e.args:
        factors = sp.Mul.make_args(term)
        inner = [f for f in factors if isinstance(f, sp.Sum)]
        if not inner:
            others.append(term)
            continue
        rest = sp.Mul(*[f for f in factors if not isinstance(f, sp.Sum)])
        sums.append(sp.Mul(*([rest] + [_simplified(s) for s in inner])))
    return sp.Add(_combine(sums), *others)


def _combine(terms: list) -> sp.Expr:
    """``sympy.simplify.simplify.sum_combine(terms)``: each pair offered to ``sum_add``, first to
    merge equal limits, then adjacent ranges (the second only where the ranges are adjacent)."""
    used = [False] * len(terms)
    for method in (0, 1):
        for a in range(len(terms)):
            if used[a]:
                continue
            for b in range(len(terms)):
                if used[b] or a == b:
                    continue
                if method == 1 and _apart(terms[a], terms[b]):
                    merged = sp.Add(terms[a], terms[b])  # what sum_add returns for these two
                else:
                    merged = sum_add(terms[a], terms[b], method)
                if isinstance(merged, (sp.Sum, sp.Mul)):
                    terms[a] = merged
                    used[b] = True
    out = sp.S.Zero
    for t, u in zip(terms, used):
        if not u:
            out = sp.Add(out, t)
    return out


def _limits(term):
    """The limits ``sum_add`` reads off ``term`` (its first sum factor), or None when ``term`` is
    not a sum or a product holding one (then ``sum_add`` itself decides)."""
    if type(term) is sp.Sum:
        return term.limits
    if isinstance(term, sp.Mul):
        return next((f.limits for f in sp.Mul.make_args(term) if isinstance(f, sp.Sum)), None)
    return None


def _apart(x, y) -> bool:
    """Whether ``sum_add(x, y, 1)`` certainly returns ``x + y``: both are sums (or products holding
    one) whose ranges are not one index over adjacent ranges, so no summand comparison can merge them."""
    lx, ly = _limits(x), _limits(y)
    if lx is None or ly is None:
        return False
    if len(lx) != 1 or len(ly) != 1:
        return True
    if len(lx[0]) != 3 or len(ly[0]) != 3:
        return False
    (i, x1, y1), (j, x2, y2) = lx[0], ly[0]
    return not (i == j and (x2 == y1 + 1 or x1 == y2 + 1))
