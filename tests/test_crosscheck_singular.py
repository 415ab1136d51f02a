"""A cross-check instance where float evaluation raises (0.0 to a negative power) is decided by
the balls or tells nothing; it never turns the whole check into 'no numeric evaluation'. A time
limit is named as such."""

import sympy as sp

from derive.claims import numeric
from derive.crosscheck import check
from derive.model.attention import ScalarBase, i, j
from derive.timeout import TimeLimit
from derive.settings import DEFAULT

x = ScalarBase("x")


def _float_raises(monkeypatch):
    """Float evaluation raises on every instance (as 0.0 ** -1 does at a singular draw)."""
    real = check.evaluate

    def evaluate(expr, inst, mode, env, **kw):
        if mode == "float":
            raise ZeroDivisionError("0.0 cannot be raised to a negative power")
        return real(expr, inst, mode, env, **kw)

    monkeypatch.setattr(check, "evaluate", evaluate)


def test_float_errors_are_decided_by_the_balls(monkeypatch):
    _float_raises(monkeypatch)
    lhs, rhs = sp.exp(x[i, j]) * sp.exp(-x[i, j] + 1), sp.E
    assert check.cross_check("exp", lhs, rhs, DEFAULT.merge(examples=10)).passed


def test_a_false_identity_still_fails_when_float_raises(monkeypatch):
    _float_raises(monkeypatch)
    lhs, rhs = sp.exp(x[i, j]) * sp.exp(-x[i, j] + 1), sp.E + sp.Rational(1, 10**6)
    assert not check.cross_check("exp", lhs, rhs, DEFAULT.merge(examples=10)).passed


def test_a_time_limit_is_named(monkeypatch):
    def stop(*a, **k):
        raise TimeLimit("stopped")

    monkeypatch.setattr(numeric, "cross_check", stop)
    assert numeric.check_numeric("p", (x[i, j] + 1) ** 2, x[i, j] ** 2 + 2 * x[i, j] + 1, DEFAULT) == {
        "verdict": "not run", "reason": "stopped by the time limit"}
    # two sides that are one expression are not compared at all: the comparison could not fail
    assert numeric.check_numeric("p", x[i, j], x[i, j] + 0 * sp.Symbol("c"), DEFAULT) == {
        "verdict": "not run", "reason": "both sides are one expression, so a numeric comparison could not fail"}
