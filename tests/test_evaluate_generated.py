"""The float backend's generated functions (derive.crosscheck.generated) against the closures they
replace: the same double, bit for bit, on every node type the cross-checks use, on drawn
instances of every mask kind and size 1; the closures take over where a generated function
raises; and cross-checks built on them still fail on false identities (one only at d = n = 1,
one off in the 12th digit, one only where a range of keys is empty, one only under a mask)."""

from __future__ import annotations

import io
import math
import re
import tokenize

import numpy as np
import pytest
import sympy as sp

from derive.crosscheck.check import cross_check
from derive.crosscheck.compiled import compiled
from derive.crosscheck.evaluate import Instance, _env, _Eval, evaluate
from derive.crosscheck.generated import generated
from derive.crosscheck.instances import MASK_KINDS, make_instance, signature
from derive.errors import Unsupported
from derive.model.attention import M, ScalarBase, d, i, j, n
from derive.model.vectors import Dot, VectorBase, VectorSymbol
from derive.settings import DEFAULT

x = ScalarBase("x")
q, k, v = VectorBase("q"), VectorBase("k"), VectorBase("v")
b = VectorSymbol("b")
t, u = sp.symbols("t u", integer=True, positive=True)
c = sp.Symbol("c", real=True)


def score(a):
    return Dot(q[i], k[a]) / sp.sqrt(d)


CASES = [
    # softmax with a loop-invariant denominator, and its output: a vector sum
    sp.exp(score(j)) * M[i, j] / sp.Sum(M[i, t] * sp.exp(score(t)), (t, 1, n)),
    sp.Sum(M[i, t] * sp.exp(score(t)) * v[t], (t, 1, n)) / (1 + sp.Sum(M[i, t] * sp.exp(score(t)), (t, 1, n))),
    # double sums (SymPy flattens a nested one into one Sum of two ranges), an empty range (j + 1..j)
    sp.Sum(sp.Sum(x[t, u] * M[t, u], (u, 1, t)), (t, 1, n)) + sp.Sum(x[i, t], (t, j + 1, j)),
    sp.Sum(x[t, u] ** 2, (t, 1, n), (u, 1, j)) - sp.Sum(x[i, t], (t, j, n)) * c,
    # the loop variable shadows a bound index; the same subexpression inside and outside a loop
    sp.Sum(x[i, j] * sp.exp(x[i, j] - x[i, 1]), (j, 1, n)) + sp.exp(x[i, j] - x[i, 1]),
    sp.log(sp.Sum(sp.exp(x[i, t] + c), (t, 1, n))) - sp.tanh(c) + sp.sin(x[i, j]) * sp.cos(x[j, i]),
    sp.Max(x[i, j], c, -x[i, 1]) - sp.Min(x[i, j], 2 * c) + sp.Abs(x[i, j] - c),
    (x[i, j] ** 2 + 1) ** sp.Rational(-1, 2) + sp.sqrt(d) * n ** -2 + (1 + x[i, j] ** 2) ** x[j, i],
    Dot(b, q[i]) + Dot(q[i] + b, k[j]) * sp.Rational(1, 3) + sp.pi * sp.E + sp.Float("0.1"),
    sp.exp(1000 * c) + sp.log(x[i, j]) * 0 + sp.Sum(sp.exp(800 + x[i, t]), (t, 1, j)),  # overflow guards
    x[i, j] < c,
    # branches: conditions tested in order, only the chosen value computed (a read past the end in one never taken)
    sp.Sum(sp.Piecewise((x[i, t], sp.And(t <= j, x[i, t] > 0)), (x[i, t + 1000], t > n),
                        (-x[i, t], sp.Or(sp.Eq(t, j), sp.Not(x[i, t] < c))), (c, True)), (t, 1, n)),
    sp.Piecewise((sp.Sum(x[i, t], (t, 1, j)), sp.Ne(j, 1) & (c > 0)), (x[i, j], sp.Eq(i, j) | (c < -1)), (c, True)) + 1,
]


def _bits(value):
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, float):
        return (float, value.hex() if not math.isnan(value) else "nan")
    return (type(value), value)


@pytest.mark.parametrize("expr", CASES, ids=[sp.sstr(e)[:50] for e in CASES])
def test_the_generated_function_computes_the_same_doubles_as_the_closures(expr):
    fast, closures = generated(expr), compiled(expr)
    assert fast is not None
    sig = signature(expr)
    rng = np.random.default_rng(7)
    for size in (1, 2, 3, 7, 20):
        for mask in MASK_KINDS:
            inst, env = make_instance(sig, size % 5 + 1, size, rng, mask=mask)
            inst.scalars[c] = float(rng.uniform(-3, 3))
            with np.errstate(all="ignore"):
                want = closures(_Eval(inst, "float"), _env(env))
                got = fast(_Eval(inst, "float"), _env(env))
            assert _bits(got) == _bits(want), (expr, size, mask)


def test_a_nested_sum_whose_inner_range_uses_the_outer_variable():
    # SymPy flattens it into one Sum whose LAST range is the outermost
    expr = sp.Sum(sp.Sum(x[t, u], (u, 1, t)), (t, 1, n))
    assert expr.limits == ((u, 1, t), (t, 1, n))
    tab = np.arange(16.0).reshape(4, 4)
    inst = Instance(d=1, n=3, tables={"x": tab})
    want = 5 + 9 + 10 + 13 + 14 + 15  # x[1,1] + x[2,1..2] + x[3,1..3]
    for env in ({}, {t: 1}, {t: 3, u: 2}):  # values of t and u outside the sum change nothing
        for _ in range(3):  # the closures, then the generated function
            assert evaluate(expr, inst, "float", env) == want
        assert evaluate(expr, inst, "arb", env).mid() == want
    assert compiled(expr).generated is not None


def test_evaluate_uses_it_from_the_second_evaluation_on():
    expr = sp.exp(x[i, j]) / sp.Sum(sp.exp(x[i, t]), (t, 1, n)) + 1
    inst = Instance(d=1, n=2, tables={"x": np.array([[0.0, 0, 0], [0, 0.5, -1.0], [0, 2.0, 3.0]])})
    want = math.exp(-1.0) / (math.exp(0.5) + math.exp(-1.0)) + 1
    assert evaluate(expr, inst, "float", {i: 1, j: 2}) == want
    assert compiled(expr).generated is None
    assert evaluate(expr, inst, "float", {i: 1, j: 2}) == want
    assert compiled(expr).generated is not None


def test_node_types_it_does_not_write_stay_with_the_closures():
    assert generated(sp.Product(1 + x[i, t], (t, 1, n))) is None
    assert generated(x[i, j] + sp.oo) is None


def test_the_closures_take_over_where_the_generated_function_raises():
    expr = x[i, j] * 3 + 1
    exact = np.array([[0, 0], [0, sp.Rational(1, 3)]], dtype=object)  # exact entries: not a float64 table
    inst = Instance(d=1, n=1, tables={"x": exact})
    for _ in range(3):
        assert evaluate(expr, inst, "float", {i: 1, j: 1}) == (1 / 3) * 3.0 + 1.0
    zero = Instance(d=1, n=1, tables={"x": np.zeros((2, 2))})
    for _ in range(3):  # 0.0 to a negative power: the closures' own exception
        with pytest.raises(ZeroDivisionError):
            evaluate(x[i, j] ** -1 + 1, zero, "float", {i: 1, j: 1})
    for _ in range(3):  # no branch holds: the closures' error
        with pytest.raises(Unsupported, match="Piecewise without a true branch"):
            evaluate(sp.Piecewise((x[i, j], x[i, j] > 1)) + 1, zero, "float", {i: 1, j: 1})
    with pytest.raises(Exception, match="no value for symbol"):
        for _ in range(3):
            evaluate(x[i, j] + sp.Symbol("unbound"), zero, "float", {i: 1, j: 1})


# ---- cross-checks on the generated functions still fail where they must ----------------------

D, N = sp.symbols("d n", integer=True, positive=True)
CFG = DEFAULT.merge(examples=20)


def _fails(name, lhs, rhs):
    """Whether the cross-check fails, every instance of it compared by the generated functions."""
    inst, env = make_instance(signature(lhs, rhs), 2, 3, np.random.default_rng(0))
    for side in (lhs, rhs):
        for _ in range(2):
            evaluate(side, inst, "float", env)
        assert compiled(side).generated is not None
    return not cross_check(name, lhs, rhs, CFG).passed


def test_a_false_identity_only_at_d_and_n_one_fails():
    bump = sp.Pow(0, (D - 1) ** 2 + (N - 1) ** 2, evaluate=False)
    lhs = sp.Sum(x[i, t], (t, 1, N)) + bump
    assert _fails("bump", lhs, sp.Sum(x[i, t], (t, 1, N)) + 0 * c)


def test_a_false_identity_off_in_the_twelfth_digit_fails_and_the_true_one_passes():
    total = sp.Sum(sp.exp(x[i, t]), (t, 1, n))
    assert _fails("12th digit", total, total * (1 + sp.Rational(1, 10**11)))
    assert cross_check("same", total * sp.exp(c), sp.Sum(sp.exp(x[i, t] + c), (t, 1, n)), CFG).passed


def test_a_false_identity_only_where_a_range_is_empty_fails():
    keys_after = sp.Sum(1, (t, j + 1, n))  # 0 at j = n
    assert cross_check("count", keys_after, n - j, CFG).passed
    assert _fails("count at least one", keys_after, sp.Max(n - j, 1))


def test_a_false_identity_only_under_a_mask_fails():
    masked = sp.Sum(M[i, t] * x[i, t], (t, 1, n))
    assert cross_check("0/1 mask", masked, sp.Sum(M[i, t] ** 2 * x[i, t], (t, 1, n)), CFG).passed
    assert _fails("mask dropped", masked, sp.Sum(x[i, t], (t, 1, n)))


def test_no_text_of_the_expression_is_written_into_the_source(monkeypatch):
    import derive.crosscheck.generated as gen

    sources: list[str] = []

    def spy(source, *args):
        sources.append(source)
        return compile(source, *args)

    monkeypatch.setattr(gen, "compile", spy, raising=False)
    odd = sp.Symbol("__import__('os').system('exit 3')", real=True)
    table = ScalarBase("x]; raise SystemExit #")
    expr = sp.exp(odd) * table[i, j] + sp.Sum(table[i, t] * sp.Float("1.5"), (t, 1, n)) + sp.Rational(7, 3)
    f = gen.generated(expr)
    (source,) = sources
    # the source's tokens: the templates' names and keywords, generated locals, four literals
    names = {"def", "return", "if", "is", "else", "None", "for", "in", "range", "ev", "env", "inst", "get", "symbol",
             "tolist", "tanh", "sin", "cos", "True", "False", "not", "pass", "raise", "_NoBranch"}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME:
            assert tok.string in names or re.fullmatch(r"_[a-z]+|_U|[csmrtj][0-9]+", tok.string), tok
        elif tok.type == tokenize.NUMBER:
            assert tok.string in ("709.0", "0.0", "1", "2"), tok
        else:
            assert tok.type in (tokenize.OP, tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
                                tokenize.ENDMARKER), tok
    tab = np.zeros((3, 3))
    tab[1, 1], tab[1, 2] = 0.25, -1.0
    inst = Instance(d=1, n=2, scalars={odd: 0.5}, tables={table.name: tab})
    env = _env({i: 1, j: 2})
    assert f(_Eval(inst, "float"), env) == math.exp(0.5) * -1.0 + (0.25 * 1.5 + -1.0 * 1.5) + 7 / 3
