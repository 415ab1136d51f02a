"""The one-pass reductions of the exact evaluator (:meth:`derive.normalizers.exact.Ball.scan`): a sum
or product over the keys before or after the key gives, for every key, the ball the reduction term by
term gives (the same value to every digit, the same keys with no value), on rows with masked keys and
bodies with no value at some keys."""

from __future__ import annotations

import mpmath
import pytest
from hypothesis import given, settings, strategies as st

import derive.normalizers.exact as exact
from derive.normalizers.formula import compile_weight

BODIES = ["exp(x_t)", "1 - sigmoid(x_t)", "log(x_t)", "x_t - t"]  # log: no value where x_t <= 0


def _weights(formula: str, row, mask, scanned: bool):
    f = compile_weight(formula)
    saved = exact._scanned
    if not scanned:
        exact._scanned = lambda fn, args: False
    try:
        with mpmath.workdps(30):
            return [str(w) for w in f.reference(row, mask)]
    finally:
        exact._scanned = saved


@settings(max_examples=60, deadline=None)
@given(body=st.sampled_from(BODIES), fn=st.sampled_from(["sum_t", "prod_t"]), op=st.sampled_from(["<", "<=", ">", ">="]),
       row=st.lists(st.floats(-4, 4, allow_nan=False), min_size=1, max_size=9), data=st.data())
def test_a_scan_gives_every_key_the_reduction_term_by_term(body, fn, op, row, data):
    mask = data.draw(st.lists(st.booleans(), min_size=len(row), max_size=len(row)))
    formula = f"sigmoid(x_j) * {fn}({body}, t {op} j) + 1"
    assert _weights(formula, row, mask, True) == _weights(formula, row, mask, False)


def test_the_scan_is_used_and_makes_a_long_stick_breaking_row_linear():
    f = compile_weight("sigmoid(x_j) * prod_t(1 - sigmoid(x_t), t > j)")
    calls = []
    saved = exact.Ball.scan

    def counting(self, fn, args):
        calls.append(self.key)
        return saved(self, fn, args)

    exact.Ball.scan = counting
    try:
        with mpmath.workdps(20):
            w = f.reference([0.5 * k for k in range(-20, 20)], None)
    finally:
        exact.Ball.scan = saved
    assert len(calls) == 40
    # p_j = σ(x_j) Π_{t > j} σ(−x_t): the last key's weight is σ(x_n) alone
    assert float(w[-1]) == pytest.approx(1 / (1 + mpmath.e ** -9.5), rel=1e-15)


def test_a_scan_evaluates_no_term_that_no_key_uses():
    # the term at t = 1 (t > j) and at t = n (t < j) belongs to no key's range: its imprecision (a kink
    # that no precision decides, here at x_t = 1/2) must not make the row undecided
    for formula, row in (("sigmoid(x_j) * prod_t(1 + sqrt(abs(tanh(x_t) - tanh(1/2))), t > j)", [0.5, 1.0, 2.0]),
                         ("sigmoid(x_j) * sum_t(1 + sqrt(abs(tanh(x_t) - tanh(1/2))), t < j)", [1.0, 2.0, 0.5])):
        assert _weights(formula, row, None, True) == _weights(formula, row, None, False)
