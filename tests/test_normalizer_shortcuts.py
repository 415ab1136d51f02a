"""Cheaper exact routes of the normalizer provers give what the expensive ones give.

Limits of rational functions of exponentials against SymPy's ``limit``; a sign certified to
change, which makes :func:`sign_of` undecided without ``simplify``; a remembered exact
reference computed once per row; a route argument by argument left at once when a pair of
arguments is certified to differ.
"""

from __future__ import annotations

import mpmath
import pytest
import sympy as sp

from derive.model.attention import X, i
from derive.normalizers.algebra import _both_signs, _differ, prove_congruent, sign_of
from derive.normalizers.limits import rational_in_exponentials
from derive.normalizers.numeric import remembered

x = sp.Symbol("x", real=True)
tau = sp.Symbol("tau", positive=True)
e = sp.exp

DECIDED = [
    (-sp.Rational(1, 10) + 11 * e(-tau) / (10 * (e(-tau) + e(-2 * tau))), tau, sp.oo),
    (e(-tau * sp.log(2)) / (e(-tau * sp.log(2)) + e(-2 * tau * sp.log(2))), tau, sp.oo),
    (e(x) / (e(x) + 1), x, sp.oo),
    (e(x) / (e(x) + 1), x, -sp.oo),
    (e(2 * x) / (e(x) + 1), x, sp.oo),  # ∞
    (e(2 * x) / (e(x) + 1), x, -sp.oo),
    (1 / (e(x) - e(x / 3)), x, sp.oo),
    (1 / (e(x) - e(x / 3)), x, -sp.oo),  # −∞: e^{x/3} dominates near −∞
    ((e(x) + 3) / (2 * e(x) - 5), x, -sp.oo),
    ((e(x / 2) + 7) / (3 * e(x / 3) + 2 * e(x / 2)), x, sp.oo),
    (e(-x) - 3, x, sp.oo),
    (e(-x) - 3, x, -sp.oo),
    (-e(x / 2), x, sp.oo),
]


@pytest.mark.parametrize("expr, var, point", DECIDED)
def test_rational_in_exponentials_is_sympys_limit(expr, var, point):
    got = rational_in_exponentials(expr, var, point)
    assert got is not None
    assert got == sp.limit(expr, var, point)


@pytest.mark.parametrize("expr, var", [
    (e(x + 1) / (e(x) + 1), x),  # a constant in an exponent: the coefficients are not rational
    (x / (e(x) + 1), x),  # the variable outside an exponential
    (e(x) / (e(x) + sp.Symbol("a", positive=True)), x),  # a parameter
    (e(e(x)) / (e(x) + 1), x),  # an exponential of an exponential
    (e(x) / (e(x) + e(sp.sqrt(2) * x)), x),  # incommensurable rates
    (sp.Max(0, e(x) - 1) / (e(x) + 1), x),  # a max
    (e(x ** 2) / (e(x) + 1), x),  # not linear in the variable
])
def test_rational_in_exponentials_leaves_the_rest_to_sympy(expr, var):
    assert rational_in_exponentials(expr, var, sp.oo) is None


def test_a_sign_that_changes_is_undecided_without_simplify(monkeypatch):
    s, y = sp.Symbol("s", real=True), sp.Symbol("y", real=True)
    r = sp.Symbol("r", nonnegative=True)
    D = s * e(s * y) * sp.log(r + 2) / (r + e(s * y) + 1) ** 2
    assert _both_signs(D)

    def no_simplify(_):
        raise AssertionError("simplify called")
    monkeypatch.setattr("derive.normalizers.algebra.simplify", no_simplify)
    assert sign_of(D) is None


def test_a_fixed_sign_is_never_called_changing():
    s, y = sp.Symbol("s", positive=True), sp.Symbol("y", real=True)
    assert not _both_signs(s * e(s * y) / (1 + e(y)))
    assert sign_of(s * e(s * y) / (1 + e(y))) == "+"
    assert not _both_signs(y ** 2)  # 0 and positive values: no negative one
    assert not _both_signs(X[i, 1] - 1)  # not a plain scalar: not judged


def test_remembered_reference_runs_once_per_row_mask_and_parameters():
    calls = []

    def reference(x, mask=None, **params):
        calls.append((tuple(x), mask, tuple(sorted(params.items()))))
        return [mpmath.mpf(v) + params.get("s", 0) for v in x]

    ref = remembered(reference)
    a = ref([1.0, 2.0], None, s=1.0)
    assert ref([1.0, 2.0], None, s=1.0) is a
    assert ref([1.0, 2.0], [True, False], s=1.0) == a  # another mask: computed again
    assert ref([1.0, 2.0], None, s=2.0) != a  # other parameters: computed again
    with mpmath.workdps(30):
        ref([1.0, 2.0], None, s=1.0)  # another precision: computed again
    assert len(calls) == 4


def test_arguments_certified_to_differ_and_equal_ones_not():
    m, eps = sp.Symbol("m", real=True), sp.Symbol("epsilon", positive=True)
    assert _differ(eps * e(-m) + e(X[i, 1] - m), eps + e(X[i, 1]))  # equal only at m = 0
    assert not _differ(e(X[i, 1] - m) * e(m), e(X[i, 1]))  # the same function
    assert not _differ(sp.Max(0, x) / 2, sp.Max(0, x) / 2)


def test_a_min_max_product_with_arguments_that_differ_is_proved_as_a_whole():
    """Each factor differs (e^{-m} is in one side's numerator and denominator only), the product
    does not: the argument-by-argument route is certified hopeless and left, the difference
    reduces to 0, and a product that is not equal is still not proved."""
    m, eps = sp.Symbol("m", real=True), sp.Symbol("epsilon", positive=True)
    a = sp.Max(0, e(X[i, 1] - m) - e(-m)) / (eps * e(-m) + e(X[i, 1] - m))
    b = sp.Max(0, e(X[i, 1]) - 1) / (eps + e(X[i, 1]))
    ok, how = prove_congruent(a, b)
    assert ok and not how.startswith("argument by argument")
    assert not prove_congruent(a, sp.Max(0, e(X[i, 1]) - 1) / (2 * eps + e(X[i, 1])))[0]
