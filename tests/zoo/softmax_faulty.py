"""Faulty softmax forms: an extra 1 (softmax₁ where softmax was meant), and no max subtraction."""

import numpy as np


def with_one(x):
    m = np.maximum(np.max(x, axis=-1, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=-1, keepdims=True))


def naive(x):
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)
