"""Sink attention weights in numpy (gpt-oss style): correct, and two faulty variants."""

import math

import numpy as np

D = 64  # head dimension of the faulty variant that scales the sink


def _sink(x, s):
    m = np.maximum(np.max(x, axis=-1, keepdims=True), s)
    e = np.exp(x - m)
    return e / (np.exp(s - m) + e.sum(axis=-1, keepdims=True))


def sink(x, s):
    """Correct."""
    return _sink(x, s)


def sink_scaled(x, s):
    """Faulty: the sink logit is divided by √d although the scores already are."""
    return _sink(x, s / math.sqrt(D))


def sink_exp2(x, s):
    """Faulty: scores in exp2 units (x·log₂e), the sink passed to exp2 unconverted."""
    log2e = 1 / math.log(2)
    y = x * log2e
    m = np.maximum(np.max(y, axis=-1, keepdims=True), s)
    e = np.exp2(y - m)
    return e / (np.exp2(s - m) + e.sum(axis=-1, keepdims=True))
