"""``derive impl`` works over whatever the registry holds: a normalizer outside the softmax
family (here a sigmoid, registered for this test only) is checked, its Jacobian derived,
and a fault is described by its pattern (no faulty-form table applies)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from derive.impl import check_implementation
from derive.impl.exact.reference import jacobian
from derive.normalizers.registry import REGISTRY, from_formula


SIGMOID = from_formula("sigmoid_test", "sigmoid (test only)", "sigmoid(x_j)", latex=r"\sigma")


def good(x):
    with np.errstate(over="ignore"):
        return np.where(np.isneginf(x), 0.0, 1 / (1 + np.exp(-x)))


def bad(x):
    return 0.5 * good(x)


@pytest.mark.slow
def test_a_new_normalizer_is_checked_generically(monkeypatch):
    monkeypatch.setitem(REGISTRY, "sigmoid_test", SIGMOID)
    ok = check_implementation(good, "sigmoid_test", dtypes=("float64",), examples=20)
    assert ok.agrees, ok.to_markdown()
    wrong = check_implementation(bad, "sigmoid_test", dtypes=("float64",), examples=20)
    assert wrong.failure.row == [0.0]
    assert (wrong.failure.output, wrong.failure.exact) == ([0.25], [0.5])
    assert wrong.diagnosis.matched == []
    assert wrong.diagnosis.pattern[0].startswith("In every failing row the output is the exact row")


def test_the_jacobian_of_a_new_normalizer_is_derived(monkeypatch):
    monkeypatch.setitem(REGISTRY, "sigmoid_test", SIGMOID)
    jac = jacobian(SIGMOID, [0.0, 2.0], {}, 50)
    with mpmath.workdps(50):
        s = 1 / (1 + mpmath.exp(-2))
        assert abs(jac[0][0] - mpmath.mpf(1) / 4) < mpmath.mpf(10) ** -45
        assert abs(jac[1][1] - s * (1 - s)) < mpmath.mpf(10) ** -45
        assert jac[0][1] == 0 and jac[1][0] == 0


def test_a_normalizer_without_a_formula_has_no_jacobian_to_judge():
    from derive.impl.exact.reference import NoJacobian
    from derive.normalizers.registry import Normalizer

    bare = Normalizer(name="bare", title="bare", params=(), weight=SIGMOID.weight, stable=SIGMOID.stable,
                      reference=SIGMOID.reference, latex="b")
    with pytest.raises(NoJacobian, match=r"^the normalizer bare has no formula to differentiate$"):
        jacobian(bare, [0.0], {}, 30)
