"""Rows with no allowed key.

A mask may leave a row with no allowed key (a ``mask_mod`` that allows only future keys leaves
the last row empty). Such a row is defined as FlexAttention defines it: every weight is 0 and
the output is 0 (``docs/spec.md``). So ``weights_sum_to_one`` is false for a variant whose mask
can leave a row empty, whatever the normalizer.

:func:`empty_row` decides it: never, when the mask allows the key j = i in every row (SymPy
proves the condition at j = i); otherwise by trying every row of n = 1…``MAX_N`` keys on the
mask's real tables (a found row is an exact counterexample: the condition is evaluated on
integers); else unknown.
"""

from __future__ import annotations

import sympy as sp

from derive.model.attention import i, j
from derive.routes import sympy_gave_up

__all__ = ["MAX_N", "empty_row"]

MAX_N = 8


def empty_row(mask, data: dict | None = None, heads: int = 1) -> tuple[str, tuple[int, int, int] | None]:
    """("never", None), ("empty", (n, row, head)) or ("unknown", None); every head 0…heads−1 of
    the real tables is tried (a mask_mod may empty a row at one head only)."""
    cond = getattr(mask, "condition", None)
    if cond is None or cond.xreplace({j: i}) == sp.true:
        return "never", None
    data = data if data is not None else getattr(mask, "data", None)
    for n in range(1, MAX_N + 1):
        for head in range(heads):
            for row in range(1, n + 1):
                allowed = [_at(cond, row, key, data, head) for key in range(1, n + 1)]
                if all(a is False for a in allowed):
                    return "empty", (n, row, head)
    return "unknown", None


def _at(cond, row: int, key: int, data, head: int = 0) -> bool | None:
    """The condition at (row, key) on the real tables of ``head``; None when it is not decided."""
    c = cond.xreplace({i: sp.Integer(row), j: sp.Integer(key)})
    if data:
        from derive.model.tables import concrete_data

        c = concrete_data(c, data, head)
    try:
        c = sp.simplify(c) if c not in (sp.true, sp.false) else c
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise
        return None  # a condition SymPy cannot settle decides nothing
    if c == sp.true:
        return True
    if c == sp.false:
        return False
    return None
