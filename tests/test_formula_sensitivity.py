"""What the exact comparison of ``derive impl`` reads off a formula's tree: the magnitude a weight's
rounding is relative to (where its last step cancels), the distance from a kink, and rows on a
kink; and the one bfloat16 rounding."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from derive.floats import bf16, round_to
from derive.normalizers.formula import compile_weight
from derive.normalizers.sensitivity import kink_distances, kink_rows, kinked, scales


def _f(text, **scalars):
    return compile_weight(text, {k: {} for k in scalars})


def test_a_smooth_formula_keeps_the_weights_own_magnitude_and_has_no_kink():
    for text in ("exp(x_j) / sum_t(exp(x_t))", "sigmoid(x_j) * prod_t(1 - sigmoid(x_t), t > j)"):
        f = _f(text)
        assert scales(f, [0.5, -1.0]) is None and not kinked(f) and kink_distances(f, [0.5, -1.0]) == []
        assert kink_rows(f, {}) == []


def test_a_last_step_that_cancels_is_measured_by_its_terms():
    f = _f("max(0, exp(x_j) / sum_t(exp(x_t)) - tau)", tau=1)
    with mpmath.workdps(30):
        got = scales(f, [0.0, 0.0, 0.0], [True, True, False], tau=0.5)
    assert got == pytest.approx([1.0, 1.0, 0.0])  # p = 1/2 and |τ| = 1/2; a masked key 0
    # a product outside the sum is not a last-step sum: the weight's own magnitude
    assert scales(_f("2 * max(0, exp(x_j) / sum_t(exp(x_t)) - tau)", tau=1), [0.0], tau=0.5) is None


def test_kink_distances_are_relative_to_the_terms_that_decide_the_branch():
    with mpmath.workdps(30):
        # relu(x_j): the score itself decides, exactly: as far as can be (1), whatever its size
        assert kink_distances(_f("relu(x_j) / n"), [1e-12, 3.0]) == [1, 1]
        # relu(exp(x_j) − 1) at x = 1e-9: |e^x − 1| / (e^x + 1) ≈ 5e-10, and the abs in the sum once per key
        d = kink_distances(_f("relu(exp(x_j) - 1) / (sum_t(abs(exp(x_t) - 1)) + 1)"), [1e-9, 2.0])
        assert len(d) == 4 and float(min(d)) == pytest.approx(5e-10, rel=1e-6)
        # max_t: the gap between the two largest scores over their magnitudes
        d = kink_distances(_f("exp(x_j - max_t(x_t)) / n"), [1.0, 1.5, -3.0])
        assert d == [pytest.approx(0.5 / 2.5)]  # key-free: measured once per row


def test_kink_rows_sit_on_the_kink():
    f = _f("max(0, exp(x_j) / sum_t(exp(x_t)) - tau)", tau=1)
    rows = kink_rows(f, {"tau": 0.25}, lengths=(2, 5))
    assert len(rows) == 6
    a = math.log(0.25 * 4 / 0.75)  # e^a / (e^a + 4) = 1/4
    assert rows[3][0] == pytest.approx(a, abs=1e-15) and rows[3][1:] == (0.0,) * 4
    assert rows[4][0] - rows[3][0] == pytest.approx(1e-7)
    assert kink_rows(f, {"tau": -0.5}) == []  # p − τ > 0 always: never on the kink
    assert kink_rows(f, {}) == []  # no value for τ: no row


def test_bfloat16_rounding_is_to_nearest_even_through_float32():
    one = 1.0
    ulp = 2.0**-7  # bfloat16's spacing at 1
    x = np.array([one + ulp / 2, one + 3 * ulp / 2, one + ulp / 2 + 2.0**-40, -(one + ulp / 2),
                  3.4e38, 1e39, -1e39, 0.0, -0.0, np.inf, np.nan])
    got = round_to(x, "bfloat16")
    # ties to even; a float64 just above a tie rounds to float32 first (the tie), as torch does
    assert got[:4].tolist() == [1.0, 1.0 + 2 * ulp, 1.0, -1.0]
    assert got[4] == np.inf and got[5] == np.inf and got[6] == -np.inf  # beyond bfloat16's largest
    assert got[7] == 0.0 and math.copysign(1, got[8]) == -1 and got[9] == np.inf and np.isnan(got[10])
    assert bf16(x).dtype == np.float32
    assert round_to([1.0 + 2.0**-12], "float16").tolist() == [1.0]


def test_bfloat16_rounding_agrees_with_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = rng.standard_normal(20000) * 10.0 ** rng.integers(-40, 39, 20000)
    want = torch.tensor(x, dtype=torch.bfloat16).to(torch.float64).numpy()
    assert np.array_equal(round_to(x, "bfloat16"), want)
