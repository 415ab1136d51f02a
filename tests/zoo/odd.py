"""Implementations whose faults are in no table: for the error-pattern description."""

import numpy as np

from tests.zoo.softmax1_numpy import softmax1


def damped(x):
    """The right weights times 0.9: the ratios are right, the normalization is not."""
    return 0.9 * softmax1(x)


def uniform_when_masked(x):
    """1/n on a fully masked row (as if masked with a large finite negative number)."""
    y = softmax1(x)
    dead = np.all(np.isneginf(x), axis=-1, keepdims=True)
    return np.where(dead, 1.0 / x.shape[-1], y)


def raises_on_masked(x):
    if np.isneginf(x).any():
        raise ValueError("masked scores are not supported")
    return softmax1(x)


def reduces(x):
    """Returns one number per row instead of a row of weights."""
    return softmax1(x).sum(axis=-1)


def squared_denominator(x):
    """Divides by the denominator twice: the factor 1/(1 + Σ exp x) depends on the row sum only."""
    m = np.maximum(np.max(x, axis=-1, keepdims=True), 0)
    e = np.exp(x - m)
    den = np.exp(-m) + e.sum(axis=-1, keepdims=True)
    return e / den / (den * np.exp(m))


def max_damped(x):
    """The right weights divided by 1 + (max x)²: a factor that depends on max x only."""
    top = np.max(np.where(np.isneginf(x), 0, x), axis=-1, keepdims=True)
    return softmax1(x) / (1 + top**2)


def chatty(x):
    """Correct, but prints: the report on stdout must stay clean."""
    print("debug: computing softmax1")
    return softmax1(x)


def global_max(x):
    """softmax₁ with the maximum taken over the whole batch, not per row: exact in exact
    arithmetic, but a row far below the batch maximum underflows to 0/0."""
    top = np.max(np.where(np.isneginf(x), -np.inf, x))
    m = max(float(top), 0.0) if np.isfinite(top) else 0.0
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=-1, keepdims=True))


def slightly_off(x):
    """The right weights times (1 + 1e-9): a relative error far below float32's ulp."""
    return softmax1(x) * (1 + 1e-9)


def leave_one_out_42(x):
    """sum_{t != j} e^{x_t} / ((n - 1) sum_t e^{x_t}), summed without cancellation; 42 on a row of one
    key, where the formula has no value (0/0) and no masked-row convention gives 42."""
    x = np.asarray(x, dtype=float)
    live = np.isfinite(x)
    m = np.max(np.where(live, x, -np.inf), axis=-1, keepdims=True)
    e = np.where(live, np.exp(x - np.where(np.isfinite(m), m, 0)), 0.0)
    n = live.sum(axis=-1, keepdims=True)
    others = np.stack([np.delete(e, k, axis=-1).sum(axis=-1) for k in range(x.shape[-1])], axis=-1)
    out = np.where(live, others / (e.sum(axis=-1, keepdims=True) * np.maximum(n - 1, 1)), 0.0)
    return np.where(n == 1, np.where(live, 42.0, 0.0), out)
