"""Faulty (and right) implementations of sigmoid, clipped, soft-capped, zero-token and
learned-key attention weights, one per known faulty form (numpy)."""

import numpy as np

from tests.zoo.softmax1_numpy import softmax1


def _softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    with np.errstate(invalid="ignore", divide="ignore"):
        return e / e.sum(axis=-1, keepdims=True)


# ---- sigmoid ---------------------------------------------------------------------------

def sigmoid(x, b):
    z = x + b
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1 / (1 + e), e / (1 + e))


def sigmoid_bias_sign(x, b):
    return sigmoid(x, -b)


def sigmoid_softmax(x, b):
    return _softmax(x)


def sigmoid_exp_ratio(x, b):
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x + b)
        return e / (1 + e)


# ---- clipped -----------------------------------------------------------------------------

def clipped(x, zeta, gamma):
    return np.clip((zeta - gamma) * _softmax(x) + gamma, 0, 1)


def clipped_no_upper_clip(x, zeta, gamma):
    return np.maximum((zeta - gamma) * _softmax(x) + gamma, 0)


def clipped_softmax(x, zeta, gamma):
    return _softmax(x)


# ---- soft cap ----------------------------------------------------------------------------

def _masked_cap(x, capped):
    return np.where(np.isneginf(x), -np.inf, capped)


def softcap(x, c):
    return _softmax(_masked_cap(x, c * np.tanh(x / c)))


def softcap_missing(x, c):
    return _softmax(x)


def softcap_tanh_only(x, c):
    return _softmax(_masked_cap(x, np.tanh(x / c)))


def softcap_not_divided(x, c):
    return _softmax(_masked_cap(x, c * np.tanh(x)))


# ---- zero token, learned key ---------------------------------------------------------------

def zero_token(x):
    return softmax1(x)


def zero_token_unshifted(x):
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    return e / (1 + e.sum(axis=-1, keepdims=True))


def zero_token_forgotten(x):
    return _softmax(x)


def bias_kv(x, s_star):
    m = np.maximum(np.max(x, axis=-1, keepdims=True), s_star)
    e = np.exp(x - m)
    return e / (np.exp(s_star - m) + e.sum(axis=-1, keepdims=True))


def bias_kv_unshifted(x, s_star):
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    return e / (np.exp(s_star) + e.sum(axis=-1, keepdims=True))


def bias_kv_forgotten(x, s_star):
    return _softmax(x)


# ---- faults that reach these normalizers through their formulas ----------------------------

def sigmoid_exp2(x, b):
    """σ written with exp2 where exp was meant: 1/(1 + 2^−z) = σ(z·ln 2)."""
    z = x + b
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp2(-z))


def softcap_exp2(x, c):
    """The capped scores exponentiated with exp2 (the base-2 units of a fused kernel, without log₂e)."""
    capped = _masked_cap(x, c * np.tanh(x / c))
    m = np.max(capped, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp2(capped - m)
    with np.errstate(invalid="ignore", divide="ignore"):
        return e / e.sum(axis=-1, keepdims=True)


def _softpick(x, eps, shift_terms, keep_digits=True):
    allowed = ~np.isneginf(x)
    m = np.max(np.where(allowed, x, -np.inf), axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    if shift_terms:
        m = np.maximum(m, 0.0)  # the 1 and ε shifted too: m = max(0, max x) keeps every exponent ≤ 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        one = np.exp(-m) if shift_terms else 1.0
        xs = np.where(allowed, x, 0.0)
        d = np.exp(xs - m) - one
        if shift_terms and keep_digits:  # near x = 0, e^(x−m) − e^(−m) cancels: e^(−m)·expm1(x) keeps its digits
            d = np.where(np.abs(xs) < 1, np.exp(-m) * np.expm1(xs), d)
        d = np.where(allowed, d, 0.0)
        return np.maximum(d, 0) / (np.abs(d).sum(axis=-1, keepdims=True) + eps * (np.exp(-m) if shift_terms else 1.0))


def softpick(x, eps):
    return _softpick(x, eps, True)


def softpick_cancels(x, eps):
    """softpick with e^(x−m) − e^(−m) formed as it reads: near x = 0 it cancels to 0."""
    return _softpick(x, eps, True, keep_digits=False)


def softpick_unshifted(x, eps):
    """The row maximum subtracted from the scores, but the 1 and ε left as they are."""
    return _softpick(x, eps, False)


def relu_n_counts_masked(x):
    """ReLU(x)/n with n every key of the row, the masked ones too."""
    return np.where(np.isneginf(x), 0.0, np.maximum(x, 0)) / x.shape[-1]
