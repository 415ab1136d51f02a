"""Diagnosis of a disagreeing implementation.

The implementation is run on a fixed set of probe rows (plus the counterexample) and
compared with every faulty form of :data:`~derive.impl.faults.row.FAULTS` that applies to the
normalizer's formula. A form *matches* when the implementation agrees with it on every probe (same
tolerance as the check) and the form differs from the definition on at least one probe.
Where nothing matches, the error pattern is described instead: which rows fail (masked,
large scores), whether outputs are NaN/inf, and whether each failing row is the exact row
times a factor that depends only on max x or only on the row sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from derive.impl.judge.row import Checker, Failure
from derive.impl.faults.derivations import derive_fault
from derive.impl.faults.texts import texts
from derive.impl.faults.row import variants
from derive.impl.exact.masked import convention
from derive.impl.numbers import shortest
from derive.impl.cases.rows import PROBE_ROWS, param_sets
from derive.impl.exact.reference import exact_row
from derive.impl.exact.tolerance import Tolerance, kappa
from derive.normalizers.exact import Undecided

__all__ = ["Diagnosis", "Match", "diagnose"]

# the fields each kind of match reports (its JSON keys): a row form's faulty formula with its
# explanation and derivation, or a kernel fault with what the kernel does and computes instead
_FIELDS = {"row": ("derivation", "name", "title", "formula", "explanation", "fix", "probes"),
           "kernel": ("name", "title", "does", "computes", "fix")}


@dataclass(frozen=True)
class Match:
    """A known fault the implementation agrees with on every probe: its key (``name``), title and
    fix; for the row form the faulty formula, the explanation, the symbolic derivation (JSON, or
    None) and the probe rows compared; for a kernel form what the faulty kernel does and what it
    computes instead."""

    kind: str  # row | kernel
    name: str
    title: str
    fix: str
    formula: str = ""
    explanation: str = ""
    derivation: dict | None = None
    probes: int = 0
    does: str = ""
    computes: str = ""

    def as_json(self) -> dict:
        return {k: getattr(self, k) for k in _FIELDS[self.kind]}


@dataclass
class Diagnosis:
    matched: list[Match] = field(default_factory=list)
    pattern: list[str] = field(default_factory=list)
    probes: int = 0
    failing_probes: int = 0

    def as_json(self) -> dict:
        return {"matched": [m.as_json() for m in self.matched], "pattern": self.pattern, "probes": self.probes,
                "failing_probes": self.failing_probes}



def _same(y: list, f: list, row, params, tol: Tolerance, scales: list | None = None) -> bool:
    if len(y) != len(f):
        return False
    kap = kappa(row, params)
    scales = scales or [abs(b) for b in f]
    for a, b, m in zip(y, f, scales):
        if math.isnan(b):
            if not math.isnan(a):
                return False
        elif math.isinf(b):
            if a != b:
                return False
        elif not math.isfinite(a) or abs(a - b) > tol.bound(m, kap):
            return False
    return True


@dataclass
class _Probe:
    row: tuple  # as rounded to the dtype
    params: dict  # all parameters (fixed and probed)
    free: dict  # the probed free parameters, passed to the checker
    output: list | None
    exact: list
    defined: bool
    agrees: bool
    key: tuple = ()  # the probe row as written in PROBE_ROWS (before rounding)


def _probes(checker: Checker, failure: Failure, tol: Tolerance) -> list[_Probe]:
    sets = param_sets(checker.norm, checker.free_params, "probe")
    free_of_failure = {p: failure.params[p] for p in checker.free_params}
    todo = [(tuple(failure.row), free_of_failure)] + [(r, s) for s in sets for r in PROBE_ROWS]
    out = []
    for key, free in todo:
        row = tuple(checker.round(np.array(key, dtype=float), tol.dtype).tolist())
        params = {**checker.fixed_params, **free}
        y = checker.outputs(row, free, tol.dtype)
        ex = exact_row(checker.norm, list(row), params, checker.dps)
        if ex.undecided:  # no exact value to compare the probe with
            continue
        exact = ex.floats()
        if y is None:
            agrees = False
        elif ex.defined:
            agrees = _same(y, exact, row, params, tol, ex.scales)
        else:
            agrees = convention(checker.norm, y, params, checker.dps,
                                lambda u, row=row, params=params: tol.bound(u, kappa(row, params))) is not None
        out.append(_Probe(row, params, free, y, exact, ex.defined, agrees, tuple(key)))
    return out


def _ratio(p: _Probe) -> float | None:
    if p.output is None or not p.defined or not all(math.isfinite(v) for v in p.output):
        return None
    total = sum(p.exact)
    return sum(p.output) / total if total > 0 else None


def _close(a, b) -> bool:
    """Two factors equal to well within their distance from 1 (the error they stand for)."""
    if a is None or b is None:
        return False
    return abs(a - b) <= 1e-3 * max(abs(a - 1), abs(b - 1)) + 1e-12 * max(abs(a), abs(b))


def _scaled(p: _Probe) -> bool:
    """The output is the exact row times one factor (0 included), to well within the error itself."""
    r = _ratio(p)
    if r is None or r < 0:
        return False
    error = max(abs(y - e) for y, e in zip(p.output, p.exact))
    return error > 0 and all(abs(y - r * e) <= 1e-3 * error for y, e in zip(p.output, p.exact))


def _shift_invariant(probes: list[_Probe], tol: Tolerance) -> tuple[bool | None, bool | None]:
    """(is the definition shift-invariant, is the output) on the probes (1, 0) and (2, 1)."""
    last = probes[-1].free
    by_key = {p.key: p for p in probes[1:] if not p.free or p.free == last}
    a, b = by_key.get((1.0, 0.0)), by_key.get((2.0, 1.0))
    if a is None or b is None or a.output is None or b.output is None or not (a.defined and b.defined):
        return None, None
    exact = _same(b.exact, a.exact, b.row, b.params, tol)
    output = all(abs(u - v) <= 1e-9 for u, v in zip(a.output, b.output))
    return exact, output


def _pattern(probes: list[_Probe], failure: Failure, name: str, tol: Tolerance) -> list[str]:
    """Sentences about the error, each one true of the probes it speaks of."""
    bad = [p for p in probes if not p.agrees]
    lines = []
    if failure.what == "gradient":
        if not bad:
            lines.append(f"Its forward values agree with the definition on all {len(probes)} probe rows; the "
                         "gradient (autograd) differs from the derived Jacobian: look for a detached term, "
                         "an in-place update or a custom backward.")
        else:
            lines.append("Its gradient (autograd) differs from the derived Jacobian on the counterexample "
                         f"row, and its forward values disagree on {len(bad)} of {len(probes)} probe rows.")
    if not bad:
        if failure.what != "gradient":
            lines.append(f"The counterexample row agrees when run alone (shape [{len(failure.row)}]): the "
                         f"error depends on the other rows of the input (shape {list(failure.shape)}), e.g. a "
                         "maximum or sum taken over the wrong axis or over the whole batch.")
        return lines
    masked = [any(v == -math.inf for v in p.row) for p in bad]
    if all(masked):
        every = all(all(v == -math.inf for v in p.row) for p in bad)
        lines.append("It disagrees only on rows where " + ("every score is masked (−∞)." if every
                                                            else "some scores are masked (−∞)."))
    elif all(max((abs(v) for v in p.row if math.isfinite(v)), default=0) >= 100 for p in bad):
        lines.append("It disagrees only on rows with large scores (|x| ≥ 100): an overflow or "
                     "underflow problem.")
    nonfinite = [p for p in bad if p.output is not None and not all(math.isfinite(v) for v in p.output)
                 and p.defined]
    if nonfinite:
        rows = ", ".join(_row(p.row) for p in nonfinite[:3])
        lines.append(f"It returns NaN or ±inf where the definition is finite, e.g. on {rows}.")
    finite = [p for p in bad if _ratio(p) is not None]
    if finite and all(_scaled(p) for p in finite):
        which = "every failing row" if len(finite) == len(bad) else "every failing row with a finite output"
        lines.append(f"In {which} the output is the exact row times a factor (the ratios "
                     "between weights are right): the normalization (denominator) is wrong.")
        lines.extend(_factor(probes, [p for p in finite if _ratio(p) > 0]))
    exact_invariant, output_invariant = _shift_invariant(probes, tol)
    if exact_invariant is False and output_invariant:
        lines.append("Its output does not change when every score is shifted by the same constant, "
                     f"but {name} is not shift-invariant (on the probes [1, 0] and [2, 1]).")
    if not lines:
        lines.append(f"No simple pattern: it disagrees on {len(bad)} of {len(probes)} probe rows.")
    return lines


def _show_factor(f: float) -> str:
    if abs(f - 1) < 1e-4:  # 1 ± a small relative error: say how small
        return f"1 {'+' if f > 1 else '−'} {abs(f - 1):.3g}"
    return f"{f:.6g}"


def _factor(probes: list[_Probe], bad: list[_Probe]) -> list[str]:
    factors = [_ratio(p) for p in bad]
    if factors and all(_close(f, factors[0]) for f in factors):
        return [f"The factor is the same on every failing row: {_show_factor(factors[0])}."]
    last = probes[-1].free
    by_row = {p.key: _ratio(p) for p in probes[1:] if not p.free or p.free == last}
    a, b, c = by_row.get((1.0, 0.0)), by_row.get((1.0, -1.0)), by_row.get((2.0, 1.0))
    d, e = by_row.get((1.0, 1.0)), by_row.get((1.6931471805599454,))
    if _close(a, b) and not _close(d, e):
        return ["The factor depends only on max x (rows with the same maximum get the same factor)."]
    if _close(d, e) and not _close(a, b):
        return [("The factor depends only on the row sum Σ exp(x) (rows with the same sum get the "
                "same factor).")]
    if a is not None and c is not None:
        return ["The factor depends on both the maximum and the row sum."]
    return []


def _row(row) -> str:
    return "[" + ", ".join(shortest(v) for v in row) + "]"


def diagnose(checker: Checker, failure: Failure, tol: Tolerance) -> Diagnosis:
    probes = _probes(checker, failure, tol)
    diag = Diagnosis(probes=len(probes), failing_probes=sum(not p.agrees for p in probes))
    name = checker.norm.name
    for entry, fields, evaluate in variants(name):
        # a row where the definition has no value (fully masked, e.g. for softmax) says nothing
        # about a form: any accepted convention may be there
        usable = [p for p in probes if p.output is not None and p.defined]
        if not usable:
            break
        differs, same = False, True
        for p in usable:
            try:
                form = evaluate(p.row, p.params, tol.dtype)
            except Undecided:  # the form has no value that can be enclosed here: it is not matched
                same = False
                break
            if not _same(form, p.exact, p.row, p.params, tol) and p.defined:
                differs = True
            if not _same(p.output, form, p.row, p.params, tol):
                same = False
                break
        if same and differs:
            key = tuple(sorted(fields.items()))
            derivation = derive_fault(entry.name, name, key)
            diag.matched.append(Match("row", entry.name, probes=len(usable), **texts(name, entry.name, key),
                                      derivation=None if derivation is None else derivation.as_json()))
    if not diag.matched:
        diag.pattern = _pattern(probes, failure, name, tol)
    return diag
