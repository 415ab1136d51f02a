"""The exact reference of a weight formula (arb balls at an adaptive precision) keeps the digits
that a difference cancels, decides signs that need hundreds of bits, recognises an exact 0, and
says "undecided" where no precision up to the cap encloses a weight, instead of a value."""

from __future__ import annotations

import mpmath
import pytest

from derive.impl import check_implementation
from derive.impl.exact.reference import exact_row
from derive.normalizers.exact import CAP, Undecided
from derive.normalizers.formula import compile_weight
from derive.normalizers.registry import REGISTRY, from_formula
from derive.language.parser import ExprError

Z = "tests/zoo/forms.py:"
UNDECIDED = ("no ball up to 16384 bits of precision encloses the exact value tightly (a difference that cancels "
             "to every digit, or a kink's sign that no precision decides)")

TANH = "tanh(x_j) - (exp(2*x_j) - 1)/(exp(2*x_j) + 1)"  # 0 for every x; SymPy's simplify does not prove it
NULL_REASON = UNDECIDED + "; SymPy does not prove (tanh(x_j)-((exp((2*x_j))-1)/(exp((2*x_j))+1))) identically 0"


def _ref(text, x, dps=30, **params):
    scalars = {p: {} for p in params}
    with mpmath.workdps(dps):
        return compile_weight(text, scalars).reference(x, **params)


@pytest.mark.parametrize("x", [1e-300, 3e-153, -3e-153, 1e-30, 5e-324])
def test_exp_minus_one_keeps_its_digits(x):
    (v,) = _ref("exp(x_j) - 1", [x])
    with mpmath.workdps(60):
        want = mpmath.expm1(mpmath.mpf(x))
    assert v != 0 and abs(v - want) <= 1e-15 * abs(want)


def test_an_exact_zero_is_zero():
    assert _ref("exp(x_j) - 1", [0.0]) == [0]
    assert _ref("relu(exp(x_j) - 1) / (sum_t(abs(exp(x_t) - 1)) + eps)", [0.0, 0.0], eps=1e-3) == [0, 0]
    with pytest.raises(ExprError, match="no real value"):  # S − S: an exact 0 denominator
        compile_weight("exp(x_j) / (sum_t(exp(x_t)) - sum_t(exp(x_t)))")


def test_identities_that_need_hundreds_of_digits():
    # (x + c) − c with c = 1e300: the sum needs 1000 bits to hold x = 1
    assert _ref("(x_j + c) - c", [1.0], c=1e300) == [1]
    assert _ref("(x_j + c) - c", [1.0, -2.5], c=-1e300) == [1, -2.5]
    # e^x − e^(x + d) = −e^x·expm1(d), d = 1e−200
    x, d = 0.75, 1e-200
    (v,) = _ref("exp(x_j) - exp(x_j + d)", [x], d=d)
    with mpmath.workdps(400):
        want = -mpmath.exp(x) * mpmath.expm1(mpmath.mpf(d))
    assert abs(v - want) <= 1e-25 * abs(want)


TAYLOR5 = "relu(exp(x_j) - 1 - x_j - x_j**2/2 - x_j**3/6 - x_j**4/24)"  # ≈ x⁵/120: its sign is x's


def test_a_relu_whose_sign_needs_400_bits():
    pos, neg = _ref(TAYLOR5, [1e-25, -1e-25])
    assert neg == 0
    with mpmath.workdps(60):
        want = mpmath.mpf(1e-25) ** 5 / 120
    assert abs(pos - want) <= 1e-20 * want  # 1e−127: 420 bits below the terms of the difference


def test_a_zero_that_only_exact_arithmetic_sees_is_undecided_unless_sympy_proves_it():
    # tanh x − (e^{2x} − 1)/(e^{2x} + 1) is 0 for every x, but no ball of it is exact and SymPy's
    # simplify does not prove it: no precision decides it
    with pytest.raises(Undecided) as err:
        _ref(TANH, [0.5])
    assert str(err.value) == NULL_REASON
    assert CAP == 2**14
    # log(e^x) − x: no ball of log(e^x) is exact, but SymPy proves the difference 0 for every real x
    assert _ref("log(exp(x_j)) - x_j", [0.5]) == [0]
    assert _ref("log(exp(x_j)) - x_j", [0.0]) == [0]
    soft = _ref("exp(x_j) / sum_t(exp(x_t))", [0.5, -1.0])
    assert _ref("exp(x_j) / sum_t(exp(x_t)) + (log(exp(x_j)) - x_j)", [0.5, -1.0]) == soft
    # sqrt of an exact square is exact; sqrt(2)² − 2 is not, and SymPy proves √y² = y
    assert _ref("sqrt(x_j**2) - abs(x_j)", [-3.0]) == [0]
    assert _ref("sqrt(x_j + 2)**2 - (x_j + 2)", [0.0]) == [0]


def test_a_division_and_a_log_decided_on_the_ball():
    # the divisor e^x − 1 at x = 1e−300 is not 0: the weight is 1/x, not undefined
    (v,) = _ref("1 / (exp(x_j) - 1)", [1e-300])
    assert abs(v - 1e300) <= 1e285
    (w,) = _ref("log(exp(x_j) - 1)", [1e-300])
    with mpmath.workdps(40):
        assert abs(w - mpmath.log(mpmath.mpf(1e-300))) < 1e-25
    assert mpmath.isnan(_ref("log(exp(x_j) - 1)", [-1e-300])[0])  # certainly negative: no value
    assert mpmath.isnan(_ref("1 / (exp(x_j) - 1)", [0.0])[0])  # an exact 0 divisor: no value
    assert mpmath.isnan(_ref("sqrt(exp(x_j) - 1)", [-1e-300])[0])
    assert _ref("sqrt(exp(x_j) - 1)", [0.0]) == [0]


def test_the_precision_schedule_depends_on_the_caller_precision_alone():
    from derive.normalizers.exact import _schedule

    with mpmath.workdps(30):
        assert list(_schedule()) == [206, 412, 824, 1648, 3296, 6592, 13184, 16384]
    with mpmath.workdps(15):
        assert list(_schedule())[:2] == [128, 256]


@pytest.fixture
def null(monkeypatch):
    """A normalizer whose weights are tanh x − (e^{2x} − 1)/(e^{2x} + 1) (0, which no ball encloses
    exactly and SymPy does not prove)."""
    e = from_formula("null", "zero, in a form no ball makes exact", TANH)
    monkeypatch.setitem(REGISTRY, e.name, e)
    return e


def test_an_undecided_row_is_neither_agreeing_nor_disagreeing(null, tmp_path):
    ex = exact_row(null, [0.5, -1.0], {}, 30)
    assert ex.undecided == NULL_REASON and not ex.defined
    code = tmp_path / "zeros.py"
    code.write_text("import numpy as np\n\ndef zeros(x):\n    return np.zeros_like(x)\n")
    report = check_implementation(f"{code}:zeros", "null", dtypes=("float64",), examples=5)
    r = report.results[0]
    assert r.undecided_rows > 0 and r.failure is None and r.undecided_reason == NULL_REASON
    assert f"Rows not judged, neither agreeing nor disagreeing ({r.undecided_rows} in float64): could not " \
           f"evaluate the exact weights: {NULL_REASON}." in report.summary()
    assert report.as_json()["dtypes"][0]["undecided_rows"] == r.undecided_rows


FAST = {"dtypes": ("float64",), "examples": 15}


def test_a_correct_softpick_agrees_and_one_that_cancels_is_refuted():
    good = check_implementation(Z + "softpick", "softpick", params={"eps": 1e-3}, **FAST)
    assert good.agrees, good.to_markdown()
    assert "not judged" not in good.summary()
    bad = check_implementation(Z + "softpick_cancels", "softpick", params={"eps": 1e-3}, **FAST)
    assert not bad.agrees
    f = bad.failure
    # the exact weights of the failing row, certified: e^x − 1 ≠ 0 where the implementation gave 0
    k = next(k for k, (y, p) in enumerate(zip(f.output, f.exact)) if abs(y - p) > f.bounds[k])
    assert f.output[k] == 0 and f.exact[k] > 0 and 0 < abs(f.row[k]) < 1
    with mpmath.workdps(80):
        d = [mpmath.expm1(mpmath.mpf(v)) for v in f.row]
        want = max(d[k], 0) / (sum(abs(v) for v in d) + mpmath.mpf(1e-3))
    assert abs(f.exact[k] - float(want)) <= 1e-15 * float(want)


@pytest.mark.parametrize("sigma", [None, 0.0, 0.75])
def test_the_three_references_give_one_softmax_row(sigma):
    """The row form's reference (the formula), the attention reference and the kernel reference take
    their weights and lse from one softmax-family row (derive/normalizers/exact_softmax.py): the same floats."""
    import numpy as np

    from derive.impl.exact.reference import exact_attention, kernel_row
    from derive.normalizers.registry import get

    row = [1e-300, -3.5, 40.0, 0.125, -690.5]
    n = len(row)
    if sigma is None:
        norm, params = get("softmax"), {}
    else:
        norm, params = get("sink"), {"s": sigma}
    with mpmath.workdps(30):
        want = [float(v) for v in norm.reference(row, **params)]
    att = exact_attention(np.ones((1, 1, 1, 1)), np.array(row, dtype=float).reshape(1, 1, n, 1),
                          np.eye(n).reshape(1, 1, n, n), 1.0, np.ones((1, 1, n), dtype=bool), None,
                          None if sigma is None else (sigma,), 30)
    ker = kernel_row(row, np.eye(n), sigma, None, 30)
    assert att.out[0, 0, 0].tolist() == want and ker.out == want  # v = I: out is the row of weights
    with mpmath.workdps(40):
        lse = mpmath.log((0 if sigma is None else mpmath.exp(sigma)) + mpmath.fsum(mpmath.exp(x) for x in row))
    assert att.lse[0, 0, 0] == ker.lse["natural"] == float(lse)
    assert want[0] > 0 and want[-1] > 0  # e^(−690.5 − 40), a subnormal: rounded alike


def test_the_kernel_and_attention_references_raise_their_precision_for_huge_scores():
    """e^(1e300) needs a thousand bits to be a ball at all: at a fixed 4·dps bits the kernel
    reference called such a row undefined (NaN out, lse −∞); raised until tight, it is not."""
    import numpy as np

    from derive.impl.exact.reference import exact_attention, kernel_row

    ker = kernel_row([1e300, 0.0], np.eye(2), None, None, 30)
    assert ker.out == [1.0, 0.0] and ker.lse["natural"] == 1e300 and ker.defined
    sunk = kernel_row([1e300, 0.0], np.eye(2), 1e300, None, 30)
    assert sunk.out == [0.5, 0.0]  # the sink weighs as much as the first key
    att = exact_attention(np.ones((1, 1, 1, 1)), np.array([1e300, 0.0]).reshape(1, 1, 2, 1),
                          np.eye(2).reshape(1, 1, 2, 2), 1.0, np.ones((1, 1, 2), dtype=bool), None, None, 30)
    assert att.out[0, 0, 0].tolist() == [1.0, 0.0] and att.lse[0, 0, 0] == 1e300


def test_a_row_with_every_key_masked_and_no_extra_logit_has_no_value():
    import numpy as np

    from derive.impl.exact.reference import kernel_row

    ker = kernel_row([-np.inf, -np.inf], np.eye(2), None, None, 30)
    assert not ker.defined and ker.lse["natural"] == -np.inf
    assert kernel_row([-np.inf, -np.inf], np.eye(2), 0.0, None, 30).out == [0.0, 0.0]


def test_rows_not_judged_are_counted_and_undecided_only_when_none_is_judged(null, tmp_path):
    """A row whose exact value is out of reach is not evidence: it is counted in a note. With no
    failure the verdict agrees when rows were judged, and is 'undecided' (exit 1) when none was."""
    code = tmp_path / "zeros.py"
    code.write_text("import numpy as np\n\ndef zeros(x):\n    return np.zeros_like(x)\n")
    report = check_implementation(f"{code}:zeros", "null", dtypes=("float64",), examples=5)
    r = report.results[0]
    assert r.undecided_rows > 0 and r.failure is None and r.rows > 0
    assert r.verdict == "agrees" and report.verdict == "agrees" and report.exit_code() == 0
    assert f"Rows not judged, neither agreeing nor disagreeing ({r.undecided_rows} in float64)" in report.summary()
    assert report.as_json()["dtypes"][0]["verdict"] == "agrees"
    from derive.impl.judge.classes import verdict

    # no row judged in a class that had rows: undecided; a failure: disagrees whatever else
    assert verdict(False, {"rows": 0}, {"rows": 3}) == "undecided"
    assert verdict(False, {"rows": 1}, {"rows": 3}) == "agrees"
    assert verdict(True, {}, {}) == "disagrees"
