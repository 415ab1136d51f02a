"""The one mask of a call, and how it is lowered to whatever the kernel takes.

A call's mask is the model's (:mod:`derive.model.masks`): which keys j each query sees. The query
i of a call sits at position p = start_q + i (0-based), so

* **causal**: j ≤ p. *Top-left* alignment is start_q = 0 (query i sees keys 0..i); *bottom-right*
  is start_q = N − M (the last query sees every key: a decode step, FlashAttention's alignment
  since 2.1); a kernel that takes ``start_q`` places its queries anywhere;
* **a window** (left, right): p − left ≤ j ≤ p + right, −1 for a side without bound (the
  ``window_size=(left, right)`` of FlashAttention); a window of W keys (``sliding_window=W``,
  key j visible when j > p − W) is (W − 1, −1), with causal (W − 1, 0);
* **a key mask** on top (:data:`KEY_MASKS`): keys masked in a pattern, whole rows masked, padding
  that masks the first keys of a batch (whole tiles before the visible keys), a prefix-LM or a
  document mask, the last two the model's own ``prefix_lm(P)`` and ``document(IDS)`` evaluated at
  every position (:func:`model_keep`).

The definition sees the keys this leaves (:func:`keep`). The kernel gets each part the way it
takes it (:func:`lower`): causality by its causal flag (or stated with ``--causal``, or, for a
kernel with a mask argument only, inside the mask), the window by its window keyword as an int
or a (left, right) pair (or stated, or inside the mask), and the key mask through its mask
argument in one of :data:`MASK_FORMS`: an additive bias (−∞, the dtype's finfo.min or another
finite value), a boolean mask of the keys kept or of the keys dropped, or a FlexAttention
``mask_mod`` / block mask built in the child from the boolean mask.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = ["KEY_MASKS", "MASK_FORMS", "keep", "lower", "model_keep", "parse_window", "positions_keep",
           "window_arg", "window_text"]

INF = math.inf
KEY_MASKS = {  # the key masks a call can carry, in the report's words
    "keys": "some keys masked",
    "rows": "some rows fully masked",
    "padding": "padding: the first keys of each batch masked",
    "prefix": "a prefix-LM mask",
    "document": "a document mask",
}
MASK_FORMS = {  # how a kernel takes its mask argument (--mask), in the report's words
    "additive": "an additive bias: `--mask-value` on a masked key, 0 elsewhere",
    "keep": "a boolean mask that is true on the keys kept",
    "drop": "a boolean mask that is true on the keys dropped",
    "mask-mod": "a FlexAttention `mask_mod(b, h, q_idx, kv_idx)`, true on the keys kept",
    "block-mask": "a FlexAttention `BlockMask`, `create_block_mask` of that `mask_mod`",
}


def parse_window(text) -> tuple:
    """``--window W`` → (W − 1, −1); ``--window L,R`` → (L, R) (−1: no bound on that side); ValueError
    with the reason otherwise."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"expected W (a number of keys) or LEFT,RIGHT (whole numbers, -1 for no bound), "
                         f"got {text!r}") from None
    if len(values) == 1:
        if values[0] < 1:
            raise ValueError(f"a window of W keys has W >= 1, got {values[0]}")
        return (values[0] - 1, -1)
    if len(values) != 2 or any(v < -1 for v in values) or values == [-1, -1]:
        raise ValueError(f"expected LEFT,RIGHT, each a number of keys >= 0 or -1 for no bound (not both), "
                         f"got {text!r}")
    return tuple(values)


def window_text(window: tuple) -> str:
    left, right = window
    return f"({left}, {right})"


def window_arg(window: tuple, form: str):
    """The window as the kernel's keyword takes it: ``pair`` (left, right) as is, ``int`` the W of a
    window of W keys (left + 1; its right side is unbounded or causal)."""
    if not window:
        return (-1, -1) if form == "pair" else 0
    return tuple(int(v) for v in window) if form == "pair" else int(window[0]) + 1


def positions_keep(M: int, N: int, start_q: int, causal: bool, window: tuple = ()) -> np.ndarray:
    """(M, N) bool: key j is visible to query i (position start_q + i) under causality and a window."""
    pos = start_q + np.arange(M)[:, None]
    j = np.arange(N)[None, :]
    ok = np.ones((M, N), dtype=bool)
    if causal:
        ok &= j <= pos
    if window:
        left, right = window
        if left >= 0:
            ok &= j >= pos - left
        if right >= 0:
            ok &= j <= pos + right
    return ok


@lru_cache(maxsize=16)
def _condition(text: str):
    """The model mask ``text`` (derive.model.masks) as a function of 1-based positions i, j (numpy
    arrays) and its document-id table; the SymPy condition is the one definition."""
    import sympy as sp

    from derive.model.attention import i, j
    from derive.model.masks import parse_mask

    mask = parse_mask(text)
    ids = [f for f in mask.condition.atoms(sp.Function) if isinstance(f, sp.core.function.AppliedUndef)]
    names = sorted({type(f).__name__ for f in ids})
    return sp.lambdify((i, j, *[sp.Function(n) for n in names]), mask.condition, "numpy"), names


def model_keep(text: str, M: int, N: int, start_q: int, ids=None) -> np.ndarray:
    """(M, N) bool: the model mask ``text`` (``prefix_lm(P)``, ``document(IDS)``, ``causal``, ...) of
    :mod:`derive.model.masks` at the queries' positions start_q + i and the keys j (its 1-based i and
    j are those plus one); ``ids`` the document id of each position."""
    fn, names = _condition(text)
    i1, j1 = np.meshgrid(start_q + np.arange(M) + 1, np.arange(N) + 1, indexing="ij")
    table = np.asarray(ids if ids is not None else np.zeros(max(N, start_q + M)), dtype=np.int64)
    tables = [lambda x, t=table: t[np.asarray(x, dtype=np.int64)] for _ in names]
    return np.broadcast_to(np.asarray(fn(i1, j1, *tables), dtype=bool), (M, N)).copy()


def _key_keep(case) -> np.ndarray | None:
    """(B, M, N) bool of the case's key mask, or None without one."""
    B, M, N = case.B, case.M, case.N
    if not case.mask:
        return None
    b = np.arange(B)[:, None, None]
    i = np.arange(M)[None, :, None]
    j = np.arange(N)[None, None, :]
    if case.mask == "given":  # the −∞ scores of rows realised exactly (the kernel forms' rows)
        return case.given()
    if case.mask == "keys":  # a pattern, and (long rows, not causal) the first 16 keys masked: a whole tile
        hit = ((j + i + b) % 3 == 2) | ((N > 16) & (j < 16) & (not case.causal))
        return ~np.broadcast_to(hit, (B, M, N))
    if case.mask == "rows":  # every other row fully masked
        return ~np.broadcast_to((i + b) % 2 == 1, (B, M, N))
    if case.mask == "padding":  # left padding: batch b masks its first pad >> b keys (every query)
        pads = np.array([case.pad >> bb for bb in range(B)])[:, None, None]
        return np.broadcast_to(j >= pads, (B, M, N)).copy()
    if case.mask == "prefix":  # the model's prefix_lm(P): the first P keys for every query, the rest causally
        one = model_keep(f"prefix_lm({case.pad})", M, N, case.start_q)
        return np.broadcast_to(one, (B, M, N)).copy()
    if case.mask == "document":  # the model's document(IDS): documents of pad keys, batch b shifted by b
        rows = [model_keep("document(IDS)", M, N, case.start_q,
                           ids=(np.arange(max(N, case.start_q + M)) + bb) // max(1, case.pad)) for bb in range(B)]
        return np.stack(rows)
    raise ValueError(f"unknown key mask {case.mask!r}")


def keep(case) -> np.ndarray:
    """(B, M, N) bool: the keys each query of ``case`` sees (causality, the window, the key mask)."""
    pos = positions_keep(case.M, case.N, case.start_q, case.causal, case.window)
    key = _key_keep(case)
    out = np.broadcast_to(pos, (case.B, case.M, case.N))
    return (out & key) if key is not None else out.copy()


def lower(case, in_mask: tuple, form: str, value: float):
    """(the kernel's mask argument in canonical shape (B, 1, M, N), the reference's finite bias
    (B, M, N) or None): the key mask and the parts of ``in_mask`` (``causal``, ``window``: those the
    kernel takes through its mask, having no keyword for them) in ``form`` (:data:`MASK_FORMS`); for
    an additive mask of finite ``value`` the masked keys stay visible to the definition with that
    value added. None, None when the mask argument has nothing to carry."""
    key = _key_keep(case)
    part = None if key is None else key
    if in_mask:
        pos = positions_keep(case.M, case.N, case.start_q, case.causal and "causal" in in_mask,
                             case.window if "window" in in_mask else ())
        part = pos[None] if part is None else part & pos[None]
        part = np.broadcast_to(part, (case.B, case.M, case.N))
    if part is None:
        return None, None
    kept = np.ascontiguousarray(part)[:, None]
    if form == "additive":
        arg = np.where(kept, 0.0, value)
        return arg, (np.where(part, 0.0, value) if math.isfinite(value) else None)
    if form == "drop":
        return ~kept, None
    return kept.copy(), None  # keep, mask-mod, block-mask: the child builds the last two from it
