"""The inputs that matter, as Hypothesis strategies and as fixed edge cases.

Hypothesis draws the leading (batch, head) dimensions first, then the row length, then
every score; the first branch of each choice is the simplest, so a failing input shrinks
to the shortest row of the smallest numbers: small integers, then ordinary floats, then
the specials (±1e4, ±100, −∞), then floats up to ±1e4. Rows without masked entries are
drawn first (so a counterexample is unmasked where possible), then rows that may hold
−∞ entries or be entirely masked (every score −∞).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

__all__ = ["EDGE_ROWS", "MAX_N", "PROBE_PARAMS", "PROBE_ROWS", "cases", "lead_ndim"]

INF = math.inf
MAX_N = 8
SPECIALS = (1e4, -1e4, 100.0, -100.0, 1e3, -INF)

# Always checked (after Hypothesis), simplest first.
EDGE_ROWS: tuple[tuple[float, ...], ...] = (
    (0.0,), (1.0,), (-1.0,), (0.0, 0.0), (1.0, 1.0, 1.0), (2.0, -1.0, 0.5), (3.0, 1.0),
    (-INF,), (-INF, -INF, -INF), (0.0, -INF), (3.0, -INF, 1.0, -INF),
    (1e4,), (-1e4,), (1e4, 1e4), (-1e4, -1e4), (1e4, -1e4), (1e4, -INF), (-1e4, -INF, -1e4),
    (100.0, 99.0), (-100.0, -101.0), (20.0, 10.0), (-20.0, 5.0), (0.5, 0.25, -0.75, 2.0),
    (1e3, 0.0, -1e3), (7.25, -3.5, 0.125, 9.0, -0.0625, 1.0, 2.0, -8.0),
)

# Rows on which diagnosis compares the implementation with each faulty form: they tell
# the faulty forms apart (shift, sink, units, overflow, masking).
PROBE_ROWS: tuple[tuple[float, ...], ...] = (
    (1.0,), (-2.0,), (0.5, -1.0), (3.0, 1.0), (1.0, 0.0), (1.0, -1.0), (2.0, 1.0), (1.0, 1.0),
    (1.6931471805599454,), (0.0, -INF), (-INF, -INF), (-1.5, -INF, 2.5), (1e4,), (1e4, -1e4),
    (-1e4, -1e4), (100.0, 99.0), (20.0, 10.0), (-20.0, 5.0),
)
PROBE_PARAMS = (1.5, -0.75)  # values of each free parameter during diagnosis


def lead_ndim(dim: int) -> int:
    """How many leading axes the input needs so that ``dim`` is a valid axis."""
    return dim if dim >= 0 else -dim - 1


def _entry(masked: bool):
    return st.one_of(
        st.integers(-3, 3).map(float),
        st.floats(-10, 10, allow_nan=False, allow_infinity=False),
        st.sampled_from(SPECIALS if masked else SPECIALS[:-1]),
        st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False),
    )


def _param():
    return st.one_of(st.integers(-3, 3).map(float),
                     st.floats(-10, 10, allow_nan=False, allow_infinity=False))


@st.composite
def cases(draw, min_lead: int, free_params: tuple[str, ...], masked: bool):
    """(scores of shape (*lead, n), parameters) with the normalized axis last.

    With ``masked`` False every score is finite; with True a score may be −∞ and a whole
    row may be masked.
    """
    lead = draw(st.lists(st.integers(1, 2), min_size=min_lead, max_size=min_lead + 2))
    n = draw(st.integers(1, MAX_N))
    rows = []
    for _ in range(int(np.prod(lead, dtype=int))):
        free = st.lists(_entry(masked), min_size=n, max_size=n)
        row = draw(st.one_of(free, st.just([-INF] * n)) if masked else free)
        rows.append(row)
    params = {p: draw(_param()) for p in free_params}
    return np.array(rows, dtype=np.float64).reshape(*lead, n), params
