"""Numeric cross-checks of the normalizers on adversarial rows (evidence, never proof).

:func:`adversarial_rows` is a Hypothesis strategy of rows that break careless code: ties,
a single key, scores of ±1e4 and ±700, tiny differences, and fully masked rows.
:func:`check_stable` compares each entry's numpy ``stable`` implementation with its mpmath
``reference``; :func:`check_identity` checks a proved identity between two numeric
functions of a row. Runs are derandomized, so documents record the same errors each build.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derive.crosscheck.check import CheckResult

__all__ = ["adversarial_rows", "check_identity", "check_stable"]

_SPECIAL = [0.0, 1.0, -1.0, 1e4, -1e4, 700.0, -700.0, 1e-12, 30.0, -30.0]


@st.composite
def adversarial_rows(draw, max_n: int = 12, allow_empty: bool = True):
    """(scores, mask) with mask None (all allowed) or a boolean list (maybe all False)."""
    n = draw(st.integers(1, max_n))
    kind = draw(st.sampled_from(("uniform", "ties", "special", "huge", "mixed")))
    if kind == "ties":
        x = [draw(st.sampled_from(_SPECIAL))] * n
    elif kind == "special":
        x = [draw(st.sampled_from(_SPECIAL)) for _ in range(n)]
    elif kind == "huge":
        base = draw(st.sampled_from((1e4, -1e4, 700.0, -745.0)))
        x = [base + draw(st.floats(-3, 3)) for _ in range(n)]
    elif kind == "mixed":
        x = [draw(st.one_of(st.floats(-50, 50), st.sampled_from(_SPECIAL))) for _ in range(n)]
    else:
        x = [draw(st.floats(-8, 8)) for _ in range(n)]
    mk = draw(st.sampled_from(("none", "random", "empty") if allow_empty else ("none", "random")))
    if mk == "none":
        return x, None
    if mk == "empty":
        return x, [False] * n
    mask = [draw(st.booleans()) for _ in range(n)]
    if not any(mask):
        mask[draw(st.integers(0, n - 1))] = True
    return x, mask


def _settings(examples: int):
    return settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck))


def check_stable(entry, params: dict, examples: int = 80, tol: float = 1e-12) -> CheckResult:
    """``entry.stable`` (float64) against ``entry.reference`` (mpmath, 50 digits)."""
    stats = {"n": 0, "abs": 0.0, "rel": 0.0, "witness": None}
    floats = {k: float(v) for k, v in params.items()}

    @_settings(examples)
    @given(adversarial_rows())
    def run(row):
        x, mask = row
        got = entry.stable(np.asarray(x, dtype=np.float64), None if mask is None else np.asarray(mask), **floats)
        with mpmath.workdps(50):
            ref = [float(v) for v in entry.reference(x, mask, **floats)]
        stats["n"] += 1
        for a, b in zip(got, ref):
            if math.isnan(b):
                ok = math.isnan(a)
                err = 0.0 if ok else math.inf
            else:
                err = abs(a - b)
                ok = err <= tol + tol * abs(b)
            stats["abs"] = max(stats["abs"], err)
            if err and b:
                stats["rel"] = max(stats["rel"], err / abs(b))
            if not ok:
                stats["witness"] = {"x": x, "mask": mask, "stable": [float(v) for v in got], "reference": ref}
                raise AssertionError(entry.name)

    try:
        run()
        passed = True
    except AssertionError:
        passed = False
    return CheckResult(f"{entry.name}: stable implementation vs definition (adversarial rows)", passed,
                       stats["n"], stats["abs"], stats["rel"], tol, 0, stats["witness"])


def check_identity(name: str, lhs, rhs, examples: int = 80, tol: float = 1e-12, allow_empty: bool = False) -> CheckResult:
    """``lhs(x, mask)`` against ``rhs(x, mask)`` (mpmath lists) on adversarial rows."""
    stats = {"n": 0, "abs": 0.0, "rel": 0.0, "witness": None}

    @_settings(examples)
    @given(adversarial_rows(allow_empty=allow_empty))
    def run(row):
        x, mask = row
        with mpmath.workdps(50):
            a, b = [float(v) for v in lhs(x, mask)], [float(v) for v in rhs(x, mask)]
        stats["n"] += 1
        for p, q in zip(a, b):
            same = p == q or (math.isnan(p) and math.isnan(q))  # equal infinities included
            err = 0.0 if same else abs(p - q)
            stats["abs"] = max(stats["abs"], err)
            if err and q:
                stats["rel"] = max(stats["rel"], err / abs(q))
            if not err <= tol + tol * max(abs(p), abs(q)):
                stats["witness"] = {"x": x, "mask": mask, "lhs": a, "rhs": b}
                raise AssertionError(name)

    try:
        run()
        passed = True
    except AssertionError:
        passed = False
    return CheckResult(name, passed, stats["n"], stats["abs"], stats["rel"], tol, 0, stats["witness"])
