"""The instances the counterexample searcher draws, and the replay of its draws.

Hypothesis draws d and n, the index values and every entry from a table of exact values
(small integers, halves, a few irrational-looking numbers such as √2 and π/4; a label
vector's entries, from 0, 1, 2), each scalar only among the values that satisfy its
assumptions. A derandomized search draws each instance from what it drew before and from
the verdicts on those (all "no" before the first accepted one), so a search of a shape
already searched in this process replays the recorded draws before asking Hypothesis for
more (:func:`generate`): the instances judged, and their order, are the same either way.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from derive.crosscheck.evaluate import Instance
from derive.crosscheck.instances import Signature, first_index, mask_table
from derive.errors import Unsupported

__all__ = ["LABEL_VALUES", "MAX_D", "MAX_N", "VALUES", "Drawn", "allowed", "build", "generate", "instances",
           "satisfies", "shape"]

# Entries are drawn from this table, simplest first (shrinking moves towards the start).
# Every value is exact: a counterexample can be replayed by hand or by any CAS.
VALUES: tuple[sp.Expr, ...] = tuple(
    sp.sympify(v) for v in (0, 1, -1, 2, -2, sp.Rational(1, 2), sp.Rational(-1, 2), 3, -3,
                            sp.Rational(3, 2), sp.Rational(-3, 2), sp.sqrt(2), -sp.sqrt(3), sp.pi / 4, 5, -7)
)
LABEL_VALUES: tuple[sp.Expr, ...] = tuple(sp.Integer(k) for k in range(3))  # a label vector's entries (document ids)
MAX_D = MAX_N = 6


def satisfies(s: sp.Symbol, v) -> bool:
    """Does the value ``v`` satisfy every assumption on ``s`` (sign, integrality, parity, …)?

    Each assumption SymPy holds for ``s`` (the declared ones and what follows from them) must
    hold for ``v`` as well, decided: a value whose property SymPy leaves open is not taken."""
    v = sp.sympify(v)
    return all(getattr(v, f"is_{k}") == want for k, want in s.assumptions0.items())


def allowed(s: sp.Symbol) -> list[sp.Expr]:
    """The table entries a scalar may take, respecting its assumptions."""
    if s not in _ALLOWED:
        _ALLOWED[s] = tuple(v for v in VALUES if satisfies(s, v))
    return list(_ALLOWED[s])


_ALLOWED: dict = {}  # symbol (its name and assumptions) → the entries of VALUES it may take


@st.composite
def instances(draw, sig: Signature, fixed: dict, max_d: int = MAX_D, max_n: int = MAX_N):
    """An exact instance and index environment for the symbols of ``sig``, with the values
    drawn for them, in order (:func:`build` makes the same instance from them again)."""
    drawn: list = []

    def keep(strategy):
        v = draw(strategy)
        drawn.append(v)
        return v

    inst, env = build(keep, sig, fixed, max_d, max_n)
    return Drawn(inst, env, tuple(drawn))


class Drawn:
    """A drawn instance, its index environment and the values drawn for them. Hypothesis
    prints the instance it reports; this prints in constant time (the instance is read from
    the search's result, never from that text)."""

    __slots__ = ("inst", "env", "values")

    def __init__(self, inst: Instance, env: dict, values: tuple):
        self.inst, self.env, self.values = inst, env, values

    def __repr__(self) -> str:
        return f"Drawn(d={self.inst.d}, n={self.inst.n})"


def build(draw, sig: Signature, fixed: dict, max_d: int, max_n: int) -> tuple[Instance, dict]:
    """The instance of :func:`instances`; ``draw(strategy)`` gives each value in turn."""
    d = draw(st.integers(1, max_d))
    low = max(1, sig.min_n, max(fixed.values(), default=1))
    n = draw(st.integers(low, max(max_n, low)))
    entry = st.sampled_from(VALUES)

    # Every block is drawn at full size and cut to (n, d): shrinking d or n then keeps the
    # other entries where they were, so a witness shrinks to its smallest size.
    def block(rows: int, cols: int) -> np.ndarray:
        full = [[draw(entry) for _ in range(max_d)] for _ in range(rows)]
        return np.array([r[:cols] for r in full], dtype=object).reshape(rows, cols)

    inst = Instance(d=d, n=n)
    for v in sig.vectors:
        inst.vectors[v] = block(1, d)[0]
    for f in sig.families:
        fam = np.zeros((n + 1, d), dtype=object)
        fam[1:] = block(max(max_n, n), d)[:n]
        inst.families[f] = fam
    for name in sig.tables:
        tab = np.zeros((n + 1, n + 1), dtype=object)
        tab[1:, 1:] = np.array([[draw(entry) for _ in range(max(max_n, n))][:n] for _ in range(max(max_n, n))],
                               dtype=object)[:n]
        inst.tables[name] = tab
    for name in sig.labels:  # drawn at full length and cut to n, like the blocks
        full = [draw(st.sampled_from(LABEL_VALUES)) for _ in range(max(max_n, n))]
        inst.tables[name] = np.array([sp.S.Zero] + full[:n], dtype=object)
    for name in sig.masks:
        kind = draw(st.sampled_from(("full", "causal", "random")))
        inst.tables[name] = mask_table(kind, n, np.random.default_rng(draw(st.integers(0, 7))))
    for s in sig.scalars:
        choices = allowed(s)
        if not choices:
            raise Unsupported(f"no value satisfies the assumptions on {s}")
        inst.scalars[s] = draw(st.sampled_from(choices))
    env = {s: draw(st.integers(first_index(s), n)) for s in sig.indices if s not in fixed}
    env.update(fixed)
    return inst, env


def shape(sig: Signature, fixed: dict, max_d: int, max_n: int, examples: int) -> tuple:
    """What :func:`build` asks Hypothesis for, and in which order, with the search's budget:
    two signatures of one shape (names apart) get the same draws from a derandomized search."""
    return (len(sig.vectors), len(sig.families), len(sig.tables), len(sig.labels), len(sig.masks),
            tuple(tuple(allowed(s)) for s in sig.scalars),
            tuple(first_index(s) for s in sig.indices if s not in fixed),
            max(1, sig.min_n, max(fixed.values(), default=1)), max_d, max_n, examples)


# shape (see shape) → (the values drawn for each instance a search judged, in order, up to
# its first certified one; whether Hypothesis then had nothing more to draw).
_DRAWN: dict = {}


def generate(sig: Signature, fixed: dict, size: tuple[int, int], examples: int, judge):
    """The first instance ``judge`` accepts among those a derandomized Hypothesis search draws
    (at most ``examples``), or None.

    Hypothesis, derandomized, draws each instance from what it drew before and from the
    verdicts on those, and before the first accepted instance every verdict was "no". So a
    search of a shape already searched in this process replays the recorded draws first (the
    same instances, judged in the same order, without the engine's bookkeeping) and runs
    Hypothesis only when it needs instances beyond them; the instances judged are the same
    either way.
    """
    key = shape(sig, fixed, *size, examples)
    known, spent = _DRAWN.get(key, ((), False))
    for drawn in known:
        values = iter(drawn)
        inst, env = build(lambda _strategy: next(values), sig, fixed, *size)
        if judge(inst, env):
            return inst, env
    if spent:
        return None
    calls: list = []
    stop = [False]  # recorded up to the first instance accepted (or failing)

    def test(drawn: Drawn) -> bool:
        if stop[0]:
            return judge(drawn.inst, drawn.env)
        calls.append(drawn.values)
        stop[0] = True  # until the verdict is "no"
        stop[0] = hit = judge(drawn.inst, drawn.env)
        return hit

    ran_out = False
    try:
        drawn = find(instances(sig, fixed, *size), test, settings=settings(
            max_examples=examples, derandomize=True, database=None, deadline=None,
            phases=[Phase.generate], suppress_health_check=list(HealthCheck)))
        return drawn.inst, drawn.env
    except NoSuchExample:
        ran_out = True
        return None
    finally:
        if len(calls) > len(known) or ran_out:
            _DRAWN[key] = (tuple(calls), ran_out)
