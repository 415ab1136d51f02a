"""The attention form's judge: one case run through the kernel and every output compared with
the exact definition on the arrays passed (:func:`derive.impl.exact.reference.exact_attention`); the fixed list
class by class, then the search (:mod:`derive.impl.cases.attention_search`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from derive.errors import InputError
from derive.impl.cases.attention import Case, Setup, arrays, case_classes, with_dtype_mask
from derive.impl.cases.attention_search import drawn_cases
from derive.impl.cases.rows import search
from derive.impl.exact.reference import exact_attention
from derive.impl.judge.classes import file_failure
from derive.impl.judge.counterexample import Counterexample
from derive.impl.run.target import ImplRaised

__all__ = ["AttentionChecker", "DtypeResult", "Failure", "search_attention"]

INF = math.inf


@dataclass(kw_only=True)
class Failure(Counterexample):
    """A counterexample of the attention form: one entry (``output``, ``exact``, ``errors`` and
    ``bounds`` of length 1) of ``what`` (out | lse | dq | dk | dv | dsinks) at ``where``."""

    case: Case
    where: tuple  # (b, h, i[, c]) or (h,) for dsinks
    row: list  # the scores of the failing row (for out, lse, dq): x_ij, −inf masked
    note: str = ""
    source: str = "fixed list"  # fixed list | search (Hypothesis, shrunk)

    def as_json(self) -> dict:
        return {"class": self.cls, "case": self.case.describe(), "what": self.what, "where": list(self.where),
                "output": _j(self.output[0]), "exact": _j(self.exact[0]), "error": _j(self.errors[0]),
                "bound": _j(self.bounds[0]), "row": [_j(x) for x in self.row], "note": self.note or None,
                "source": self.source}


def _fail(dtype, case, what, where, y, p, error, bound, row, note="") -> Failure:
    return Failure(dtype=dtype, cls=case.cls, case=case, what=what, where=where, output=[y], exact=[p],
                   errors=[error], bounds=[bound], row=row, note=note)


def _j(v):
    v = float(v)
    return (("inf" if v > 0 else "-inf") if math.isinf(v) else "nan") if not math.isfinite(v) else float(
        format(v, ".17g"))


def _n(v) -> str:
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


@dataclass
class DtypeResult:
    dtype: str
    cases: int = 0
    rows: int = 0
    per_class: dict = field(default_factory=dict)  # class → number of cases of it run (a case counts in each)
    failures: dict = field(default_factory=dict)  # class → the first Failure filed under it (RULE)
    failed_in: dict = field(default_factory=dict)  # class → the class its first failing case is filed under
    returned: str = ""
    stopped: str = ""  # the function raised on a later case after a failure
    searched: int = 0  # calls the search made after the fixed list (with shrinking)
    vacuous_rows: int = 0  # passing rows whose bound could not fail (Tolerance.vacuous): not judged
    vacuous_reason: str = ""  # why, for the first of them

    @property
    def verdict(self) -> str:
        """disagrees (a failure), undecided (none, but some row's comparison could not fail), or agrees."""
        return "disagrees" if self.failures else "undecided" if self.vacuous_rows else "agrees"

    def record(self, case: Case, members: list, fail, rows: int, returned: str, source: str = "fixed list",
               vacuous: tuple = (0, "")):
        """Count a case run in each class it belongs to; file its failure by RULE; count its rows
        not judged (``vacuous``: how many, why)."""
        self.cases += 1
        self.rows += rows - vacuous[0]
        self.vacuous_rows += vacuous[0]
        self.vacuous_reason = self.vacuous_reason or vacuous[1]
        self.returned = self.returned or returned
        for cls in members:
            self.per_class[cls] = self.per_class.get(cls, 0) + 1
        if fail is not None:
            fail.cls, fail.source = members[0], source
            file_failure(self.failures, self.failed_in, members, fail)


def _uniform_ok(y, v, visible) -> bool:
    """y is the mean of v over every key, or over the visible ones (finfo.min masking)."""
    for keys in (np.ones(len(visible), dtype=bool), visible):
        if keys.any() and np.allclose(y, v[keys].mean(axis=0), rtol=1e-2, atol=1e-3):
            return True
    return False


@dataclass
class AttentionChecker:
    target: object
    norm: object
    layout: object
    out_layout: object
    roles: dict
    setup: Setup
    scale: float | None
    mask_value: str
    backward: bool
    dps: int
    api: str | None = None

    def kwargs(self, case: Case, scale: float, mask, sinks) -> dict:
        kw = {}
        r = self.roles
        if "scale" in r:
            kw[r["scale"]] = float(scale)
        if "causal" in r:
            kw[r["causal"]] = bool(case.causal)
        if "mask" in r and mask is not None:
            kw[r["mask"]] = self.layout.mask_to_layout(mask)
        if "sinks" in r and self.setup.extra == "sinks":
            kw[r["sinks"]] = np.array(sinks, dtype=np.float64)
            kw["__sinks__"] = r["sinks"]
        if "start_q" in r:
            kw[r["start_q"]] = int(case.start_q)
        if "window" in r:
            kw[r["window"]] = int(case.window)
        if "block" in r and case.block:
            kw[r["block"]] = int(case.block)
        return kw

    def run_case(self, case: Case, tol, rounder) -> tuple[Failure | None, int, str, tuple]:
        dtype = tol.dtype
        if self.api == "numpy" and not tol.numpy:
            raise InputError(f"dtype {dtype} needs a torch implementation; {self.target.name} takes numpy arrays")
        scale = self.scale if self.scale is not None else 1.0 / math.sqrt(case.D)
        mval = with_dtype_mask(self.mask_value, dtype)
        q, k, v, mask, g = arrays(case, scale, mval, rounder, grad=self.backward)
        sinks = None if case.sinks is None else tuple(float(rounder(np.array(s))) for s in case.sinks)
        L, OL = self.layout, self.out_layout
        out_shape = OL.shape(case.B, case.H, case.M, case.Dv)
        lse_shape = OL.lse_shape(case.B, case.H, case.M)
        cot = None if g is None else OL.to_layout(g)
        reply = self.target.worker.request(
            ("acall", L.to_layout(q), L.to_layout(k), L.to_layout(v), self.kwargs(case, scale, mask, sinks), dtype,
             self.api, cot, out_shape, lse_shape),
            f"being called in attention form on {dtype} inputs ({case.describe()})")
        if reply[0] == "raised":
            raise ImplRaised(reply[1], q)
        if reply[0] == "bad":
            self.target.stop()
            raise InputError(f"{self.target.name} {reply[1]} (in attention form, {dtype}, {case.describe()}); "
                             f"no verdict")
        names = reply[1] if len(reply) >= 2 else None
        if (reply[0] != "ok" or not isinstance(names, list) or len(reply) != 2 + len(names)
                or not all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in reply[2:])):
            self.target.stop()
            raise InputError(f"the process running {self.target.name} sent a malformed reply (something wrote to "
                             f"derive's private pipe); no verdict")
        got = dict(zip(names, reply[2:]))
        api = next(n[4:] for n in names if n.startswith("api:"))
        self.api = self.api or api
        self.target.api = self.api
        if got.pop("mutated", None) is not None:
            self.target.mutates = True
        if self.backward and self.api != "torch":
            raise InputError(f"--backward differentiates the function with torch autograd; {self.target.name} takes "
                             f"numpy arrays")
        keep = np.broadcast_to(case.visible(), (case.B, case.M, case.N))
        bias = None
        if mask is not None:
            keep = keep & (mask[:, 0] != -INF)
            bias = np.where(keep, mask[:, 0], 0.0)
        ex = exact_attention(q, k, v, scale, keep, bias, sinks, self.dps, g)
        returned = ", ".join(n for n in ("out", "lse", "dq", "dk", "dv", "dsinks") if n in got)
        fail = self.compare(case, got, ex, v, tol)
        vac = ex.defined & (tol.rel * (1.0 + ex.kappa) >= 1.0)  # Tolerance.vacuous, row by row
        first = next(iter(np.argwhere(vac)), None)
        vacuous = (0, "") if fail is not None or first is None else (
            int(vac.sum()), tol.vacuous_reason(float(ex.kappa[tuple(first)])))
        return fail, case.B * case.H * case.M, returned, vacuous

    def compare(self, case: Case, got: dict, ex, v, tol) -> Failure | None:
        OL = self.out_layout
        out = OL.from_layout(got["out"])
        lse = OL.from_layout(got["lse"], "bhn") if "lse" in got else None
        vis = case.visible()
        for b in range(case.B):
            for h in range(case.H):
                for i in range(case.M):
                    row = ex.rows[b, h, i].tolist()
                    kap = ex.kappa[b, h, i]
                    y = out[b, h, i]
                    if not ex.defined[b, h, i]:
                        if not (np.all(y == 0) or np.all(np.isnan(y)) or _uniform_ok(y, v[b, h], vis[i])):
                            return _fail(tol.dtype, case, "out", (b, h, i, 0), y[0], math.nan, INF, math.nan, row,
                                           "every key is masked and there is no extra logit: out may be 0, NaN "
                                           "or the mean of the values")
                    else:
                        for c in range(case.Dv):
                            p, m = ex.out[b, h, i, c], ex.out_scale[b, h, i, c]
                            bound = tol.bound(m, kap)
                            err = abs(y[c] - p) if math.isfinite(y[c]) else INF
                            if not err <= bound:
                                return _fail(tol.dtype, case, "out", (b, h, i, c), y[c], p, err, bound, row)
                    if lse is not None:
                        p, yl = ex.lse[b, h, i], lse[b, h, i]
                        if p == -INF:
                            if not (math.isinf(yl) or math.isnan(yl)):
                                return _fail(tol.dtype, case, "lse", (b, h, i), yl, p, INF, 0.0, row)
                        else:
                            bound = tol.bound(max(1.0, abs(p)), kap)
                            err = abs(yl - p) if math.isfinite(yl) else INF
                            if not err <= bound:
                                return _fail(tol.dtype, case, "lse", (b, h, i), yl, p, err, bound, row)
        if ex.grads is None:
            return None
        return self.compare_grads(case, got, ex, tol)

    def compare_grads(self, case: Case, got: dict, ex, tol) -> Failure | None:
        L = self.layout
        kap_head = ex.kappa.max(axis=2)  # (B, H)
        for name in ("dq", "dk", "dv"):
            value, scale = ex.grads[name]
            y = L.from_layout(got[name]) if name in got else np.zeros_like(value)
            for idx in np.ndindex(value.shape):
                b, h, t = idx[0], idx[1], idx[2]
                if name == "dq" and not ex.defined[b, h, t]:
                    continue
                kap = ex.kappa[b, h, t] if name == "dq" else kap_head[b, h]
                bound = tol.bound(scale[idx], kap)
                err = abs(y[idx] - value[idx]) if math.isfinite(y[idx]) else INF
                if not err <= bound:
                    row = ex.rows[b, h, t].tolist() if name == "dq" else []
                    return _fail(tol.dtype, case, name, idx, y[idx], value[idx], err, bound, row)
        if self.setup.extra == "sinks" and case.sinks is not None:
            value, scale = ex.grads["dsinks"]
            if "dsinks" not in got:
                return _fail(tol.dtype, case, "dsinks", (0,), math.nan, value[0], INF, 0.0, [],
                               "no gradient reached the sinks (autograd gave none)")
            y = np.ravel(got["dsinks"])
            if y.shape != value.shape:
                return _fail(tol.dtype, case, "dsinks", (0,), math.nan, value[0], INF, 0.0, [],
                               f"the sinks' gradient has shape {list(y.shape)}, not [{case.H}]")
            for h in range(case.H):
                if not all(ex.defined[:, h].ravel()):
                    continue
                bound = tol.abs + tol.rel * (1 + kap_head[:, h].max()) * scale[h]
                err = abs(y[h] - value[h]) if math.isfinite(y[h]) else INF
                if not err <= bound:
                    return _fail(tol.dtype, case, "dsinks", (h,), y[h], value[h], err, bound, [])
        return None

    def run(self, tol, rounder, case_list, budget: int = 0) -> DtypeResult:
        """The fixed list, every case; then, when every case passed, ``budget`` searched calls."""
        res = DtypeResult(tol.dtype)
        for case in case_list:
            members = case_classes(case, self.setup)
            if all(cls in res.failed_in for cls in members):
                continue  # every class of it already fails, with a smaller counterexample
            try:
                fail, rows, returned, vacuous = self.run_case(case, tol, rounder)
            except ImplRaised as exc:
                if res.failures:  # after a failure the verdict stands: say where the list stopped
                    res.stopped = f"it raised {exc} on {case.describe()}"
                    break
                raise InputError(f"{self.target.name} raised {exc} on a valid {tol.dtype} input in attention form "
                                 f"({case.describe()})") from None
            res.record(case, members, fail, rows, returned, vacuous=vacuous)
        if budget > 0 and not res.failures and not res.stopped:
            search_attention(self, tol, rounder, res, budget)
        return res



def search_attention(checker, tol, rounder, res, budget: int) -> None:
    """Search ``budget`` drawn calls (and Hypothesis's shrinking) for a failing one; file the
    simplest found under its classes, ``source`` "search"."""
    aborted: list = []

    def fails(case) -> bool:
        if aborted:
            return False
        res.searched += 1
        try:
            fail = checker.run_case(case, tol, rounder)[0]
        except ImplRaised:
            return True  # shrunk like a failure; the call below raises it on the simplest case
        except InputError as exc:  # the worker is gone, or bad output: no more calls
            aborted.append(exc)
            return False
        return fail is not None

    found = search(drawn_cases(checker.setup), fails, budget)
    if aborted:
        raise aborted[0]
    if found is None:
        return
    try:
        fail, rows, returned, _ = checker.run_case(found, tol, rounder)
    except ImplRaised as exc:
        raise InputError(f"{checker.target.name} raised {exc} on a valid {tol.dtype} input in attention form "
                         f"({found.describe()}), found by the search") from None
    if fail is None:  # the function answered differently on the same call: no verdict on it
        raise InputError(f"{checker.target.name} is not deterministic: the {tol.dtype} call {found.describe()} "
                         f"failed once and passed when repeated; no verdict")
    res.record(found, case_classes(found, checker.setup), fail, rows, returned, "search")
