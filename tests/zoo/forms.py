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
