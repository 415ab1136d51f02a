"""The Jacobian reference of ``derive impl`` is the arb evaluator differentiated in forward mode:
entries that a fixed-precision evaluation cancels to 0 (softpick at scores ~1e−300, where
e^x − 1 is below every digit of 1) keep their digits, so a correct gradient is judged right
and a subtly wrong one wrong; a kink a score moves is not judged, and an entry no precision
encloses is undecided, never judged."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from derive.impl.judge.row import Checker, DtypeResult, grad_weights
from derive.impl.exact.reference import NoJacobian, exact_row, jacobian
from derive.impl.exact.tolerance import kappa, tolerance
from derive.normalizers.registry import from_formula, get

ROW = [1e-300, -2e-300, 3e-300]
EPS = {"eps": 1e-300}


def _exact_softpick_jacobian(row, eps):
    """∂p_j/∂x_k of softpick, by hand: e^x − 1 = expm1, at 100 digits."""
    with mpmath.workdps(100):
        e = [mpmath.expm1(mpmath.mpf(v)) for v in row]
        den = sum(abs(v) for v in e) + mpmath.mpf(eps)
        num = [max(v, 0) for v in e]
        return [[((1 if j == k and e[j] > 0 else 0) * mpmath.exp(row[k]) / den
                  - num[j] * mpmath.sign(e[k]) * mpmath.exp(row[k]) / den**2) for k in range(len(row))]
                for j in range(len(row))]


def test_softpick_jacobian_at_scores_near_zero_keeps_every_digit():
    want = _exact_softpick_jacobian(ROW, EPS["eps"])
    jac = jacobian(get("softpick"), ROW, EPS, 40)
    with mpmath.workdps(40):
        for j in range(3):
            for k in range(3):
                assert abs(jac[j][k] - want[j][k]) <= mpmath.mpf(10) ** -35 * abs(want[j][k])
    # pinned: ∂p_1/∂x_1 = (1 − 1/7)/(7e−300), ∂p_1/∂x_2 = (1/7)/(7e−300), the rectified key's row is 0
    assert float(jac[0][0]) == pytest.approx(6 / 49 * 1e300, rel=1e-14)
    assert float(jac[0][1]) == pytest.approx(1 / 49 * 1e300, rel=1e-14)
    assert jac[1] == [0, 0, 0]


# softpick without its rectifier: smooth (no kink to skip), and at scores ~1e−300 every difference
# e^x − 1 is below the last digit of a fixed 40-digit evaluation, which made the denominator eps
# and the reference's diagonal 1/eps: a correct gradient was judged wrong
SHARE = from_formula("expm1_share_test", "expm1 share (test)", "(exp(x_j) - 1) / (sum_t(exp(x_t) - 1) + eps)",
                     params=("eps",))
SHARE_ROW = [1e-300, 2e-300, 3e-300]


def _share_torch(x, eps, detach_den=False):
    import torch

    e = torch.expm1(x)
    den = e.sum() + eps
    return e / (den.detach() if detach_den else den)


def _gradient(detach_den):
    import torch

    x = torch.tensor(SHARE_ROW, dtype=torch.float64, requires_grad=True)
    y = _share_torch(x, EPS["eps"], detach_den)
    c = torch.tensor(grad_weights(len(SHARE_ROW)))
    (y * c).sum().backward()
    return y.tolist(), x.grad.tolist()


@pytest.mark.parametrize("detach_den,verdict", [(False, "agrees"), (True, "disagrees")])
def test_a_gradient_at_scores_near_zero_is_judged_by_the_exact_jacobian(detach_den, verdict):
    """Both implementations compute the right weights; the second drops the denominator's
    derivative (a detached sum), which at eps ~ |x| is most of the off-diagonal Jacobian."""
    pytest.importorskip("torch")
    tol = tolerance("float64")
    checker = Checker(SHARE, None, -1, 40)
    out, grad = _gradient(detach_den)
    ex = exact_row(SHARE, SHARE_ROW, EPS, 40)
    kap = kappa(SHARE_ROW, EPS)
    assert ex.floats() == pytest.approx([1 / 7, 2 / 7, 3 / 7], rel=1e-15)
    assert all(abs(o - float(p)) <= tol.bound(s, kap) for o, p, s in zip(out, ex.values, ex.scales))
    result = DtypeResult("float64", tol)
    fail = checker._gradient(SHARE_ROW, ex, grad, EPS, tol, kap, result, (3,))
    assert ("agrees" if fail is None else "disagrees") == verdict
    assert result.undecided_rows == 0 and result.kink_skips == 0
    # the exact cᵀJ: J = (I − p 1ᵀ)/den with den = 7e−300 (e^x − 1 = x to 300 digits here)
    c, p = grad_weights(3), [1 / 7, 2 / 7, 3 / 7]
    want = [(c[k] - sum(c[j] * p[j] for j in range(3))) / 7e-300 for k in range(3)]
    if fail is None:
        assert grad == pytest.approx(want, rel=1e-13)
    else:
        assert fail.what == "gradient" and fail.exact == pytest.approx(want, rel=1e-13)
        assert all(e > b for e, b in zip(fail.errors, fail.bounds))


def test_softpick_near_zero_is_within_rounding_of_its_kink_and_its_gradient_is_not_judged():
    norm = get("softpick")
    tol = tolerance("float64")
    result = DtypeResult("float64", tol)
    ex = exact_row(norm, ROW, EPS, 40)
    assert Checker(norm, None, -1, 40)._gradient(ROW, ex, [0.0] * 3, EPS, tol, kappa(ROW, EPS), result, (3,)) is None
    assert result.kink_skips == 1


def test_masked_keys_have_zero_rows_and_columns():
    jac = jacobian(get("softpick"), [1e-300, -math.inf, 2.0], {"eps": 1e-3}, 40)
    assert [r[1] for r in jac] == [0, 0, 0] and jac[1] == [0, 0, 0]


def test_a_kink_a_score_moves_is_not_judged_and_one_it_does_not_move_is_no_obstacle():
    norm = get("softpick")
    with pytest.raises(NoJacobian, match=r"^the weights are not differentiable at this row \(relu at its kink\)$") as e:
        jacobian(norm, [0.0, 1.0], {"eps": 1e-3}, 40)
    assert e.value.kink
    relu_n = from_formula("relu_over_n_test", "relu/n (test)", "relu(x_j) / n")
    assert jacobian(relu_n, [0.5, -1.0], {}, 40) == [[mpmath.mpf(1) / 2, 0], [0, 0]]
    # relu(c) at c = 0 is at its kink, but no score moves it: the softmax Jacobian
    capped = from_formula("still_kink_test", "still kink (test)", "exp(x_j) * (1 + relu(c)) / sum_t(exp(x_t))",
                          params=("c",))
    jac = jacobian(capped, [0.0, 0.0], {"c": 0.0}, 40)
    assert jac == [[mpmath.mpf(1) / 4, -mpmath.mpf(1) / 4], [-mpmath.mpf(1) / 4, mpmath.mpf(1) / 4]]


def test_an_entry_that_no_precision_encloses_is_undecided():
    """tanh(x) − (e^{2x} − 1)/(e^{2x} + 1) is 0 but SymPy does not prove it: the derivative of
    x·(that) is a ball around 0 at every precision, never judged."""
    f = from_formula("cancel_test", "cancel (test)", "2 + x_j * (tanh(x_j) - (exp(2*x_j) - 1)/(exp(2*x_j) + 1))")
    with pytest.raises(NoJacobian, match=r"^their derivatives \(the Jacobian the gradient is compared with\): no ball up to 16384 bits.*; SymPy does not prove "
                                         r"\(tanh\(x_j\)-\(\(exp\(\(2\*x_j\)\)-1\)/") as e:
        jacobian(f, [0.5, 1.0], {}, 30)
    assert not e.value.kink
    checker = Checker(f, None, -1, 30)
    tol = tolerance("float64")
    result = DtypeResult("float64", tol)
    ex = exact_row(f, [0.5, 1.0], {}, 30)
    assert checker._gradient([0.5, 1.0], ex, [123.0, -7.0], {}, tol, 0.0, result, (2,)) is None
    assert result.undecided_rows == 1 and result.undecided_reason.startswith("their derivatives (the Jacobian the gradient is compared with): no ball")
    assert result.verdict == "undecided"


def test_an_identity_sympy_proves_has_the_derivative_zero():
    """log(e^x) − x is proved 0, so the derivative of 2 + x·(log(e^x) − x) is exactly 0."""
    f = from_formula("proved_test", "proved (test)", "2 + x_j * (log(exp(x_j)) - x_j)")
    assert jacobian(f, [0.5, 1.0], {}, 30) == [[0, 0], [0, 0]]


def test_the_derivative_of_a_max_and_of_a_tie():
    f = from_formula("maxsub_test", "max-shifted (test)", "exp(x_j - max_t(x_t)) / n")
    jac = jacobian(f, [2.0, -1.0], {}, 40)  # one maximum, key 1: its weight is 1/2 whatever its score
    with mpmath.workdps(40):
        q = mpmath.exp(-3) / 2
        assert jac[0] == [0, 0]
        assert abs(jac[1][0] + q) < mpmath.mpf(10) ** -39 * q and abs(jac[1][1] - q) < mpmath.mpf(10) ** -39 * q
    with pytest.raises(NoJacobian, match=r"max at a tie its scores move apart"):
        jacobian(f, [1.0, 1.0], {}, 40)
    np.testing.assert_equal(jacobian(f, [1.0], {}, 40), [[0]])


@pytest.mark.parametrize("name", ["softmax", "sink", "clipped", "softcap", "sigmoid", "sigmoid_logn", "ssmax",
                                  "stick_breaking", "softpick", "relu_n"])
def test_every_registry_jacobian_matches_a_difference_quotient_of_the_reference(name):
    """An independent evaluator: mpmath's numerical derivative of the exact weights (evidence)."""
    norm = get(name)
    params = {p: float(norm.sample.get(p, 0.5)) for p in norm.params}
    row = [0.5, -math.inf, -1.25, 2.0]
    jac = jacobian(norm, row, params, 40)
    allowed = [v != -math.inf for v in row]
    xs = [v if ok else 0.0 for v, ok in zip(row, allowed)]
    with mpmath.workdps(60):
        for k in range(4):
            for j in range(4):
                if not (allowed[j] and allowed[k]):
                    assert jac[j][k] == 0
                    continue

                def w(h, j=j, k=k):
                    x = [mpmath.mpf(v) + (h if q == k else 0) for q, v in enumerate(xs)]
                    return norm.reference(x, mask=allowed, **params)[j]

                assert abs(jac[j][k] - mpmath.diff(w, 0)) < mpmath.mpf(10) ** -30 * (1 + abs(jac[j][k]))
