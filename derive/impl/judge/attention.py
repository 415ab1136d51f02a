"""The attention form's judge: one case run through the kernel and every output compared with
the exact definition on the arrays passed (:func:`derive.impl.exact.reference.exact_attention`); the fixed list
class by class, then the search (:mod:`derive.impl.cases.attention_search`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from derive.errors import InputError
from derive.impl.cases.attention import Case, Setup, arrays, case_classes, with_dtype_mask
from derive.impl.cases.masks import lower, window_arg
from derive.impl.cases.attention_search import drawn_cases
from derive.impl.cases.kernel import LSE_CONVENTIONS, LSE_WORDS
from derive.impl.cases.rows import search
from derive.impl.exact.reference import exact_attention
from derive.impl.exact.tolerance import dv_magnitude, magnitude, relative
from derive.impl.judge.classes import file_failure, verdict
from derive.impl.judge.counterexample import Counterexample
from derive.impl.run.roles import DTYPE
from derive.impl.run.target import ImplRaised
from derive.sandbox.process import Crashed

__all__ = ["AttentionChecker", "Coverage", "DtypeResult", "Failure", "search_attention"]

INF = math.inf
# a normalizer outside the softmax family has its weights enclosed one by one (its formula in arb balls):
# a call with more query-key pairs than this is judged on its first 8 queries, every sample-th and the last 8
# (Case.sample)
GENERIC_ENTRIES = 1 << 18


@dataclass(kw_only=True)
class Failure(Counterexample):
    """A counterexample of the attention form: one entry (``output``, ``exact``, ``errors`` and
    ``bounds`` of length 1) of ``what`` (out | lse | dq | dk | dv | dsinks) at ``where``."""

    case: Case
    where: tuple  # (b, h, i[, c]) or (h,) for dsinks
    row: list  # the scores of the failing row (for out, lse, dq): x_ij, −inf masked
    note: str = ""
    faults: list = field(default_factory=list)  # the catalogue's faults whose model matches (derive.impl.faults)
    source: str = "fixed list"  # fixed list | search (Hypothesis, shrunk)

    def as_json(self) -> dict:
        return {"class": self.cls, "case": self.case.describe(), "what": self.what, "where": list(self.where),
                "output": _j(self.output[0]), "exact": _j(self.exact[0]), "error": _j(self.errors[0]),
                "bound": _j(self.bounds[0]), "row": [_j(x) for x in self.row], "note": self.note or None,
                "source": self.source, "faults": [f.key for f in self.faults]}


def _fail(dtype, case, what, where, y, p, error, bound, row, note="") -> Failure:
    return Failure(dtype=dtype, cls=case.cls, case=case, what=what, where=where, output=[y], exact=[p],
                   errors=[error], bounds=[bound], row=row, note=note)


def _broke(dtype, case, what: str, text: str) -> Failure:
    """The failure of a case on which the kernel raised (``what`` "raised": ``text`` its exception)
    or crashed ("crashed": the signal that killed it): no output, so nothing to compare."""
    return _fail(dtype, case, what, (), math.nan, math.nan, INF, 0.0, [], text)


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
class Coverage:
    """What the calls run had, read off the calls themselves (never what a list meant to have)."""

    calls: int = 0
    keys: set = field(default_factory=set)  # key lengths
    queries: int = 0  # the most queries in a call
    blocks: set = field(default_factory=set)  # tile sizes passed below the key length
    splits: set = field(default_factory=set)  # split counts of 2 or more passed
    groups: set = field(default_factory=set)  # query heads per kv head
    head_dims: set = field(default_factory=set)
    batches: int = 0
    heads: int = 0
    windows: set = field(default_factory=set)
    masks: set = field(default_factory=set)
    offsets: int = 0  # the largest start_q

    def add(self, case: Case) -> None:
        self.calls += 1
        self.keys.add(case.N)
        self.queries = max(self.queries, case.M)
        if case.block and case.block < case.N:
            self.blocks.add(case.block)
        if case.splits >= 2:
            self.splits.add(case.splits)
        self.groups.add(case.groups)
        self.head_dims.update((case.D, case.Dv))
        self.batches, self.heads = max(self.batches, case.B), max(self.heads, case.H)
        if case.window:
            self.windows.add(tuple(case.window))
        if case.mask:
            self.masks.add(case.mask)
        self.offsets = max(self.offsets, case.start_q)

    def as_json(self) -> dict:
        return {"calls": self.calls, "largest_keys": max(self.keys, default=0),
                "keys_1024_or_more": sorted(n for n in self.keys if n >= 1024), "most_queries": self.queries,
                "tiles": sorted(self.blocks), "splits": sorted(self.splits), "kv_groups": sorted(self.groups),
                "head_dims": sorted(self.head_dims), "most_batches": self.batches, "most_heads": self.heads,
                "largest_start_q": self.offsets}

    def line(self) -> str:
        """One sentence: what ran."""
        keys = sorted(self.keys)
        long = [n for n in keys if n >= 1024]
        bits = [f"key lengths up to {max(keys, default=0)}" + (f" ({', '.join(map(str, long))} among them)"
                                                               if long else ""),
                f"up to {self.queries} queries", f"start_q up to {self.offsets}",
                ("tiles of " + _span(self.blocks) + " keys") if self.blocks else "no tile size passed below a key length",
                ("splits " + _span(self.splits)) if self.splits else "no split count of 2 or more passed",
                "query heads per kv head " + ", ".join(map(str, sorted(self.groups))),
                "head dimensions " + ", ".join(map(str, sorted(self.head_dims))),
                f"batch up to {self.batches}, heads up to {self.heads}"]
        return "; ".join(bits)


def _span(values) -> str:
    v = sorted(values)
    return ", ".join(map(str, v)) if len(v) <= 6 else f"{v[0]} to {v[-1]} ({len(v)} sizes)"


@dataclass
class DtypeResult:
    dtype: str
    cases: int = 0
    rows: int = 0
    per_class: dict = field(default_factory=dict)  # class → number of cases of it run (a case counts in each)
    failures: dict = field(default_factory=dict)  # class → the first Failure filed under it (RULE)
    failed_in: dict = field(default_factory=dict)  # class → the class its first failing case is filed under
    returned: str = ""
    searched: int = 0  # calls the search made after the fixed list (with shrinking)
    vacuous_rows: int = 0  # passing rows whose bound could not fail (Tolerance.vacuous): not judged
    vacuous_reason: str = ""  # why, for the first of them
    class_rows: dict = field(default_factory=dict)  # class → rows judged (a case's rows count in each class)
    class_unjudged: dict = field(default_factory=dict)  # class → rows not judged
    coverage: Coverage = field(default_factory=Coverage)  # the fixed list's calls and the search's, as run

    @property
    def verdict(self) -> str:
        """disagrees (a failure), undecided (none, but a class had no row whose comparison could fail), or
        agrees (:func:`derive.impl.judge.classes.verdict`)."""
        return verdict(bool(self.failures), self.class_rows, self.class_unjudged)

    def record(self, case: Case, members: list, fail, rows: int, returned: str, source: str = "fixed list",
               vacuous: tuple = (0, ""), ran: bool = True):
        """Count a case run in each class it belongs to; file its failure by RULE; count its rows
        not judged (``vacuous``: how many, why); ``ran``: add it to the coverage (a searched call is
        added as it is drawn)."""
        self.cases += 1
        self.rows += rows - vacuous[0]
        self.vacuous_rows += vacuous[0]
        self.vacuous_reason = self.vacuous_reason or vacuous[1]
        self.returned = self.returned or returned
        if ran:
            self.coverage.add(case)
        for cls in members:
            self.per_class[cls] = self.per_class.get(cls, 0) + 1
            self.class_rows[cls] = self.class_rows.get(cls, 0) + rows - vacuous[0]
            self.class_unjudged[cls] = self.class_unjudged.get(cls, 0) + vacuous[0]
        if fail is not None:
            fail.cls, fail.source = members[0], source
            file_failure(self.failures, self.failed_in, members, fail)


def _uniform_ok(y, v, visible) -> bool:
    """y is the mean of v over every key, or over the visible ones (finfo.min masking)."""
    for keys in (np.ones(len(visible), dtype=bool), visible):
        if keys.any() and np.allclose(y, v[keys].mean(axis=0), rtol=1e-2, atol=1e-3):
            return True
    return False


def _first(bad: np.ndarray):
    """The first index (C order) where ``bad`` holds, or None."""
    hit = np.flatnonzero(bad)
    return None if hit.size == 0 else np.unravel_index(int(hit[0]), bad.shape)


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
    lse_layout: object = None  # the layout of lse (its axes and d, d unused); None: out's without d
    diagnose: object = None  # (checker, case, failure, q, k, v, keep, bias, scale, sinks, got, tol) → fault records
    values: list | None = None  # a normalizer outside the softmax family: the parameter sets its calls take in turn
    lse_units: str = "natural"  # a returned lse: natural, base2 (log₂) or kv-only (the keys without the extra logit)
    fixed: dict = field(default_factory=dict)  # keyword → the value --set passes on every call
    tensors: tuple = ()  # keywords passed as 0-d tensors of the call's API (--tensor): an offset as an int32 tensor
    device: str = "cpu"  # the torch device of the kernel's inputs (--device); the exact reference stays on the CPU
    sums: float = 1.0  # the weight of a sum's rounding in κ at the dtype being run (Tolerance.sums)
    nan_calls: dict = field(default_factory=dict)  # dtype → calls whose dk, dv, dsinks were not judged (a NaN row)
    sampled: dict = field(default_factory=dict)  # dtype → calls of a generic normalizer judged on some queries only

    def with_params(self, case: Case, index: int) -> Case:
        """``case`` with the parameter set of its turn (``index``), for a normalizer outside the
        softmax family (:meth:`exact` then judges it by its definition's weights)."""
        if self.values is None:
            return case
        case = replace(case, params=tuple(sorted(self.values[index % len(self.values)].items())))
        entries = case.B * case.H * case.M * case.N
        if entries > GENERIC_ENTRIES and not case.sample:  # the first 8 queries, every sample-th and the last 8
            rows = max(1, GENERIC_ENTRIES // (case.B * case.H * max(1, case.N)))
            case = replace(case, sample=max(2, -(-case.M // rows)))
        return case

    def exact(self, case: Case, q, k, v, scale, keep, bias, sinks, g=None, judged=None, weights=False):
        """The definition on the arrays passed (:func:`exact_attention`): the softmax family by its
        extra logit, any other normalizer by its weights at the case's parameter values; with
        ``weights``, the weights P too (a kernel that returns them)."""
        if self.values is None:
            return exact_attention(q, k, v, scale, keep, bias, sinks, self.dps, g, judged, weights=weights,
                                   lse_units=self.lse_units, sums=self.sums)
        return exact_attention(q, k, v, scale, keep, bias, None, self.dps, None, judged, norm=self.norm,
                               params=dict(case.params), weights=weights, start_q=case.start_q, sums=self.sums)

    def kwargs(self, case: Case, scale: float, mask, sinks) -> dict:
        kw = dict(self.fixed)
        r = self.roles
        if "scale" in r:
            kw[r["scale"]] = float(scale)
        if "causal" in r:
            kw[r["causal"]] = bool(case.causal) and "causal" not in self.setup.in_mask(case)
        if "gqa" in r:
            kw[r["gqa"]] = case.kv != case.H
        if "mask" in r and mask is not None:
            if self.setup.mask_form in ("mask-mod", "block-mask"):  # built in the child from (B, 1, M, N)
                kw[r["mask"]] = np.ascontiguousarray(mask)
                kw["__mask_form__"] = [r["mask"], self.setup.mask_form]
            else:
                kw[r["mask"]] = self.layout.mask_to_layout(mask)
        for p, value in case.params:
            if p in r:
                kw[r[p]] = float(value)
        if "sinks" in r and self.setup.extra == "sinks":
            kw[r["sinks"]] = np.array(sinks, dtype=np.float64)
            kw["__sinks__"] = r["sinks"]
        if "module" in r:  # fn(module, q, k, v, ...) (derive.impl.run.roles.MODULE): the module's attributes
            kw["__module__"] = {"num_key_value_groups": case.groups, "training": False, "scaling": float(scale),
                                "is_causal": bool(case.causal)}
            if self.setup.extra == "sinks" and "sinks" not in r and sinks is not None:
                kw["__module__"]["sinks"] = np.array(sinks, dtype=np.float64)
        if "start_q" in r:
            kw[r["start_q"]] = int(case.start_q)
        if "window" in r:
            kw[r["window"]] = window_arg(case.window, self.setup.window_form)
        if "block" in r and case.block:
            kw[r["block"]] = int(case.block)
        if "splits" in r and case.splits:
            kw[r["splits"]] = int(case.splits)
        if self.tensors:
            kw["__tensors__"] = [name for name in self.tensors if name in kw]
        kw["__dtypes__"] = [name for name, value in self.fixed.items() if value == DTYPE]  # --set NAME=@dtype
        if self.device != "cpu":
            kw["__device__"] = self.device
        return kw

    def call(self, case: Case, tol, rounder):
        """Run ``case``: (q, k, v, the cotangent, the mask argument, the reference's keep and bias,
        the scale, the sinks as passed, what the kernel returned in canonical order)."""
        dtype = tol.dtype
        if self.api == "numpy" and not tol.numpy:
            raise InputError(f"dtype {dtype} needs a torch implementation; {self.target.name} takes numpy arrays")
        scale = self.scale if self.scale is not None else 1.0 / math.sqrt(case.D)
        q, k, v, g = arrays(case, scale, rounder, grad=self.backward)
        mask, bias = lower(case, self.setup.in_mask(case), self.setup.mask_form, with_dtype_mask(self.mask_value, dtype))
        if mask is not None and mask.dtype != bool:
            mask = rounder(mask)
            bias = None if bias is None else rounder(bias)
        sinks = None if case.sinks is None else tuple(float(rounder(np.array(s))) for s in case.sinks)
        L, OL = self.layout, self.out_layout
        G = case.groups  # a layout with a group axis g splits the query heads by it
        out_shape = OL.shape(case.B, case.H, case.M, case.Dv, G)
        lse_shape = (self.lse_layout or OL).lse_shape(case.B, case.H, case.M, G)
        w_shape = L.shape(case.B, case.H, case.M, case.N, G)  # the weights: q's layout, the keys last
        cot = None if g is None else OL.to_layout(g, groups=G)
        reply = self.target.worker.request(
            ("acall", L.to_layout(q, groups=G), L.kv.to_layout(k), L.kv.to_layout(v),
             self.kwargs(case, scale, mask, sinks), dtype,
             self.api, cot, out_shape, lse_shape, w_shape),
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
        keep = self.reference_keep(case, mask, bias)
        return q, k, v, g, keep, bias, scale, sinks, got

    def reference_keep(self, case: Case, mask, bias) -> np.ndarray:
        """(B, M, N): the keys the definition sees: every masked one, except those an additive mask
        of a finite value masks (they stay, with that value added: ``bias``)."""
        if bias is None:
            return case.keep()
        inside = self.setup.in_mask(case)
        stated = replace(case, mask="", causal=case.causal and "causal" not in inside,
                         window=case.window if "window" not in inside else ())
        return stated.keep()

    def run_case(self, case: Case, tol, rounder) -> tuple[Failure | None, int, str, tuple]:
        q, k, v, g, keep, bias, scale, sinks, got = self.call(case, tol, rounder)
        judged = case.judged()
        ex = self.exact(case, q, k, v, scale, keep, bias, sinks, g, judged, weights="weights" in got)
        returned = ", ".join(n for n in ("out", "lse", "weights", "dq", "dk", "dv", "dsinks") if n in got)
        fail = self.compare(case, got, ex, v, keep, tol, g)
        if fail is not None and fail.what == "lse":
            fail.note = self.lse_hint(case, got, q, k, v, keep, bias, scale, sinks, tol)
        if fail is not None and fail.what in ("out", "lse", "weights"):
            fail.note = fail.note or self.alignment_hint(case, got, q, k, v, g, scale, sinks, tol)
            if self.diagnose is not None and not fail.note:
                fail.faults = self.diagnose(self, case, fail, q, k, v, keep, bias, scale, sinks, got, tol)
        if fail is not None and fail.what == "dsinks" and self.diagnose is not None:
            fail.faults = self.diagnose(self, case, fail, q, k, v, keep, bias, scale, sinks, got, tol, ex)
        vac = ex.defined & judged[None, None, :] & (tol.rel * (1.0 + ex.kappa) >= 1.0)  # Tolerance.vacuous
        first = next(iter(np.argwhere(vac)), None)
        vacuous = (0, "") if fail is not None or first is None else (
            int(vac.sum()), tol.vacuous_reason(float(ex.kappa[tuple(first)])))
        return fail, case.B * case.H * int(judged.sum()), returned, vacuous

    def lse_hint(self, case: Case, got, q, k, v, keep, bias, scale, sinks, tol) -> str:
        """When the lse fails: is it another convention's (base 2, or without the extra logit) on every
        row of the call? Then say which, and the flag that checks it."""
        for conv in LSE_CONVENTIONS:
            if conv == self.lse_units:
                continue
            ex = exact_attention(q, k, v, scale, keep, bias, sinks, self.dps, None, case.judged(), lse_units=conv)
            if self.compare(case, {n: got[n] for n in ("out", "lse")}, ex, v, keep, tol) is None:
                flag = "the default" if conv == "natural" else f"--lse {conv}"
                return (f"the lse returned is the {conv} log-sum-exp ({LSE_WORDS[conv]}) on every row of this call, "
                        f"not the {self.lse_units} one: if that is the convention meant, check it with {flag}")
        return ""

    def alignment_hint(self, case: Case, got, q, k, v, g, scale, sinks, tol) -> str:
        """When a causal (or windowed) call with M ≠ N fails at the stated alignment and the kernel
        places its queries itself (no start_q): does its output match the other alignment?"""
        if case.M == case.N or not (case.causal or case.window) or "start_q" in self.roles:
            return ""
        if self.setup.in_mask(case):  # the mask argument itself carried the positions: nothing to realign
            return ""
        other = 0 if case.start_q == case.N - case.M else case.N - case.M
        if other == case.start_q or other < 0:
            return ""
        alt = replace(case, start_q=other)
        keep = alt.keep()
        ex = self.exact(alt, q, k, v, scale, keep, None, sinks, None, alt.judged())
        if self.compare(alt, {n: a for n, a in got.items() if n in ("out", "lse")}, ex, v, keep, tol) is not None:
            return ""
        if other:
            return ("its output matches the other causal alignment, bottom-right (query i at position N − M + i, as "
                    "FlashAttention since 2.1 aligns it): if the kernel means that, state --causal bottom-right")
        return ("its output matches the other causal alignment, top-left (query i at position i): if the kernel means "
                "that, state --causal top-left (and no --start-q end)")

    def compare(self, case: Case, got: dict, ex, v, keep, tol, g=None) -> Failure | None:
        """The first entry (in the order b, h, i, c) that disagrees, of out, then lse, then the gradients."""
        OL = self.out_layout
        out = OL.from_layout(got["out"], groups=case.groups, heads=case.H)
        lse = None if "lse" not in got or self.values is not None else \
            (self.lse_layout or OL).from_layout(got["lse"], "bhn", case.groups)
        judged = case.judged()[None, None, :]
        kap = ex.kappa[..., None]
        rel = tol.rel * (1.0 + kap)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.where(np.isfinite(out), np.abs(out - np.nan_to_num(ex.out)), INF)
            bound = tol.floor(magnitude(keep, v, case.groups)) + relative(rel, ex.out_scale)
            bad_out = (ex.defined & judged)[..., None] & ~(err <= bound)
        undefined = ~ex.defined & judged
        for b, h, i in zip(*np.nonzero(undefined)):
            y = out[b, h, i]
            if not (np.all(y == 0) or np.all(np.isnan(y)) or _uniform_ok(y, v[b, h // case.groups], keep[b, i])):
                bad_out[b, h, i, 0] = True
        lse_bad = None
        if lse is not None:
            p = ex.lse
            with np.errstate(invalid="ignore", over="ignore"):
                lerr = np.where(np.isfinite(lse), np.abs(lse - np.where(np.isfinite(p), p, 0.0)), INF)
                lbound = tol.abs + tol.rel * (1.0 + ex.kappa) * np.maximum(1.0, np.abs(np.where(np.isfinite(p), p, 0)))
            lse_bad = judged & np.where(p == -INF, ~(np.isinf(lse) | np.isnan(lse)), ~(lerr <= lbound))
        # the first failing row in order, out before lse within a row
        rows_bad = bad_out.any(axis=-1) | (lse_bad if lse_bad is not None else False)
        at = _first(rows_bad)
        if at is not None:
            b, h, i = (int(x) for x in at)
            row = ex.rows[b, h, i].tolist()
            if bad_out[b, h, i].any():
                c = int(np.flatnonzero(bad_out[b, h, i])[0])
                if not ex.defined[b, h, i]:
                    return _fail(tol.dtype, case, "out", (b, h, i, 0), out[b, h, i, 0], math.nan, INF, math.nan, row,
                                 "every key is masked and there is no extra logit: out may be 0, NaN or the mean "
                                 "of the values")
                return _fail(tol.dtype, case, "out", (b, h, i, c), out[b, h, i, c], ex.out[b, h, i, c],
                             float(err[b, h, i, c]), float(bound[b, h, i, c]), row)
            p, yl = ex.lse[b, h, i], lse[b, h, i]
            if p == -INF:
                return _fail(tol.dtype, case, "lse", (b, h, i), yl, p, INF, 0.0, row)
            return _fail(tol.dtype, case, "lse", (b, h, i), yl, p, float(lerr[b, h, i]), float(lbound[b, h, i]), row)
        if "weights" in got:
            fail = self.compare_weights(case, got["weights"], ex, keep, tol)
            if fail is not None:
                return fail
        if ex.grads is None:
            return None
        # a row without a value whose out is NaN (a convention the forward may take) sends NaN into the gradient
        # of every key and of the sinks through autograd: those gradients are not judged on this call, only dq
        nan_rows = bool(np.any(undefined & np.isnan(out).any(axis=-1)))
        if nan_rows and ex.grads is not None:
            self.nan_calls[tol.dtype] = self.nan_calls.get(tol.dtype, 0) + 1
        return self.compare_grads(case, got, ex, tol, dv_magnitude(keep, g, case.groups) if g is not None else None,
                                  rows_only=nan_rows)

    def compare_weights(self, case: Case, got, ex, keep, tol) -> Failure | None:
        """The first weight P_ij (in the order b, h, i, j) outside abs + ulps·eps·(1 + κ)·|P_ij|, the row
        form's bound; a row without a value (every key masked, no extra logit) may hold 0, NaN or the
        uniform 1/n over its visible keys, as out may."""
        w = self.layout.from_layout(got, groups=case.groups)
        judged = case.judged()[None, None, :]
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.where(np.isfinite(w), np.abs(w - np.nan_to_num(ex.weights)), INF)
            bound = tol.abs + relative(tol.rel * (1.0 + ex.kappa[..., None]), np.nan_to_num(ex.weights))
            bad = (ex.defined & judged)[..., None] & ~(err <= bound)
        for b, h, i in zip(*np.nonzero(~ex.defined & judged)) if case.N else ():
            y, vis = w[b, h, i], keep[b, i]
            if not (np.all(y == 0) or np.all(np.isnan(y)) or (vis.any() and np.allclose(y[vis], 1.0 / vis.sum())
                                                               and np.all(y[~vis] == 0))):
                bad[b, h, i, 0] = True
        at = _first(bad)
        if at is None:
            return None
        b, h, i, j = (int(x) for x in at)
        row = ex.rows[b, h, i].tolist()
        if not ex.defined[b, h, i]:
            return _fail(tol.dtype, case, "weights", (b, h, i, j), w[b, h, i, j], math.nan, INF, math.nan, row,
                         "every key is masked and there is no extra logit: the weights may be 0, NaN or uniform")
        return _fail(tol.dtype, case, "weights", (b, h, i, j), w[b, h, i, j], ex.weights[b, h, i, j],
                     float(err[b, h, i, j]), float(bound[b, h, i, j]), row)

    def compare_grads(self, case: Case, got: dict, ex, tol, dv_mag=None, rows_only: bool = False) -> Failure | None:
        """The gradients' first disagreeing entry; ``rows_only``: dq alone (a NaN row: :meth:`compare`)."""
        L = self.layout
        kap_head = ex.kappa.max(axis=2)  # (B, H)
        kap_kv = kap_head.reshape(case.B, case.kv, case.groups).max(axis=2)  # (B, Hkv): over the heads sharing it
        for name in ("dq",) if rows_only else ("dq", "dk", "dv"):
            value, scale = ex.grads[name]
            lay = L if name == "dq" else L.kv
            y = lay.from_layout(got[name], groups=case.groups) if name in got else np.zeros_like(value)
            if y.shape != value.shape:
                return _fail(tol.dtype, case, name, (0, 0, 0, 0), math.nan, value.flat[0], INF, 0.0, [],
                             f"the gradient of {name[1:]} has shape {list(y.shape)}, not {list(value.shape)}")
            kap = (ex.kappa if name == "dq" else kap_kv[:, :, None])[..., None]
            with np.errstate(invalid="ignore", over="ignore"):
                err = np.where(np.isfinite(y), np.abs(y - value), INF)
                floor = tol.floor(dv_mag) if name == "dv" and dv_mag is not None else tol.abs
                bound = floor + relative(tol.rel * (1.0 + kap), scale)
                bad = ~(err <= bound)
            if name == "dq":
                bad &= ex.defined[..., None]
            at = _first(bad)
            if at is not None:
                idx = tuple(int(x) for x in at)
                row = ex.rows[idx[0], idx[1], idx[2]].tolist() if name == "dq" else []
                return _fail(tol.dtype, case, name, idx, y[idx], value[idx], float(err[idx]), float(bound[idx]), row)
        if self.setup.extra == "sinks" and case.sinks is not None and not rows_only:
            value = ex.grads["dsinks"][0]
            if "dsinks" not in got:
                return _fail(tol.dtype, case, "dsinks", (0,), math.nan, value[0], INF, 0.0, [],
                               "no gradient reached the sinks (autograd gave none)")
            y = np.ravel(got["dsinks"])
            if y.shape != value.shape:
                return _fail(tol.dtype, case, "dsinks", (0,), math.nan, value[0], INF, 0.0, [],
                               f"the sinks' gradient has shape {list(y.shape)}, not [{case.H}]")
            bounds = self.dsinks_bounds(ex, tol)
            for h in range(case.H):
                err = abs(y[h] - value[h]) if math.isfinite(y[h]) else INF
                if math.isfinite(bounds[h]) and not err <= bounds[h]:
                    return _fail(tol.dtype, case, "dsinks", (h,), y[h], value[h], err, float(bounds[h]), [])
        return None

    @staticmethod
    def dsinks_bounds(ex, tol) -> np.ndarray:
        """The bound of each head's sink gradient (∞: a head with a row of no value, not judged)."""
        value, scale = ex.grads["dsinks"]
        kap_head = ex.kappa.max(axis=(0, 2))  # (H,): over the batches and rows
        return np.array([tol.abs + float(relative(tol.rel * (1 + kap_head[h]), scale[h])) if ex.defined[:, h].all()
                         else INF for h in range(len(value))])

    def attempt(self, case: Case, tol, rounder) -> tuple[Failure | None, int, str, tuple]:
        """:meth:`run_case`, with a raise or a crash of the kernel as the case's failure (a crash
        restarts the worker, so the cases after it still run)."""
        if self.values is not None and case.sample:
            self.sampled[tol.dtype] = self.sampled.get(tol.dtype, 0) + 1
        try:
            return self.run_case(case, tol, rounder)
        except ImplRaised as exc:
            if str(exc).startswith("MemoryError"):  # the machine's limit, not the kernel's definition
                raise InputError(f"{self.target.name} ran out of memory ({exc}) on a {tol.dtype} call "
                                 f"({case.describe()}); no verdict") from None
            return _broke(tol.dtype, case, "raised", str(exc)), 0, "", (0, "")
        except Crashed as exc:
            self.target.restart()
            return _broke(tol.dtype, case, "crashed", f"the process running it was killed by {exc.signal}"), 0, "", \
                (0, "")

    def run(self, tol, rounder, case_list, budget: int = 0) -> DtypeResult:
        """The fixed list, every case; then, when every case passed, ``budget`` searched calls."""
        res = DtypeResult(tol.dtype)
        self.sums = tol.sums
        for index, case in enumerate(case_list):
            case = self.with_params(case, index)
            members = case_classes(case, self.setup)
            if all(cls in res.failed_in for cls in members):
                continue  # every class of it already fails, with a smaller counterexample
            fail, rows, returned, vacuous = self.attempt(case, tol, rounder)
            res.record(case, members, fail, rows, returned, vacuous=vacuous)
        if budget > 0 and not res.failures:
            search_attention(self, tol, rounder, res, budget)
        return res


def search_attention(checker, tol, rounder, res, budget: int) -> None:
    """Search ``budget`` drawn calls (and Hypothesis's shrinking) for a failing one (a raise or a
    crash counts); file the simplest found under its classes, ``source`` "search"."""
    aborted: list = []

    def fails(case) -> bool:
        if aborted:
            return False
        case = checker.with_params(case, case.N + case.M + case.seed)  # its own turn: the same when shrunk
        res.searched += 1
        res.coverage.add(case)
        try:
            fail = checker.attempt(case, tol, rounder)[0]
        except InputError as exc:  # the worker is gone, or bad output: no more calls
            aborted.append(exc)
            return False
        return fail is not None

    found = search(drawn_cases(checker.setup), fails, budget)
    if aborted:
        raise aborted[0]
    if found is None:
        return
    found = checker.with_params(found, found.N + found.M + found.seed)
    fail, rows, returned, _ = checker.attempt(found, tol, rounder)
    if fail is None:  # the function answered differently on the same call: no verdict on it
        raise InputError(f"{checker.target.name} is not deterministic: the {tol.dtype} call {found.describe()} "
                         f"failed once and passed when repeated; no verdict")
    res.record(found, case_classes(found, checker.setup), fail, rows, returned, "search", ran=False)
