"""``derive impl`` on the zoo: every correct implementation passes, every faulty one is
caught and diagnosed as the right faulty form; PyTorch's own softmax and add_zero_attn."""

from __future__ import annotations

import os

import pytest

from derive.impl import check_implementation

ZOO = "tests/zoo/"


def need_torch():
    """torch, or skip; with CI=true a missing torch fails instead of skipping."""
    if os.environ.get("CI") == "true":
        import torch

        return torch
    return pytest.importorskip("torch", reason="the torch half of the zoo needs torch")


FAST = {"dtypes": ("float64", "float32"), "examples": 30}

CORRECT_NUMPY = [
    ("softmax1_numpy.py:softmax1", "softmax1", {}),
    ("softmax1_masked_numpy.py:softmax1", "softmax1", {}),
    ("softmax_numpy.py:softmax", "softmax", {}),
    ("sink_numpy.py:sink", "sink", {}),  # takes s: s is varied by Hypothesis
    ("sink_numpy.py:sink", "sink", {"s": -1.25}),
]


@pytest.mark.parametrize("spec,norm,params", CORRECT_NUMPY)
def test_correct_numpy_implementations_agree(spec, norm, params):
    report = check_implementation(ZOO + spec, norm, params=params, **FAST)
    assert report.agrees, report.to_markdown()
    assert report.exit_code() == 0
    assert report.diagnosis is None
    assert all(r.examples >= 30 and r.edge_cases >= 25 for r in report.results)


FAULTY_NUMPY = [
    ("softmax1_unshifted.py:softmax1", "softmax1", "unshifted-extra-term", "use exp(−m) in place of 1"),
    ("softmax1_is_softmax.py:softmax1", "softmax1", "extra-terms-dropped", "Add the 1 back: exp(x_j) / (1 + sum_t(exp(x_t)))"),
    ("softmax1_naive.py:softmax1", "softmax1", "no-max-subtraction", "Subtract m = max(0, max x)"),
    ("softmax1_nan_masked.py:softmax1", "softmax1", "all-masked-nan", "Take m = max(0, max x)"),
    ("softmax_faulty.py:with_one", "softmax", "extra-one-added", "Drop the extra 1"),
    ("softmax_faulty.py:naive", "softmax", "no-max-subtraction", "Subtract m = max x"),
    ("sink_numpy.py:sink_scaled", "sink", "extra-logit-scaled", "s/√d with d = 64"),
    ("sink_numpy.py:sink_exp2", "sink", "exp2-units", "factor ln 2 on the sink logit only"),
]


@pytest.mark.parametrize("spec,norm,form,words", FAULTY_NUMPY)
def test_faulty_numpy_implementations_are_caught_and_diagnosed(spec, norm, form, words):
    report = check_implementation(ZOO + spec, norm, **FAST)
    assert not report.agrees
    assert report.exit_code() == 1
    assert [m.name for m in report.diagnosis.matched] == [form]
    assert words in report.to_markdown()


def test_unshifted_plus_one_counterexample_is_minimal_and_exact():
    report = check_implementation(ZOO + "softmax1_unshifted.py:softmax1", "softmax1", dtypes=("float32",))
    f = report.failure
    assert (f.dtype, f.what, f.row, f.shape) == ("float32", "value", [1.0], (1,))
    assert f.cls == "finite" and all(c.cls == name for name, c in report.results[0].classes.items())
    assert f.output == [0.5]
    assert f.exact == [0.7310585786300049]  # e/(1+e)
    assert f.errors == [pytest.approx(0.2310585786300049)]
    md = report.to_markdown()
    assert "| 0 | 1 | 0.5 | 0.7310585786300049 | **2.311e-01** | 1.673e-05 |" in md
    assert "it computes softmax₁(x − max x), not softmax₁(x)" in md.replace("So it", "it")


def test_sink_parameter_fixed_on_the_command_line_is_used():
    report = check_implementation(ZOO + "sink_numpy.py:sink_scaled", "sink", params={"s": 2.0},
                                  dtypes=("float64",), examples=20)
    assert report.failure.params == {"s": 2.0}
    assert report.diagnosis.matched[0].title.endswith("(s/√d with d = 64)")


def test_unknown_fault_is_described_by_its_pattern():
    damped = check_implementation("tests.zoo.odd:damped", "softmax1", **FAST)
    assert damped.diagnosis.matched == []
    assert damped.diagnosis.pattern == [
        ("In every failing row the output is the exact row times a factor (the ratios between "
        "weights are right): the normalization (denominator) is wrong."),
        "The factor is the same on every failing row: 0.9.",
    ]
    masked = check_implementation("tests.zoo.odd:uniform_when_masked", "softmax1", **FAST)
    assert masked.failure.row == [float("-inf")]
    assert masked.diagnosis.pattern == ["It disagrees only on rows where every score is masked (−∞)."]


def test_axis_keyword_and_dim():
    report = check_implementation(ZOO + "softmax1_numpy.py:softmax1", "softmax1", dim=0, **FAST)
    assert report.agrees
    assert report.failure is None and report.dim == 0


# ---- torch ----------------------------------------------------------------------------------

CORRECT_TORCH = [
    ("softmax1_torch.py:softmax1", "softmax1"),
    ("softmax1_torch.py:softmax1_masked", "softmax1"),
    ("softmax1_torch.py:softmax1_zero_logit", "softmax1"),
    ("add_zero_attn.py:weights", "softmax1"),  # nn.MultiheadAttention(add_zero_attn=True)
]


@pytest.mark.parametrize("spec,norm", CORRECT_TORCH)
def test_correct_torch_implementations_agree_with_gradients(spec, norm):
    need_torch()
    report = check_implementation(ZOO + spec, norm, **FAST)
    assert report.agrees, report.to_markdown()
    assert report.api == "torch"
    assert all(r.gradients for r in report.results)


def test_torch_softmax_itself_agrees():
    need_torch()
    report = check_implementation("torch:softmax", "softmax", dtypes=("float32", "float16", "bfloat16"),
                                  examples=20)
    # float16 and bfloat16 meet rows whose bound cannot fail (ulps·eps·(1 + κ) ≥ 1), not judged, and float32
    # rows whose Jacobian no ball encloses: counted in a note; every dtype has judged rows, so it agrees
    assert report.failure is None and report.api == "torch", report.to_markdown()
    assert [r.verdict for r in report.results] == ["agrees"] * 3
    assert [r.vacuous_rows > 0 for r in report.results] == [False, True, True]
    assert report.verdict == "agrees" and report.exit_code() == 0
    assert "Rows not judged, neither agreeing nor disagreeing (" in report.summary()
    assert report.results[2].vacuous_reason.startswith("at bfloat16 the rounding bound for this row, κ = ")


def test_torch_functional_softmax_on_dim_1():
    need_torch()
    report = check_implementation("torch.nn.functional:softmax", "softmax", dim=1, **FAST)
    assert report.agrees, report.to_markdown()


def test_torch_exp2_mixup_is_caught_on_values():
    need_torch()
    report = check_implementation(ZOO + "softmax1_torch.py:softmax1_exp2", "softmax1", **FAST)
    assert report.failure.what == "value" and report.failure.row == [1.0]
    assert report.failure.output == [pytest.approx(2 / 3)]
    assert [m.name for m in report.diagnosis.matched] == ["exp2-units"]
    assert "a factor ln 2 on the scores only" in report.to_markdown()


def test_torch_detached_denominator_is_a_gradient_disagreement():
    need_torch()
    report = check_implementation(ZOO + "softmax1_torch.py:softmax1_detached", "softmax1", **FAST)
    f = report.failure
    assert (f.what, f.row) == ("gradient", [0.0])
    assert f.output == [0.0]  # autograd misses the denominator's term
    assert f.exact == [0.25]  # cᵀJ = c₀·p(1 − p) = 1·½·½
    assert report.diagnosis.matched == []
    assert report.diagnosis.pattern == [
        "Its forward values agree with the definition on all 19 probe rows; the gradient (autograd) differs "
        "from the derived Jacobian: look for a detached term, an in-place update or a custom backward."]


@pytest.mark.slow
@pytest.mark.parametrize("spec,norm", CORRECT_TORCH)
def test_correct_torch_implementations_agree_in_half_precision(spec, norm):
    need_torch()
    report = check_implementation(ZOO + spec, norm, dtypes=("float16", "bfloat16"))
    # nothing disagrees; the rows of κ past each dtype's reach are not judged, counted in a note: agrees
    assert report.failure is None and report.verdict == "agrees", report.to_markdown()
    assert "Rows not judged, neither agreeing nor disagreeing (78 in float16, " in report.summary()
    assert [(r.dtype, r.rows, r.vacuous_rows) for r in report.results] == [("float16", 123, 78), ("bfloat16", 90, 111)]


def test_torch_output_outside_autograd_is_said_not_compared():
    need_torch()
    report = check_implementation(ZOO + "softmax1_torch.py:softmax1_no_grad", "softmax1", **FAST)
    assert report.agrees
    assert [r.gradient_note() for r in report.results] == ["not compared: the output is not differentiable"] * 2
    assert "| not compared: the output is not differentiable |" in report.to_markdown()


@pytest.mark.parametrize("fn,line", [
    ("squared_denominator", ("The factor depends only on the row sum Σ exp(x) (rows with the same sum get "
                            "the same factor).")),
    ("max_damped", "The factor depends only on max x (rows with the same maximum get the same factor)."),
])
def test_unknown_factor_is_attributed_to_max_or_row_sum(fn, line):
    report = check_implementation(f"tests.zoo.odd:{fn}", "softmax1", dtypes=("float32",), examples=20)
    assert report.diagnosis.matched == []
    assert report.diagnosis.pattern[1:] == [line]


# ---- long rows, tiles, large scores ------------------------------------------------------

TILED = [
    ("softmax1_tiled_16", True, None),
    ("softmax1_tiled_128", True, None),
    ("softmax1_softplus", True, None),
    ("softmax1_tiled_16_no_rescale", False, 17),  # the shortest row spanning two tiles of 16
    # the same fault at tiles of 32: by default at tiles of 16 and 128 (the shortest row spanning two tiles)
    pytest.param("softmax1_tiled_32_no_rescale", False, 33, marks=pytest.mark.slow),
    ("softmax1_tiled_128_no_rescale", False, 129),
    # softplus(z) = z above 20: off by e^-z. By default in test_the_softplus_threshold_bug_is_caught_on_a_score_
    # between_20_and_40 (the same kernel: its float64 failure is a disagreement in every dtype list)
    pytest.param("softmax1_softplus_threshold", False, None, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("fn,right,n", TILED)
def test_tiled_and_softplus_implementations_are_judged_right(fn, right, n):
    report = check_implementation(ZOO + "tiled.py:" + fn, "softmax1")
    assert report.agrees == right, report.to_markdown()
    if not right and n is not None:
        assert len(report.failure.row) == n
        assert report.failure.dtype == "float64"


def test_the_softplus_threshold_bug_is_caught_on_a_score_between_20_and_40():
    report = check_implementation(ZOO + "tiled.py:softmax1_softplus_threshold", "softmax1", dtypes=("float64",))
    assert 20 <= max(report.failure.row) < 40  # where log(1 + e^z) − z = e^-z is above float64's tolerance
