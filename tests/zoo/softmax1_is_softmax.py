"""Faulty softmax₁: plain softmax (the +1 forgotten)."""

import numpy as np


def softmax1(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)
