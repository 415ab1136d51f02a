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
* ``sdpa_window_off_by_one``: faulty, the window keeps one key too many.
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
