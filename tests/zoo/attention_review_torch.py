"""``attention_review.flash_two_tiles`` on torch tensors (for bfloat16, which numpy lacks)."""

import torch

from tests.zoo.attention_review import _flash


def flash_two_tiles(q, k, v, causal=False, softmax_scale=None):
    out, lse = _flash(q.double().numpy(), k.double().numpy(), v.double().numpy(), causal, softmax_scale, "two_tiles")
    return torch.from_numpy(out).to(q.dtype), torch.from_numpy(lse).to(q.dtype)
