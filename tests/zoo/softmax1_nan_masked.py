"""Faulty softmax₁: m = max x (not max(0, max x)), so a fully masked row gives NaN."""

import numpy as np


def softmax1(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=-1, keepdims=True))
