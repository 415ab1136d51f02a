"""Shared host-side plumbing of the sink kernels: shapes, the sink per row, float32."""

from __future__ import annotations

import math

import torch
import triton


def p2(k: int) -> int:
    """The power of two ``tl.arange`` needs, at least ``k`` (and at least 1)."""
    return triton.next_power_of_2(max(int(k), 1))


def rows(x, v, s):
    """(x as rows × n, v as rows × n × dv, sink per row, leading shape), float32, contiguous.

    ``x`` is (..., n), ``v`` is (..., n, dv); their leading dimensions broadcast, and so
    does ``s`` (a float or a tensor) against them.
    """
    x = torch.as_tensor(x)
    v = torch.as_tensor(v)
    if x.dim() < 1 or v.dim() < 2 or v.shape[-2] != x.shape[-1]:
        raise ValueError(f"expected x (..., n) and v (..., n, dv), got {tuple(x.shape)} and {tuple(v.shape)}")
    n, dv = x.shape[-1], v.shape[-1]
    s = torch.as_tensor(s, dtype=torch.float32)
    lead = torch.broadcast_shapes(x.shape[:-1], v.shape[:-2], s.shape)
    r = math.prod(lead)
    xr = x.to(torch.float32).expand(*lead, n).reshape(r, n).contiguous()
    vr = v.to(torch.float32).expand(*lead, n, dv).reshape(r, n, dv).contiguous()
    sr = s.expand(lead).reshape(r).contiguous()
    return xr, vr, sr, tuple(lead)
