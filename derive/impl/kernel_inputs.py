"""The inputs of the kernel-form check (:mod:`derive.impl.kernel`): the fixed rows, values and
cotangents, the tile sizes and split counts of the fixed lists, and the Hypothesis strategy of the
search after them."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from derive.impl.inputs import _entry, _param
from derive.normalizers.family import kernel_form
from derive.normalizers.registry import get as get_normalizer, names

__all__ = ["DV", "EXTRA_LOGIT", "FIXED_LISTS", "FORMS", "HEADS", "LSE_CONVENTIONS", "MAX_PARTS", "ROWS",
           "SEARCH_EXAMPLES", "SETS_PER_PARTITION", "SINK_VALUES", "blocks", "dout_row", "kernel_cases",
           "split_counts", "values"]

INF = math.inf
FORMS = ("online", "split", "backward")
LSE_CONVENTIONS = ("natural", "base2", "kv-only")
LOG2E = 1.0 / math.log(2.0)

# registered normalizer with a checked kernel form → its extra logit: None (none), a number, or the
# name of the parameter; read off each entry's formula (derive.normalizers.family)
EXTRA_LOGIT: dict[str, object] = {name: facts.logit for name in names()
                                  if (facts := kernel_form(get_normalizer(name))).checked}
SINK_VALUES = (0.0, 1.5, -2.0, 30.0, -30.0, -INF, 1e4)
# the interpreter list only (a target run by Triton's CPU interpreter, which pays milliseconds per program
# and per tile): sink values per tile size or split count, spread over the partitions rather than crossed
# with them, and tiles or splits per row
SETS_PER_PARTITION = 1
MAX_PARTS = 17
HEADS = 2  # per-head parameters (--per-head): heads per call, each with its own sink value
# which fixed list a check used (KernelChecker.thin), in the report's words
FIXED_LISTS = {
    "full": "the full list, every tile size (1, 2, 3, 16, 32, n and n + 1 keys) and split count (1, 2, 3, 8, "
            "n, n + 1 and 2n + 3) with every sink value",
    "interpreter": f"the interpreter list (the target runs under Triton's CPU interpreter), at most {MAX_PARTS} "
                   f"tiles or splits per row and the sink values spread over the tile sizes and split counts, "
                   f"{SETS_PER_PARTITION} per partition in turn",
}
SEARCH_EXAMPLES = 20  # Hypothesis examples per dtype after the fixed list (a count; --examples sets it)
SEARCH_MAX_N = 12  # keys per searched row (split, backward)
SEARCH_MAX_BLOCK, SEARCH_MAX_TILES = 6, 4  # online: tiles of 1 to 6 keys, up to 3 full ones and a partial one
DV = 3

# rows per length, simplest first
ROWS: dict[int, tuple[tuple[float, ...], ...]] = {
    0: ((),),
    1: ((0.0,), (1.0,), (-INF,), (1e4,)),
    2: ((0.0, 0.0), (1.0, 3.0), (3.0, 1.0), (-INF, 2.0), (-INF, -INF), (1e4, -1e4)),
    3: ((1.0, 1.0, 1.0), (2.0, -1.0, 0.5), (-INF, -INF, 1.0), (1e4, 0.0, -1e4), (-1e4, -1e4, -INF)),
    5: ((-2.0, -1.0, 0.0, 1.0, 2.0), (0.0, 0.0, 5.0, 5.0, -INF), (-INF, -INF, -INF, 1.0, 2.0),
        (30.0, 20.0, -INF, 25.0, 40.0), (-INF,) * 5),
    8: ((7.25, -3.5, 0.125, 9.0, -0.0625, 1.0, 2.0, -8.0), tuple(4.0 * k for k in range(8)),
        (-100.0, -INF, -INF, -INF, 100.0, 99.0, 100.0, -100.0), (1e3, 0.0, -1e3, 5.0, 5.0, 5.0, 5.0, 5.0)),
    17: (tuple(round(8.0 * k / 17 + 0.25 * math.sin(k), 6) for k in range(17)),
         tuple(-INF if k < 8 else float(k % 5) for k in range(17))),
    40: (tuple(round(-4.0 + 8.0 * k / 40 + 0.25 * math.sin(k), 6) for k in range(40)),
         tuple(-INF if k % 16 < 8 else round(20.0 + math.cos(k), 6) for k in range(40))),
    64: (tuple(round(30.0 * math.sin(1.7 * k) * math.cos(0.3 * k), 6) for k in range(64)),
         tuple(-INF if 16 <= k < 48 else round(0.5 * k - 10.0, 6) for k in range(64))),
}


def values(n: int, r: int) -> np.ndarray:
    """The values of row r: v[t, k] = ((3(t + r) + 5k) mod 7 − 3)/2 + k, exact in every dtype."""
    t = np.arange(n)[:, None] + r
    k = np.arange(DV)[None, :]
    return ((3 * t + 5 * k) % 7 - 3) / 2.0 + k


def dout_row(r: int, k: int = 0) -> np.ndarray:
    """The cotangent of row r in the k-th backward call (not constant: ⟨g, v_t⟩ varies with t)."""
    base = np.array([1.0, -0.5, 2.0]) if k == 0 else np.array([-3.0, 0.25, 1.5])
    return base * (1.0 + (r % 3) / 2.0)


def blocks(n: int, thin: bool = False) -> list[int]:
    """Tile sizes for rows of n keys: one key, a few, 16 and 32, one tile (n, n + 1). ``thin``
    (the interpreter list): at most MAX_PARTS tiles, the smallest block that keeps to it standing
    in for the smaller ones."""
    fit = -(-n // MAX_PARTS) if n and thin else 1
    return sorted({b for b in (1, 2, 3, 16, 32, n, n + 1) if fit <= b <= n + 1} | {fit})


def split_counts(n: int, thin: bool = False) -> list[int]:
    """Split counts for rows of n keys: 1, 2, 3, 8, a key per split, empty splits (n + 1, 2n + 3).
    ``thin`` (the interpreter list): at most MAX_PARTS splits (MAX_PARTS itself for longer rows),
    8 once n ≥ 8."""
    if not thin:
        return sorted({s for s in (1, 2, 3, 8, n, n + 1, 2 * n + 3) if s >= 1})
    return sorted({s for s in (1, 2, 3, n, n + 1, 2 * n + 3) if 1 <= s <= MAX_PARTS}
                  | ({8} if n >= 8 else set()) | ({MAX_PARTS} if n > MAX_PARTS else set()))



@st.composite
def kernel_cases(draw, form: str, free: tuple, sets: int):
    """(rows of scores, block | splits | cotangent index, parameter sets), simplest first."""
    if form == "online":  # the partition first: full tiles of `block` keys and a partial last one
        third = draw(st.integers(1, SEARCH_MAX_BLOCK))
        n = third * draw(st.integers(0, SEARCH_MAX_TILES - 1)) + draw(st.integers(0, third - 1))
    elif form == "split":
        n, third = draw(st.integers(0, SEARCH_MAX_N)), draw(st.integers(1, 8))
    else:
        n, third = draw(st.integers(0, SEARCH_MAX_N)), draw(st.integers(0, 1))
    rows = [draw(st.one_of(st.lists(_entry(True), min_size=n, max_size=n), st.just([-INF] * n)))
            for _ in range(draw(st.integers(1, 3)))]
    value = {p: st.one_of(st.sampled_from(SINK_VALUES), _param(p)) for p in free}
    return rows, third, [{p: draw(value[p]) for p in free} for _ in range(sets)]

