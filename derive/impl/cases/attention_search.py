"""The counterexample search of ``derive impl --form attention``, after its fixed list.

The fixed list (:func:`derive.impl.cases.fixed.cases`) has one case per feature at a few
sizes; a fault that shows only at another shape (a key length past a chunk boundary, a query
count between the listed ones, a head dimension it never uses) passes it. The search draws
whole calls inside the stated contract — batch and heads (where the layout has them), query and
key lengths (short ones up to :data:`SEARCH_MAX_N`, and long ones of :data:`SEARCH_LONG_N`
keys, which cross the chunk and tile boundaries of real kernels), head dimensions, kv-head groups of 1, 2, 4 and 8 (``--gqa``), the causal
flag, the decode offset, the window (an int or a (left, right) pair, as the kernel takes it), the
mask (a pattern, padding, fully masked rows), the sinks, the tile size and the split count where
the kernel takes them — and the scores: the dense pattern, a ramp, or q, k and v drawn from a seed at an
amplitude up to scores of ±1e3. It runs with the one search of ``derive impl``
(:func:`derive.impl.cases.rows.search`: Hypothesis derandomized, no database, a count of examples,
then its shrinker), so a failing call is shrunk to the simplest one Hypothesis can find, and
is filed like a fixed case, under the classes it belongs to
(:func:`derive.impl.cases.attention.case_classes`). A drawn call is fitted to the contract as a
fixed one is (:func:`derive.impl.cases.fixed.fit`).
"""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import assume
from hypothesis import strategies as st

from derive.impl.cases.attention import EXTREME_SINKS, ORDINARY_SINKS, Case, Setup, case_classes
from derive.impl.cases.fixed import fit

__all__ = ["SEARCH_BLOCKS", "SEARCH_LONG_N", "SEARCH_MAX_N", "drawn_cases"]

INF = math.inf
SEARCH_MAX_N = 20  # keys and queries of a short drawn call
SEARCH_LONG_N = (65, 100, 129, 200, 257, 513, 1025)  # keys of a long drawn call: past 64, 128, 256, 512, 1024
SEARCH_BLOCKS = (1, 2, 3, 4, 8, 16, 32, 64, 128, 256)  # tile sizes drawn when the kernel takes one
GROUPS = (1, 2, 4, 8)  # query heads per kv head drawn with --gqa
HEAD_DIMS = (16, 8, 32, 64)
AMPLITUDES = (1.0, 4.0, 30.0, 1e3)  # the drawn scores' scale


def _sink(contract):
    if contract.sinks is not None:
        lo, hi = contract.sinks
        inside = [s for s in ORDINARY_SINKS + EXTREME_SINKS if contract.sink_ok(s)]
        return st.one_of(st.sampled_from(inside + list(contract.sinks)), st.floats(lo, hi, allow_nan=False))
    return st.one_of(st.sampled_from(ORDINARY_SINKS + EXTREME_SINKS), st.floats(-50, 50, allow_nan=False))


@st.composite
def drawn_cases(draw, setup: Setup):
    """A call inside ``setup``'s contract, simplest first (one batch and head, short rows, the dense
    pattern, no optional feature)."""
    c = setup.contract
    takes = setup.takes
    long = draw(st.booleans())
    M = draw(st.integers(1, 4 if long else SEARCH_MAX_N))
    N = draw(st.sampled_from(SEARCH_LONG_N) if long else st.integers(max(1, c.min_keys), SEARCH_MAX_N))
    if c.equal_lengths:
        M = N
    N = max(N, c.min_keys)
    if c.queries_le_keys:
        M = min(M, N)
    B = draw(st.integers(1, 2)) if setup.has_batch else 1
    H, Hkv = (draw(st.integers(1, 3)) if setup.has_heads else 1), 0
    if setup.gqa and setup.has_heads:
        Hkv = draw(st.integers(1, 2))
        H = Hkv * draw(st.sampled_from(GROUPS))
    D = draw(st.sampled_from(HEAD_DIMS))
    Dv = D if c.equal_head_dims else draw(st.one_of(st.just(D), st.sampled_from(HEAD_DIMS)))
    causal = setup.causal or (setup.causal_by in ("flag", "mask") and draw(st.booleans()))
    if setup.start_q == "end":
        start_q = N - M
    elif isinstance(setup.start_q, int):
        start_q = setup.start_q
    elif "start_q" in takes:
        start_q = draw(st.integers(0, max(0, N - M)))
    else:
        start_q = 0
    window = setup.window
    if not window and setup.window_by is not None and draw(st.booleans()):
        left = draw(st.integers(0, N))
        pair = setup.window_form == "pair" or setup.window_by == "mask"
        right = draw(st.integers(-1, N)) if pair else -1
        window = (left, right)
    if long and (causal or window) and start_q + M < N and not c.equal_lengths:
        # a causal query at position p sees keys 0..p, a window keys p − W + 1..: a few queries at the start see
        # none of the long row's later tiles, nor a fully masked tile inside the row, so a long call with such a
        # mask runs the queries up to the last key (as the fixed list's long causal rows do)
        if "start_q" in takes and not isinstance(setup.start_q, int) and setup.start_q != "end":
            start_q = N - M
        else:
            M = N - start_q
    masks = ["", "keys", "padding"] + ([] if c.no_fully_masked else ["rows"])
    mask = draw(st.sampled_from(masks)) if "mask" in takes else ""
    pad = draw(st.integers(1, N)) if mask == "padding" else 0
    if setup.extra is None:
        sinks = None
    elif setup.extra == "sinks":
        sinks = tuple(draw(_sink(c)) for _ in range(H))
    else:
        sinks = (float(setup.extra),) * H
    block = 0
    if "block" in takes:
        sizes = [b for b in SEARCH_BLOCKS if c.block_ok(b) and (b >= 16 or not setup.thin)]
        block = draw(st.sampled_from(sizes)) if sizes else 0
    splits = 0
    if "splits" in takes:
        counts = [s for s in range(1, 65) if c.splits_ok(s)]
        splits = draw(st.sampled_from(counts)) if counts else 0
    pattern = draw(st.sampled_from(("dense", "ramp", "drawn")))
    seed, amp = 0, 1.0
    if pattern == "drawn":
        seed, amp = draw(st.integers(0, 2**16)), draw(st.sampled_from(AMPLITUDES))
    case = fit(Case("finite", B=B, H=H, Hkv=Hkv, M=M, N=N, D=D, Dv=Dv, start_q=start_q, causal=causal,
                    window=window, mask=mask, pad=pad, sinks=sinks, block=block, splits=splits, pattern=pattern,
                    seed=seed, amp=amp), setup)
    assume(case is not None)
    return replace(case, cls=case_classes(case, setup)[0])
