"""Certificates: a refutation needs ball arithmetic proving the difference nonzero.

Identities whose cancellation needs hundreds or thousands of digits (huge and tiny
exponentials, powers of two far beyond 2^300, terms absorbed by much larger ones) must
never be refuted; differences too small for a float filter must still be found; the
search reaches n = 1, d ≥ 4, halves and irrational entries.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import sympy as sp
from flint import arb

from derive.crosscheck.evaluate import Instance
from derive.crosscheck.witness import SHRINK_CALLS, VALUES, certify, find_witness, show_ball, shrink
from derive.model.vectors import Dot, vector
from derive.model.attention import d as D
from derive.model.attention import n as N
from derive.settings import DEFAULT

x = sp.Symbol("x", real=True)
y = sp.Symbol("y", real=True)
E = sp.exp
CFG = DEFAULT.merge(witness_examples=60)

# (lhs, rhs): exactly equal for every real x (and y); float64 and 100-digit arithmetic
# both see a large nonzero difference on some instances.
MANY_DIGITS = [
    pytest.param(sp.Add(E(300 * x), 1, -E(300 * x), evaluate=False), sp.S.One, id="unevaluated-absorption"),
    pytest.param((E(300 * x) + 1) * E(x) - E(301 * x), E(x), id="exp(300x)+1-exp(300x)"),
    pytest.param((E(300 * x) + 1) * E(-300 * x) - E(-300 * x), sp.S.One, id="issue-example"),
    pytest.param(sp.tanh(300 * x) * (E(600 * x) + 1) - E(600 * x), -sp.S.One, id="tanh-cancellation"),
    pytest.param((sp.log(1 + E(300 * x)) - 300 * x) * E(300 * x), sp.log(1 + E(-300 * x)) * E(300 * x),
                 id="softplus-times-huge"),
    pytest.param((2**400 + E(x)) * E(-x) - 2**400 * E(-x), sp.S.One, id="2^400-absorbs"),
    pytest.param((sp.Integer(2) ** 1000 + x**2) * (y**2 + 1) - 2**1000 * (y**2 + 1), x**2 * (y**2 + 1),
                 id="2^1000-absorbs-x^2"),
    pytest.param(sp.Mul(E(-700 * x**2), E(700 * x**2) + y, evaluate=False) - y * E(-700 * x**2), sp.S.One,
                 id="tiny-times-huge"),
    pytest.param(sp.sqrt(E(200 * x) + 1) * sp.sqrt(E(200 * x) + 1) - E(200 * x), sp.S.One, id="sqrt-square"),
]


@pytest.mark.parametrize("lhs,rhs", MANY_DIGITS)
def test_many_digit_identities_are_never_refuted(lhs, rhs):
    assert find_witness(lhs, rhs, cfg=CFG) is None


@pytest.mark.parametrize("lhs,rhs", MANY_DIGITS)
def test_many_digit_identities_hold_on_every_table_value(lhs, rhs):
    """No single instance gives a certificate, whatever the precision cap."""
    for vx in VALUES:
        for vy in (0, 1, sp.Rational(-3, 2)):
            inst = Instance(d=1, n=1, scalars={x: vx, y: vy})
            assert certify(lhs, rhs, inst, {}) is None, (vx, vy)


def test_the_old_two_precision_rule_was_fooled():
    """What the certificate replaces: at 50 and 100 digits the same wrong difference.

    e^300 + 1 − e^300 (= 1) at x = 1, term by term as the unevaluated sum is written:
    e^300 has 131 digits before the point, so the 1 is lost at both precisions."""
    lhs, rhs = MANY_DIGITS[0].values
    assert set(sp.Add.make_args(lhs)) == {E(300 * x), sp.S.One, -E(300 * x)}

    def at(dps):
        with mpmath.workdps(dps):
            return mpmath.exp(300) + 1 - mpmath.exp(300)

    assert at(50) == at(100) == 0 and rhs == 1  # both precisions "agree" on a false difference
    inst = Instance(d=1, n=1, scalars={x: 1})
    assert certify(lhs, rhs, inst, {}) is None  # ball arithmetic: no certificate


def test_small_differences_are_found_without_a_float_filter():
    # The sides differ by e^-30 ≈ 9e-14, below any float64 closeness test.
    w = find_witness(x + E(-30), x, cfg=CFG)
    assert w is not None
    assert w["enclosures"]["bits"] == 64


def test_tiny_difference_under_a_huge_term_needs_more_bits():
    lhs, rhs = E(30 * x) + E(-30 * x), E(30 * x)
    inst = Instance(d=1, n=1, scalars={x: 1})
    cert = certify(lhs, rhs, inst, {})
    assert cert is not None and cert.bits > 64


def test_shrink_gives_the_first_table_value_that_differs():
    # x² = x at 0 and 1; −1 is the next value of the table, whatever Hypothesis drew first.
    w = find_witness(x**2, x, cfg=CFG)
    assert w["instance"]["x"] == -1 and w["lhs"] == 1.0 and w["rhs"] == -1.0


def test_shrink_gives_the_smallest_sizes_and_one_nonzero_entry():
    # ⟨u, u⟩ ≠ 0 for any u ≠ 0: the simplest witness is d = 1, u = [1].
    u = vector("u")
    w = find_witness(Dot(u, u), sp.S.Zero, cfg=CFG)
    assert (w["instance"]["d"], w["instance"]["u"]) == (1, [1])


def test_shrink_judges_at_most_its_budget():
    judged = []

    def differs(inst, env):
        judged.append(inst.scalars[x])
        return inst.scalars[x] != 0

    inst = Instance(d=1, n=1, scalars={x: VALUES[-1]})
    out, _ = shrink(inst, {}, differs)
    assert out.scalars[x] == 1  # the first value before −7 that still differs
    assert len(judged) <= SHRINK_CALLS


def test_search_reaches_n_equal_one():
    w = find_witness(sp.Max(N, 2) - N, sp.S.Zero, cfg=CFG)
    assert w is not None and w["instance"]["n"] == 1


def test_search_reaches_d_at_least_four():
    w = find_witness((D - 1) * (D - 2) * (D - 3) * x**2 + 1, sp.S.One, cfg=CFG)
    assert w is not None and w["instance"]["d"] >= 4


def test_search_reaches_irrational_entries():
    rational = [v for v in VALUES if v.is_rational]
    lhs = sp.Mul(*[x - v for v in rational])
    w = find_witness(lhs, sp.S.Zero, cfg=CFG)
    assert w is not None and w["instance"]["x"] in ("sqrt(2)", "-sqrt(3)", "pi/4")


@pytest.mark.parametrize("assumption,check", [
    ({"positive": True}, lambda v: v > 0),
    ({"negative": True}, lambda v: v < 0),
    ({"nonzero": True}, lambda v: v != 0),
])
def test_scalar_assumptions_are_respected(assumption, check):
    s = sp.Symbol("s", real=True, **assumption)
    # s·(s − 1)(s + 1)… is refuted somewhere; the witness must satisfy the assumption.
    w = find_witness(s**2 * (s - 1) * (s + 1), sp.S.Zero, cfg=CFG)
    assert w is not None
    value = w["_instance"].scalars[s]
    assert check(value), value


def test_no_value_for_contradictory_assumptions_is_no_witness():
    s = sp.Symbol("s", real=True, positive=True, integer=False)
    assert find_witness(s, s + 1, cfg=CFG) is not None  # 1 ≠ 0 needs no particular s


def test_enclosures_contain_the_exact_values_and_replay():
    lhs, rhs = E(x) / (1 + E(x)), sp.Rational(1, 2)
    w = find_witness(lhs, rhs, cfg=CFG)
    assert w is not None
    inst = w["_instance"]
    exact = sp.N(lhs.subs(x, sp.sympify(w["instance"]["x"])), 50)
    mid, _, rad = w["enclosures"]["lhs"].partition(" ± ")
    assert abs(exact - sp.Float(mid, 50)) <= sp.Float(rad or 0, 50)
    assert inst.scalars[x] == sp.sympify(w["instance"]["x"])


def test_show_ball_is_deterministic_text():
    assert show_ball(arb(1) / 3) == "0.333333333333 ± 1e-12"
    assert show_ball(arb(5)) == "5"
    assert show_ball(np.array([arb(2), arb(-1) / 8], dtype=object)) == ["2", "-0.125"]
    assert show_ball(arb(10) ** 40 / 3) == "3.33333333333e+39 ± 1e+28"


def test_uncertain_branch_is_no_certificate():
    # A piecewise whose condition cannot be decided on the ball gives no certificate.
    pw = sp.Piecewise((1, E(300 * x) + 1 - E(300 * x) > 0), (0, True))
    inst = Instance(d=1, n=1, scalars={x: 3})
    assert certify(pw, sp.S.One, inst, {}) is None
