"""Faulty softmax₁: no max subtraction (right in exact arithmetic, overflows)."""

import numpy as np


def softmax1(x):
    e = np.exp(x)
    return e / (1 + e.sum(axis=-1, keepdims=True))
