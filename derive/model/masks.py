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
from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp

from derive.model.attention import i, j
from derive.routes import sympy_gave_up

__all__ = ["FORMS", "Mask", "MaskForm", "concrete", "indicator", "labelled", "mask_side", "parse_mask", "table_markdown"]


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
        from derive.model.tables import concrete_data

        ind = concrete_data(ind, data, head)
    return labelled(ind)


@dataclass(frozen=True)
class MaskForm:
    """One hand-written mask form: its name, its parameter (``None`` for a bare name), what it
    allows in the words of ``docs/spec.md``'s mask table, and its condition on (i, j) given the
    parameter (an integer, or for ``document`` the opaque table as a function). Everything that
    lists the masks (the parser, the did-you-mean hint, the error message, the docs' table) reads
    :data:`FORMS`."""

    name: str
    param: str | None
    meaning: str
    condition: Callable

    @property
    def spelled(self) -> str:
        """``sliding_window(W)``: the form as a spec writes it, its parameter named."""
        return self.name if self.param is None else f"{self.name}({self.param})"


FORMS: tuple[MaskForm, ...] = (
    MaskForm("none", None, "every key", lambda: None),
    MaskForm("causal", None, "j ≤ i", lambda: j <= i),
    MaskForm("sliding_window", "W", r"\|i − j\| < W", lambda w: sp.Abs(i - j) < w),
    MaskForm("causal_window", "W", "j ≤ i and i − j < W", lambda w: sp.And(j <= i, i - j < w)),
    MaskForm("prefix_lm", "P", "j ≤ P (the first P tokens, seen by every row) or j ≤ i",
             lambda p: sp.Or(j <= p, j <= i)),
    MaskForm("document", "IDS", "IDS(i − 1) = IDS(j − 1): IDS is the document id of each 0-based position, "
             "an opaque table", lambda ids: sp.Eq(ids(i - 1), ids(j - 1))),
)
_FORM = re.compile(r"\s*([a-z_]+)\s*\(\s*([0-9]+)\s*\)\s*\Z")
_DOC = re.compile(r"\s*document\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*\Z")


def names() -> tuple[str, ...]:
    """The forms' names: what an unknown mask's did-you-mean hint chooses from."""
    return tuple(f.name for f in FORMS)


def parse_mask(text: str) -> Mask | str:
    """The mask named by ``text``; ``ValueError`` with the reason when it is not one."""
    by_name = {f.name: f for f in FORMS}
    bare = by_name.get(text)
    if bare is not None and bare.param is None:
        return Mask(text, bare.condition())
    doc = _DOC.match(text)
    if doc:
        f = sp.Function(doc.group(1), real=True)
        return Mask(f"document({doc.group(1)})", by_name["document"].condition(f))
    m = _FORM.match(text)
    form = by_name.get(m.group(1)) if m else None
    if form is None or form.param is None or form.name == "document":
        spelled = [f.spelled for f in FORMS]
        raise ValueError(f"unknown mask {text!r} (expected {', '.join(spelled[:-1])} or {spelled[-1]})")
    width = int(m.group(2))
    if width < 1:
        raise ValueError(f"{form.name} needs a positive integer, got {width}")
    return Mask(f"{form.name}({width})", form.condition(sp.Integer(width)))


def table_markdown() -> str:
    """The mask table of ``docs/spec.md`` (its rows from :data:`FORMS`, then the traced mask_mod)."""
    rows = [f"| `{f.spelled}` | {f.meaning} |" for f in FORMS]
    return "\n".join(["| mask | allowed keys |", "|---|---|", *rows,
                      '| `mask_mod = "FILE.py:NAME"` | what the traced `mask_mod` computes |'])


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


# --- Deciding whether two masks allow the same keys -------------------------------------------
#
# Positions are integers i, j ≥ 1. A condition is decided when each of its comparisons depends
# on the offset δ = i − j alone, on i alone or on j alone, and SymPy gives the real solution
# set of each as intervals: the integers each comparison allows are then finitely many integer
# intervals, whose end points cut δ, i and j into cells on which every comparison, and so the
# whole condition, has one value. Every combination of cells that some (i, j) reaches is
# visited with one such (i, j): two conditions that agree there agree everywhere.

DELTA = sp.Symbol("delta", real=True)  # i − j, as a real variable for the solution sets
MAX_CELLS = 4096
_INF = float("inf")


class Undecidable(Exception):
    """The condition is outside the class decided here (the reason is the message)."""


def _integer_runs(rel, x) -> list[tuple]:
    """The integers satisfying the relation ``rel`` in the one variable ``x``, as (lo, hi) runs
    (±inf for unbounded), from SymPy's exact real solution set."""
    if rel in (sp.true, sp.false):
        return [(-_INF, _INF)] if rel == sp.true else []
    try:
        real = rel.as_set()
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise
        raise Undecidable(f"no solution set for {rel}") from exc
    parts = real.args if isinstance(real, sp.Union) else (real,)
    runs = []
    for p in parts:
        if p == sp.S.Reals:
            runs.append((-_INF, _INF))
        elif isinstance(p, sp.Interval):
            lo = -_INF if p.start == -sp.oo else \
                int(sp.ceiling(p.start)) + (1 if p.left_open and _whole(p.start) else 0)
            hi = _INF if p.end == sp.oo else int(sp.floor(p.end)) - (1 if p.right_open and _whole(p.end) else 0)
            if lo <= hi:
                runs.append((lo, hi))
        elif isinstance(p, sp.FiniteSet):
            runs += [(int(v), int(v)) for v in p.args if _whole(v)]
        elif p != sp.S.EmptySet:
            raise Undecidable(f"the solution set of {rel} is not a union of intervals")
    return runs


def _whole(v) -> bool:
    """Is the real number ``v`` (exact, or a float such as 3.0) an integer?"""
    if not v.is_number or v.is_real is not True:
        raise Undecidable(f"{v} is not a real number")
    return bool(sp.floor(v) == v)


def _atom(rel):
    """(variable, runs) of one comparison: variable "delta", "i" or "j"."""
    from sympy.core.function import AppliedUndef

    if rel.atoms(AppliedUndef) or rel.free_symbols - {i, j}:
        raise Undecidable(f"{rel} reads a table or a symbol other than the positions")
    free = rel.free_symbols
    if free == {i} or free == {j}:
        x = sp.Symbol("x", real=True)
        return ("i" if free == {i} else "j"), _integer_runs(rel.xreplace({next(iter(free)): x}), x)
    g = (rel.lhs - rel.rhs).xreplace({j: i - DELTA})
    if i in g.free_symbols:
        g = sp.expand(g)
    if i in g.free_symbols:
        raise Undecidable(f"{rel} depends on the positions otherwise than through i − j, i or j")
    return "delta", _integer_runs(rel.func(g, 0), DELTA)


def _cells(runs: list, low=-_INF) -> list[tuple]:
    """Maximal integer intervals (≥ ``low``) on which membership in every run list is constant."""
    cuts = sorted({c for rs in runs for lo, hi in rs for c in (lo, hi + 1) if abs(c) != _INF} | ({low} - {-_INF}))
    edges = [-_INF] + cuts + [_INF]
    out = []
    for a, b in zip(edges, edges[1:]):
        lo, hi = max(a, low), (b - 1 if b != _INF else _INF)
        if lo <= hi:
            out.append((lo, hi))
    return out


def _pick(d: tuple, ci: tuple, cj: tuple):
    """An (i, j) with i ∈ ci, j ∈ cj, i − j ∈ d, as near the diagonal as can be; None if none."""
    lo, hi = max(d[0], ci[0] - cj[1]), min(d[1], ci[1] - cj[0])
    if lo > hi:
        return None
    delta = 0 if lo <= 0 <= hi else (lo if lo > 0 else hi)
    row = max(ci[0], cj[0] + delta)
    return int(row), int(row - delta)


def decide_same_keys(ca, cb) -> tuple[bool, tuple | None, int]:
    """Do the conditions ``ca`` and ``cb`` (None: every key) allow the same (i, j), i, j ≥ 1?

    (True, None, cells) when they agree on every cell; (False, (i, j), cells) with a position
    pair where they differ. Raises :class:`Undecidable` outside the decided class."""
    ca = sp.true if ca is None else ca
    cb = sp.true if cb is None else cb
    rels = (ca.atoms(sp.core.relational.Relational) | cb.atoms(sp.core.relational.Relational)) if \
        not isinstance(ca, bool) else set()
    by = {"delta": [], "i": [], "j": []}
    for rel in sorted(rels, key=sp.default_sort_key):
        var, runs = _atom(rel)
        by[var].append(runs)
    cd, ci, cj = _cells(by["delta"]), _cells(by["i"], 1), _cells(by["j"], 1)
    if len(cd) * len(ci) * len(cj) > MAX_CELLS:
        raise Undecidable("too many cells")
    for d_cell in cd:
        for i_cell in ci:
            for j_cell in cj:
                at = _pick(d_cell, i_cell, j_cell)
                if at is None:
                    continue
                va, vb = (sp.sympify(c).xreplace({i: at[0], j: at[1]}) for c in (ca, cb))
                if va not in (sp.true, sp.false) or vb not in (sp.true, sp.false):
                    raise Undecidable(f"the conditions do not evaluate at i = {at[0]}, j = {at[1]}")
                if va != vb:
                    return False, at, len(cd) * len(ci) * len(cj)
    return True, None, len(cd) * len(ci) * len(cj)


def _same_label(expr: sp.Expr, mask) -> sp.Expr | None:
    """Under ``document(IDS)`` (IDS(i − 1) = IDS(j − 1) on every allowed key) ``expr`` with each
    IDS(j − 1) written IDS(i − 1): equal to it on every allowed key. None for another mask."""
    from sympy.core.function import AppliedUndef

    cond = getattr(mask, "condition", None)
    if not isinstance(cond, sp.Eq) or getattr(mask, "data", None):
        return None
    a, b = cond.args
    if not (isinstance(a, AppliedUndef) and isinstance(b, AppliedUndef) and a.func == b.func and len(a.args) == 1):
        return None
    at_key, at_query = (a, b) if j in a.free_symbols else (b, a)
    if j not in at_key.free_symbols or j in at_query.free_symbols or at_key.xreplace({j: i}) != at_query:
        return None
    out = expr.xreplace({at_key: at_query})
    return out if out != expr else None


def on_allowed_keys(expr: sp.Expr, mask) -> sp.Expr | None:
    """``expr`` as it is on the keys ``mask`` allows, written in i and j; None when the mask allows
    keys on both sides of the query (nothing is gained) or every key.

    For a mask of past keys, j = i − e with e ≥ 0 an integer (e = i − j on every allowed key);
    the expression is expanded in e and written back with e = i − j, so |i − j| becomes i − j
    and j + |i − j| becomes i. The result equals ``expr`` on every allowed key (not beyond)."""
    side = mask_side(mask)
    if side is None and j in expr.free_symbols:
        return _same_label(expr, mask)
    if side is None or j not in expr.free_symbols:
        return None
    e = sp.Symbol("e", integer=True, nonnegative=True)
    back = i - j if side == "past" else j - i
    on = sp.expand(expr.xreplace({j: i - e if side == "past" else i + e}))  # |e| is e: no simplify needed
    return sp.expand(on.xreplace({e: back}))
