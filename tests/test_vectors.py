import pytest
import sympy as sp

from derive.errors import KindError
from derive.model.attention import i, j
from derive.model.vectors import Dot, Rot, VectorBase, expand_dot, linear_parts, vectors

q, k = VectorBase("q"), VectorBase("k")
a, b, c = vectors("a b c")
x = sp.Symbol("x", real=True)


@pytest.mark.parametrize(
    "expr, expected",
    [
        (Dot(a + b, c), Dot(a, c) + Dot(b, c)),
        (Dot(2 * a, 3 * b), 6 * Dot(a, b)),
        (Dot(a - b, a - b), Dot(a, a) - 2 * Dot(a, b) + Dot(b, b)),
        (Dot(x * a, b + c), x * Dot(a, b) + x * Dot(a, c)),
        (Dot(q[i] + a, k[j] + b), Dot(q[i], k[j]) + Dot(q[i], b) + Dot(a, k[j]) + Dot(a, b)),
        (Dot(a, 0 * b), 0),
    ],
)
def test_bilinear_expansion(expr, expected):
    assert sp.expand(expand_dot(expr) - expected) == 0


def test_dot_is_symmetric():
    assert Dot(a, b) == Dot(b, a)
    assert Dot(a, b) - Dot(b, a) == 0


def test_dot_stays_unexpanded_until_asked():
    e = Dot(a + b, c)
    assert isinstance(e, Dot)
    assert len(sp.Add.make_args(expand_dot(e))) == 2


def test_rotation_rule_relative_position():
    # <R_i x, R_j y> = <x, R_{j-i} y>: depends on positions only through j - i
    lhs = expand_dot(Dot(Rot(i, q[i]), Rot(j, k[j])))
    shifted = expand_dot(Dot(Rot(i + 5, q[i]), Rot(j + 5, k[j])))
    assert sp.expand(lhs - shifted) == 0


def test_rotation_is_linear():
    e = expand_dot(Dot(Rot(i, a + b), Rot(j, c)))
    assert sp.expand(e - expand_dot(Dot(Rot(i, a), Rot(j, c))) - expand_dot(Dot(Rot(i, b), Rot(j, c)))) == 0


def test_rotation_by_zero_is_identity():
    assert Rot(0, a) == a
    assert Rot(i, 0) == 0


@pytest.mark.parametrize(
    "expr, message",
    [
        (x, "expected a vector, got a scalar: x"),
        (a * b, "expected a vector, got a product of vectors: a\\*b"),
    ],
)
def test_kind_errors(expr, message):
    with pytest.raises(KindError, match=message):
        linear_parts(expr)
