"""Correct softmax₁ in numpy: m = max(0, max x), so the 1 becomes exp(−m)."""

import numpy as np


def softmax1(x, axis=-1):
    m = np.maximum(np.max(x, axis=axis, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=axis, keepdims=True))
