"""The inputs of the kernel-form check (:mod:`derive.impl.forms.kernel`): the fixed rows, values and
cotangents, the tile sizes and split counts of the fixed lists, and the Hypothesis strategy of the
search after them."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from hypothesis import strategies as st

from derive.impl.cases.rows import _long_row, score_rows
from derive.normalizers.family import kernel_form
from derive.normalizers.registry import get as get_normalizer, names, on_use

__all__ = ["DV", "FIXED_LISTS", "FORMS", "HEADS", "LONG_DV", "LONG_ROWS", "LSE_CONVENTIONS",
           "MAX_PARTS", "MIN_ROWS", "ROWS", "SEARCH_EXAMPLES", "SETS_PER_PARTITION", "SINK_VALUES", "blocks",
           "dout_row", "extra_logits", "filler", "kernel_cases", "lengths", "rows_of", "split_counts", "values"]

INF = math.inf
FORMS = ("online", "split", "backward")
LSE_CONVENTIONS = ("natural", "base2", "kv-only")
LSE_WORDS = {"natural": "ln(e^σ + Σ e^x)", "base2": "log₂(e^σ + Σ e^x)",  # each convention in words
             "kv-only": "ln Σ e^x, without the extra logit"}
LOG2E = 1.0 / math.log(2.0)



@on_use
def extra_logits() -> dict[str, object]:
    """Registered normalizer with a checked kernel form → its extra logit: None (none), a number, the
    name of the parameter, or an expression in the parameters; read off each entry's formula
    (:func:`derive.normalizers.family.kernel_form`) in the registry as it is when asked."""
    return {name: facts.logit for name in names() if (facts := kernel_form(get_normalizer(name))).checked}


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
            "n, n + 1 and 2n + 3) with every sink value for n ≤ 64; for n = 200, 1024 and 1025 (the last the "
            "rows of calls of the attention model: dense, a ramp, padding) tiles of 16, 64, 128, 256 and n keys "
            "and 3, 8 and 64 splits, head dimensions 64 and 128, a sink value each in turn; 16 rows per call",
    "interpreter": f"the interpreter list (the target runs under Triton's CPU interpreter), at most {MAX_PARTS} "
                   f"tiles or splits per row of up to 64 keys and the sink values spread over the tile sizes and "
                   f"split counts, "
                   f"{SETS_PER_PARTITION} per partition in turn; for n = 200 and 1024 tiles of 64, 128, 256 "
                   f"and n keys (and 16 at n = 1024) and 3, 8 and 64 splits; 16 rows per call",
}
SEARCH_EXAMPLES = 20  # Hypothesis examples per dtype after the fixed list (a count; --examples sets it)
SEARCH_MAX_N = 12  # keys per searched short row (split, backward)
SEARCH_MAX_BLOCK, SEARCH_MAX_TILES = 6, 4  # online: tiles of 1 to 6 keys, up to 3 full ones and a partial one
SEARCH_LONG_N = (65, 200, 1024, 1100)  # the search's long rows: several tiles of the real block sizes
DV = 3  # value dimension of the short rows
MIN_ROWS = 16  # rows per call: the listed ones, then filler rows (a fault from the 9th row on shows)
LONG_BLOCKS = (16, 64, 128, 256)  # long rows: real tile sizes (16: 64 tiles of a row of 1024 keys) and n
LONG_SPLITS = (3, 8, 64)  # and real split counts
LONG_DV = (64, 128)  # and real head dimensions, in turn

# rows per length, simplest first
ROWS: dict[int, tuple[tuple[float, ...], ...]] = {
    0: ((),),
    1: ((0.0,), (1.0,), (-INF,), (1e4,)),
    2: ((0.0, 0.0), (1.0, 3.0), (3.0, 1.0), (-INF, 2.0), (-INF, -INF), (1e4, -1e4), (-INF, -1000.0)),
    3: ((1.0, 1.0, 1.0), (2.0, -1.0, 0.5), (-INF, -INF, 1.0), (1e4, 0.0, -1e4), (-1e4, -1e4, -INF),
        (-INF, -1000.0, -1001.0)),
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


def _long_rows(n: int) -> tuple[tuple[float, ...], ...]:
    """Rows of n > 64 keys: the maximum growing in every tile or only in the last one, a spike
    past key 64 and past tile 20 of 16 keys, masked first splits, masked blocks, a guard row
    ([−∞, …, −∞, −1000]), large magnitudes, a fully masked row."""
    t = range(n)
    late = min(n - 1, 700)
    return (
        tuple(round(-8.0 + 16.0 * k / n + 0.25 * math.sin(k), 6) for k in t),
        tuple(round(8.0 - 16.0 * k / n + 0.25 * math.cos(k), 6) for k in t),
        tuple(30.0 if k == n - 1 else round(math.sin(2.1 * k), 6) for k in t),
        tuple(25.0 if k == late else round(2.0 * math.cos(0.7 * k), 6) for k in t),
        tuple(-INF if k < n // 2 else round(4.0 * k / n, 6) for k in t),
        tuple(-INF if (k // 64) % 2 == 0 else round(10.0 + math.sin(k), 6) for k in t),
        tuple(-1000.0 if k == n - 1 else -INF for k in t),
        tuple(float(-1000 - (k % 3)) if k >= n - 3 else -INF for k in t),
        tuple(1e3 if k % 2 else -1e3 for k in t),
        tuple(round(3.0 * math.sin(2.1 * k) * math.cos(0.37 * k), 6) for k in t),
        tuple(1e4 if k == min(n - 1, 900) else 0.0 for k in t),
        (-INF,) * n,
    )


def _projected(n: int) -> tuple[tuple[float, ...], ...]:
    """Rows of n keys projected from calls of the one call model (:func:`derive.impl.cases.attention.call_rows`):
    the last queries of a causal call of dense scores over 2 query heads sharing a kv head, a ramp
    to scores of about 140 (the running maximum grows in every tile), and two batches padded by 256
    and 128 keys (whole tiles masked before the visible keys)."""
    from derive.impl.cases.attention import Case, call_rows

    calls = (Case("very-long", H=2, Hkv=1, M=2, N=n, D=64, causal=True, start_q=n - 2),
             Case("very-long", H=2, M=2, N=n, D=64, pattern="ramp"),
             Case("padding", B=2, M=2, N=n, D=64, mask="padding", pad=256))
    return tuple(tuple(row) for c in calls for row in call_rows(c).tolist())


PROJECTED = 1025  # the length of the rows projected from the call model: no multiple of any tile
LONG_ROWS: dict[int, tuple[tuple[float, ...], ...]] = {**{n: _long_rows(n) for n in (200, 1024)},
                                                       PROJECTED: _projected(PROJECTED)}


def filler(n: int, k: int) -> tuple[float, ...]:
    """Filler row k of n keys (rows after the listed ones, up to MIN_ROWS per call): finite scores
    that differ from row to row, every fourth with every third key masked."""
    return tuple(-INF if k % 4 == 3 and t % 3 == 1 else round(4.0 * math.sin(1.3 * t + 0.7 * k) + (k % 5) - 2.0, 6)
                 for t in range(n))


def rows_of(n: int) -> tuple[tuple[float, ...], ...]:
    """The rows of one call for length n: the listed ones, then filler rows up to MIN_ROWS."""
    listed = ROWS.get(n) or LONG_ROWS[n]
    return tuple(listed) + tuple(filler(n, k) for k in range(len(listed), MIN_ROWS))


def lengths(thin: bool = False) -> list[int]:
    """The row lengths of the fixed list (the interpreter list: without the projected rows of 1025 keys)."""
    return sorted(ROWS) + sorted(n for n in LONG_ROWS if not (thin and n == PROJECTED))


def values(n: int, r: int, dv: int = DV) -> np.ndarray:
    """The values of row r: v[t, k] = ((3(t + r) + 5k) mod 7 − 3)/2 + k for dv ≤ 3, and
    ((3(t + r) + 5k) mod 7 − 3)/2 + ((t + r + k) mod 11 − 5)/4 for a real head dimension (small
    multiples of 1/4, exact in every dtype; the value row repeats every 77 keys)."""
    return _values(n, r, dv).copy()


@lru_cache(maxsize=256)
def _values(n: int, r: int, dv: int) -> np.ndarray:
    t = np.arange(n)[:, None] + r
    k = np.arange(dv)[None, :]
    if dv <= DV:
        return ((3 * t + 5 * k) % 7 - 3) / 2.0 + k
    return ((3 * t + 5 * k) % 7 - 3) / 2.0 + ((t + k) % 11 - 5) / 4.0


def dout_row(r: int, k: int = 0, dv: int = DV) -> np.ndarray:
    """The cotangent of row r in the k-th backward call (not constant: ⟨g, v_t⟩ varies with t)."""
    base = np.array([1.0, -0.5, 2.0]) if k == 0 else np.array([-3.0, 0.25, 1.5])
    g = np.resize(base, dv) * (1.0 + (np.arange(dv) // 3 % 4) / 4.0)
    return g * (1.0 + (r % 3) / 2.0)


def blocks(n: int, thin: bool = False) -> list[int]:
    """Tile sizes for rows of n keys: one key, a few, 16 and 32, one tile (n, n + 1); for n > 64
    the real sizes 16, 64, 128, 256 and one tile. ``thin`` (the interpreter list): at most
    MAX_PARTS tiles, the smallest block that keeps to it standing in for the smaller ones."""
    if n > 64:
        return sorted({b for b in LONG_BLOCKS if b < n and (not thin or b >= 64 or n > 256)} | {n})
    fit = -(-n // MAX_PARTS) if n and thin else 1
    return sorted({b for b in (1, 2, 3, 16, 32, n, n + 1) if fit <= b <= n + 1} | {fit})


def split_counts(n: int, thin: bool = False) -> list[int]:
    """Split counts for rows of n keys: 1, 2, 3, 8, a key per split, empty splits (n + 1, 2n + 3);
    for n > 64 the real counts 3, 8 and 64. ``thin`` (the interpreter list): at most MAX_PARTS
    splits (MAX_PARTS itself for longer rows), 8 once n ≥ 8; 3, 8 and 64 for n > 64."""
    if n > 64:
        return list(LONG_SPLITS)
    if not thin:
        return sorted({s for s in (1, 2, 3, 8, n, n + 1, 2 * n + 3) if s >= 1})
    return sorted({s for s in (1, 2, 3, n, n + 1, 2 * n + 3) if 1 <= s <= MAX_PARTS}
                  | ({8} if n >= 8 else set()) | ({MAX_PARTS} if n > MAX_PARTS else set()))


@st.composite
def kernel_cases(draw, form: str, free: dict, sets: int, long: bool = False, sinks: tuple = SINK_VALUES):
    """(rows of scores, block | splits | cotangent index, parameter sets), simplest first: short rows
    of any scores, or with ``long`` rows of SEARCH_LONG_N keys (drawn from a seed, scale and pattern,
    as the row form's) in real tile sizes or up to 64 splits. ``free``: parameter → its strategy
    (:func:`derive.impl.cases.rows.param_strategy`), mixed with the values ``sinks`` (a sink logit's;
    none for a normalizer without one)."""
    if long:
        n = draw(st.sampled_from(SEARCH_LONG_N))
        third = {"online": st.sampled_from(LONG_BLOCKS), "split": st.integers(1, 64)}.get(form, st.integers(0, 1))
        third = draw(third)
        rows = [_long_row(draw, n, True) for _ in range(draw(st.integers(1, 3)))]
        value = {p: st.one_of(st.sampled_from(sinks), free[p]) if sinks else free[p] for p in free}
        return rows, third, [{p: draw(value[p]) for p in free} for _ in range(sets)]
    if form == "online":  # the partition first: full tiles of `block` keys and a partial last one
        third = draw(st.integers(1, SEARCH_MAX_BLOCK))
        n = third * draw(st.integers(0, SEARCH_MAX_TILES - 1)) + draw(st.integers(0, third - 1))
    elif form == "split":
        n, third = draw(st.integers(0, SEARCH_MAX_N)), draw(st.integers(1, 8))
    else:
        n, third = draw(st.integers(0, SEARCH_MAX_N)), draw(st.integers(0, 1))
    rows = [draw(score_rows(n, True))
            for _ in range(draw(st.integers(1, 3)))]
    value = {p: st.one_of(st.sampled_from(sinks), free[p]) if sinks else free[p] for p in free}
    return rows, third, [{p: draw(value[p]) for p in free} for _ in range(sets)]

