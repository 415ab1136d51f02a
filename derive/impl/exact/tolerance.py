"""Tolerances per dtype, stated in ulps and in absolute terms.

An output weight ``y`` agrees with the exact weight ``p`` when

    |y − p| ≤ abs + ulps · eps · (1 + κ) · m_p,   κ = 2·max_j |x_j| + max |params| + (n − 1)

(x_j the row's finite scores, θ the normalizer's parameters such as a sink logit; the second
term is 0 without parameters: ``_kappa`` in :mod:`derive.impl.judge.row` and ``diagnose``)
where ``eps`` is the dtype's machine epsilon (one ulp at 1), ``abs`` is the dtype's
smallest normal number (weights below it cannot be stored to full precision; an entry that
combines weights with values v_j has the floor ``abs`` · Σ|v_j|, :meth:`Tolerance.floor`: a
subnormal weight of 4·10⁻³⁹ flushed to 0 beside v = 3 moves it by more than ``abs``) and κ is the
condition number of a weight under a relative rounding of its inputs (|x_k| + max_j |x_j|
for exp(x_k − m), at most twice max |x_j|) plus the n − 1 roundings of a sum of n terms
(a tiled or sequential sum may lose that many): a backward-stable implementation may lose
that many ulps, and no implementation can be required to do better. A sum's roundings are in the
precision it accumulates in: float32 for float16 and bfloat16 inputs, as fused kernels and
PyTorch's own attention sum (:attr:`Tolerance.sums` weighs the n − 1 by float32's eps over the
dtype's; the attention form's ``--assume half-accumulation`` states a kernel summing in its own
half precision). m_p is the magnitude
of the weight, |p|, except where the definition's last step cancels (clipped softmax:
|ζ − γ|·softmax(x)_k + |γ|: the magnitude of the terms of the last step, read off any
formula by :mod:`derive.normalizers.sensitivity`). A NaN or an
infinity where the exact value is finite never agrees.

Where ulps · eps · (1 + κ) ≥ 1 the bound is at least m_p ≥ |p| for every entry of the row: an
output of 0 (or anything between 0 and 2p) passes, so the comparison cannot fail and is no
evidence. Such a row is *not judged* (:meth:`Tolerance.vacuous`): it counts towards an
``undecided`` verdict, never towards ``agrees`` (in bfloat16 from κ ≥ 15 on, in float16 from
κ ≥ 127). An output beyond even that bound still disagrees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from derive.errors import InputError
from derive.floats import FORMATS

__all__ = ["DTYPES", "TOLERANCES", "Tolerance", "dv_magnitude", "kappa", "kappas", "magnitude", "relative",
           "tolerance"]


FAR_BELOW = 800.0  # a score this far below the row's top has weight below e^-800: it sets no condition


def kappa(row, params: dict) -> float:
    """The condition of a weight of ``row`` (see the module docstring). The max runs over the keys
    that carry weight: a score more than FAR_BELOW under the row's top (a finite mask value such as
    finfo.min beside an unmasked key) moves the weights by at most e^-800 · its magnitude under a
    relative rounding, which the top's own term already covers; the n − 1 counts every finite key.
    The rule is written once, in :func:`kappas`."""
    return kappas([list(row)], [params])[0]


def kappas(rows, params: list, sums: float = 1.0) -> list[float]:
    """:func:`kappa` of every row of the 2-D array ``rows`` (row r with the parameters ``params[r]``),
    the rows at once (scores as float64): 2·max|x| over the keys within FAR_BELOW of the row's top,
    plus the largest |parameter|, plus the number of finite keys less one, weighed by ``sums`` (a
    sum accumulated in a wider precision: :attr:`Tolerance.sums`)."""
    x = np.asarray(rows, dtype=np.float64)
    live = (x != -np.inf) & (x == x)
    count = live.sum(axis=-1)
    top = np.where(count > 0, np.max(np.where(live, x, -np.inf), axis=-1, initial=-np.inf), 0.0)
    carrying = live & (x >= (top - FAR_BELOW)[:, None])
    big = np.max(np.where(carrying, np.abs(x), 0.0), axis=-1, initial=0.0)
    own = np.array([max((abs(v) for v in p.values()), default=0.0) for p in params], dtype=np.float64)
    with np.errstate(over="ignore"):  # 2·max|x| past float64's range (finfo.min masks): κ = ∞, a row not judged
        return (2 * big + own + sums * np.maximum(count - 1, 0)).tolist()


@dataclass(frozen=True)
class Tolerance:
    dtype: str
    ulps: int  # relative tolerance in units of eps
    eps: float  # machine epsilon of the dtype (2^-mantissa bits)
    abs: float  # absolute floor: the smallest normal number of the dtype
    numpy: bool  # whether numpy has this dtype (bfloat16 needs torch)
    acc_eps: float = 0.0  # machine epsilon of the precision sums accumulate in (0: the dtype's own)

    @property
    def rel(self) -> float:
        return self.ulps * self.eps

    @property
    def sums(self) -> float:
        """The weight of one rounding of a sum in κ: the accumulating precision's eps over the dtype's
        (float32's for the half types, 1 for the others)."""
        return (self.acc_eps or self.eps) / self.eps

    def own_sums(self) -> "Tolerance":
        """The tolerance of a kernel that sums in the dtype itself (``--assume half-accumulation``)."""
        return Tolerance(self.dtype, self.ulps, self.eps, self.abs, self.numpy)

    def floor(self, magnitude):
        """The absolute floor of an entry combining values of total magnitude ``magnitude`` (Σ|v_j|
        over the keys it weighs, a scalar or an array): each weight may be off by the smallest normal
        number (a subnormal weight flushed to 0), so the entry by ``abs`` · Σ|v_j|; never below ``abs``."""
        return self.abs * np.maximum(1.0, magnitude)

    def bound(self, exact: float, kappa: float) -> float:
        return self.abs + self.rel * (1.0 + kappa) * abs(exact)

    def vacuous(self, kappa: float) -> bool:
        """The bound of a row of condition ``kappa`` is at least the magnitude of every value it
        compares (ulps·eps·(1 + κ) ≥ 1): even an output of 0 passes, the comparison cannot fail."""
        return self.rel * (1.0 + kappa) >= 1.0

    def vacuous_reason(self, kappa: float) -> str:
        """Why a row of condition ``kappa`` (:meth:`vacuous`) is not judged."""
        return (f"at {self.dtype} the rounding bound for this row, κ = {kappa:g}, is at least the value "
                f"compared (ulps·eps·(1 + κ) = {self.rel * (1.0 + kappa):g} ≥ 1): the comparison cannot fail")

    def as_json(self) -> dict:
        return {"dtype": self.dtype, "ulps": self.ulps, "rel": float(f"{self.rel:.3e}"),
                "abs": float(f"{self.abs:.3e}")}


# ulps: 64 for the formats kernels compute in, 8 for the half formats (few digits to spare)
_ULPS = {"float64": 64, "float32": 64, "float16": 8, "bfloat16": 8}
# the half formats accumulate in float32 (fused kernels, PyTorch's attention and numpy's float16 sums do)
_ACC = {"float16": "float32", "bfloat16": "float32"}
TOLERANCES: dict[str, Tolerance] = {name: Tolerance(name, _ULPS[name], f.eps, f.tiny, f.numpy,
                                                    FORMATS[_ACC[name]].eps if name in _ACC else 0.0)
                                    for name, f in FORMATS.items()}
DTYPES = tuple(TOLERANCES)


def tolerance(dtype: str) -> Tolerance:
    try:
        return TOLERANCES[dtype]
    except KeyError:
        raise InputError(f"unknown dtype {dtype!r}: expected one of {', '.join(DTYPES)}") from None


# ---- the magnitudes an entry combines, and the relative part of its bound -------------------------

def magnitude(keep, v, groups: int) -> np.ndarray:
    """(B, H, M, Dv): Σ_j |v_jc| over the keys each query sees (``keep`` (B, M, N), ``v`` (B, Hkv, N, Dv)),
    what an entry of out combines (:meth:`derive.impl.exact.tolerance.Tolerance.floor`)."""
    with np.errstate(invalid="ignore", over="ignore"):
        m = keep[:, None].astype(np.float64) @ np.nan_to_num(np.abs(np.asarray(v, dtype=np.float64)))
    return np.repeat(m, groups, axis=1)


def dv_magnitude(keep, g, groups: int) -> np.ndarray:
    """(B, Hkv, N, Dv): Σ |g_ic| over the queries of the heads sharing a kv head that see key j, what an
    entry of dv combines with the weights P_ij (its floor, as :func:`magnitude` for out)."""
    m = np.swapaxes(keep, -1, -2)[:, None].astype(np.float64) @ np.abs(np.asarray(g, dtype=np.float64))  # (B, H, N, Dv)
    B, H, N, Dv = m.shape
    return m.reshape(B, H // groups, groups, N, Dv).sum(axis=2)


def relative(rel, magnitude):
    """The relative part of a bound, ``rel · |magnitude|``, infinite where ``rel`` is (κ = ∞: a row whose
    exact value could not be enclosed, or whose condition overflows, is not judged) even beside a
    magnitude of 0, where the product would be NaN and fail every output."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(rel), math.inf, rel * np.abs(magnitude))
