"""The fault models of the kernel forms, run on a call: the ways each known fault is realized,
and the outputs of the numeric kernel (:mod:`derive.kernels.numeric`) with the fault switched
on, or with the extra logit of another normalizer of the family.

Which faults a diagnosis tries comes from :func:`derive.kernels.faults.faults_for`: those of the
form whose part the normalizer's formula has and whose transformation changes it (a fault of the
extra logit applies to the online and the split form alike).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from derive.impl.judge.kernel import Call
from derive.impl.cases.kernel import extra_logits
from derive.kernels import numeric
from derive.kernels.faults import by_key, faults_for

__all__ = ["by_key", "faults_for", "faulty_outputs", "other_extras", "variants"]

INF = math.inf
LN2 = math.log(2.0)
_SCALES = (2, 4, 8, 16, 32, 64, 128, 256)  # head dimensions d of a scale 1/√d


def variants(form: str, key: str) -> list[dict]:
    """Keyword sets of the numeric kernel that realize fault ``key`` in ``form``, read off its record
    (:func:`derive.kernels.faults.by_key`): the ways real kernels with that fault differ in what the
    fault's definition leaves open."""
    f = by_key(key)
    if f.part == "logit" and _reads_scale(f):  # the score scale 1/√d of a real head dimension
        return [{"scale": 1.0 / math.sqrt(d)} for d in _SCALES]
    if f.part == "logit":
        out = [{}]
        if form == "split" and "tile" in f.adds and "empty" not in f.adds:  # seeded per split: an empty one too
            out.append({"also": ("empty",)})
        if form == "split" and "empty" in f.adds and "masked" not in f.adds:  # per empty split: a fully masked one
            out.append({"also": ("masked",)})
        if form == "online" and "combine" not in f.adds:  # a row of no tile: guarded, or 0/0 (never added)
            out.append({"no_tile_nan": True})
        return out
    if f.part == "lse":  # the extra logit's gradient from the transformed lse too, or from the right one
        return [{}, {"p_only": True}]
    if form != "online":
        return [{}]
    if f.part == "rescale":  # the extra logit seeded, or added at finalization
        return [{"base2": b, "finalize": fin} for fin in (False, True) for b in (True, False)]
    return [{"base2": True}, {"base2": False}]


def _reads_scale(f) -> bool:
    """Does the fault's transformation of the extra logit read the score scale c?"""
    c = sp.Symbol("c", positive=True)
    return bool(sp.sympify(f.rewrite(sp.Symbol("s", real=True), sp.Symbol("m", real=True), 2, c, sp.log)).has(c))


def _finalized(x, v, block, sigma, base2, fault):
    """A kernel that streams the keys without the extra logit and adds it once at finalization
    (forms.finalize_extra): the numeric kernel's KV-only (out, lse) merged with (0, σ)."""
    o, lse = numeric.online(x, v, block, None, base2=base2, fault=fault)
    if sigma is None:
        return o, lse
    top = max(lse, sigma)
    if top == -INF:
        return o, lse
    a, b = math.exp(lse - top), math.exp(sigma - top)
    return o * (a / (a + b)), top + math.log(a + b)


def faulty_outputs(form: str, key: str | None, call: Call, variant: dict, lse: str = "natural",
                   sigma=..., slope=None) -> dict:
    """The numeric kernel (with fault ``key``, or none) on every row of ``call``: out and lse (in
    the convention ``lse``; none for kv-only), or dx, dv and ds. ``sigma``: the extra logit to
    use instead of the call's (another normalizer of the family); ``slope(params)``: ∂σ/∂p of the
    parameter whose gradient ds is (default 1: the extra logit is the parameter)."""
    R, n = call.x.shape
    outs, lses, dxs, dvs, ds = [], [], [], [], np.zeros(call.heads or 1)
    for r in range(R):
        x, v = call.x[r], call.v[r]
        s = call.row_sigma(r) if sigma is ... else sigma
        with np.errstate(all="ignore"):
            if form == "online":
                scale = variant.get("scale", 1.0)
                if variant.get("finalize"):
                    o, ell = _finalized(x, v, call.third, s, variant.get("base2", True), key)
                else:
                    o, ell = numeric.online(x / scale, v, call.third, s, scale=scale,
                                            base2=variant.get("base2", True), fault=key,
                                            no_tile_nan=variant.get("no_tile_nan", False))
            elif form == "split":
                o, ell = numeric.split(x, v, call.third, s, fault=key, **variant)
            else:
                dx, dv, dsr = numeric.backward(x, v, call.third[r], s, fault=key, **variant)
                dxs.append(dx)
                dvs.append(dv)
                ds[r % len(ds)] += 0.0 if dsr is None else dsr * (1.0 if slope is None else slope(call.row_params(r)))
                continue
        outs.append(o)
        lses.append(float(ell))
    if form == "backward":
        return {"dx": np.array(dxs).reshape(R, n), "dv": np.array(dvs).reshape(R, n, call.dv), "ds": ds}
    res = {"out": np.array(outs).reshape(R, call.dv)}
    if lse != "kv-only":
        res["lse"] = np.array(lses) / (LN2 if lse == "base2" else 1.0)
    return res


def other_extras(name: str) -> list[tuple[str, object]]:
    """(normalizer, its extra logit) for the others of the family whose extra logit is not
    ``name``'s: a sink kernel called without a sink computes softmax₁ (s = 0)."""
    table = extra_logits()
    own = table.get(name)
    return [(other, s) for other, s in _fixed_extras(table).items() if s != own]


def _fixed_extras(table: dict) -> dict:
    """The fixed extra logits of the family (none, or a number), each by the first registered
    normalizer that has it: a kernel's output may equal another one's (softmax: none; softmax₁: 0)."""
    fixed: dict = {}
    for name, logit in table.items():
        if (logit is None or isinstance(logit, float)) and logit not in fixed.values():
            fixed[name] = logit
    return fixed
