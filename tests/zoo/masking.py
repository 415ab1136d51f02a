"""Fully masked rows, the way real code handles them (torch).

Hugging Face-style code masks with ``torch.finfo(dtype).min`` (a finite number), so a
fully masked row is a row of equal scores and softmax gives 1/n there; other code gives
NaN (the 0/0) or zeros. Where the definition has no value every one of these is accepted
(with a note); where it has one (softmax₁: 0), it is required.
"""

import torch


def softmax_hf(x, dim=-1, mask=None):
    """HF style: masked_fill with finfo.min, then softmax (uniform on a fully masked row)."""
    if mask is not None:
        x = x.masked_fill(~mask, torch.finfo(x.dtype).min)
    return torch.softmax(x, dim=dim)


def softmax_hf_additive(x, dim=-1, mask=None):
    """HF style, additive: scores + (1 − mask)·finfo.min, clamped to stay finite."""
    if mask is not None:
        bias = (~mask).to(x.dtype) * torch.finfo(x.dtype).min
        x = torch.clamp(x + bias, min=torch.finfo(x.dtype).min)
    return torch.softmax(x, dim=dim)


def softmax_zeros(x, dim=-1):
    """'Safe softmax': zeros on a fully masked row."""
    y = torch.softmax(x, dim=dim)
    return torch.nan_to_num(y, nan=0.0)


def softmax_wrong_masked(x, dim=-1):
    """Faulty: 1/(n + 1) on a fully masked row (no convention gives that)."""
    y = torch.softmax(x, dim=dim)
    return torch.nan_to_num(y, nan=1.0 / (x.shape[dim] + 1))


def softmax1_hf(x, dim=-1, mask=None):
    """softmax₁ with finfo.min masking: exp(min − m) underflows to 0, so a fully masked row is 0."""
    if mask is not None:
        x = x.masked_fill(~mask, torch.finfo(x.dtype).min)
    m = torch.clamp(x.amax(dim=dim, keepdim=True), min=0)
    e = torch.exp(x - m)
    return e / (torch.exp(-m) + e.sum(dim=dim, keepdim=True))


def clipped(x, dim=-1, zeta=1.0, gamma=-0.1):
    """Clipped softmax (Bondarenko et al.): NaN on a fully masked row."""
    return torch.clamp((zeta - gamma) * torch.softmax(x, dim=dim) + gamma, 0, 1)


def clipped_hf(x, dim=-1, mask=None, zeta=1.0, gamma=-0.1):
    """Clipped softmax with finfo.min masking: clip((ζ−γ)/n + γ) on a fully masked row."""
    if mask is not None:
        x = x.masked_fill(~mask, torch.finfo(x.dtype).min)
    return torch.clamp((zeta - gamma) * torch.softmax(x, dim=dim) + gamma, 0, 1)


def clipped_zeros(x, dim=-1, zeta=1.0, gamma=-0.1):
    y = torch.clamp((zeta - gamma) * torch.softmax(x, dim=dim) + gamma, 0, 1)
    return torch.nan_to_num(y, nan=0.0)


def softcap(x, dim=-1, c=50.0):
    """Gemma 2 soft cap: softmax(c·tanh(x/c)), the mask applied after the cap; NaN on a fully
    masked row."""
    capped = (c * torch.tanh(x / c)).masked_fill(torch.isneginf(x), float("-inf"))
    return torch.softmax(capped, dim=dim)


def softcap_caps_the_mask(x, dim=-1, c=50.0):
    """Faulty: caps the masked scores too, c·tanh(−∞/c) = −c, so a masked key gets weight."""
    return torch.softmax(c * torch.tanh(x / c), dim=dim)


def sigmoid(x, b=0.0):
    """Sigmoid attention: a masked score −∞ gives exactly 0."""
    return torch.sigmoid(x + b)


def clipped_no_lower_clip(x, dim=-1, zeta=1.0, gamma=-0.1):
    """Faulty: clamps at 1 only, so small weights go negative (down to γ)."""
    return torch.clamp((zeta - gamma) * torch.softmax(x, dim=dim) + gamma, max=1)
