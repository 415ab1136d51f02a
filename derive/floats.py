"""Rounding to a floating-point format: the one definition every part of derive uses.

bfloat16 is emulated with numpy (no torch needed): a value is rounded to float32 first, then
to bfloat16's 8 significant bits, to nearest with ties to even, as torch converts a float64
(both steps, so the results are the same bit for bit).
"""

from __future__ import annotations

import numpy as np

__all__ = ["bf16", "round_to"]


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
