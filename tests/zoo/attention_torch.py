"""Attention kernels in torch with the signatures of well-known public ones, written for this
project (not copied): each is checked by ``derive impl --form attention`` with no adapter or a
one-line one.

* ``sdpa``: shaped like a reference attention of an open-weight model with learned sinks:
  ``sdpa(Q, K, V, S, sm_scale, sliding_window=0)`` with Q, K, V of shape (n, H, d) (layout
  ``nhd``), always causal over n queries and the same n keys, one sink logit per head appended
  as a score column, an optional sliding window. Checked with ``--layout nhd --causal --assume
  equal-lengths``: no adapter.
* ``eager_attention_forward``: shaped like the eager attention of a popular model library:
  ``(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs)`` with (B, H, n, d)
  inputs, an additive mask (B, 1, M, N) sliced to the key length, softmax in float32, returning
  ``(attn_output transposed to (B, n, H, d), attn_weights)``. Checked with the one-line
  :func:`hf` adapter and ``--out-layout bnhd``.
* ``sdpa_sink_detached``: faulty, the sinks enter as a constant (``S.detach()``): the forward is
  right and the sinks get no gradient (``--backward`` fails).
* ``sdpa_sink_grad_sign``: faulty, the sinks' gradient comes back negated (a hand-written backward's
  sign): the forward is right.
* ``sdpa_window_off_by_one``: faulty, the window keeps one key too many.
* ``sdpa_torch``: PyTorch's own ``scaled_dot_product_attention`` under its own keyword names (checked with
  ``--gqa``: ``enable_gqa`` is passed where k and v have fewer heads).
* ``flex``: PyTorch's FlexAttention with a block mask (``--mask block-mask``), and ``flex_mod``, the
  same from a ``mask_mod`` (``--mask mask-mod``).
* ``gpt_oss_eager``: shaped like a model library's eager attention with learned sinks,
  ``(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs)``, reading the sinks,
  the kv-head groups and the training flag from its module (derive passes one, with the call's
  values), returning ``(attn_output in (B, n, H, d), attn_weights)``; checked with ``--gqa
  --out-layout bnhd`` and no adapter. ``gpt_oss_eager_tiled_kv`` repeats the kv heads with
  ``repeat`` (head h reads kv head h mod Hkv), not ``repeat_interleave``.
* ``checkpointed``: softmax attention under ``torch.utils.checkpoint`` in its reentrant form, which
  refuses ``torch.autograd.grad`` (``--backward`` takes the gradients with ``.backward()``).
* ``decode_tensor_offset``: causal from ``start_q``, which must be an int32 tensor (``--tensor start_q``);
  ``accumulate_in``: a required ``dtype`` (``--set dtype=@dtype``).
* ``needs_two_keys``: raises its own error on a call of one key; the first call (numpy arrays, to
  detect the API) raises in ``torch.matmul`` too, and the report shows the kernel's error.
"""

from __future__ import annotations

import torch


def sdpa(Q, K, V, S, sm_scale, sliding_window=0):
    n, H, _ = Q.shape
    scores = torch.einsum("qhd,khd->hqk", Q, K) * sm_scale
    keep = torch.ones(n, n, dtype=torch.bool).tril()
    if sliding_window:
        keep &= ~torch.ones(n, n, dtype=torch.bool).tril(-sliding_window)
    scores = scores.masked_fill(~keep, float("-inf"))
    scores = torch.cat([scores, S.reshape(H, 1, 1).expand(H, n, 1)], dim=-1)
    w = torch.softmax(scores, dim=-1)[..., :-1]
    return torch.einsum("hqk,khd->qhd", w, V)


def sdpa_sink_detached(Q, K, V, S, sm_scale, sliding_window=0):
    return sdpa(Q, K, V, S.detach(), sm_scale, sliding_window)


class _Negated(torch.autograd.Function):
    """The identity forward, a hand-written backward with its sign flipped."""

    @staticmethod
    def forward(ctx, s):
        return s.clone()

    @staticmethod
    def backward(ctx, g):
        return -g


def sdpa_sink_grad_sign(Q, K, V, S, sm_scale, sliding_window=0):
    return sdpa(Q, K, V, _Negated.apply(S), sm_scale, sliding_window)


def sdpa_window_off_by_one(Q, K, V, S, sm_scale, sliding_window=0):
    return sdpa(Q, K, V, S, sm_scale, sliding_window + 1 if sliding_window else 0)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    del module, kwargs
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask[:, :, :, : key.shape[-2]]
    weights = torch.softmax(weights, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=False)
    out = torch.matmul(weights, value).transpose(1, 2).contiguous()
    return out, weights


def hf(q, k, v, *, attention_mask=None, scaling): return eager_attention_forward(None, q, k, v, attention_mask, scaling)[0]  # noqa: E501,E704


def sdpa_torch(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """PyTorch's own scaled_dot_product_attention with its own keywords (a builtin has no signature
    to read, so this def states it): additive or boolean attn_mask, is_causal aligned top-left,
    enable_gqa."""
    return torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, is_causal=is_causal,
                                                            scale=scale, enable_gqa=enable_gqa)


def flex(q, k, v, *, scale, block_mask=None):
    """FlexAttention with a BlockMask (unfused on the CPU: it forms the scores as SDPA does)."""
    from torch.nn.attention.flex_attention import flex_attention

    return flex_attention(q, k, v, block_mask=block_mask, scale=scale)


def flex_mod(q, k, v, *, scale, mask_mod=None):
    """FlexAttention from a mask_mod(b, h, q_idx, kv_idx), its block mask made here."""
    from torch.nn.attention.flex_attention import create_block_mask

    B, _, M, _ = q.shape
    block = None if mask_mod is None else create_block_mask(mask_mod, B, None, M, k.shape[2], device="cpu")
    return flex(q, k, v, scale=scale, block_mask=block)


def needs_two_keys(q, k, v, *, scale):
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if k.shape[-2] < 2:
        raise ValueError("this kernel needs two keys or more")
    return torch.softmax(s, dim=-1) @ v


def _softmax_attention(q, k, v, scale):
    return torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * scale, dim=-1) @ v


def checkpointed(q, k, v, *, scale):
    from torch.utils.checkpoint import checkpoint

    return checkpoint(_softmax_attention, q, k, v, scale, use_reentrant=True)


def _repeat_kv(x, groups, interleave=True):
    if groups == 1:
        return x
    return x.repeat_interleave(groups, dim=1) if interleave else x.repeat(1, groups, 1, 1)


def _gpt_oss(module, query, key, value, attention_mask, scaling, dropout, interleave):
    key = _repeat_kv(key, module.num_key_value_groups, interleave)
    value = _repeat_kv(value, module.num_key_value_groups, interleave)
    logits = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        logits = logits + attention_mask[:, :, :, : key.shape[-2]]
    sinks = module.sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], -1)
    combined = torch.cat([logits, sinks], dim=-1)
    combined = combined - combined.max(dim=-1, keepdim=True).values
    probs = torch.softmax(combined, dim=-1, dtype=combined.dtype)
    weights = torch.nn.functional.dropout(probs[..., :-1], p=dropout, training=module.training)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


def gpt_oss_eager(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    return _gpt_oss(module, query, key, value, attention_mask, scaling, dropout, True)


def gpt_oss_eager_tiled_kv(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    return _gpt_oss(module, query, key, value, attention_mask, scaling, dropout, False)


def decode_tensor_offset(q, k, v, *, scale, start_q):
    """Causal with the queries at start_q + i, the offset an int32 tensor (as a kernel reading it on the
    device takes it); it refuses a Python int."""
    if not (isinstance(start_q, torch.Tensor) and start_q.dtype == torch.int32):
        raise TypeError(f"start_q must be an int32 tensor, got {type(start_q).__name__}")
    M, N = q.shape[-2], k.shape[-2]
    keep = torch.arange(N)[None, :] <= (torch.arange(M) + start_q)[:, None]
    return torch.softmax((q @ k.transpose(-2, -1) * scale).masked_fill(~keep, float("-inf")), dim=-1) @ v


def accumulate_in(q, k, v, *, scale, dtype):
    """Computes in float64 and returns in ``dtype``, a required torch.dtype with no role."""
    w = torch.softmax(q.double() @ k.double().transpose(-2, -1) * scale, dim=-1)
    return (w @ v.double()).to(dtype)
