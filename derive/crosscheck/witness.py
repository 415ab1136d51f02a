"""Counterexamples: small integer instances on which two expressions certainly differ.

Hypothesis draws d, n, the index values and every entry as small integers and shrinks a
failing instance to the simplest one it can find. An instance counts as a counterexample
only when the difference is *certified* nonzero: evaluated with mpmath at two precisions,
it stays far above the evaluation error and both agree.
"""

from __future__ import annotations

import mpmath
import numpy as np
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from derive.crosscheck.evaluate import Instance, evaluate
from derive.crosscheck.instances import Signature, mask_table, signature
from derive.errors import Unsupported
from derive.settings import DEFAULT, Settings

__all__ = ["certified_difference", "find_witness"]


def certified_difference(lhs, rhs, inst: Instance, env: dict, dps: int = 50):
    """(lhs value, rhs value) when they certainly differ on ``inst``, else ``None``."""
    try:
        a1, b1 = evaluate(lhs, inst, "mp", env, dps), evaluate(rhs, inst, "mp", env, dps)
        a2, b2 = evaluate(lhs, inst, "mp", env, 2 * dps), evaluate(rhs, inst, "mp", env, 2 * dps)
    except (ZeroDivisionError, ValueError, OverflowError, ArithmeticError, Unsupported, KeyError, IndexError):
        return None
    with mpmath.workdps(2 * dps):
        diff1 = _norm(a1 - b1)
        diff2 = _norm(a2 - b2)
        scale = 1 + _norm(a2) + _norm(b2)
        if not mpmath.isfinite(diff2) or diff2 <= mpmath.mpf(10) ** (-dps // 2) * scale:
            return None
        if abs(diff1 - diff2) > diff2 / 1000:
            return None
    return a2, b2


def _norm(x):
    if isinstance(x, np.ndarray):
        return max((abs(v) for v in x), default=mpmath.mpf(0))
    return abs(mpmath.mpf(x)) if not isinstance(x, mpmath.mpc) else abs(x)


@st.composite
def _instances(draw, sig: Signature, fixed: dict, max_d: int, max_n: int, bound: int):
    d = draw(st.integers(1, max_d))
    n = draw(st.integers(max(2, sig.min_n, max(fixed.values(), default=1)), max(max_n, sig.min_n)))
    ints = st.integers(-bound, bound)
    inst = Instance(d=d, n=n)
    for v in sig.vectors:
        inst.vectors[v] = np.array([draw(ints) for _ in range(d)], dtype=float)
    for f in sig.families:
        fam = np.zeros((n + 1, d))
        for r in range(1, n + 1):
            fam[r] = [draw(ints) for _ in range(d)]
        inst.families[f] = fam
    for name in sig.tables:
        tab = np.zeros((n + 1, n + 1))
        for r in range(1, n + 1):
            tab[r, 1:] = [draw(ints) for _ in range(n)]
        inst.tables[name] = tab
    for name in sig.masks:
        kind = draw(st.sampled_from(("full", "causal", "random")))
        inst.tables[name] = mask_table(kind, n, np.random.default_rng(draw(st.integers(0, 7))))
    for s in sig.scalars:
        inst.scalars[s] = float(draw(ints))
    env = {s: draw(st.integers(1, n)) for s in sig.indices if s not in fixed}
    env.update(fixed)
    return inst, env


def find_witness(lhs, rhs, *, fixed: dict | None = None, cfg: Settings = DEFAULT,
                 max_d: int = 3, max_n: int = 3, bound: int = 3):
    """The simplest instance on which ``lhs ≠ rhs`` (certified), as a dict; or ``None``."""
    sig = signature(lhs, rhs)
    strategy = _instances(sig, dict(fixed or {}), max_d, max_n, bound)
    try:
        inst, env = find(
            strategy,
            lambda ie: certified_difference(lhs, rhs, ie[0], ie[1]) is not None,
            settings=settings(
                max_examples=cfg.witness_examples,
                derandomize=True,
                database=None,
                deadline=None,
                phases=[Phase.generate, Phase.shrink],
                suppress_health_check=list(HealthCheck),
            ),
        )
    except NoSuchExample:
        return None
    a, b = certified_difference(lhs, rhs, inst, env)
    return {
        "instance": inst.describe(),
        "indices": {s.name: v for s, v in sorted(env.items(), key=lambda kv: kv[0].name)},
        "lhs": _to_json(a),
        "rhs": _to_json(b),
        "_instance": inst,
        "_env": env,
    }


def _to_json(x):
    if isinstance(x, np.ndarray):
        return [float(v) for v in x]
    return float(x)
