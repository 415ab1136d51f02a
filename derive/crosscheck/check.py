"""Numeric cross-checks of identities with Hypothesis.

Each check draws a head dimension d (1..max_d), a number of keys n (1..max_n), a mask
(all keys, causal, or random non-empty), index values and bounded float64 entries, and
compares both sides in float64 with ``|a − b| ≤ atol + rtol·max(|a|, |b|)``. Where
float64 cannot resolve the comparison, both sides are evaluated again with ball arithmetic
at a precision raised until their values are known to far beyond float64, and compared
there. Runs are derandomized and use no example database, so two builds draw the same
instances. A cross-check is evidence, never a proof.

What a result reports (:meth:`CheckResult.as_json`, and every document and report built
from it) is what is exactly true and the same on every machine: how many instances were
compared, the tolerance, and that all of them agreed within it. The measured errors stay
on the result object (``max_abs_error``, ``max_rel_error``) and are never printed: their
last digits depend on numpy's SIMD code paths (``np.exp``, ``np.dot``, vectorised sums)
and on the order in which SymPy built the terms, so they differ between machines and
between numpy/SymPy versions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flint import arb

from derive.crosscheck.evaluate import evaluate
from derive.crosscheck.hypothesis_env import no_local_constants
from derive.errors import StepFailed
from derive.crosscheck.instances import MASK_KINDS, make_instance, signature
from derive.routes import NO_VALUE
from derive.settings import DEFAULT, Settings

__all__ = ["CheckResult", "close", "cross_check", "same_computation", "tautology_message", "tolerance_text"]


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    examples: int
    max_abs_error: float  # measured; machine-dependent in its last digits, never printed
    max_rel_error: float  # measured; machine-dependent in its last digits, never printed
    tolerance: float  # rel: |a − b| ≤ atol + tolerance·max(|a|, |b|)
    arb_fallbacks: int = 0
    witness: dict | None = None
    searched: int = 0  # Hypothesis examples that searched for a disagreement
    atol: float | None = None  # None: the same as ``tolerance``

    def as_json(self) -> dict:
        """What a document or report records: counts, tolerance and verdict, no measured error."""
        return {
            "name": self.name,
            "kind": "property",
            "verdict": "passed" if self.passed else "failed",
            "examples": self.examples,
            "hypothesis_examples": self.searched,
            "tolerance": {"rel": self.tolerance, "abs": self.tolerance if self.atol is None else self.atol},
            "arb_fallbacks": self.arb_fallbacks,
            "witness": self.witness,
        }


def tolerance_text(tolerance: dict) -> str:
    """The pass criterion of a check, from its ``as_json()["tolerance"]``.

    E.g. ``|a − b| ≤ 1e-12 + 1e-12·max(|a|, |b|)``: every compared pair of values met it.
    """
    return f"|a − b| ≤ {tolerance['abs']:g} + {tolerance['rel']:g}·max(|a|, |b|)"


def close(a: float, b: float, cfg: Settings = DEFAULT) -> bool:
    return abs(a - b) <= cfg.atol + cfg.rtol * max(abs(a), abs(b))


def _precise(expr, inst, env, max_bits: int = 1 << 12) -> list[float] | None:
    """Both sides to full float64 accuracy, from ball arithmetic at a precision raised until
    every ball is narrow (cancellation in the expression costs bits, not correctness)."""
    bits = 64
    while bits <= max_bits:
        try:
            vals = np.ravel(np.asarray(evaluate(expr, inst, "arb", env, prec=bits), dtype=object))
        except NO_VALUE:
            return None
        balls = [v if isinstance(v, arb) else arb(v) for v in vals]
        if all(x.is_finite() and x.rad() <= arb("1e-30") * (1 + abs(x.mid())) for x in balls):
            return [float(x.mid()) for x in balls]
        bits *= 4
    return None


def _flat(x) -> list[float]:
    if type(x) is float:
        return [x]
    if type(x) is np.ndarray and x.dtype == np.float64:
        return x.ravel().tolist()  # the same floats as float() of each entry
    return [float(v) for v in np.ravel(np.asarray(x, dtype=object))]


def same_computation(lhs, rhs, assume: dict | None = None) -> bool:
    """Whether two sides are one expression once ``assume`` is substituted: then they compile
    to the same closure (:func:`~derive.crosscheck.compiled.compiled` is keyed by the
    expression) and a numeric comparison of them cannot fail."""
    a, b = sp.sympify(lhs), sp.sympify(rhs)
    if assume:
        a, b = a.subs(assume), b.subs(assume)
    return a == b


def tautology_message(name: str) -> str:
    """Why a cross-check of two identical sides is refused (see :func:`same_computation`)."""
    return (f"the cross-check of {name!r} cannot fail: both sides are the same expression after "
            "substitution, so the comparison checks nothing (evaluate each side from its own "
            "definition, or do not claim a cross-check)")


def cross_check(name: str, lhs: sp.Expr, rhs: sp.Expr, cfg: Settings = DEFAULT,
                assume: dict | None = None, where: sp.Basic | None = None) -> CheckResult:
    """Compare ``lhs`` and ``rhs`` numerically; first a fixed instance set, then a search.

    Two phases. First ``cfg.examples`` instances drawn from a numpy generator with a fixed
    seed, the same in every build: the instances whose count a document records.
    Then Hypothesis searches ``cfg.examples`` more instances for a disagreement and shrinks
    any it finds: its draws (:func:`searched_draws`, the same whatever a passing test does)
    are compared one by one, and its engine runs only when one of them disagrees, to find
    the same disagreement and shrink it. ``assume`` binds symbols to fixed values for
    every instance (e.g. a mask entry to 1). ``where`` is a condition on the drawn symbols
    (e.g. ``a <= b`` for the ends of a range of keys): instances that violate it are
    skipped and not counted.

    Two sides that are the same expression (:func:`same_computation`) raise
    :class:`~derive.errors.StepFailed`: a check that cannot fail is not evidence.
    """
    if same_computation(lhs, rhs, assume):
        raise StepFailed(tautology_message(name))
    sig = signature(lhs, rhs, *([where] if where is not None else []))
    atol, rtol = cfg.atol, cfg.rtol  # close(x, y, cfg), inline
    stats = {"n": 0, "abs": 0.0, "rel": 0.0, "arb": 0, "witness": None, "searched": 0}

    def compare(d, n, seed, mask, record: bool) -> bool:
        n = max(n, sig.min_n)
        for attempt in range(WHERE_TRIES if where is not None else 1):
            rng = np.random.default_rng(seed if attempt == 0 else [seed, attempt])
            inst, env = make_instance(sig, d, n, rng, bound=cfg.bound, mask=mask)
            env.update(assume or {})
            if where is None or all(evaluate(c, inst, "float", env) for c in sp.And.make_args(where)):
                break
        else:
            return True  # no draw inside the statement's range: this instance tells nothing
        try:
            a, b = _flat(evaluate(lhs, inst, "float", env)), _flat(evaluate(rhs, inst, "float", env))
            ok = all(abs(x - y) <= atol + rtol * max(abs(x), abs(y)) for x, y in zip(a, b)) and len(a) == len(b)
        except (ArithmeticError, ValueError):  # e.g. 0.0 to a negative power: the balls below decide
            a, b, ok = [], [], False
        used_arb = False
        if not ok or not all(math.isfinite(x) for x in a + b):
            used_arb = True
            am, bm = _precise(lhs, inst, env), _precise(rhs, inst, env)
            if am is None or bm is None:
                return True  # beyond the precision cap: this instance tells nothing either way
            ok = all(close(x, y, cfg) for x, y in zip(am, bm))
            a, b = am, bm
        if record:
            stats["n"] += 1
            stats["arb"] += used_arb
            most_abs, most_rel = stats["abs"], stats["rel"]
            for x, y in zip(a, b):
                err = abs(x - y)
                if err > most_abs:  # max(most_abs, err)
                    most_abs = err
                rel = err / max(abs(x), abs(y)) if err else 0.0
                if rel > most_rel:
                    most_rel = rel
            stats["abs"], stats["rel"] = most_abs, most_rel
        if not ok:
            stats["witness"] = {"instance": inst.describe(), "mask": mask,
                                "indices": {s.name: v for s, v in sorted(env.items(), key=lambda kv: kv[0].name)},
                                "lhs": a, "rhs": b}
        return ok

    rng = np.random.default_rng(_FIXED_SEED)
    for k in range(cfg.examples):
        d = int(rng.integers(1, cfg.max_d + 1))
        n = int(rng.integers(1, cfg.max_n + 1))
        if not compare(d, n, int(rng.integers(0, 2**32)), MASK_KINDS[k % len(MASK_KINDS)], record=True):
            return _result(name, False, stats, cfg)

    def search(d, n, seed, mask):
        stats["searched"] += 1
        if not compare(d, n, seed, mask, record=False):
            raise AssertionError(name)

    # The instances Hypothesis draws do not depend on what the test does while it passes
    # (derandomized, no database, no deadline), so they are drawn once per setting and each
    # is compared here, without the engine's cost per example. A disagreement runs the real
    # search, which draws the same instances up to it and then shrinks it.
    # Any other exception (an instance the evaluator cannot take, an engine fault) propagates.
    try:
        for draw in searched_draws(cfg.examples, cfg.max_d, cfg.max_n):
            search(*draw)
        return _result(name, True, stats, cfg)
    except AssertionError:  # a disagreement: judged again, and shrunk, by the real search below
        stats["searched"] = 0
    try:
        _hypothesis_search(cfg.examples, cfg.max_d, cfg.max_n, search)
    except AssertionError:
        pass
    # A disagreement is a failure even if the real search did not meet it again.
    return _result(name, False, stats, cfg)


def _hypothesis_search(examples: int, max_d: int, max_n: int, body) -> None:
    """Hypothesis's search over (d, n, seed, mask), derandomized: ``body`` raises
    AssertionError on a disagreement, which Hypothesis then shrinks and raises again."""
    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(
        d=st.integers(1, max_d),
        n=st.integers(1, max_n),
        seed=st.integers(0, 2**32 - 1),
        mask=st.sampled_from(MASK_KINDS),
    )
    def search(d, n, seed, mask):
        body(d, n, seed, mask)

    with no_local_constants():
        search()


@lru_cache(maxsize=None)
def searched_draws(examples: int, max_d: int, max_n: int) -> tuple[tuple[int, int, int, str], ...]:
    """The (d, n, seed, mask) that :func:`_hypothesis_search` draws when no example fails,
    in its order (the same function, so the same derandomized seed)."""
    draws: list = []
    _hypothesis_search(examples, max_d, max_n, lambda *draw: draws.append(draw))
    return tuple(draws)


_FIXED_SEED = 20261130
WHERE_TRIES = 16  # draws (fixed seeds) per instance to land inside a ``where`` range


def _result(name: str, passed: bool, stats: dict, cfg: Settings) -> CheckResult:
    # When it passed: the number of distinct instances searched (each compared once); after
    # a failure, Hypothesis's count, which includes its shrinking calls.
    return CheckResult(name, passed, stats["n"], stats["abs"], stats["rel"], cfg.rtol,
                       stats["arb"], stats["witness"], stats["searched"], atol=cfg.atol)
