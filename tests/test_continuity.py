"""Limits at ±∞ by the limit laws: the value SymPy's Gruntz algorithm gives, or None.

A wrong limit would become a wrong verdict, so every value is compared with ``sympy.limit``
and every indeterminate form (0·∞, ∞ − ∞, 0/0, ∞/∞) must be left to SymPy.
"""

from __future__ import annotations

import pytest
import sympy as sp

from derive.normalizers.continuity import limit_at_infinity

x, y = sp.symbols("x y", real=True)
c = sp.Symbol("c", positive=True)
g = sp.Symbol("g", nonnegative=True)
z = sp.Symbol("z")  # no assumptions: not known to be real or finite

DECIDED = [
    (sp.exp(x) / (sp.exp(x) + sp.exp(y)), -sp.oo),
    (sp.exp(y) / (sp.exp(x) + sp.exp(y)), -sp.oo),
    (sp.exp(c * sp.tanh(x / c)) / (sp.exp(c * sp.tanh(x / c)) + sp.exp(c * sp.tanh(y / c))), -sp.oo),
    (sp.exp(c * sp.tanh(x / c)) / (sp.exp(c * sp.tanh(x / c)) + sp.exp(c * sp.tanh(y / c))), sp.oo),
    (1 / (1 + sp.exp(-(x + y))), sp.oo),
    (1 / (1 + sp.exp(-(x + y))), -sp.oo),
    (x**-2 + 3, sp.oo),
    (1 / (x**3 + 1), -sp.oo),
    (sp.tanh(-2 * x) + y, sp.oo),
]

LEFT_TO_SYMPY = [
    sp.exp(x) / (sp.exp(x) + sp.exp(2 * x)),  # 0/0
    x * sp.exp(x),  # ∞·0
    x - x**2 / (x + 1),  # ∞ − ∞
    1 / (x**3 - x),  # ∞ − ∞ in a denominator
    (x**2 + 1) / (x**2 - 1),  # ∞/∞
    sp.sin(x),  # no rule (and no limit)
    z * sp.exp(x),  # a factor of unknown sign and finiteness
    x**sp.Rational(1, 2),  # a non-integer power
    sp.exp(x) + x,  # tends to −∞: not a finite limit
]


@pytest.mark.parametrize("expr,point", DECIDED)
def test_the_limit_laws_give_sympys_limit(expr, point):
    got = limit_at_infinity(expr, x, point)
    assert got is not None
    assert sp.simplify(got - sp.limit(expr, x, point)) == 0


@pytest.mark.parametrize("expr", LEFT_TO_SYMPY)
def test_indeterminate_forms_are_left_to_sympy(expr):
    assert limit_at_infinity(expr, x, -sp.oo) is None


def test_min_and_max_of_convergent_arguments():
    """SymPy's limit fails on min/max; the laws take them (both are continuous)."""
    clip = sp.Min(1, sp.Max(0, (g + 1) * sp.exp(x) / (sp.exp(x) + 1) - g))
    assert limit_at_infinity(clip, x, -sp.oo) == 0  # max(0, −g) with g ≥ 0
    assert limit_at_infinity(clip, x, sp.oo) is None  # e^x/(e^x + 1): ∞/∞, left to SymPy


def test_only_at_infinity_and_for_a_real_variable():
    assert limit_at_infinity(sp.exp(x), x, 0) is None
    assert limit_at_infinity(sp.exp(z), z, -sp.oo) is None


@pytest.mark.slow
def test_the_normalizer_limits_agree_with_sympy():
    """The limits the normalizer table takes (here: its explicit two-key rows), both ways."""
    from derive.normalizers.limits import explicit_iterated
    from derive.normalizers.properties import params_for
    from derive.normalizers.registry import get

    for name in ("softmax", "softmax1", "sigmoid", "clipped", "softcap"):
        entry = get(name)
        params = params_for(entry)
        assert explicit_iterated(entry, params, 2) is not None
    x1, x2 = sp.symbols("x1 x2", real=True)
    w = sp.exp(c * sp.tanh(x1 / c)) / (sp.exp(c * sp.tanh(x1 / c)) + sp.exp(c * sp.tanh(x2 / c)))
    inner = limit_at_infinity(w, x2, -sp.oo)
    assert sp.simplify(inner - sp.limit(w, x2, -sp.oo)) == 0
    assert limit_at_infinity(inner, x1, -sp.oo) == sp.limit(sp.simplify(inner), x1, -sp.oo) == sp.Rational(1, 2)


k = sp.Symbol("k", integer=True)  # any sign, 0 included
m = sp.Symbol("m", integer=True, nonnegative=True)  # 0 included
ev = sp.Symbol("e", even=True)  # even, of any sign


@pytest.mark.parametrize(
    "expr",
    [
        sp.exp(-(x**k)),  # k = 0: e^{-1}; k = -1: 1
        sp.exp(-(x**m)),  # m = 0: e^{-1}
        sp.exp(-((-x) ** ev)),  # e = 0: e^{-1}; e = -2: 1
        1 / (1 + x**m),  # m = 0: 1/2
        1 / (1 + x ** (-m)),  # m = 0: 1/2, m ≥ 1: 1
        sp.tanh(x**k),  # k = 0: tanh 1
    ],
)
def test_a_symbolic_integer_exponent_of_unknown_sign_is_left_to_sympy(expr):
    """x^k → ∞ only for k > 0 (k = 0 gives 1, k < 0 gives 0): no value unless k's sign is known."""
    assert limit_at_infinity(expr, x, sp.oo) is None


def test_a_base_that_may_tend_to_0_under_an_exponent_that_may_be_negative():
    a = sp.Symbol("a", real=True)  # a = 0 and k < 0: (a + 1/x)^k has no finite limit
    assert limit_at_infinity(sp.tanh((a + 1 / x) ** k), x, sp.oo) is None
    assert limit_at_infinity(sp.tanh((1 + 1 / x) ** k), x, sp.oo) == sp.tanh(1)  # base → 1 ≠ 0
