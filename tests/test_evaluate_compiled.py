"""The compiled evaluator does what the reference (one node at a time) does, for every node type."""

from __future__ import annotations

import pytest
import sympy as sp

from derive.crosscheck.evaluate import Instance, _Eval, evaluate
from derive.errors import Unsupported

x, y = sp.symbols("x y", real=True)
i, t = sp.symbols("i t", integer=True)

CASES = [
    sp.exp(x) * y + sp.Rational(1, 3),
    sp.Max(x, y) - sp.Min(x, 2 * y),
    sp.Piecewise((x, x > y), (y, True)),
    sp.ITE(sp.And(i >= t, sp.Eq(i - t, 1)), x, y),
    sp.Piecewise((1, sp.Or(sp.Eq(i, t), sp.Not(i > t))), (0, True)),
    sp.Sum(x * t, (t, 1, 3)),
]


def _reference(ev: _Eval, e: sp.Basic, env: dict):
    """Evaluate node by node with _node only (children too), never through compiled closures."""
    ev.run = lambda child, env2: _reference(ev, child, env2)  # type: ignore[method-assign]
    return ev._node(e, env)


@pytest.mark.parametrize("expr", CASES, ids=[sp.sstr(c)[:40] for c in CASES])
@pytest.mark.parametrize("env", [{i: 2, t: 1}, {i: 1, t: 2}, {i: 3, t: 3}])
def test_compiled_equals_the_reference(expr, env):
    inst = Instance(d=1, n=3, scalars={x: 0.5, y: -1.25})
    try:
        want = _reference(_Eval(inst, "float"), expr, dict(env))
    except Unsupported:
        pytest.skip("the reference has no value here either")
    assert evaluate(expr, inst, "float", env) == want
