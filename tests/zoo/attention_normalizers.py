"""Attention kernels in numpy for the normalizers outside the softmax family (``--form attention
--as softcap``, ``sigmoid``, ...), written for this project: q, k, v in the layout (B, H, n, d), an
optional additive mask (B, 1, M, N) of −∞ and 0 added to the scores, the normalizer's parameters
as keywords. The attention form judges each against the exact weights of its definition.

Correct: ``softcap`` (the cap on the scaled scores, before the mask, as FlashAttention's
``softcap``), ``sigmoid`` (bias ``b``), ``ssmax`` (the scores scaled by s·log n, n the row's allowed
keys), ``softpick`` (shifted by max(0, max x): finite on scores of 1e4), ``relu_n``,
``stick_breaking`` (in log space), ``temperature`` (the user-defined normalizer of
``tests/normalizer_specs/temperature.toml``), ``by_position`` (``position.toml``: sigmoid(x_j) / i, i
the query's position + 1; its twin ``by_key_count`` divides by N, right for the last query only),
``alibi`` (``alibi.toml``: one slope m, the bias m·(j − i); its twin ``alibi_flipped`` adds m·(i − j)),
``clipped`` (clipped softmax, ζ and γ) and ``sigmoid_logn`` (σ(x_j − log n), n the row's allowed keys).

Faulty, each right on some calls only:

* ``softcap_before_scale``: caps q·k before the scale (right where no score comes near the cap);
* ``sigmoid_bias_dropped``: ignores ``b`` (right for b = 0 only);
* ``ssmax_all_keys``: scales by log N, N every key of the call, not the row's allowed keys (right
  on rows with no masked key);
* ``softpick_unshifted``: exponentiates the scores as they are (inf/inf = NaN from scores of
  about 710);
* ``clipped_unclipped``: the stretch (ζ − γ)·p + γ without the clip to [0, 1];
* ``sigmoid_logn_all_keys``: log N of every key of the call (right on rows with no masked key).
"""

from __future__ import annotations

import numpy as np


def _scores(q, k, scale):
    return (q @ np.swapaxes(k, -1, -2)) * scale


def _masked(s, mask):
    return s if mask is None else s + mask


def _softmax_mix(s, v):
    top = np.max(s, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(s - top)
    total = e.sum(axis=-1, keepdims=True)
    return (e / np.where(total > 0, total, 1.0)) @ v


def softcap(q, k, v, *, scale, softcap, mask=None):
    return _softmax_mix(_masked(softcap * np.tanh(_scores(q, k, scale) / softcap), mask), v)


def softcap_before_scale(q, k, v, *, scale, softcap, mask=None):
    """Faulty: c·tanh(q·k / c)·scale, the cap on the unscaled scores."""
    return _softmax_mix(_masked(softcap * np.tanh(_scores(q, k, 1.0) / softcap) * scale, mask), v)


def sigmoid(q, k, v, *, scale, b, mask=None):
    s = _masked(_scores(q, k, scale) + b, mask)
    return (1.0 / (1.0 + np.exp(-s))) @ v


def sigmoid_bias_dropped(q, k, v, *, scale, b, mask=None):
    """Faulty: b is never added."""
    s = _masked(_scores(q, k, scale), mask)
    return (1.0 / (1.0 + np.exp(-s))) @ v


def _allowed(s, mask):
    return np.broadcast_to(np.isfinite(_masked(s, mask)), s.shape).sum(axis=-1, keepdims=True)


def ssmax(q, k, v, *, scale, s, mask=None):
    x = _scores(q, k, scale)
    n = _allowed(x, mask)
    with np.errstate(divide="ignore"):
        factor = s * np.log(np.maximum(n, 1))
    return _softmax_mix(_masked(factor * x, mask), v)


def ssmax_all_keys(q, k, v, *, scale, s, mask=None):
    """Faulty: log N of every key of the call."""
    x = _scores(q, k, scale)
    return _softmax_mix(_masked(s * np.log(x.shape[-1]) * x, mask), v)


def softpick(q, k, v, *, scale, eps, mask=None):
    x = _masked(_scores(q, k, scale), mask)
    m = np.maximum(np.max(x, axis=-1, keepdims=True), 0.0)
    shifted = np.exp(x - m) - np.exp(-m)  # (e^x − 1)/e^m; a masked key: 0 − e^{−m}, dropped below
    live = np.isfinite(x)
    num = np.where(live, np.maximum(shifted, 0.0), 0.0)
    den = np.where(live, np.abs(shifted), 0.0).sum(axis=-1, keepdims=True) + eps * np.exp(-m)
    return (num / den) @ v


def softpick_unshifted(q, k, v, *, scale, eps, mask=None):
    """Faulty: e^x − 1 without the shift."""
    x = _masked(_scores(q, k, scale), mask)
    e = np.exp(x) - 1.0
    live = np.isfinite(x)
    num = np.where(live, np.maximum(e, 0.0), 0.0)
    den = np.where(live, np.abs(e), 0.0).sum(axis=-1, keepdims=True) + eps
    return (num / den) @ v


def relu_n(q, k, v, *, scale, mask=None):
    x = _scores(q, k, scale)
    n = _allowed(x, mask)
    w = np.where(np.isfinite(_masked(x, mask)), np.maximum(x, 0.0), 0.0) / np.maximum(n, 1)
    return w @ v


def _log_sigmoid(x):
    return -np.logaddexp(0.0, -x)


def stick_breaking(q, k, v, *, scale, mask=None):
    """p_j = σ(x_j) Π_{t > j, allowed} (1 − σ(x_t)), in log space."""
    x = _masked(_scores(q, k, scale), mask)
    live = np.isfinite(x)
    rest = np.where(live, _log_sigmoid(-np.where(live, x, 0.0)), 0.0)
    after = np.flip(np.cumsum(np.flip(rest, axis=-1), axis=-1), axis=-1) - rest  # Σ_{t > j}
    w = np.where(live, np.exp(_log_sigmoid(np.where(live, x, 0.0)) + after), 0.0)
    return w @ v


def temperature(q, k, v, *, scale, tau, mask=None):
    return _softmax_mix(_masked(_scores(q, k, scale) / tau, mask), v)


def by_position(q, k, v, *, scale, mask=None):
    """The weight sigmoid(x_j) / i of ``tests/normalizer_specs/position.toml``, i = the query's position + 1."""
    s = _masked(_scores(q, k, scale), mask)
    i = np.arange(1, s.shape[-2] + 1, dtype=s.dtype)[:, None]
    return ((1.0 / (1.0 + np.exp(-s))) / i) @ v


def by_key_count(q, k, v, *, scale, mask=None):
    """Faulty: divides by the number of keys N for every query, not by its position + 1."""
    s = _masked(_scores(q, k, scale), mask)
    return ((1.0 / (1.0 + np.exp(-s))) / s.shape[-1]) @ v


def alibi(q, k, v, *, scale, m, mask=None):
    """ALiBi with one slope (``tests/normalizer_specs/alibi.toml``): m·(j − i) added to the score of key
    j for the query at position i."""
    s = _scores(q, k, scale)
    M, N = s.shape[-2:]
    return _softmax_mix(_masked(s + m * (np.arange(N)[None, :] - np.arange(M)[:, None]), mask), v)


def alibi_flipped(q, k, v, *, scale, m, mask=None):
    """Faulty: m·(i − j), the distance's sign flipped (right on one key only)."""
    s = _scores(q, k, scale)
    M, N = s.shape[-2:]
    return _softmax_mix(_masked(s + m * (np.arange(M)[:, None] - np.arange(N)[None, :]), mask), v)


def _softmax_weights(s):
    top = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def clipped(q, k, v, *, scale, zeta, gamma, mask=None):
    """Clipped softmax: min(1, max(0, (ζ − γ)·softmax(x) + γ)); a masked key has softmax 0, so weight max(0, γ) = 0."""
    p = _softmax_weights(_masked(_scores(q, k, scale), mask))
    return np.clip((zeta - gamma) * p + gamma, 0.0, 1.0) @ v


def clipped_unclipped(q, k, v, *, scale, zeta, gamma, mask=None):
    """Faulty: the stretch without the clip (right where no weight leaves [0, 1]: ζ = 1, γ = 0)."""
    p = _softmax_weights(_masked(_scores(q, k, scale), mask))
    return ((zeta - gamma) * p + gamma) @ v


def sigmoid_logn(q, k, v, *, scale, mask=None):
    """σ(x_j − log n), n the row's allowed keys."""
    x = _scores(q, k, scale)
    n = _allowed(x, mask)
    s = _masked(x, mask) - np.log(np.maximum(n, 1))
    return (1.0 / (1.0 + np.exp(-s))) @ v


def sigmoid_logn_all_keys(q, k, v, *, scale, mask=None):
    """Faulty: log N of every key of the call, not the row's allowed keys (right on unmasked rows)."""
    x = _scores(q, k, scale)
    s = _masked(x, mask) - np.log(x.shape[-1])
    return (1.0 / (1.0 + np.exp(-s))) @ v
