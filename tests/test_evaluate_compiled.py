"""derive's evaluator (compiled closures) against the independent node-by-node interpreter of
tests/evaluate_oracle.py: every node type, then the weights of awkward normalizer formulas, in
both backends, with the exact reference of the formulas (mpmath) inside the arb enclosures."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from evaluate_oracle import oracle

from derive.crosscheck.evaluate import Instance, evaluate
from derive.errors import Unsupported
from derive.model.attention import i as ROW, j as KEY
from derive.normalizers.algebra import X
from derive.normalizers.formula import compile_weight
from derive.normalizers.registry import REGISTRY

x, y = sp.symbols("x y", real=True)
i, t = sp.symbols("i t", integer=True)

CASES = [
    sp.exp(x) * y + sp.Rational(1, 3),
    sp.Max(x, y) - sp.Min(x, 2 * y),
    sp.Piecewise((x, x > y), (y, True)),
    sp.ITE(sp.And(i >= t, sp.Eq(i - t, 1)), x, y),
    sp.Piecewise((1, sp.Or(sp.Eq(i, t), sp.Not(i > t))), (0, True)),
    sp.Sum(x * t, (t, 1, 3)),
    sp.Product(1 + x * t, (t, 1, 3)) + sp.pi * sp.E,
    sp.Sum(sp.Sum(x * t + i, (i, 1, t)), (t, 1, 3)) + sp.Float("0.1") + sp.sqrt(2),
]


def test_a_nested_sum_is_summed_outer_range_last():
    # Sum(x·t + i, (i, 1, t), (t, 1, 3)): Σ_{t=1}^{3} Σ_{i=1}^{t} (x·t + i) = 17 at x = 1/2, whatever i, t are bound to
    double = next(a for a in CASES[-1].args if isinstance(a, sp.Sum))
    assert double.limits == ((i, 1, t), (t, 1, 3))
    inst = Instance(d=1, n=3, scalars={x: 0.5, y: -1.25})
    for env in ({i: 2, t: 1}, {i: 1, t: 2}, {}):
        assert evaluate(double, inst, "float", env) == oracle(double, inst, "float", dict(env)) == 17.0


@pytest.mark.parametrize("expr", CASES, ids=[sp.sstr(c)[:40] for c in CASES])
@pytest.mark.parametrize("env", [{i: 2, t: 1}, {i: 1, t: 2}, {i: 3, t: 3}])
def test_compiled_equals_the_oracle(expr, env):
    inst = Instance(d=1, n=3, scalars={x: 0.5, y: -1.25})
    try:
        want = oracle(expr, inst, "float", dict(env))
    except Unsupported:
        pytest.skip("the oracle has no value here either")
    assert evaluate(expr, inst, "float", env) == want
    ball, ref = evaluate(expr, inst, "arb", env, prec=128), oracle(expr, inst, "arb", dict(env), prec=128)
    assert ball.mid() == ref.mid() and ball.rad() == ref.rad()
    assert ball.contains(want) or abs(float(ball.mid()) - want) < 1e-12


# Formulas chosen to be awkward: conditions on t that use i and j, reductions over part of the
# row, products, nested max/min, exponentials of large scores, softplus/tanh/sqrt/abs, n.
FORMULAS = [entry.formula for entry in REGISTRY.values()] + [
    "exp(x_j - max_t(x_t)) / sum_t(exp(x_t - x_j))",
    "max(x_j, min_t(x_t, t != j)) / (1 + sum_t(abs(x_t), t <= j))",
    "softplus(x_j) * tanh(x_j / 3) / n + sqrt(abs(x_j))",
    "log(1 + exp(x_j)) - sum_t(x_t, t == j)",
    "prod_t(sigmoid(x_t - x_j), t != j)",
    "(x_j - min_t(x_t))**2 / (max_t(x_t) - min_t(x_t) + 1)",
    "exp(x_j) / (exp(s) + sum_t(exp(x_t), t >= i - 1))",
    "min(relu(x_j - s), max(x_j, s, 1)) * prod_t(1 - sigmoid(x_t), t < j)",
]
ROWS = [
    ([0.5, -2.0, 3.25], None),
    ([30.0, -30.0, 0.0, 29.5], [True, False, True, True]),
    ([-700.0, 700.5, 1.0], [True, True, False]),
    ([2.0], None),
]
PARAMS = {"eps": sp.Rational(1, 1000), "s": sp.Rational(-3, 2), "b": sp.Rational(1, 4), "c": sp.Rational(7, 2),
          "zeta": sp.Rational(5, 4), "gamma": sp.Rational(-1, 8), "s_star": sp.Rational(1, 2)}


def _weights(text: str):
    f = compile_weight(text, {p: ({"positive": True} if p in ("eps", "c") else {}) for p in PARAMS})
    params = {p: PARAMS[p] for p in f.params}
    return f, params, f.weight(lambda k: X[ROW, k], KEY, **params)


def _instance(row, mask):
    size = len(row)
    xs, ms = np.zeros((size + 1, size + 1)), np.zeros((size + 1, size + 1))
    xs[size, 1:] = row
    ms[size, 1:] = [1 if mask is None or a else 0 for a in (mask or row)]
    return Instance(d=1, n=size, tables={"x": xs, "M": ms})


@pytest.mark.parametrize("text", FORMULAS)
def test_formula_weights_agree_with_the_oracle_and_the_exact_reference(text):
    f, params, w = _weights(text)
    for row, mask in ROWS:
        inst, size = _instance(row, mask), len(row)
        with mpmath.workdps(60):
            exact = f.reference(row, mask, **{p: mpmath.mpf(v.p) / v.q for p, v in params.items()})
        for k in range(1, size + 1):
            env = {ROW: size, KEY: k}
            try:
                want = oracle(w, inst, "float", dict(env))
            except Unsupported:  # a max over no key: derive's evaluator has no value either
                with pytest.raises(Unsupported):
                    evaluate(w, inst, "float", env)
                continue
            got = evaluate(w, inst, "float", env)
            assert got == want or (math.isnan(got) and math.isnan(want)), (text, row, k)
            if mask is not None and not mask[k - 1] or mpmath.isnan(exact[k - 1]):
                continue  # 0·(a value of no key) or no value: the exact reference says 0 or NaN
            ball = evaluate(w, inst, "arb", env, prec=256)
            ref = oracle(w, inst, "arb", dict(env), prec=256)
            assert ball.mid() == ref.mid() and ball.rad() == ref.rad(), (text, row, k)
            assert ball.rad() < 1e-30 * (1 + abs(ball.mid())), (text, row, k)
            with mpmath.workdps(80):
                mid = mpmath.mpf(ball.mid().str(75, radius=False))
                assert abs(mid - exact[k - 1]) <= float(ball.rad()) + 1e-40 * (1 + abs(mid)), (text, row, k, ball)


def test_document_ids_have_no_entry_past_either_end_of_the_sequence():
    """A label vector (document ids) is read only inside the drawn sequence: past its end numpy
    would raise, before its start it would wrap around to the last position; both are no value
    of the instance (it certifies nothing), never another position's id."""
    import numpy as np

    from derive.crosscheck.compiled import _entry
    from derive.errors import Unsupported

    labels = np.array([0.0, 3.0, 4.0])
    assert _entry(labels, (2,), "ids", True) == 4.0
    for k in (3, -1):
        with pytest.raises(Unsupported, match=f"no entry at position \\({k},\\)"):
            _entry(labels, (k,), "ids", True)
    assert _entry(labels, (-1,), "T", False) == 4.0  # another table keeps numpy's indexing
