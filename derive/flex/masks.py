"""Masks as data: the allowed keys of row i as a SymPy condition on i and j.

A :class:`Mask` is the mask's text (what reports print, what ``mask == "causal"``
compares) carrying its condition. The hand-written forms are

* ``none`` (every key), ``causal`` (j ≤ i);
* ``sliding_window(W)``: |i − j| < W; ``causal_window(W)``: 0 ≤ i − j < W;
* ``prefix_lm(P)``: j ≤ P or j ≤ i (the first P keys are seen by every row, the rest causally);
* ``document(IDS)``: IDS(i − 1) = IDS(j − 1), IDS the document id of each 0-based position
  (an opaque table, like a FlexAttention tensor ``document_id``);
* a traced ``mask_mod`` (``mods.py:causal``), whose condition is what it computes.

Positions are the engine's 1-based i, j (a mask_mod's 0-based q_idx is i − 1).
"""

from __future__ import annotations

import re

import sympy as sp

from derive.model.attention import i, j

__all__ = ["Mask", "concrete", "indicator", "labelled", "mask_side", "parse_mask"]


class Mask(str):
    """A mask's name with its condition (``None``: every key is allowed), and for a traced
    mask_mod the tables it captured (``data``: name → values, as :attr:`Flex.data`)."""

    condition: sp.Basic | None
    data: dict

    def __new__(cls, text: str, condition, data: dict | None = None):
        obj = super().__new__(cls, text)
        obj.condition = condition
        obj.data = dict(data or {})
        return obj

    def __reduce__(self):  # specs travel to worker processes (the atlas checks in parallel)
        return (Mask, (str(self), self.condition, self.data))


def labelled(expr: sp.Basic) -> sp.Basic:
    """``expr`` with each opaque table of a position, IDS(x), as the label vector IDS[x + 1]
    the counterexample searcher fills (one integer label per position). Only for an opaque
    IDS (``document(IDS)``): a traced table takes its real entries first (``concrete_data``)."""
    from sympy.core.function import AppliedUndef

    from derive.model.attention import LabelBase

    return expr.replace(lambda e: isinstance(e, AppliedUndef) and len(e.args) == 1 and e.args[0].is_integer,
                        lambda e: LabelBase(type(e).__name__)[e.args[0] + 1])


def concrete(mask, row=i, col=j, data: dict | None = None, head: int = 0) -> sp.Expr:
    """The mask's indicator at (row, col) as the searcher evaluates it: a traced mask on its
    real tables of ``head`` (``data``, else its own), an opaque document id table as a label vector."""
    ind = indicator(getattr(mask, "condition", None), row, col)
    data = data or getattr(mask, "data", None)
    if data:
        from derive.flex.claims import concrete_data

        ind = concrete_data(ind, data, head)
    return labelled(ind)


_FORMS = {
    "sliding_window": ("W", lambda w: sp.Abs(i - j) < w),
    "causal_window": ("W", lambda w: sp.And(j <= i, i - j < w)),
    "prefix_lm": ("P", lambda p: sp.Or(j <= p, j <= i)),
}
_FORM = re.compile(r"\s*([a-z_]+)\s*\(\s*([0-9]+)\s*\)\s*\Z")
_DOC = re.compile(r"\s*document\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*\Z")
HAND_WRITTEN = ("none", "causal") + tuple(f"{k}({v[0]})" for k, v in _FORMS.items()) + ("document(IDS)",)


def parse_mask(text: str) -> Mask | str:
    """The mask named by ``text``; ``ValueError`` with the reason when it is not one."""
    if text == "none":
        return Mask("none", None)
    if text == "causal":
        return Mask("causal", j <= i)
    doc = _DOC.match(text)
    if doc:
        f = sp.Function(doc.group(1), real=True)
        return Mask(f"document({doc.group(1)})", sp.Eq(f(i - 1), f(j - 1)))
    m = _FORM.match(text)
    if not m or m.group(1) not in _FORMS:
        raise ValueError(f"unknown mask {text!r} (expected {', '.join(HAND_WRITTEN[:-1])} or {HAND_WRITTEN[-1]})")
    width = int(m.group(2))
    if width < 1:
        raise ValueError(f"{m.group(1)} needs a positive integer, got {width}")
    return Mask(f"{m.group(1)}({width})", _FORMS[m.group(1)][1](sp.Integer(width)))


def indicator(cond, row=i, col=j) -> sp.Expr:
    """1 where ``cond`` holds at (row, col), else 0, as Piecewise on single comparisons only
    (what the evaluator reads; And/Or/Not are unfolded)."""
    if cond is None or cond == sp.true:
        return sp.S.One
    if cond == sp.false:
        return sp.S.Zero
    if isinstance(cond, sp.And):
        first, *rest = cond.args
        return sp.Piecewise((indicator(sp.And(*rest), row, col), _at(first, row, col) if not _compound(first)
                             else sp.Eq(indicator(first, row, col), 1)), (0, True))
    if isinstance(cond, sp.Or):
        first, *rest = cond.args
        return sp.Piecewise((1, sp.Eq(indicator(first, row, col), 1)), (indicator(sp.Or(*rest), row, col), True))
    if isinstance(cond, sp.Not):
        return 1 - indicator(cond.args[0], row, col)
    return sp.Piecewise((1, _at(cond, row, col)), (0, True))


def _compound(c) -> bool:
    return isinstance(c, (sp.And, sp.Or, sp.Not))


def _at(cond, row, col):
    return cond.xreplace({i: row, j: col}) if (row, col) != (i, j) else cond


def mask_side(mask) -> str | None:
    """``"past"`` when every allowed key has j ≤ i (proved by SymPy for a symbolic key
    j = i + e, e ≥ 1), ``"future"`` when every one has j ≥ i, else None."""
    cond = getattr(mask, "condition", None)
    if cond is None:
        return None
    e = sp.Symbol("e", integer=True, positive=True)
    if cond.xreplace({j: i + e}) == sp.false:
        return "past"
    if cond.xreplace({j: i - e}) == sp.false:
        return "future"
    return None
