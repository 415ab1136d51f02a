"""Captured tables of a traced modifier, as the model reads them.

The head h and batch b indices, a table indexed by the head first (:class:`PerHead`), and
:func:`concrete_data`: an expression on a table's real entries, each lookup an exact
Piecewise on its indices that fails past the table's end (:class:`PastTheEnd`).
"""

from __future__ import annotations

import sympy as sp

__all__ = ["BATCH", "HEAD", "PastTheEnd", "PerHead", "concrete_data", "lookup"]

HEAD = sp.Symbol("h", integer=True, nonnegative=True)  # the attention head (0-based, as in FlexAttention)
BATCH = sp.Symbol("b", integer=True, nonnegative=True)  # the batch index: only as an index of a table


class PerHead(list):
    """The entries of a table indexed by the head first: one (nested) block per head."""


def lookup(args, rows) -> sp.Expr:
    """The entry ``rows[args[0]][args[1]]…`` as nested Piecewise on the indices, and
    :class:`PastTheEnd` outside: torch fails there, so an instance reading past a table's end is
    no instance of the model. (A value there would invent entries: NaN made ``doc[3] == doc[2]``
    false for a table of 3 document ids, and so a refutation at n = 4.)"""
    x, rest = args[0], args[1:]
    return sp.Piecewise(*[(lookup(rest, r) if rest else r, sp.Eq(x, k)) for k, r in enumerate(rows)],
                        (PastTheEnd(x), True))


class PastTheEnd(sp.Function):
    """A table read at an index it does not have. SymPy keeps it unevaluated (comparisons of
    lookups need a value in every branch), and the evaluator has no rule for it: evaluating it
    fails, and an instance that fails to evaluate certifies nothing."""

    nargs = 1
    is_real = True
    past_the_end = True  # the evaluator's mark (derive.crosscheck.evaluate)


def concrete_data(expr: sp.Basic, data: dict, head: int) -> sp.Basic:
    """``expr`` on the real captured data of head ``head`` (and batch 0): per-head symbols take
    that head's value, opaque tables become exact lookups (Piecewise on the indices)."""
    out = expr
    for key, values in data.items():
        if isinstance(key, sp.Symbol):  # by name: a hand spec's per_head NAME, of whatever sign, is this table
            same = {s for s in out.free_symbols if isinstance(s, sp.Symbol) and s.name == key.name}
            out = out.xreplace({s: values[head] for s in same | {key}})
    for key, values in data.items():
        if isinstance(key, str):
            rows = values[head] if isinstance(values, PerHead) else values
            out = out.replace(lambda e, key=key: isinstance(e, sp.core.function.AppliedUndef)
                              and type(e).__name__ == key, lambda e, rows=rows: lookup(e.args, rows))
    return out.xreplace({HEAD: head, BATCH: 0}) if data else out
