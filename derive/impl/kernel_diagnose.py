"""Diagnosis of a disagreeing kernel: the known kernel faults of its form, run by the numeric
kernels of :mod:`derive.kernels.numeric` on probe calls; where none matches, the pattern seen."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from derive.impl.kernel_check import Call, KernelChecker, KernelFailure
from derive.impl.kernel_inputs import DV, LSE_CONVENTIONS, values
from derive.impl.numbers import round_to
from derive.impl.target import ImplRaised
from derive.impl.tolerance import Tolerance, kappa
from derive.kernels import numeric
from derive.kernels.faults import FAULTS as KERNEL_FAULTS

__all__ = ["FORM_FAULTS", "KERNEL_TOLERANCE_RULE", "KernelDiagnosis", "diagnose", "faulty_outputs"]

INF = math.inf


FORM_FAULTS: dict[str, tuple[str, ...]] = {
    "online": ("extra_per_tile", "missing_log2e", "scale_on_extra", "softmax1_unshifted_one", "acc_not_rescaled",
               "sum_not_rescaled"),
    "split": ("extra_per_tile", "seeded_twice_empty_split", "nan_empty_split"),
    "backward": ("kv_only_lse_backward", "sink_grad_missing", "sink_grad_sign"),
}
_BY_KEY = {f.key: f for f in KERNEL_FAULTS}
assert all(k in _BY_KEY for keys in FORM_FAULTS.values() for k in keys)
_SCALES = (2, 4, 8, 16, 32, 64, 128, 256)  # head dimensions d of a scale 1/√d


def _variants(form: str, key: str) -> list[dict]:
    """Keyword sets of the numeric kernel that realize fault ``key`` (base 2 or e, the scale)."""
    if form == "split" and key == "extra_per_tile":  # seeded per split: the empty ones too, or not
        return [{}, {"empty_too": True}]
    if form == "split" and key == "seeded_twice_empty_split":  # a fully masked split, too
        return [{}, {"masked_too": True}]
    if form != "online":
        return [{}]
    if key == "missing_log2e":
        return [{"base2": True}]
    if key == "scale_on_extra":
        return [{"base2": b, "scale": 1.0 / math.sqrt(d)} for d in _SCALES for b in (True, False)]
    if key in ("acc_not_rescaled", "sum_not_rescaled"):  # the extra logit seeded, or added at finalization
        return [{"base2": b, "finalize": f} for f in (False, True) for b in (True, False)]
    if key == "extra_per_tile":  # a row of no key: 0 (guarded), or 0/0 as a real per-tile kernel has it
        return [{"base2": b, "no_tile_nan": nan} for nan in (False, True) for b in (True, False)]
    return [{"base2": True}, {"base2": False}]


def _finalized(x, v, block, sigma, base2, fault):
    """A kernel that streams the keys without the extra logit and adds it once at finalization
    (forms.finalize_extra): the numeric kernel's KV-only (out, lse) merged with (0, σ)."""
    o, lse = numeric.online(x, v, block, None, base2=base2, fault=fault)
    if sigma is None:
        return o
    top = max(lse, sigma)
    if top == -INF:
        return o
    a, b = math.exp(lse - top), math.exp(sigma - top)
    return o * (a / (a + b))


def faulty_outputs(form: str, key: str | None, call: Call, variant: dict) -> dict:
    """The numeric kernel (with fault ``key``, or none) on every row of ``call``."""
    R, n = call.x.shape
    outs, dxs, dvs, ds = [], [], [], np.zeros(call.heads or 1)
    for r in range(R):
        x, v, sigma = call.x[r], call.v[r], call.row_sigma(r)
        with np.errstate(all="ignore"):
            if form == "online":
                scale = variant.get("scale", 1.0)
                if variant.get("finalize"):
                    outs.append(_finalized(x, v, call.third, sigma, variant.get("base2", True), key))
                else:
                    o, _ = numeric.online(x / scale, v, call.third, sigma, scale=scale,
                                          base2=variant.get("base2", True), fault=key,
                                          no_tile_nan=variant.get("no_tile_nan", False))
                    outs.append(o)
            elif form == "split":
                o, _ = numeric.split(x, v, call.third, sigma, fault=key, **variant)
                outs.append(o)
            else:
                dx, dv, dsr = numeric.backward(x, v, call.third[r], sigma, fault=key)
                dxs.append(dx)
                dvs.append(dv)
                ds[r % len(ds)] += 0.0 if dsr is None else dsr
    if form == "backward":
        return {"dx": np.array(dxs).reshape(R, n), "dv": np.array(dvs).reshape(R, n, DV), "ds": ds}
    return {"out": np.array(outs).reshape(R, DV)}


def _same(got: dict, ref: dict, checker: KernelChecker, call: Call, tol: Tolerance, lenient: bool = False) -> bool:
    """Every compared entry of ``got`` equals ``ref`` within the check's tolerance (scaled by both).

    With ``lenient``, rows where ``ref`` is not finite are skipped: there the faulty kernel's
    0/0 (e.g. P = e^{x − lse} with lse = −∞) may be guarded or not, a detail the fault is not about."""
    R = call.x.shape[0]
    for r in range(R):
        ex = checker.exact(call, r)
        if not ex.defined:
            continue
        if lenient and not all(np.all(np.isfinite(np.asarray(ref[k][r]))) for k in ("out", "dx", "dv") if k in ref):
            continue
        kap = kappa(call.x[r].tolist(), {k: val for k, val in call.row_params(r).items() if math.isfinite(val)})
        pairs = []
        if checker.form in ("online", "split"):
            pairs.append((got["out"][r], ref["out"][r], ex.out_scale))
        else:
            pairs.append((got["dx"][r], ref["dx"][r], ex.dx_scale))
            pairs.append((np.ravel(got["dv"][r]), np.ravel(ref["dv"][r]), np.ravel(ex.dv_scale)))
        for ys, ps, scales in pairs:
            for y, p, m in zip(ys, ps, scales):
                y, p = float(y), float(p)
                if math.isnan(p) or math.isnan(y):
                    if not (math.isnan(p) and math.isnan(y)):
                        return False
                    continue
                if not math.isfinite(p) or not math.isfinite(y):
                    if y != p:
                        return False
                    continue
                if abs(y - p) > tol.bound(max(m, abs(p)), kap):
                    return False
    if checker.form == "backward" and "ds" in ref:
        name = next((p for p in checker.norm.params), None)
        if name is not None and "d" + name in got and all(checker.exact(call, r).defined for r in range(R)):
            ys, ps = np.ravel(got["d" + name]), np.ravel(ref["ds"])
            if ys.shape != ps.shape:
                return False
            kap = max(kappa(call.x[r].tolist(), {}) for r in range(R)) + max(
                (abs(val) for val in np.ravel(list(call.params.values())) if math.isfinite(val)), default=0.0)
            for h, (y, p) in enumerate(zip(ys, ps)):
                scale = sum(checker.exact(call, r).ds_scale for r in range(h, R, len(ps))) + abs(p)
                if not math.isfinite(y) or abs(y - p) > tol.abs + tol.rel * (1 + kap) * scale:
                    return False
    return True


def _probe_calls(checker: KernelChecker, failure: KernelFailure) -> list[Call]:
    """The failing call, then calls that tell the faults apart (several tiles, a growing maximum,
    empty and fully masked splits, each with the failing parameters and with a sink of 1.5)."""
    dtype, call = failure.dtype, failure.call
    heads = [call.row_params(h) for h in range(call.heads or 1)]  # the failing parameter sets
    params_list = [heads]
    if checker.free_params:
        params_list.append([{**c, **{p: 1.5 for p in checker.free_params}} for c in heads])
    out = [failure.call]
    for n, rows in ((5, ((-2.0, -1.0, 0.0, 1.0, 2.0), (-INF, -INF, -INF, 1.0, 2.0), (3.0, 1.0, 4.0, 1.0, 5.0))),
                    (8, (tuple(4.0 * k for k in range(8)), (7.25, -3.5, 0.125, 9.0, -0.0625, 1.0, 2.0, -8.0)))):
        x = round_to(np.array(rows), dtype)
        v = round_to(np.stack([values(n, r) for r in range(len(rows))]), dtype)
        thirds = {"online": [1, 2], "split": [3, 2 * n + 3], "backward": [0]}[checker.form]
        for chosen in params_list:
            for third in thirds:
                out.append(checker.make_call(x, v, third, chosen, dtype))
    return out


@dataclass
class KernelDiagnosis:
    matched: list = field(default_factory=list)
    pattern: list = field(default_factory=list)
    probes: int = 0

    def as_json(self) -> dict:
        return {"matched": self.matched, "pattern": self.pattern, "probes": self.probes}


def diagnose(checker: KernelChecker, failure: KernelFailure, tol: Tolerance) -> KernelDiagnosis:
    calls = _probe_calls(checker, failure)
    seen = []
    for call in calls:
        try:
            seen.append((call, checker.run_call(call, tol.dtype)))
        except ImplRaised:
            continue
    diag = KernelDiagnosis(probes=sum(c.x.shape[0] for c, _ in seen))
    for key in FORM_FAULTS[checker.form]:
        for variant in _variants(checker.form, key):
            differs, same = False, True
            for call, got in seen:
                ref = faulty_outputs(checker.form, key, call, variant)
                exact = faulty_outputs(checker.form, None, call, {})
                if not _same(ref, exact, checker, call, tol):
                    differs = True
                if not _same(got, ref, checker, call, tol, lenient=key != "nan_empty_split"):
                    same = False
                    break
            if same and differs:
                f = _BY_KEY[key]
                entry = {"name": key, "title": f.title, "does": f.does, "computes": f.computes, "fix": f.fix}
                if "scale" in variant:
                    d = round(1.0 / variant["scale"] ** 2)
                    entry["computes"] += f" (here with the scale 1/√{d})"
                diag.matched.append(entry)
                break
    if not diag.matched:
        diag.pattern = _pattern(checker, failure, seen, tol)
    return diag


def _lse_matches(checker, seen, conv: str, tol: Tolerance) -> bool:
    """The returned lse is the ``conv`` log-sum-exp on every probe row (−∞ where that is log 0)."""
    compared = 0
    for call, got in seen:
        if "lse" not in got:
            return False
        for r in range(call.x.shape[0]):
            p, y = checker.exact(call, r).lse[conv], float(got["lse"][r])
            if math.isinf(p):
                if not math.isinf(y):
                    return False
                continue
            kap = kappa(call.x[r].tolist(), {k: val for k, val in call.row_params(r).items() if math.isfinite(val)})
            if not math.isfinite(y) or abs(y - p) > tol.bound(max(1.0, abs(p)), kap):
                return False
            compared += 1
    return compared > 0


def _pattern(checker, failure, seen, tol) -> list[str]:
    lines = []
    if failure.what == "lse":
        for conv in LSE_CONVENTIONS:
            if conv != checker.lse and _lse_matches(checker, seen, conv, tol):
                flag = "the default" if conv == "natural" else f"--lse {conv}"
                lines.append(f"The lse returned is the {conv} log-sum-exp ({_CONV_WORDS[conv]}) on every probe "
                             f"row, not the {checker.lse} one: if that is the convention meant, check it with "
                             f"{flag}.")
                break
    bad = [v for v in np.ravel(failure.output) if not math.isfinite(v)]
    if bad and failure.what != "lse":
        lines.append("It returns NaN or ±inf where the definition is finite.")
    if not lines:
        lines.append(f"No known kernel fault of the {checker.form} form matches (tried: "
                     f"{', '.join(FORM_FAULTS[checker.form])}): it disagrees on {failure.what} "
                     f"({failure.call.describe()}).")
    return lines


KERNEL_TOLERANCE_RULE = (  # prose markup: the document shows the math, the terminal reads it aloud
    r"$\lvert y - p \rvert \le \mathrm{abs} + \mathrm{ulps} \cdot \mathrm{eps} \cdot (1 + \kappa) \cdot m$ per "
    r"entry, with the ulps, eps and abs of the dtype as for the row form, "
    r"$\kappa = 2 \max_t \lvert x_t \rvert + \lvert s \rvert + (n - 1)$ (the $\lvert s \rvert$ term with a "
    r"sink only) the condition of the row, and $m$ the magnitude of the terms that make up $p$: "
    r"$\sum_t P_t \lvert v_{tk} \rvert$ for out, $\max(1, \lvert \mathrm{lse} \rvert)$ for lse, "
    r"$P_t (\sum_k \lvert g_k v_{tk} \rvert + \sum_k \lvert g_k \rvert m_k)$ for dx, "
    r"$P_t \lvert g_k \rvert$ for dv, and "
    r"$\sum_{\mathrm{rows}} (1 + \kappa) P_s \sum_k \lvert g_k \rvert m_k$ for a shared sink's ds "
    r"($P$ the exact weights, $g = \mathrm{dout}$). Where the definition has no value (softmax with every "
    r"key masked: $0/0$), out and the gradients may be 0 or NaN; an lse of $\log 0$ may be $-\infty$ "
    r"or $+\infty$.")

_CONV_WORDS = {"natural": "ln(e^σ + Σ e^x)", "base2": "log₂(e^σ + Σ e^x)",
               "kv-only": "ln Σ e^x, without the extra logit"}

