"""Diagnosis of a disagreeing kernel: the known kernel faults of its form, run by the numeric
kernels of :mod:`derive.kernels.numeric` on probe calls; where none matches, the pattern seen."""

from __future__ import annotations

import math

import numpy as np

from derive.impl.faults.diagnose import Diagnosis, Match
from derive.impl.judge.kernel import Call, KernelChecker, KernelFailure
from derive.impl.faults.kernel import by_key, faults_for, faulty_outputs, other_extras, variants
from derive.impl.cases.kernel import LSE_CONVENTIONS, LSE_WORDS, extra_logits, values
from derive.impl.numbers import agree_all, round_to, scaled
from derive.impl.run.target import ImplRaised
from derive.impl.exact.tolerance import Tolerance, kappa
from derive.normalizers.registry import get

__all__ = ["KERNEL_TOLERANCE_RULE", "KernelDiagnosis", "diagnose", "faulty_outputs"]

INF = math.inf


def _close(y, p, bound) -> bool:
    """One rule for every output, entry by entry (arrays or numbers): NaN matches NaN, an
    infinity itself, a finite value within bound."""
    y, p = np.asarray(y, dtype=np.float64).ravel(), np.asarray(p, dtype=np.float64).ravel()
    ok, _ = agree_all(y, p, np.broadcast_to(np.asarray(bound, dtype=np.float64), p.shape))
    return bool(ok.all())


def _bounds(tol: Tolerance, scales, ps, kap: float) -> np.ndarray:
    """The tolerance of each entry, scaled by the larger of its magnitude and the model's value."""
    ps = np.asarray(ps, dtype=np.float64).ravel()
    m = np.maximum(np.abs(np.asarray(scales, dtype=np.float64).ravel()), np.where(np.isfinite(ps), np.abs(ps), 0.0))
    return tol.abs + scaled(tol.rel * (1.0 + kap), m)


def _pairs(checker: KernelChecker, call: Call, got: dict, ref: dict, r: int, keys) -> list:
    """(what, entries of got, entries of ref, magnitudes) of row r for each output in ``keys``."""
    ex = checker.exact(call, r)
    table = {"out": ex.out_scale, "lse": None, "dx": ex.dx_scale, "dv": np.ravel(ex.dv_scale)}
    out = []
    for k in keys:
        if k in got and k in ref:
            ys, ps = np.ravel(got[k][r]), np.ravel(ref[k][r])
            scales = table[k] if table[k] is not None else [max(1.0, abs(float(p))) for p in ps]
            out.append((k, ys, ps, scales))
    return out


def _same(got: dict, ref: dict, checker: KernelChecker, call: Call, tol: Tolerance, lenient: bool = False,
          keys=("out", "lse", "dx", "dv", "ds")) -> bool:
    """Every entry of ``got`` among ``keys`` equals ``ref`` within the check's tolerance (scaled by
    both), under one rule for NaN and ±∞ (:func:`_close`).

    With ``lenient``, rows where ``ref`` is not finite are skipped: there the faulty kernel's
    0/0 (e.g. P = e^{x − lse} with lse = −∞) may be guarded or not, a detail the fault is not about."""
    R = call.x.shape[0]
    for r in range(R):
        if not checker.exact(call, r).defined:
            continue
        if lenient and not all(np.all(np.isfinite(np.asarray(ref[k][r]))) for k in ("out", "dx", "dv") if k in ref):
            continue
        kap = kappa(call.x[r].tolist(), {k: val for k, val in call.row_params(r).items() if math.isfinite(val)})
        for _, ys, ps, scales in _pairs(checker, call, got, ref, r, [k for k in keys if k != "ds"]):
            if not _close(ys, ps, _bounds(tol, scales, ps, kap)):
                return False
    name = next(iter(checker.norm.params), None)
    if checker.form == "backward" and "ds" in keys and "ds" in ref and name is not None and "d" + name in got \
            and all(checker.exact(call, r).defined for r in range(R)):
        ys, ps = np.ravel(got["d" + name]), np.ravel(ref["ds"])
        if ys.shape != ps.shape:
            return False
        kap = max(kappa(call.x[r].tolist(), {}) for r in range(R)) + max(
            (abs(val) for val in np.ravel(list(call.params.values())) if math.isfinite(val)), default=0.0)
        for h, (y, p) in enumerate(zip(ys, ps)):
            scale = sum(checker.exact(call, r).ds_scale for r in range(h, R, len(ps))) + (abs(p) if math.isfinite(p)
                                                                                          else 0.0)
            if not _close(float(y), float(p), tol.abs + tol.rel * (1 + kap) * scale):
                return False
    return True


def _shows_failure(checker: KernelChecker, failure: KernelFailure, got: dict, ref: dict, tol: Tolerance) -> bool:
    """The model reproduces the counterexample as printed: on the failing row (or, for a
    parameter's gradient, the call) it gives what the kernel returned, so a diagnosis never
    contradicts the counterexample shown with it."""
    what = "ds" if failure.what.startswith("d") and failure.what not in ("dx", "dv") else failure.what
    if what == "ds":
        return bool(failure.output) and _same(got, ref, checker, failure.call, tol, keys=("ds",))
    if what not in ref or failure.row < 0:
        return False
    one = {k: v[failure.row:failure.row + 1] for k, v in (("got", got[what]), ("ref", ref[what]))}
    ys, ps = np.ravel(one["got"]), np.ravel(one["ref"])
    ex = checker.exact(failure.call, failure.row)
    scales = {"out": ex.out_scale, "dx": ex.dx_scale, "dv": np.ravel(ex.dv_scale)}.get(what, [1.0] * len(ps))
    kap = kappa(failure.call.x[failure.row].tolist(),
                {k: val for k, val in failure.call.row_params(failure.row).items() if math.isfinite(val)})
    return _close(ys, ps, _bounds(tol, scales, ps, kap))


def _probe_calls(checker: KernelChecker, failure: KernelFailure) -> list[Call]:
    """The failing call, then calls that tell the faults apart (several tiles, a growing maximum,
    empty and fully masked splits, a masked first tile before a very negative score, each with
    the failing parameters and with each free parameter at its first probe value, 1.5 for a sink:
    see :meth:`derive.normalizers.registry.Normalizer.trial`)."""
    dtype, call = failure.dtype, failure.call
    heads = [call.row_params(h) for h in range(call.heads or 1)]  # the failing parameter sets
    params_list = [heads]
    if checker.free_params:
        params_list.append([{**c, **{p: checker.norm.trial(p).probe[0] for p in checker.free_params}} for c in heads])
    out = [failure.call]
    for n, rows in ((2, ((-INF, -1000.0), (1.0, 3.0), (0.5, -0.5))),
                    (5, ((-2.0, -1.0, 0.0, 1.0, 2.0), (-INF, -INF, -INF, 1.0, 2.0), (3.0, 1.0, 4.0, 1.0, 5.0))),
                    (8, (tuple(4.0 * k for k in range(8)), (7.25, -3.5, 0.125, 9.0, -0.0625, 1.0, 2.0, -8.0)))):
        x = round_to(np.array(rows), dtype)
        v = round_to(np.stack([values(n, r) for r in range(len(rows))]), dtype)
        thirds = {"online": [1, 2], "split": [3, 2 * n + 3], "backward": [0]}[checker.form]
        for chosen in params_list:
            for third in thirds:
                out.append(checker.make_call(x, v, third, chosen, dtype))
    return out


KernelDiagnosis = Diagnosis  # one diagnosis type for the row and the kernel forms


def _slope(checker: KernelChecker):
    """∂σ/∂p of the first parameter p (whose gradient the diagnosis compares), or None."""
    name = next(iter(checker.norm.params), None)
    return None if name is None else (lambda params: checker.slope(name, params))


def _failing_rows(checker: KernelChecker, seen, tol: Tolerance) -> int:
    """Probe rows (of a defined value) on which the kernel disagrees with the definition."""
    count = 0
    for call, got in seen:
        for r in range(call.x.shape[0]):
            ex = checker.exact(call, r)
            if not ex.defined:
                continue
            kap = kappa(call.x[r].tolist(), {k: v for k, v in call.row_params(r).items() if math.isfinite(v)})
            exact = {"out": (ex.out, ex.out_scale), "lse": ([ex.lse[checker.lse]], None), "dx": (ex.dx, ex.dx_scale),
                     "dv": (np.ravel(ex.dv), np.ravel(ex.dv_scale))}
            bad = False
            for k, (ps, scales) in exact.items():
                if k not in got:
                    continue
                ys = np.ravel(got[k][r])
                scales = scales if scales is not None else [max(1.0, abs(float(p))) for p in ps]
                bad = bad or not _close(ys, ps, _bounds(tol, scales, ps, kap))
            count += bad
    return count


def _matches(checker, failure, seen, tol, model, keys, lenient) -> bool:
    """``model(call)`` (outputs) differs from the definition on some probe, the kernel equals it on
    every probe (in ``keys``), and it reproduces the printed counterexample."""
    differs = False
    for call, got in seen:
        ref = model(call)
        exact = faulty_outputs(checker.form, None, call, {}, checker.lse, slope=_slope(checker))
        if not _same(ref, exact, checker, call, tol, keys=keys):
            differs = True
        if not _same(got, ref, checker, call, tol, lenient=lenient, keys=keys):
            return False
        if call is failure.call and not _shows_failure(checker, failure, got, ref, tol):
            return False
    return differs


def diagnose(checker: KernelChecker, failure: KernelFailure, tol: Tolerance) -> KernelDiagnosis:
    calls = _probe_calls(checker, failure)
    seen = []
    for call in calls:
        try:
            seen.append((call, checker.run_call(call, tol.dtype)))
        except ImplRaised:
            continue
    diag = Diagnosis(probes=sum(c.x.shape[0] for c, _ in seen), failing_probes=_failing_rows(checker, seen, tol))
    every = ("out", "lse", "dx", "dv", "ds")
    for other, sigma in other_extras(checker.norm.name):  # the output of another normalizer of the family
        model = (lambda call, s=sigma: faulty_outputs(checker.form, None, call, {}, checker.lse, sigma=s))
        if _matches(checker, failure, seen, tol, model, every, lenient=False):
            diag.matched.append(_other_entry(checker.norm, other))
    for key in faults_for(checker.norm, checker.form):
        for variant in variants(checker.form, key):
            model = (lambda call, key=key, variant=variant: faulty_outputs(checker.form, key, call, variant,
                                                                           checker.lse, slope=_slope(checker)))
            lenient = not by_key(key).shows_nan
            scopes = [every] + ([("lse",)] if failure.what == "lse" else [])  # an lse fault: on lse alone too
            scope = next((sc for sc in scopes if _matches(checker, failure, seen, tol, model, sc, lenient)), None)
            if scope is not None:
                f = by_key(key)
                computes = f.computes
                if "scale" in variant:
                    computes += f" (here with the scale 1/√{round(1.0 / variant['scale'] ** 2)})"
                if variant.get("p_only"):
                    computes += " (in P only: the sink's gradient uses the right lse)"
                if scope == ("lse",):
                    computes += " (in the lse returned; out is right)"
                diag.matched.append(Match("kernel", key, f.title, f.fix, does=f.does, computes=computes))
                break
    if not diag.matched:
        diag.pattern = _pattern(checker, failure, seen, tol)
    return diag


def _other_entry(norm, other: str) -> Match:
    """The diagnosis "the output equals normalizer ``other``" (the registry's title and words)."""
    title, logit = get(other).title, extra_logits()[other]
    if logit is None:
        does = "has no extra logit: the denominator is the sum over the keys alone"
        fix = f"add the extra logit of {norm.title} to the denominator"
    elif logit != 0:
        does = (f"adds the fixed extra logit {logit:.6g}, a term e^{logit:.6g} = {math.exp(logit):.6g} in the "
                "denominator")
        fix = f"use the extra logit of {norm.title}"
    else:
        does = ("adds the extra logit 0, a 1 in the denominator (what a sink kernel computes when it is called "
                "without a sink and takes s = 0)")
        fix = (f"pass the normalizer's parameters ({', '.join(norm.params)})" if norm.params
               else "drop the extra 1 from the denominator (or check it as softmax1 if that is meant)")
    return Match("kernel", f"equals-{other}", f"the output equals {title}, not {norm.title}", fix, does=does,
                 computes=f"{title} on every probe row")


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
                lines.append(f"The lse returned is the {conv} log-sum-exp ({LSE_WORDS[conv]}) on every probe "
                             f"row, not the {checker.lse} one: if that is the convention meant, check it with "
                             f"{flag}.")
                break
    bad = [v for v in np.ravel(failure.output) if not math.isfinite(v)]
    if bad and failure.what != "lse":
        lines.append("It returns NaN or ±inf where the definition is finite.")
    if not lines:
        tried = faults_for(checker.norm, checker.form)
        lines.append(f"No known kernel fault of the {checker.form} form matches (tried those that apply to "
                     f"{checker.norm.name}: {', '.join(tried) or 'none'}): it disagrees on {failure.what} "
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
    r"$\sum_{\mathrm{rows}} (1 + \kappa) (P_s \sum_k \lvert g_k \rvert m_k + \sum_t m^{dx}_t)$ for a "
    r"parameter's gradient ds, the terms of $-P_s D$ and of $-\sum_t dS_t$ alike (a kernel may compute it "
    r"either way; $m^{dx}$ the magnitudes of dx), summed over the rows that share the parameter "
    r"($P$ the exact weights, $g = \mathrm{dout}$). One rule for NaN and $\pm\infty$ in every output: where "
    r"the exact value is finite the entry must be finite; an lse of $\log 0 = -\infty$ must be $-\infty$ "
    r"($+\infty$ is accepted with a note). Where the definition has no value (softmax with every key masked: "
    r"$0/0$) the outputs follow one convention of the row form, NaN, zeros or uniform (the output of a row "
    r"of equal scores), with an lse of $\pm\infty$, NaN or below $-10^4$, and the report says which.")


