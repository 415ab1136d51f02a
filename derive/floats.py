"""Floating-point formats: their facts (:data:`FORMATS`) and rounding to them, the one definition
every part of derive uses.

A format's facts are read off ``numpy.finfo`` (float16, float32, float64); bfloat16, which numpy
lacks, is float32's exponent with 8 significant bits, its facts computed from that layout.

bfloat16 is emulated with numpy (no torch needed): a value is rounded to float32 first, then
to bfloat16's 8 significant bits, to nearest with ties to even, as torch converts a float64
(both steps, so the results are the same bit for bit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["DTYPES", "FORMATS", "Format", "bf16", "round_to"]


@dataclass(frozen=True)
class Format:
    name: str
    precision: int  # significant bits, the implicit one included (53 for float64)
    eps: float  # 2^(1 − precision): the gap between 1 and the next number
    tiny: float  # the smallest normal number
    smallest_subnormal: float
    max: float  # the largest finite number (−max is finfo.min)
    numpy: bool  # numpy has the type (bfloat16 is emulated, see bf16)

    @property
    def digits(self) -> int:
        """Significant decimal digits that print every number of the format distinctly (17, 9, 5, 4)."""
        return math.ceil(1 + self.precision * math.log10(2))


def _from_numpy(name: str) -> Format:
    f = np.finfo(name)
    return Format(name, int(f.nmant) + 1, float(f.eps), float(f.tiny), float(f.smallest_subnormal), float(f.max),
                  True)


def _bfloat16() -> Format:
    f32, p = np.finfo(np.float32), 8
    return Format("bfloat16", p, 2.0 ** (1 - p), float(f32.tiny), float(f32.tiny) * 2.0 ** (1 - p),
                  (2.0 - 2.0 ** (1 - p)) * 2.0 ** int(f32.maxexp - 1), False)


FORMATS: dict[str, Format] = {**{n: _from_numpy(n) for n in ("float64", "float32", "float16")},
                              "bfloat16": _bfloat16()}
DTYPES = tuple(FORMATS)


def bf16(a) -> np.ndarray:
    """Round values to bfloat16 (round to nearest even), kept in float32 storage."""
    with np.errstate(over="ignore"):  # beyond float32's range: ±inf, as in bfloat16
        a = np.asarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    one, half, shift, keep = (np.uint64(v) for v in (1, 0x7FFF, 16, 0xFFFF0000))  # typed: numpy 1.x casting
    rounded = ((u + half + ((u >> shift) & one)) & keep).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), np.float32(np.nan), rounded)


def round_to(a, dtype: str) -> np.ndarray:
    """``a`` rounded to ``dtype`` (float16, bfloat16, float32, float64), as float64 values."""
    if dtype == "bfloat16":
        return bf16(np.asarray(a, dtype=np.float64)).astype(np.float64)
    if dtype == "float64":  # nothing to round: one new array (not two), the same bits
        return np.array(a, dtype=np.float64)
    with np.errstate(over="ignore"):
        return np.asarray(a, dtype=np.float64).astype(dtype).astype(np.float64)
