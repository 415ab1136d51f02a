"""Differential testing of an implementation against the exact definition.

For each dtype asked for, Hypothesis (derandomized, no database) draws inputs (see
:mod:`derive.impl.cases.rows`), the implementation is called on them rounded to the dtype, and every
output weight is compared with the exact weight of the *rounded* inputs within the
dtype's tolerance (:mod:`derive.impl.exact.tolerance`). With torch, the gradient of ⟨c, y⟩ (autograd) is
compared with cᵀJ from the derived Jacobian. The first failure is shrunk to the simplest
input Hypothesis can find; the fixed edge cases are checked after. Agreement means
agreement on every tested input: evidence, not a proof.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from derive.errors import InputError
from derive.impl.judge.counterexample import Counterexample
from derive.impl.judge.classes import file_failure, verdict
from derive.impl.exact.masked import convention, is_fully_masked
from derive.impl.numbers import agree, round_to
from derive.impl.cases.rows import (EDGE_ROWS, MAX_N, cases, lead_ndim, param_sets, param_strategy, search,
                                special_rows)
from derive.impl.exact.reference import NoJacobian, exact_row, gradient, jacobian, kink_distance
from derive.impl.run.target import ImplRaised, Target
from derive.impl.exact.tolerance import Tolerance, kappa

__all__ = ["Checker", "DtypeResult", "Failure", "grad_weights"]


# every failure class of the row form, in the report's order: inputs drawn by Hypothesis, classed by what their
# failing row has (disjoint: short finite, short with a masked entry, long; a wrong gradient), then the fixed
# edge cases, where a row belongs to each of fully masked, some entries masked, extreme, long that it is (the
# other fixed rows when none): failures are filed by derive.impl.judge.classes.RULE
ROW_CLASSES = {
    "finite": "short finite rows (Hypothesis)",
    "masked": "short rows with masked entries (Hypothesis)",
    "long": "long rows of 17 to 512 keys (Hypothesis)",
    "gradients": "gradients on short rows (Hypothesis, torch)",
    "edge-fully-masked": "fixed fully masked rows",
    "edge-masked": "fixed rows with some entries masked",
    "edge-extreme": "fixed rows with scores of magnitude 1000 or more",
    "edge-long": "fixed long rows",
    "edge": "the other fixed edge cases (ties, single elements, every decade)",
}


def edge_classes(row) -> list[str]:
    """Every class of a fixed row, in the order of ROW_CLASSES."""
    finite = [abs(v) for v in row if v != -math.inf]
    out = []
    if row and not finite:
        out.append("edge-fully-masked")
    elif len(finite) < len(row):
        out.append("edge-masked")
    if finite and max(finite) >= 1e3:
        out.append("edge-extreme")
    if len(row) > MAX_N:
        out.append("edge-long")
    return out or ["edge"]


def drawn_class(fail: Failure) -> str:
    """The class of a failure Hypothesis found, by what its failing row has (not the phase that drew it)."""
    if fail.what == "gradient":
        return "gradients"
    if len(fail.row) > MAX_N:
        return "long"
    return "masked" if any(v == -math.inf for v in fail.row) else "finite"


def _record(result, members, fail: Failure) -> None:
    file_failure(result.classes, result.failed_in, members, fail)
    if result.failure is None:
        result.failure = fail


def grad_weights(n: int) -> np.ndarray:
    """The fixed cotangent c of the gradient check: not constant, so cᵀJ ≠ 0."""
    return np.array([(1.0, -0.5, 2.0, 0.25, -1.5, 0.75, -2.0, 1.25)[k % 8] for k in range(n)])


@dataclass(kw_only=True)
class Failure(Counterexample):
    """A counterexample of the row form (``what``: value | gradient | complex; ``output`` the
    implementation's row, weights or gradient)."""

    row: list  # the failing row of scores (rounded to the dtype)
    params: dict
    shape: tuple  # shape of the whole input
    defined: bool = True
    source: str = "hypothesis"  # hypothesis (shrunk) | edge case (fixed list)
    index: tuple = ()  # the failing row's index in the leading axes of the input (normalized axis last)


@dataclass
class DtypeResult:
    dtype: str
    tolerance: Tolerance
    examples: int = 0  # Hypothesis inputs tested (including shrinking)
    edge_cases: int = 0
    rows: int = 0
    max_abs_error: float = 0.0
    max_ratio: float = 0.0  # largest error / allowed error
    gradients: bool = False
    gradient_skips: int = 0  # torch calls whose output did not require grad (not compared)
    gradient_calls: int = 0
    kink_skips: int = 0  # rows at a point where the definition is not differentiable (not compared)
    undecided_rows: int = 0  # rows whose exact weights could not be enclosed (not judged either way)
    undecided_reason: str = ""  # why, for the first of them
    vacuous_rows: int = 0  # rows whose bound could not fail (Tolerance.vacuous): not judged either way
    vacuous_reason: str = ""  # why, for the first of them

    @property
    def verdict(self) -> str:
        """disagrees (a failure), undecided (none, and no row judged: every one's exact value was out of
        reach or its bound could not fail), or agrees: the rows judged agree, the others are counted in
        a note (:func:`derive.impl.judge.classes.verdict`)."""
        return verdict(self.failure is not None, {"rows": self.rows},
                       {"rows": self.undecided_rows + self.vacuous_rows})

    def gradient_note(self) -> str:
        if not self.gradients:
            return "—"
        if self.gradient_skips == 0:
            return "checked"
        if self.gradient_skips >= self.gradient_calls:
            return "not compared: the output is not differentiable"
        return f"checked; not differentiable in {self.gradient_skips} of {self.gradient_calls} calls"
    failure: Failure | None = None
    undefined_rows: int = 0  # fully masked rows where the definition has no value
    masked_rows: int = 0  # fully masked rows (every score −∞) tested
    conventions: dict = field(default_factory=dict)  # convention → rows, where the definition has no value
    classes: dict = field(default_factory=dict)  # class (ROW_CLASSES) → its first failure filed there
    failed_in: dict = field(default_factory=dict)  # failure class → the class its first failing input is filed under
    class_inputs: dict = field(default_factory=dict)  # failure class → inputs tested
    stopped: str = ""  # the function raised on a later input after a failure: the check stopped there


def _index(r: int, shape) -> tuple:
    return tuple(int(i) for i in np.unravel_index(r, shape[:-1])) if len(shape) > 1 else ()


@dataclass
class Checker:
    norm: object
    target: Target
    dim: int
    dps: int
    free_params: tuple[str, ...] = ()
    fixed_params: dict = field(default_factory=dict)
    contract: object = None  # what the function accepts (derive.impl.cases.contract): inputs outside it are not made

    def inside(self, x: np.ndarray, params: dict) -> bool:
        """The input lies inside the contract (its row length and parameter values)."""
        c = self.contract
        return c is None or (x.shape[-1] >= c.min_keys and all(c.sink_ok(float(v)) for v in params.values()))

    def judged(self, row) -> bool:
        """A row the contract lets derive judge (``no-fully-masked``: not a fully masked one)."""
        return not (self.contract is not None and self.contract.no_fully_masked and is_fully_masked(row))

    def round(self, x: np.ndarray, dtype: str) -> np.ndarray:
        return round_to(x, dtype)

    def call(self, x: np.ndarray, dtype: str, params: dict, grad: bool):
        """Outputs (and gradients) with the normalized axis last, as float64."""
        xin = np.moveaxis(x, -1, self.dim)
        mask = None
        if self.target.takes_mask:
            mask = xin != -math.inf
            xin = np.where(mask, xin, 0.0)
        elif self.contract is not None and self.contract.finite_scores:  # a masked score as finfo.min; the
            xin = np.where(xin == -math.inf, self.contract.masked_as(dtype), xin)  # definition's stays −∞
        c = None
        if grad:
            c = np.moveaxis(np.broadcast_to(grad_weights(x.shape[-1]), x.shape), -1, self.dim).copy()
        y, g = self.target.call(xin, dtype, self.dim, mask, {**self.fixed_params, **params}, c)
        y = np.moveaxis(y, self.dim, -1)
        return y, (None if g is None else np.moveaxis(g, self.dim, -1))

    def compare(self, x: np.ndarray, params: dict, tol: Tolerance, result: DtypeResult | None,
                grad: bool) -> Failure | None:
        x = self.round(x, tol.dtype)
        allp = {**self.fixed_params, **params}
        y, g = self.call(x, tol.dtype, params, grad)
        if np.iscomplexobj(y):
            return self._complex(x, y, allp, tol)
        if grad and result is not None:
            result.gradient_calls += 1
            result.gradient_skips += g is None
        rows, outs = x.reshape(-1, x.shape[-1]), y.reshape(-1, x.shape[-1])
        grads = None if g is None else g.reshape(-1, x.shape[-1])
        for r, (row, out) in enumerate(zip(rows.tolist(), outs.tolist())):
            if not self.judged(row):
                continue
            ex = exact_row(self.norm, row, allp, self.dps)
            if ex.undecided:  # neither agrees nor disagrees: counted and reported
                if result is not None:
                    result.undecided_rows += 1
                    result.undecided_reason = result.undecided_reason or ex.undecided
                continue
            kap = kappa(row, allp)
            masked = is_fully_masked(row)
            if result is not None:
                result.rows += 1
                result.masked_rows += masked
                result.undefined_rows += not ex.defined
            if not ex.defined:  # a fully masked row where the definition has no value
                conv = convention(self.norm, out, allp, self.dps, lambda u: tol.bound(u, kap))
                if conv is None:
                    return Failure(dtype=tol.dtype, what="value", row=row, params=allp, shape=tuple(x.shape),
                                   output=out, exact=ex.floats(), errors=[math.inf] * len(out),
                                   bounds=[math.nan] * len(out), defined=False, index=_index(r, x.shape))
                if result is not None:
                    result.conventions[conv] = result.conventions.get(conv, 0) + 1
                continue
            bounds = [tol.bound(m, kap) for m in ex.scales]
            checks = [agree(yv, float(p), b) for yv, p, b in zip(out, ex.values, bounds)]
            errs = [e for _, e in checks]
            if result is not None:
                for e, b in zip(errs, bounds):
                    result.max_abs_error = max(result.max_abs_error, e)
                    result.max_ratio = max(result.max_ratio, e / b)
            if not all(ok for ok, _ in checks):
                return Failure(dtype=tol.dtype, what="value", row=row, params=allp, shape=tuple(x.shape), output=out,
                               exact=ex.floats(), errors=errs, bounds=bounds, defined=ex.defined,
                               index=_index(r, x.shape))
            if tol.vacuous(kap):  # passing a bound that cannot fail is no evidence: not judged
                if result is not None:
                    result.rows -= 1
                    result.vacuous_rows += 1
                    result.vacuous_reason = result.vacuous_reason or tol.vacuous_reason(kap)
                continue
            if grads is not None and ex.defined:
                fail = self._gradient(row, ex, grads[r].tolist(), allp, tol, kap, result, x.shape)
                if fail:
                    fail.index = _index(r, x.shape)
                    return fail
        return None

    def _complex(self, x, y, allp, tol) -> Failure:
        """Complex weights never agree: the failure shows the first row with an imaginary part."""
        rows, outs = x.reshape(-1, x.shape[-1]), y.reshape(-1, x.shape[-1])
        r = next((k for k, out in enumerate(outs) if np.any(out.imag != 0)), 0)
        row = rows[r].tolist()
        ex = exact_row(self.norm, row, allp, self.dps)
        kap = kappa(row, allp)
        bounds = [tol.bound(m, kap) for m in ex.scales]
        errs = [abs(complex(yv) - float(p)) if ex.defined else math.inf for yv, p in zip(outs[r], ex.values)]
        return Failure(dtype=tol.dtype, what="complex", row=row, params=allp, shape=tuple(x.shape),
                       output=[complex(v) for v in outs[r]], exact=ex.floats(), errors=errs, bounds=bounds,
                       defined=ex.defined, index=_index(r, x.shape))

    def _gradient(self, row, ex, grad, allp, tol, kappa, result, shape) -> Failure | None:
        kink = kink_distance(self.norm, row, allp, self.dps)
        if kink is not None and kink <= 4 * tol.bound(1.0, kappa):
            if result is not None:
                result.kink_skips += 1
            return None  # at (or within rounding of) a kink the derivative is one-sided
        try:
            jac = jacobian(self.norm, row, allp, self.dps)
        except NoJacobian as e:  # not judged: a kink, or an entry no precision up to the cap encloses
            if result is not None:
                if e.kink:
                    result.kink_skips += 1
                else:
                    result.undecided_rows += 1
                    result.undecided_reason = result.undecided_reason or str(e)
            return None
        ref, scale = gradient(jac, grad_weights(len(row)), ex.values, self.dps)  # cᵀJ in arb, rounded once
        bounds = [tol.abs + tol.rel * (1 + kappa) * s for s in scale]
        beyond = [not math.isfinite(gv) or abs(gv - rv) > b for gv, rv, b in zip(grad, ref, bounds)]
        errs = [abs(gv - rv) if math.isfinite(gv) else math.inf for gv, rv in zip(grad, ref)]
        if result is not None:
            for e, b in zip(errs, bounds):
                result.max_ratio = max(result.max_ratio, e / b)
        if any(beyond):
            return Failure(dtype=tol.dtype, what="gradient", row=row, params=allp, shape=tuple(shape), output=grad,
                           exact=ref, errors=errs, bounds=bounds)
        return None

    def run(self, tol: Tolerance, examples: int) -> DtypeResult:
        result = DtypeResult(tol.dtype, tol)
        grad = self.target.api == "torch"
        result.gradients = grad

        aborted: list[BaseException] = []  # bad usage seen inside Hypothesis: raised after it

        def fails(case, grad: bool) -> bool:
            if aborted:
                return False
            x, params = case
            if not self.inside(x, {**self.fixed_params, **params}):
                return False  # outside the contract: not made
            result.examples += 1
            try:
                return self.compare(x, params, tol, result, grad) is not None
            except ImplRaised:
                return True  # shrunk like a failure; the call below raises it on the simplest input
            except InputError as exc:  # the worker is gone: no more calls
                aborted.append(exc)
                return False

        # values on short unmasked rows, then short masked rows, then long rows (several tiles);
        # then (torch) values and gradients on short rows
        first, second = (examples * 2 + 4) // 5, (examples * 3 + 9) // 10
        phases = [(False, first, False, False), (True, second, False, False),
                  (True, examples - first - second, False, True)]
        if grad:
            phases.append((True, max(1, examples // 2), True, False))
        for masked, budget, with_grad, long in phases:  # every phase, also after a failure: every class
            if budget < 1:
                continue
            cls = "gradients" if with_grad else ("long" if long else ("masked" if masked else "finite"))
            before = result.examples
            free = {p: param_strategy(self.norm, p) for p in self.free_params}
            strategy = cases(lead_ndim(self.dim), free, masked, long=long)
            found = search(strategy, lambda case, g=with_grad: fails(case, g), budget)
            if aborted:
                raise aborted[0]
            result.class_inputs[cls] = result.examples - before
            if found is not None:
                x, params = found
                try:
                    fail = self.compare(x, params, tol, result, with_grad)
                except ImplRaised as exc:
                    if result.failure is None:
                        raise
                    result.stopped = f"it raised {exc} on an input of the class {ROW_CLASSES[cls]}"
                    return result
                if fail is not None:
                    _record(result, [drawn_class(fail)], fail)
        lead = (1,) * lead_ndim(self.dim)
        sets = param_sets(self.norm, self.free_params, "edge")
        todo = [(row, params) for row in EDGE_ROWS for params in sets]
        todo += [(row, params) for params in sets
                 for row in special_rows(self.norm, {**self.fixed_params, **params})]
        todo = [(row, params) for row, params in todo
                if self.inside(np.array(row).reshape(len(row)), {**self.fixed_params, **params})]
        for row, params in todo:
            result.edge_cases += 1
            members = edge_classes(row)
            for cls in members:
                result.class_inputs[cls] = result.class_inputs.get(cls, 0) + 1
            try:
                fail = self.compare(np.array(row).reshape(*lead, len(row)), params, tol, result,
                                    grad and len(row) <= MAX_N)
            except ImplRaised as exc:
                if result.failure is None:
                    raise
                result.stopped = f"it raised {exc} on the fixed row {list(row)[:8]}"
                return result
            if fail is not None:
                fail.source = "edge case"
                _record(result, members, fail)
        return result

    def outputs(self, row: tuple, params: dict, dtype: str) -> list[float] | None:
        """The implementation's output on one row (rounded to ``dtype``), for diagnosis."""
        lead = (1,) * lead_ndim(self.dim)
        x = self.round(np.array(row, dtype=np.float64).reshape(*lead, len(row)), dtype)
        try:
            y, _ = self.call(x, dtype, params, False)
        except ImplRaised:
            return None
        return None if np.iscomplexobj(y) else y.reshape(-1).tolist()
