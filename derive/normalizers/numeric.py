"""Numeric cross-checks of the normalizers on adversarial rows (evidence, never proof).

:func:`adversarial_rows` is a Hypothesis strategy of rows that break careless code: ties,
a single key, scores of ±1e4 and ±700, tiny differences, and fully masked rows (each drawn
row comes with a twin for checks that need an allowed key);
:data:`FIXED_ROWS` is a fixed list of the same kinds. A :class:`Check` compares the pairs of
numbers its function gives on a row: :func:`stable_check` an entry's numpy ``stable``
implementation with its mpmath ``reference``, :func:`identity_check` the two sides of a proved
identity. :func:`check_many` runs any number of checks with one Hypothesis search: each
example draws one row, and every check is evaluated on every row drawn (a check with a
``prepare`` step, such as the stable implementation's, first computes its part for all the
rows at once).

The rows a document counts are :data:`FIXED_ROWS`, the same in every build; Hypothesis
then searches further rows for a failure (its examples depend on which modules are loaded,
because Hypothesis mines loaded local modules for constants, so they decide pass/fail but
are not counted). Measured errors are kept on the result but never printed (see
:mod:`derive.crosscheck.check`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import mpmath
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derive.crosscheck.check import CheckResult
from derive.crosscheck.hypothesis_env import no_local_constants
from derive.normalizers.exact import Undecided

__all__ = ["FIXED_ROWS", "Check", "adversarial_rows", "check_many", "identity_check", "remembered", "stable_check"]

_SPECIAL = [0.0, 1.0, -1.0, 1e4, -1e4, 700.0, -700.0, 1e-12, 30.0, -30.0]
_KINDS = st.sampled_from(("uniform", "ties", "special", "huge", "mixed"))
_SPECIAL_S = st.sampled_from(_SPECIAL)
_HUGE_BASE = st.sampled_from((1e4, -1e4, 700.0, -745.0))
_NEAR = st.floats(-3, 3)
_MIXED = st.one_of(st.floats(-50, 50), _SPECIAL_S)
_UNIFORM = st.floats(-8, 8)
_ANY_MASK = st.sampled_from(("none", "random", "empty"))
_NONEMPTY_MASK = st.sampled_from(("none", "random"))
_BOOL = st.booleans()


def _scores(draw, max_n: int) -> list:
    n = draw(st.integers(1, max_n))
    kind = draw(_KINDS)
    if kind == "ties":
        return [draw(_SPECIAL_S)] * n
    if kind == "special":
        return [draw(_SPECIAL_S) for _ in range(n)]
    if kind == "huge":
        base = draw(_HUGE_BASE)
        return [base + draw(_NEAR) for _ in range(n)]
    if kind == "mixed":
        return [draw(_MIXED) for _ in range(n)]
    return [draw(_UNIFORM) for _ in range(n)]


def _mask(draw, n: int, kinds) -> list | None:
    mk = draw(kinds)
    if mk == "none":
        return None
    if mk == "empty":
        return [False] * n
    mask = [draw(_BOOL) for _ in range(n)]
    if not any(mask):
        mask[draw(st.integers(0, n - 1))] = True
    return mask


@st.composite
def adversarial_rows(draw, max_n: int = 12):
    """One row as both kinds of check see it: ``(loose, strict)``, each ``(scores, mask)`` with
    mask None (all allowed) or a boolean list.

    ``loose`` has a mask that may be all False. ``strict`` has the same scores and the same
    mask unless that mask is all False; then a fresh mask drawn among the kinds that allow at
    least one key.
    """
    x = _scores(draw, max_n)
    loose = _mask(draw, len(x), _ANY_MASK)
    strict = loose if loose is None or any(loose) else _mask(draw, len(x), _NONEMPTY_MASK)
    return (x, loose), (x, strict)


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


def _pairs(check, x, mask) -> list:
    """The check's pairs on one row; none where an exact value could not be enclosed (the row
    is not judged, see :class:`~derive.normalizers.exact.Undecided`)."""
    try:
        return check.pairs(x, mask)
    except Undecided:
        return []


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


@dataclass(frozen=True)
class Check:
    """``pairs(x, mask) -> list of (a, b)``: every pair must agree within ``tol`` on every row.

    Rows with a mask that is all False are given to the check only if ``allow_empty``. A run
    compares it on :data:`FIXED_ROWS` (the rows it counts), then on ``examples`` searched rows.
    """

    name: str
    pairs: Callable
    examples: int = 80
    tol: float = 1e-12
    allow_empty: bool = True
    # ``prepare(rows)``: work for ``pairs`` done for many rows at once, before they are compared;
    # None: nothing to prepare
    prepare: Callable | None = None


class _Search:
    """A check that passed its fixed rows, while the search runs."""

    def __init__(self, check: Check, fixed: int, stats: dict):
        self.check, self.fixed, self.stats = check, fixed, stats
        self.searched = 0
        self.witness = None

    def see(self, row) -> None:
        """Compare on one more searched row, if the check has not seen its ``examples`` yet;
        the first row that fails is the witness."""
        if self.searched >= self.check.examples:
            return
        self.searched += 1
        if not _compare(_pairs(self.check, *row), self.check.tol, {"abs": 0.0, "rel": 0.0}) and self.witness is None:
            self.witness = {"x": row[0], "mask": row[1]}

    def result(self) -> CheckResult:
        c = self.check
        return CheckResult(c.name, self.witness is None, self.fixed, self.stats["abs"], self.stats["rel"], c.tol, 0,
                           self.witness, searched=c.examples if self.witness is None else self.searched)


def check_many(checks: Sequence[Check]) -> list[CheckResult]:
    """Run every check, in order: first on :data:`FIXED_ROWS`, then one Hypothesis search.

    A check that fails a fixed row is reported with that row and is not searched. The search
    draws ``max(examples)`` rows, one :func:`adversarial_rows` pair per example, and each row
    is compared by every check that passed its fixed rows and has not yet seen its ``examples``
    rows (a check that needs an allowed key gets the pair's strict row). A check that passed reports
    its configured ``examples`` as searched, as :func:`derive.crosscheck.check.cross_check` does, so the
    figure does not depend on how many rows a Hypothesis version drew; a failed one the rows it saw. A check that fails keeps its first failing row as its
    witness (not shrunk: the search itself never fails), and every check, that one included,
    goes on being compared on the rows that follow. Because the search never fails, the rows it
    draws do not depend on the comparisons: it records them, and they are compared after it.
    """
    results: list[CheckResult | None] = [None] * len(checks)
    searches: dict[int, _Search] = {}
    for i, c in enumerate(checks):
        rows = [r for r in FIXED_ROWS if c.allow_empty or r[1] is None or any(r[1])]
        if c.prepare is not None:
            c.prepare(rows)
        stats = {"abs": 0.0, "rel": 0.0}
        for x, mask in rows:
            if not _compare(_pairs(c, x, mask), c.tol, stats):
                results[i] = CheckResult(c.name, False, len(rows), stats["abs"], stats["rel"], c.tol, 0,
                                         {"x": x, "mask": mask})
                break
        else:
            searches[i] = _Search(c, len(rows), stats)
    examples = max((s.check.examples for s in searches.values()), default=0)
    if examples:
        loose = [s for s in searches.values() if s.check.allow_empty]
        strict = [s for s in searches.values() if not s.check.allow_empty]

        drawn: list = []  # the searched rows, in the order drawn

        @_settings(examples)
        @given(adversarial_rows())
        def search(pair):
            drawn.append(pair)

        with no_local_constants():
            search()
        for s in loose + strict:
            if s.check.prepare is not None:
                s.check.prepare([pair[0 if s in loose else 1] for pair in drawn[:s.check.examples]])
        for pair in drawn:
            for s in loose:
                s.see(pair[0])
            for s in strict:
                s.see(pair[1])
    for i, s in searches.items():
        results[i] = s.result()
    return results


def remembered(reference: Callable) -> Callable:
    """``reference(x, mask, **params)`` computed once per row, mask and parameters: the checks of
    one entry (its stable implementation, the identities it satisfies) evaluate its exact
    reference on the same rows, and a value is the same whichever check asks (at the same mpmath
    precision, part of the key; the checks all use 50 digits). A row that raises (:class:`~derive.normalizers.exact.Undecided`) is not
    remembered. Every caller must leave the returned list as it is."""
    values: dict = {}

    def ref(x, mask=None, **params):
        key = (tuple(x), None if mask is None else tuple(mask), tuple(sorted(params.items())), mpmath.mp.prec)
        try:
            return values[key]
        except KeyError:
            pass
        except TypeError:  # an unhashable row: computed each time
            return reference(x, mask, **params)
        out = values[key] = reference(x, mask, **params)
        return out

    return ref


def stable_check(entry, params: dict, examples: int = 80, tol: float = 1e-12, reference: Callable | None = None) -> Check:
    """``entry.stable`` (float64) against ``entry.reference`` (correct to 50 digits; ``reference``:
    the same function, remembered, see :func:`remembered`)."""
    floats = {k: float(v) for k, v in params.items()}
    reference = reference or entry.reference
    ready: dict = {}  # row → its float64 weights, computed by ``prepare``

    def prepare(rows) -> None:
        """The stable weights of ``rows``, one call per row length: a stack of rows, as the
        implementation is meant to be called (vectorised over leading axes, each row computed
        alone). The values are the row-by-row ones up to float64 rounding: numpy may add the
        terms of a row of 8 or more keys in another order in a stack (pairwise alone), a
        difference of an ulp or so, far below the tolerance."""
        by_size: dict = {}
        for x, mask in rows:
            by_size.setdefault(len(x), {})[_row_key(x, mask)] = (x, mask)
        for size, group in by_size.items():
            xs = np.asarray([x for x, _m in group.values()], dtype=np.float64).reshape(len(group), size)
            masks = np.asarray([[True] * size if m is None else m for _x, m in group.values()], dtype=bool)
            ready.update(zip(group, entry.stable(xs, masks.reshape(len(group), size), **floats)))

    def pairs(x, mask):
        got = ready.pop(_row_key(x, mask), None)
        if got is None:
            got = entry.stable(np.asarray(x, dtype=np.float64), None if mask is None else np.asarray(mask), **floats)
        with mpmath.workdps(50):
            ref = [float(v) for v in reference(x, mask, **floats)]
        return list(zip(got, ref))

    return Check(f"{entry.name}: stable implementation vs definition (adversarial rows)", pairs, examples, tol, True,
                 prepare)


def _row_key(x, mask) -> tuple:
    """A row as a key: its scores (float64 bit patterns: −0.0 apart from 0.0) and its allowed keys."""
    return (np.asarray(x, dtype=np.float64).tobytes(), None if mask is None else tuple(bool(m) for m in mask))


def identity_check(name: str, lhs, rhs, examples: int = 80, tol: float = 1e-12, allow_empty: bool = False) -> Check:
    """``lhs(x, mask)`` against ``rhs(x, mask)`` (lists of mpmath numbers) on adversarial rows."""

    def pairs(x, mask):
        with mpmath.workdps(50):
            return list(zip([float(v) for v in lhs(x, mask)], [float(v) for v in rhs(x, mask)]))

    return Check(name, pairs, examples, tol, allow_empty)
