"""Numeric cross-checks of the normalizers on adversarial rows (evidence, never proof).

:func:`adversarial_rows` is a Hypothesis strategy of rows that break careless code: ties,
a single key, scores of ±1e4 and ±700, tiny differences, and fully masked rows;
:data:`FIXED_ROWS` is a fixed list of the same kinds. :func:`check_stable` compares each
entry's numpy ``stable`` implementation with its mpmath ``reference``;
:func:`check_identity` checks a proved identity between two numeric functions of a row.

The rows a document counts are :data:`FIXED_ROWS`, the same in every build; Hypothesis
then searches further rows for a failure (its examples depend on which modules are loaded,
because Hypothesis mines loaded local modules for constants, so they decide pass/fail but
are not counted). Measured errors are kept on the result but never printed (see
:mod:`derive.crosscheck.check`).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derive.crosscheck.check import CheckResult
from derive.crosscheck.hypothesis_env import no_local_constants

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


def _fixed_rows() -> list:
    rows = [
        ([0.0], None),
        ([1e4], None),
        ([-1e4], None),
        ([3.0, 3.0, 3.0], None),
        ([1e4, 1e4], None),
        ([-1e4, -1e4], None),
        ([1e4, -1e4, 0.0], None),
        ([700.0, -745.0, 0.0], None),
        ([1e-12, 0.0, -1e-12], None),
        ([0.5, -1.0, 2.0], [False, False, False]),
        ([30.0, -30.0, 1.0, 0.0], [True, False, True, False]),
        ([-700.0] * 5, None),
    ]
    rng = np.random.default_rng(20230724)
    for n in (1, 2, 3, 5, 8, 13):
        for scale in (1.0, 10.0, 1e3):
            x = [float(v) for v in rng.normal(size=n) * scale]
            mask = None if n % 2 else [bool(b) for b in rng.random(n) < 0.6]
            if mask is not None and not any(mask):
                mask[0] = True
            rows.append((x, mask))
    return rows


FIXED_ROWS = _fixed_rows()


def _settings(examples: int):
    return settings(
        max_examples=examples, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )


def _compare(pairs, tol, stats) -> bool:
    """Update the error statistics; False on the first pair outside the tolerance."""
    for a, b in pairs:
        a, b = float(a), float(b)
        if a == b or (math.isnan(a) and math.isnan(b)):  # equal infinities included
            continue
        if math.isnan(a) or math.isnan(b):
            return False
        err = abs(a - b)
        stats["abs"] = max(stats["abs"], err)
        if b:
            stats["rel"] = max(stats["rel"], err / abs(b))
        if not err <= tol + tol * max(abs(a), abs(b)):
            return False
    return True


def _run(name: str, fn, examples: int, tol: float, allow_empty: bool) -> CheckResult:
    """``fn(x, mask) -> list of (a, b)``: recorded on FIXED_ROWS, then searched with Hypothesis."""
    stats = {"abs": 0.0, "rel": 0.0}
    rows = [r for r in FIXED_ROWS if allow_empty or r[1] is None or any(r[1])]
    for x, mask in rows:
        if not _compare(fn(x, mask), tol, stats):
            return CheckResult(name, False, len(rows), stats["abs"], stats["rel"], tol, 0, {"x": x, "mask": mask})
    witness = {}

    @_settings(examples)
    @given(adversarial_rows(allow_empty=allow_empty))
    def search(row):
        scratch = {"abs": 0.0, "rel": 0.0}
        if not _compare(fn(*row), tol, scratch):
            witness.update(x=row[0], mask=row[1])
            raise AssertionError(name)

    try:
        with no_local_constants():
            search()
        passed = True
    except AssertionError:
        passed = False
    return CheckResult(name, passed, len(rows), stats["abs"], stats["rel"], tol, 0, witness or None,
                       searched=examples)


def check_stable(entry, params: dict, examples: int = 80, tol: float = 1e-12) -> CheckResult:
    """``entry.stable`` (float64) against ``entry.reference`` (mpmath, 50 digits)."""
    floats = {k: float(v) for k, v in params.items()}

    def pairs(x, mask):
        got = entry.stable(np.asarray(x, dtype=np.float64), None if mask is None else np.asarray(mask), **floats)
        with mpmath.workdps(50):
            ref = [float(v) for v in entry.reference(x, mask, **floats)]
        return list(zip(got, ref))

    return _run(f"{entry.name}: stable implementation vs definition (adversarial rows)", pairs, examples, tol, True)


def check_identity(
    name: str, lhs, rhs, examples: int = 80, tol: float = 1e-12, allow_empty: bool = False
) -> CheckResult:
    """``lhs(x, mask)`` against ``rhs(x, mask)`` (lists of mpmath numbers) on adversarial rows."""

    def pairs(x, mask):
        with mpmath.workdps(50):
            return list(zip([float(v) for v in lhs(x, mask)], [float(v) for v in rhs(x, mask)]))

    return _run(name, pairs, examples, tol, allow_empty)
