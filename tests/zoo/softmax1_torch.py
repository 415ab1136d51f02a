"""softmax₁ in torch: correct (with and without a mask) and a faulty exp2 variant."""


import torch


def softmax1(x, dim=-1):
    m = torch.clamp(x.amax(dim=dim, keepdim=True), min=0)
    e = torch.exp(x - m)
    return e / (torch.exp(-m) + e.sum(dim=dim, keepdim=True))


def softmax1_masked(x, mask):
    x = x.masked_fill(~mask, float("-inf"))
    return softmax1(x)


def softmax1_zero_logit(x):
    """softmax₁ as softmax over the row with a zero logit appended (then dropped)."""
    zero = torch.zeros(*x.shape[:-1], 1, dtype=x.dtype)
    return torch.softmax(torch.cat([x, zero], dim=-1), dim=-1)[..., :-1]


def softmax1_exp2(x):
    """Faulty: exp2 on the raw scores (the log₂e conversion forgotten)."""
    m = torch.clamp(x.amax(dim=-1, keepdim=True), min=0)
    e = torch.exp2(x - m)
    return e / (torch.exp2(-m) + e.sum(dim=-1, keepdim=True))


def softmax1_detached(x):
    """Faulty gradient: the denominator is detached, so autograd misses its term."""
    m = torch.clamp(x.amax(dim=-1, keepdim=True), min=0)
    e = torch.exp(x - m)
    return e / (torch.exp(-m) + e.sum(dim=-1, keepdim=True)).detach()


def softmax1_no_grad(x):
    """Correct values, computed outside autograd (an inference-only kernel)."""
    with torch.no_grad():
        return softmax1(x)
