"""An independent evaluator of normalizers, for the tests: each definition written out by hand
in plain Python floats (no SymPy, no derive), and the claims' meanings tested on random rows.

It decides the truth of a claim by search, never by proof: a violation found is certain (up to
float rounding, checked with a wide margin); none found in many rows is taken as "true".
"""

from __future__ import annotations

import math
import random


def _sig(z):
    return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))


def _softmax(x, extra=None):
    m = max(x + ([extra] if extra is not None else []))
    e = [math.exp(v - m) for v in x]
    den = sum(e) + (math.exp(extra - m) if extra is not None else 0)
    return [v / den for v in e]


def _stick(x):
    out = []
    for j in range(len(x)):
        w = _sig(x[j])
        for t in range(j + 1, len(x)):
            w *= 1 - _sig(x[t])
        out.append(w)
    return out


# name → (weights(x, y, params) for a row where every key is allowed, default parameters)
NORMALIZERS = {
    "softmax": (lambda x, y, p: _softmax(x), {}),
    "softmax1": (lambda x, y, p: _softmax(x, 0.0), {}),
    "sink": (lambda x, y, p: _softmax(x, p["s"]), {"s": 0.7}),
    "sigmoid": (lambda x, y, p: [_sig(v + p["b"]) for v in x], {"b": -0.3}),
    "softcap": (lambda x, y, p: _softmax([p["c"] * math.tanh(v / p["c"]) for v in x]), {"c": 2.0}),
    "clipped": (lambda x, y, p: [min(1.0, max(0.0, (p["zeta"] - p["gamma"]) * w + p["gamma"])) for w in _softmax(x)],
                {"zeta": 1.1, "gamma": -0.1}),
    "softpick": (lambda x, y, p: [max(0.0, math.expm1(v)) / (sum(abs(math.expm1(u)) for u in x) + p["eps"])
                                  for v in x], {"eps": 1e-3}),
    "ssmax": (lambda x, y, p: _softmax([p["s"] * math.log(len(x)) * v for v in x]), {"s": 0.8}),
    "sigmoid_logn": (lambda x, y, p: [_sig(v - math.log(len(x))) for v in x], {}),
    "stick_breaking": (lambda x, y, p: _stick(x), {}),
    "relu_n": (lambda x, y, p: [max(0.0, v) / len(x) for v in x], {}),
    "differential": (lambda x, y, p: [a - p["lam"] * b for a, b in zip(_softmax(x), _softmax(y))], {"lam": 0.4}),
}


def _rows(seed: int, count: int = 300):
    rng = random.Random(seed)
    for _ in range(count):
        n = rng.randint(1, 5)
        yield [rng.uniform(-4, 4) for _ in range(n)], [rng.uniform(-4, 4) for _ in range(n)]


def _close(a, b) -> bool:
    return all(abs(u - v) <= 1e-9 * (1 + abs(u) + abs(v)) for u, v in zip(a, b))


def truth(name: str, claim: str) -> bool:
    """Whether ``claim`` holds for normalizer ``name`` (random search; see the module doc)."""
    w, p = NORMALIZERS[name]
    if claim in ("shift_invariant", "invariant_key_bias"):  # a key bias b_K shifts row i by ⟨q_i, b_K⟩/√d
        rng = random.Random(1)
        return all(_close(w([v + c for v in x], y, p), w(x, y, p))
                   for x, y in _rows(2) for c in (rng.uniform(-3, 3),))
    if claim == "weights_sum_to_one":
        return all(abs(sum(w(x, y, p)) - 1) <= 1e-9 for x, y in _rows(3))
    if claim == "can_abstain":  # every weight → 0 as every score → −∞, for every row length
        return all(max(abs(v) for v in w([-60.0 + k for k in range(n)], [0.0] * n, p)) < 1e-6 for n in range(1, 6))
    raise ValueError(claim)


def same_weights(a: str, b: str) -> bool:
    """Whether normalizers ``a`` and ``b`` give the same weights on every row."""
    (wa, pa), (wb, pb) = NORMALIZERS[a], NORMALIZERS[b]
    return all(_close(wa(x, y, pa), wb(x, y, pb)) for x, y in _rows(4))
