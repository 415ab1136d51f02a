"""The counterexample search of ``derive impl --form attention``, after its fixed list.

The fixed list (:func:`derive.impl.cases.attention.cases`) has one case per feature at a few
sizes; a fault that shows only at another shape (a key length past a chunk boundary, a query
count between the listed ones, a head dimension it never uses) passes it. The search draws
whole calls inside the stated contract — batch and heads (where the layout has them), query and
key lengths (short ones up to :data:`SEARCH_MAX_N`, and long ones of :data:`SEARCH_LONG_N`
keys, which cross the chunk and tile boundaries of real kernels), head dimensions, the causal
flag, the decode offset, the window, the mask, the sinks and the tile size where the kernel
takes them — and the scores: the dense pattern, a ramp, or q, k and v drawn from a seed at an
amplitude up to scores of ±1e3. It runs with the one search of ``derive impl``
(:func:`derive.impl.cases.rows.search`: Hypothesis derandomized, no database, a count of examples,
then its shrinker), so a failing call is shrunk to the simplest one Hypothesis can find, and
is filed like a fixed case, under the classes it belongs to
(:func:`derive.impl.cases.attention.case_classes`).
"""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import strategies as st

from derive.impl.cases.attention import EXTREME_SINKS, ORDINARY_SINKS, Case, Setup, case_classes

__all__ = ["SEARCH_BLOCKS", "SEARCH_LONG_N", "SEARCH_MAX_N", "drawn_cases"]

INF = math.inf
SEARCH_MAX_N = 20  # keys and queries of a short drawn call
SEARCH_LONG_N = (65, 100, 129, 200, 257)  # keys of a long drawn call: past 64, 128 and 256 (chunk boundaries)
SEARCH_BLOCKS = (1, 2, 3, 4, 8, 16, 32, 64, 128)  # tile sizes drawn when the kernel takes one
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
    B = draw(st.integers(1, 2)) if setup.has_batch else 1
    H = draw(st.integers(1, 3)) if setup.has_heads else 1
    D = draw(st.sampled_from(HEAD_DIMS))
    Dv = D if c.equal_head_dims else draw(st.one_of(st.just(D), st.sampled_from(HEAD_DIMS)))
    causal = setup.causal or ("causal" in takes and draw(st.booleans()))
    if setup.start_q == "end":
        start_q = N - M
    elif isinstance(setup.start_q, int):
        start_q = setup.start_q
    elif "start_q" in takes:
        start_q = draw(st.integers(0, max(0, N - M)))
    else:
        start_q = 0
    window = setup.window or (draw(st.integers(0, N)) if "window" in takes else 0)
    if long and (causal or window) and start_q + M < N and not c.equal_lengths:
        # a causal query at position p sees keys 0..p, a window keys p − W + 1..: a few queries at the start see
        # none of the long row's later tiles, nor a fully masked tile inside the row, so a long call with such a
        # mask runs the queries up to the last key (as the fixed list's long causal rows do)
        if "start_q" in takes and not isinstance(setup.start_q, int) and setup.start_q != "end":
            start_q = N - M
        else:
            M = N - start_q
    masks = ["", "keys"] + ([] if c.no_fully_masked else ["rows"])
    mask = draw(st.sampled_from(masks)) if "mask" in takes else ""
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
    pattern = draw(st.sampled_from(("dense", "ramp", "drawn")))
    seed, amp = 0, 1.0
    if pattern == "drawn":
        seed, amp = draw(st.integers(0, 2**16)), draw(st.sampled_from(AMPLITUDES))
    case = Case("finite", B=B, H=H, M=M, N=N, D=D, Dv=Dv, start_q=start_q, causal=causal, window=window, mask=mask,
                sinks=sinks, block=block, pattern=pattern, seed=seed, amp=amp)
    return replace(case, cls=case_classes(case, setup)[0])
