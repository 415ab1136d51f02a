"""The exact definition of one kernel row at high precision: out, lse in each convention and the
backward's gradients, with the magnitudes the tolerance scales by (see :mod:`derive.impl.kernel`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mpmath

from derive.impl.kernel_inputs import DV

__all__ = ["ExactRow", "exact_row"]

INF = math.inf


@dataclass
class ExactRow:
    defined: bool
    out: list[float]
    out_scale: list[float]
    lse: dict  # convention → float (−inf for log 0)
    dx: list[float] = field(default_factory=list)
    dx_scale: list[float] = field(default_factory=list)
    dv: list[list[float]] = field(default_factory=list)
    dv_scale: list[list[float]] = field(default_factory=list)
    ds: float = 0.0
    ds_scale: float = 0.0


def exact_row(row, v, sigma, g, dps: int) -> ExactRow:
    """The definition at ``dps`` digits for one row (scores ``row``, values ``v``, extra logit ``sigma``)."""
    with mpmath.workdps(dps):
        e = [mpmath.exp(mpmath.mpf(x)) if x != -INF else mpmath.mpf(0) for x in row]
        es = mpmath.mpf(0) if sigma is None or sigma == -INF else mpmath.exp(mpmath.mpf(sigma))
        kv = mpmath.fsum(e)
        den = kv + es
        logs = {"natural": mpmath.log(den) if den > 0 else None, "kv-only": mpmath.log(kv) if kv > 0 else None}
        lse = {"natural": -INF if logs["natural"] is None else float(logs["natural"]),
               "kv-only": -INF if logs["kv-only"] is None else float(logs["kv-only"])}
        lse["base2"] = -INF if logs["natural"] is None else float(logs["natural"] / mpmath.log(2))
        if den == 0:
            return ExactRow(False, [math.nan] * DV, [0.0] * DV, lse)
        vm = [[mpmath.mpf(float(a)) for a in r] for r in v]
        p = [q / den for q in e]
        out = [mpmath.fsum(p[t] * vm[t][k] for t in range(len(row))) for k in range(DV)]
        scale = [mpmath.fsum(p[t] * abs(vm[t][k]) for t in range(len(row))) for k in range(DV)]
        res = ExactRow(True, [float(o) for o in out], [float(s) for s in scale], lse)
        if g is not None:
            gm = [mpmath.mpf(float(a)) for a in g]
            D = mpmath.fsum(gm[k] * out[k] for k in range(DV))
            gs = mpmath.fsum(abs(gm[k]) * scale[k] for k in range(DV))
            res.dx = [float(p[t] * (mpmath.fsum(gm[k] * vm[t][k] for k in range(DV)) - D)) for t in range(len(row))]
            res.dx_scale = [float(p[t] * (mpmath.fsum(abs(gm[k] * vm[t][k]) for k in range(DV)) + gs))
                            for t in range(len(row))]
            res.dv = [[float(p[t] * gm[k]) for k in range(DV)] for t in range(len(row))]
            res.dv_scale = [[abs(x) for x in r] for r in res.dv]
            ps = es / den
            res.ds, res.ds_scale = float(-ps * D), float(ps * gs)
        return res
