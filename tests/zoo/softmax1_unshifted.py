"""Faulty softmax₁: subtracts the row maximum but adds an unshifted 1."""

import numpy as np


def softmax1(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / (1 + e.sum(axis=-1, keepdims=True))
