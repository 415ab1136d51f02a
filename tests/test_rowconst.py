"""The row-constant classification is a proof obligation: test it against numbers."""

import numpy as np
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derive.crosscheck.evaluate import evaluate
from derive.crosscheck.instances import make_instance, signature
from derive.model.attention import i, j
from derive.model.vectors import Dot, VectorBase, vectors
from derive.prove.rowconst import classify
from derive.prove.verdict import PROVED, REFUTED
from derive.settings import DEFAULT

q, k, delta = VectorBase("q"), VectorBase("k"), VectorBase("delta")
bQ, bK = vectors("b_Q b_K")
ATOMS = [q[i], k[j], delta[j], bQ, bK]
FAST = DEFAULT.merge(witness_examples=120, time_limit=5.0)


@st.composite
def vector_exprs(draw):
    terms = draw(st.lists(st.tuples(st.integers(-2, 2), st.sampled_from(ATOMS)), min_size=1, max_size=3))
    return sum((c * a for c, a in terms), sp.S.Zero)


@st.composite
def scalar_exprs(draw, depth=2):
    if depth == 0 or draw(st.booleans()):
        return Dot(draw(vector_exprs()), draw(vector_exprs()))
    op = draw(st.sampled_from(["add", "sub", "mul", "exp", "tanh"]))
    a = draw(scalar_exprs(depth=depth - 1))
    if op in ("exp", "tanh"):
        return getattr(sp, op)(a / 4)
    b = draw(scalar_exprs(depth=depth - 1))
    return {"add": a + b, "sub": a - b, "mul": a * b}[op]


def _values_over_keys(expr, seed):
    one = sp.Symbol("j_1", integer=True, positive=True)
    sig = signature(expr.subs(j, one))
    rng = np.random.default_rng(seed)
    inst, env = make_instance(sig, d=3, n=2, rng=rng, bound=1.0)
    env[i] = 1
    return evaluate(expr.subs(j, 1), inst, "float", env), evaluate(expr.subs(j, 2), inst, "float", env)


@settings(max_examples=40, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(expr=scalar_exprs(), seeds=st.lists(st.integers(0, 10**6), min_size=3, max_size=3))
def test_classification_agrees_with_evaluation(expr, seeds):
    c = classify(expr, j, FAST)
    if c.verdict.status == PROVED:
        for seed in seeds:
            a, b = _values_over_keys(expr, seed)
            assert abs(a - b) <= 1e-9 * (1 + abs(a) + abs(b)), (expr, a, b)
    elif c.verdict.status == REFUTED:
        w = c.verdict.witness
        assert abs(w["lhs"] - w["rhs"]) > 1e-12


def test_terms_that_mention_j_can_still_be_row_constant():
    e = Dot(q[i], k[j] + bK) - Dot(k[j], q[i])
    assert classify(e, j).label == "row-constant"


def test_function_of_a_key_term_is_key_dependent():
    assert classify(sp.exp(Dot(bQ, k[j])), j).label == "key-dependent"


def test_query_shift_depends_on_the_row():
    assert classify(Dot(q[i], bK), i).label == "depends on $i$"
    assert classify(Dot(bQ, bK), i).label == "constant in $i$"
