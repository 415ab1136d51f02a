"""The inputs that matter, as Hypothesis strategies and as fixed edge cases.

Hypothesis draws the leading (batch, head) dimensions first, then the row length, then
every score; the first branch of each choice is the simplest, so a failing input shrinks
to the shortest row of the smallest numbers: small integers, then ordinary floats, then
the specials (±1e4, ±100, 20–40, −∞), then a number in every decade from 1e-3 to 1e4,
then floats in ±100 and up to ±1e4. Rows without masked entries are drawn first (so a
counterexample is unmasked where possible), then rows that may hold −∞ entries or be
entirely masked (every score −∞).

Long rows reach faults of tiled (flash-style) code: some inputs have rows of
:data:`LONG_N` keys (17 to 512: several tiles of the common block sizes 16, 32, 64, 128),
made from a drawn seed, scale and pattern — Gaussian, an increasing ramp (the running
maximum grows from tile to tile), or a spike in the last tile. Gradients are compared on
short rows only. :func:`special_rows` adds rows where a normalizer's own formula switches
branch (clipped softmax at (ζ − γ)p + γ = 0 and = 1), read off the formula.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from derive.crosscheck.hypothesis_env import no_local_constants

__all__ = ["search", "param_sets", "param_strategy", "EDGE_ROWS", "LONG_N", "MAX_N", "PROBE_ROWS", "cases", "lead_ndim", "special_rows"]

INF = math.inf
MAX_N = 8
LONG_N = (17, 33, 65, 129, 200, 257, 512)
SPECIALS = (1e4, -1e4, 100.0, -100.0, 1e3, 25.0, -25.0, 30.0, 40.0, 60.0)


def search(strategy, fails, budget: int):
    """The simplest drawn case for which ``fails`` holds (Hypothesis derandomized, no database, no
    local constants, ``budget`` examples, then its shrinker), or None: the one search of
    ``derive impl``, row and kernel forms alike."""
    try:
        with no_local_constants():
            return find(strategy, fails, settings=settings(
                max_examples=budget, derandomize=True, database=None, deadline=None,
                phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        return None


def _long(n: int, start: float = 0.0) -> tuple[float, ...]:
    """A deterministic increasing ramp with a wobble: the maximum is in the last tile."""
    return tuple(float(round(start + 8.0 * k / n + 0.25 * math.sin(k), 6)) for k in range(n))

def _projected() -> tuple[tuple[float, ...], ...]:
    """Rows projected from calls of the one call model (:func:`derive.impl.cases.attention.call_rows`):
    a query behind 16 padded keys (a whole tile masked before the visible ones) and the last query of
    a causal ramp of 24 keys."""
    from derive.impl.cases.attention import Case, call_rows

    calls = (Case("padding", M=1, N=40, mask="padding", pad=16),
             Case("causal", M=1, N=24, causal=True, start_q=23, pattern="ramp"))
    return tuple(tuple(row) for c in calls for row in call_rows(c).tolist())


# Always checked (after Hypothesis), simplest first; the last two are rows of calls of the one call model.
EDGE_ROWS: tuple[tuple[float, ...], ...] = (
    (0.0,), (1.0,), (-1.0,), (0.0, 0.0), (1.0, 1.0, 1.0), (2.0, -1.0, 0.5), (3.0, 1.0),
    (-INF,), (-INF, -INF, -INF), (0.0, -INF), (3.0, -INF, 1.0, -INF),
    (1e4,), (-1e4,), (1e4, 1e4), (-1e4, -1e4), (1e4, -1e4), (1e4, -INF), (-1e4, -INF, -1e4),
    (100.0, 99.0), (-100.0, -101.0), (20.0, 10.0), (-20.0, 5.0), (0.5, 0.25, -0.75, 2.0),
    (1e3, 0.0, -1e3), (7.25, -3.5, 0.125, 9.0, -0.0625, 1.0, 2.0, -8.0),
    (25.0,), (30.0, 20.0), (35.0, -INF), (-30.0, -40.0), (60.0, 59.0),
    _long(40), _long(130, -4.0), _long(512, 20.0), _long(300)[:-1] + (-INF,),
) + _projected()

# Rows on which diagnosis compares the implementation with each faulty form: they tell
# the faulty forms apart (shift, sink, units, overflow, masking).
PROBE_ROWS: tuple[tuple[float, ...], ...] = (
    (1.0,), (-2.0,), (0.5, -1.0), (3.0, 1.0), (1.0, 0.0), (1.0, -1.0), (2.0, 1.0), (1.0, 1.0),
    (1.6931471805599454,), (0.0, -INF), (-INF, -INF), (-1.5, -INF, 2.5), (1e4,), (1e4, -1e4),
    (-1e4, -1e4), (100.0, 99.0), (20.0, 10.0), (-20.0, 5.0),
)


def lead_ndim(dim: int) -> int:
    """How many leading axes the input needs so that ``dim`` is a valid axis."""
    return dim if dim >= 0 else -dim - 1


def _decade():
    """±m·10^e, m in [1, 10), e in −3..3: every decade from 1e-3 to 1e4."""
    return st.builds(lambda m, e, sign: sign * m * 10.0**e, st.floats(1, 10, exclude_max=True),
                     st.integers(-3, 3), st.sampled_from((1.0, -1.0)))


@lru_cache(maxsize=None)
def _entry(masked: bool):
    """One score (made once: a strategy draws the same whether it is built anew or reused)."""
    if masked:  # a score is masked (−∞) about every other time
        return st.one_of(_entry(False), st.just(-INF))
    return st.one_of(
        st.integers(-3, 3).map(float),
        st.floats(-10, 10, allow_nan=False, allow_infinity=False),
        st.sampled_from(SPECIALS),
        _decade(),
        st.floats(-100, 100, allow_nan=False, allow_infinity=False),
        st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False),
    )


def _param(low: float, high: float):
    small = [float(v) for v in range(-3, 4) if low <= v <= high]
    return st.one_of(st.sampled_from(small), st.floats(low, high, allow_nan=False, allow_infinity=False))


def param_strategy(norm, p: str):
    """Hypothesis's values of the normalizer's parameter ``p``: its trial range (see
    :meth:`derive.normalizers.registry.Normalizer.trial`), inside its domain."""
    trial = norm.trial(p)
    return _param(trial.low, trial.high)


def param_sets(norm, free: tuple[str, ...], which: str) -> list[dict]:
    """The k-th set gives every free parameter its k-th ``which`` ("edge" or "probe") value."""
    if not free:
        return [{}]
    values = {p: getattr(norm.trial(p), which) for p in free}
    return [{p: values[p][k] for p in free} for k in range(len(values[free[0]]))]


def _long_row(draw, n: int, masked: bool) -> list[float]:
    seed = draw(st.integers(0, 2**16))
    scale = draw(st.sampled_from((1.0, 4.0, 30.0, 100.0, 1e3)))
    pattern = draw(st.sampled_from(("gaussian", "ramp", "spike")))
    rng = np.random.default_rng(seed)
    if pattern == "gaussian":
        row = rng.standard_normal(n) * scale
    elif pattern == "ramp":  # the running maximum grows in every tile
        row = np.linspace(-scale, scale, n) + 0.1 * rng.standard_normal(n)
    else:  # the maximum in the last tile
        row = rng.standard_normal(n)
        row[-1] = scale
    if masked and draw(st.booleans()):
        row[rng.random(n) < 0.3] = -INF
    return row.tolist()


@lru_cache(maxsize=None)
def score_rows(n: int, masked: bool):
    """A row of ``n`` scores (:func:`_entry`); with ``masked``, or the whole row masked. Made once
    per (n, masked): Hypothesis draws the same from a strategy built anew or reused, and building
    one (its checks and properties) costs more than drawing from it."""
    free = st.lists(_entry(masked), min_size=n, max_size=n)
    return st.one_of(free, st.just([-INF] * n)) if masked else free


@st.composite
def cases(draw, min_lead: int, free_params: dict, masked: bool, long: bool = False):
    """(scores of shape (*lead, n), parameters) with the normalized axis last; ``free_params``:
    name → its strategy (:func:`param_strategy`).

    With ``masked`` False every score is finite; with True a score may be −∞ and a whole
    row may be masked. With ``long``, the rows have :data:`LONG_N` keys.
    """
    lead = draw(st.lists(st.integers(1, 2), min_size=min_lead, max_size=min_lead + 2))
    n = draw(st.sampled_from(LONG_N) if long else st.integers(1, MAX_N))
    rows = []
    for _ in range(int(np.prod(lead, dtype=int))):
        if n > MAX_N:
            rows.append(draw(st.one_of(st.just(None), st.just([-INF] * n))) if masked else None)
            if rows[-1] is None:
                rows[-1] = _long_row(draw, n, masked)
            continue
        rows.append(draw(score_rows(n, masked)))
    params = {p: draw(free_params[p]) for p in free_params}
    return np.array(rows, dtype=np.float64).reshape(*lead, n), params


def special_rows(norm, params: dict) -> list[tuple[float, ...]]:
    """Rows where the normalizer's own formula switches branch (a kink of relu, abs, max or min:
    clipped softmax at (ζ − γ)p + γ = 0 and = 1), read off its formula."""
    from derive.normalizers.sensitivity import kink_rows

    return [] if norm.definition_of is None else kink_rows(norm.definition_of, params)
