"""Correct softmax₁ in numpy taking a boolean mask (True = allowed)."""

import numpy as np


def softmax1(x, mask):
    x = np.where(mask, x, -np.inf)
    m = np.maximum(np.max(x, axis=-1, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=-1, keepdims=True))
