"""Attention kernels in torch with the signatures people write beside plain functions, written for
this project: named as ``FILE:make()`` (a factory: derive calls it once, in the child, and checks
what it returns) or ``FILE:Function.apply``, with no adapter.

* ``make()`` returns an ``nn.Module`` whose ``forward(q, k, v, *, scale)`` is the kernel;
  ``make_bound()`` returns that module's bound ``forward``;
* ``Softmax.apply``: a ``torch.autograd.Function`` with its own backward (``forward(ctx, q, k, v,
  scale, causal=False)``: the keywords derive passes go in their places, apply taking none);
  ``SoftmaxNoDk.apply``: the same with a backward that returns no gradient for k (its forward and
  dq, dv are right).
"""

from __future__ import annotations

import torch


class Attention(torch.nn.Module):
    def forward(self, q, k, v, *, scale):
        return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v


def make():
    return Attention()


def make_bound():
    return Attention().forward


def _forward(ctx, q, k, v, scale, causal):
    s = q @ k.transpose(-2, -1) * scale
    if causal:
        M, N = s.shape[-2:]
        s = s.masked_fill(torch.ones(M, N, dtype=torch.bool).triu(1), float("-inf"))
    w = torch.softmax(s, dim=-1)
    ctx.save_for_backward(q, k, v, w)
    ctx.scale = scale
    return w @ v


def _backward(ctx, g):
    q, k, v, w = ctx.saved_tensors
    dv = w.transpose(-2, -1) @ g
    dw = g @ v.transpose(-2, -1)
    ds = w * (dw - (dw * w).sum(-1, keepdim=True))
    return ds @ k * ctx.scale, ds.transpose(-2, -1) @ q * ctx.scale, dv


class Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, scale, causal=False):
        return _forward(ctx, q, k, v, scale, causal)

    @staticmethod
    def backward(ctx, g):
        dq, dk, dv = _backward(ctx, g)
        return dq, dk, dv, None, None


class SoftmaxNoDk(Softmax):
    @staticmethod
    def backward(ctx, g):
        dq, _, dv = _backward(ctx, g)
        return dq, None, dv, None, None
