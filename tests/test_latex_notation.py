"""How formulas are printed: ⟨a, b⟩ is never wrapped in parentheses, and the one-line form of a
table cell keeps a sum of brackets in one numerator."""

import pytest
import sympy as sp

from derive.model.vectors import Dot, VectorSymbol
from derive.render.breaking import linear
from derive.render.latex import tex

g, v = VectorSymbol("g"), VectorSymbol("v")
x = sp.Symbol("x")


@pytest.mark.parametrize(("expr", "expected"), [
    (Dot(g, v) * sp.exp(x), r"\langle g, v \rangle e^{x}"),
    (x * Dot(g, v), r"x \langle g, v \rangle"),
    (Dot(g, v) ** 2, r"\langle g, v \rangle^{2}"),
    (-Dot(g, v), r"- \langle g, v \rangle"),
    (x - Dot(g, v), r"x - \langle g, v \rangle"),
    (Dot(g, v) / sp.sqrt(x), r"\frac{\langle g, v \rangle}{\sqrt{x}}"),
])
def test_bracket_is_not_parenthesized(expr, expected):
    assert tex(expr) == expected


@pytest.mark.parametrize(("latex", "expected"), [
    (r"s - \frac{\langle q_{i}, b_{K} \rangle}{\sqrt{d}}", r"s - \langle q_{i},\allowbreak b_{K} \rangle/\sqrt{d}"),
    # two brackets added are one numerator: never ⟨a, b⟩ + ⟨c, d⟩/√d
    (r"\frac{\langle a, b \rangle + \langle c, d \rangle}{\sqrt{d}}",
     r"(\langle a,\allowbreak b \rangle + \langle c,\allowbreak d \rangle)/\sqrt{d}"),
    (r"\frac{\langle a, b \rangle}{\langle c, d \rangle}", r"\langle a,\allowbreak b \rangle/\langle c,\allowbreak d \rangle"),
])
def test_linear_fraction_keeps_its_numerator(latex, expected):
    assert linear(latex) == expected


def test_fraction_inside_an_exponent_is_set_on_one_line():
    # e^{c tanh(x/c)}: a \frac two levels up is script-script size, too small to read
    x, c = sp.symbols("x c_cap")
    # … and an exponent that holds a fraction is set as exp(…) on the line, never as a superscript
    assert tex(sp.exp(c * sp.tanh(x / c))) == r"\exp\left(c_{\mathrm{cap}} \tanh{\left(x / c_{\mathrm{cap}} \right)}\right)"
    assert tex(sp.exp(x / 2)) == r"e^{x/2}"


def test_zero_gradient_region_is_an_inequality():
    # θ(x_j) vanishes where x_j < 0; θ(1 − max(0, y)) where y > 1 (the clip from above)
    from derive.normalizers.calculus import _zero_where

    y = sp.Symbol("y", real=True)
    assert tex(_zero_where([x])) == "x < 0"
    assert tex(_zero_where([1 - sp.Max(0, y), y])) == r"y > 1 \vee y < 0"
    assert tex(_zero_where([y - sp.Max(0, x)])) == r"y - \max\left(0, x\right) < 0"  # no number: as it is
