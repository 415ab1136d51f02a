"""``entry.stable`` is derived from the formula (derive.normalizers.vectorised): every entry's,
and a new formula's with no other edit, against the exact reference on rows built to break it.

Tolerance: |stable − reference| ≤ 1e-12·(1 + |reference|) per weight (float64 against mpmath at
60 digits, an infinity only where the reference's value is beyond float64), NaN exactly where
the reference is NaN."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from derive.normalizers import formula as formula_mod
from derive.normalizers.numeric import check_many, stable_check
from derive.normalizers.overflow import derive_overflow_free
from derive.normalizers.registry import REGISTRY, from_formula, get, names

TOL = 1e-12

ROWS = [
    ([1000.0, -1000.0, 0.0], None),
    ([1000.0, 999.0, -1000.0, 2.0], [True, True, False, True]),
    ([-1000.0, -1000.0], None),
    ([1e-300, -1e-300, 0.0], None),
    ([1e-300], None),
    ([1000.0], None),
    ([-1000.0], None),
    ([0.5], [False]),
    ([0.5, -1.0, 1000.0], [False, False, False]),
    ([3.0, 3.0, 3.0, 3.0], None),
    ([700.0, -745.0, 1e-12, -1e-12], [True, False, True, True]),
]


def _reference(entry, x, mask, params, y=None):
    with mpmath.workdps(60):
        return np.array([float(v) for v in entry.reference(x, mask, y, **params)])


def _assert_close(got, ref, what):
    got, ref = np.asarray(got, float), np.asarray(ref, float)
    assert got.shape == ref.shape, what
    assert np.array_equal(np.isnan(got), np.isnan(ref)), (what, got, ref)
    ok = ~np.isnan(ref) & (got != ref)  # equal values, equal infinities included, agree
    assert np.all(np.abs(got[ok] - ref[ok]) <= TOL * (1 + np.abs(ref[ok]))), (what, got, ref)


def _params(entry):
    return {k: float(v) for k, v in entry.sample_values().items()}


@pytest.mark.parametrize("name", names())
def test_every_entry_is_the_derived_form_and_matches_the_reference_on_extreme_rows(name):
    e = get(name)
    assert e.stable.reason == ""  # the overflow-free form, not the formula as written
    params = _params(e)
    for x, mask in ROWS:
        got = e.stable(np.array(x), None if mask is None else np.array(mask), **params)
        _assert_close(got, _reference(e, x, mask, params), (name, x, mask))
        if mask is None or any(mask):
            assert np.all(np.isfinite(got)), (name, x, got)


@pytest.mark.parametrize("name", names())
def test_rows_of_a_batch_are_the_rows_alone(name):
    e = get(name)
    params = _params(e)
    x = np.array([[1000.0, -1000.0, 0.0, 5.0], [1e-300, 2.0, -3.0, 0.0], [4.0, 4.0, 4.0, 4.0]])
    mask = np.array([[True, True, False, True], [False, False, False, False], [True, True, True, True]])
    batch = e.stable(x[None], mask[None], **params)[0]
    for r in range(3):
        _assert_close(batch[r], e.stable(x[r], mask[r], **params), (name, r))
        _assert_close(batch[r], _reference(e, list(x[r]), list(mask[r]), params), (name, r))


def test_a_parameter_per_row():
    e = get("bias_kv")
    x = np.array([[1000.0, 0.0], [-1000.0, 3.0], [1.0, 2.0]])
    s_star = np.array([-1000.0, 1000.0, 0.5])
    got = e.stable(x, s_star=s_star)
    for r in range(3):
        _assert_close(got[r], _reference(e, list(x[r]), None, {"s_star": s_star[r]}), r)


def test_the_fully_masked_rule_is_the_formulas():
    x, none = np.zeros(3), np.zeros(3, bool)
    for name in names():
        e = get(name)
        defined = e.definition_of.defined_without_keys(**_params(e))
        got = e.stable(x, none, **_params(e))
        assert np.all(got == 0) if defined else np.all(np.isnan(got)), name
    assert [n for n in names() if not np.isnan(get(n).stable(x, none, **_params(get(n)))).any()] == [
        "bias_kv", "sigmoid", "sink", "softmax1", "softpick", "stick_breaking", "zero_token"]


# ---- a formula that is not in the registry: a fast stable with no other edit ------------------

NEW = {
    "softmax_minus_tau": ("max(0, exp(x_j) / sum_t(exp(x_t)) - tau)", {"tau": 0.1}),
    "softmax1_but_own": ("exp(x_j) / (1 + sum_t(exp(x_t), t != j))", {}),
    "causal_prefix": ("exp(x_j) / (exp(a) + sum_t(exp(x_t), t <= j))", {"a": -2.0}),
    "abs_ratio": ("abs(exp(x_j) - exp(b)) / (sum_t(exp(x_t)) + exp(b))", {"b": 0.5}),
    "tempered": ("exp(x_j / temp) / sum_t(exp(x_t / temp))", {"temp": 3.0}),
}


def _entry(name):
    text, params = NEW[name]
    return from_formula(name, name, text), params


@pytest.mark.parametrize("name", sorted(NEW))
def test_a_new_formula_gets_its_overflow_free_stable(name, monkeypatch):
    e, params = _entry(name)
    assert e.stable.reason == ""
    refs = {tuple(map(tuple, [x, mask or []])): _reference(e, x, mask, params) for x, mask in ROWS}

    def no_exact(*a, **k):
        raise AssertionError("the exact reference was run for a row with an allowed key")

    monkeypatch.setattr(formula_mod._Exact, "run", no_exact)
    for x, mask in ROWS:
        if mask is not None and not any(mask):
            continue
        got = e.stable(np.array(x), None if mask is None else np.array(mask), **params)
        _assert_close(got, refs[tuple(map(tuple, [x, mask or []]))], (name, x, mask))


@pytest.mark.parametrize("name", sorted(NEW))
def test_a_new_formula_matches_its_reference_on_adversarial_rows(name):
    e, params = _entry(name)
    [result] = check_many([stable_check(e, params, examples=40)])
    assert result.passed, result.witness


def test_a_second_score_row():
    e = from_formula("diff", "diff", "exp(x_j) / sum_t(exp(x_t)) - lam * exp(y_j) / sum_t(exp(y_t))", score2=True)
    assert e.stable.reason == ""
    x, y = [1000.0, -1000.0, 2.0], [0.0, 999.0, -5.0]
    for mask in (None, [True, False, True]):
        got = e.stable(np.array(x), None if mask is None else np.array(mask), np.array(y), lam=0.5)
        _assert_close(got, _reference(e, x, mask, {"lam": 0.5}, y), mask)


def test_with_no_overflow_free_form_the_formula_is_evaluated_as_written_and_says_why(monkeypatch):
    e = from_formula("own_max", "own_max", "exp(x_j - max_t(x_t)) / 2")
    why = derive_overflow_free(e, {}).reason
    assert why.startswith("no overflow-free form derived") and e.stable.reason == why
    monkeypatch.setattr(formula_mod._Exact, "run", lambda *a, **k: 1 / 0)  # vectorised, never per row
    for x in ([1000.0, -1000.0, 0.0], [2.0], [1e-300, 5.0]):
        with mpmath.workdps(60):
            ref = [float(mpmath.exp(mpmath.mpf(v) - max(x)) / 2) for v in x]
        _assert_close(e.stable(np.array(x)), ref, x)


def test_a_wrong_weight_is_caught_by_the_same_comparison():
    right, wrong = get("softmax1"), from_formula("almost", "almost", "exp(x_j) / (1.001 + sum_t(exp(x_t)))")
    x = [0.0, 1.0, -2.0]
    with pytest.raises(AssertionError):
        _assert_close(wrong.stable(np.array(x)), _reference(right, x, None, {}), "wrong")


def test_no_hand_written_implementation_is_left():
    import derive.normalizers.registry as registry

    assert not [k for k in vars(registry) if k.endswith("_stable")]
    assert all(type(e.stable).__name__ == "Stable" for e in REGISTRY.values())


def test_the_shift_of_a_conditional_sum_is_over_the_keys_it_takes():
    import sympy as sp

    def shift(text):
        [value] = derive_overflow_free(from_formula("q", "q", text), {}).shifts.values()
        return sp.sstr(value)

    assert shift("exp(x_j) / (1 + sum_t(exp(x_t)))") == "Max(0, max_t(x[i, t], 1..n))"
    assert shift("exp(x_j) / (1 + sum_t(exp(x_t), t > j))") == "Max(0, x[i, j], max_t(x[i, t], j + 1..n))"
    assert shift("exp(x_j) / (1 + sum_t(exp(x_t), t != j))") == "Max(0, x[i, j], max_t(x[i, t], 1..n, t != j))"
    # the row's largest score is in no term of key 1's denominator: a shift by it would give 0/0
    e = from_formula("prefix", "prefix", "exp(x_j) / (exp(a) + sum_t(exp(x_t), t <= j))")
    x = [-1377.5615215510272, 1452.2045194945497]
    _assert_close(e.stable(np.array(x), a=-2.0), _reference(e, x, None, {"a": -2.0}), x)


@pytest.mark.parametrize("text", ["sigmoid(x_j) * prod_t(1 - sigmoid(x_t), t > j)",
                                  "sigmoid(x_j) * prod_t(1 - sigmoid(x_t), t >= j - 1)",
                                  "exp(x_j) / (exp(a) + sum_t(exp(x_t), t <= j))",
                                  "exp(x_j) / (exp(a) + sum_t(exp(x_t), t < j + 2))",
                                  "exp(x_j) / (exp(a) + sum_t(exp(x_t), t > 1))"])
def test_running_reductions_over_a_range_of_j(text):
    e = from_formula("ranged", "ranged", text)
    params = {"a": -2.0} if "a" in e.params else {}
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(size=(3, 6)) * 3, [[1000.0, -1000.0, 5.0, 0.0, 999.0, 1e-300]]])
    mask = rng.random((4, 6)) < 0.7
    got = e.stable(x, mask, **params)
    for r in range(4):
        _assert_close(got[r], _reference(e, list(x[r]), list(mask[r]), params), (text, r))
