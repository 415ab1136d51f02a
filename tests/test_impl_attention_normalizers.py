"""``derive impl --form attention`` for the normalizers outside the softmax family: softcap, sigmoid,
SSMax, softpick, ReLU/n, stick-breaking and a user-defined one (``--as FILE.toml``). Each kernel's
output is judged against the exact weights of the normalizer's definition, its parameters passed as
keywords (the entry's edge values in turn, or --param's); each faulty twin fails where its bug lives,
and a normalizer the attention form cannot pass is refused with the reason."""

from __future__ import annotations

import pytest

from derive.cli import main
from derive.errors import InputError
from derive.impl import check_implementation

Z = "tests/zoo/attention_normalizers.py:"
TEMPERATURE = "tests/normalizer_specs/temperature.toml"


def attention(fn, norm, dtypes=("float32",), examples=0, params=None, kw=None, **settings):
    base = {"layout": "bhnd", "out_layout": None, "scale": None, "causal": False, "start_q": None, "window": 0,
            "mask_value": "-inf", "backward": False, "kw_names": dict(kw or {})}
    base.update(settings)
    return check_implementation(Z + fn, norm, form="attention", dtypes=dtypes, examples=examples, params=params,
                                attention=base)


def classes(report) -> dict:
    return {cls: f for r in report.results for cls, f in r.failures.items()}


CORRECT = [("sigmoid", "sigmoid", None), ("stick_breaking", "stick_breaking", None)]
CORRECT_SLOW = [("softcap", "softcap", {"c": "softcap"}), ("ssmax", "ssmax", None), ("softpick", "softpick", None), ("relu_n", "relu_n", None),
                ("temperature", TEMPERATURE, None), ("clipped", "clipped", None), ("sigmoid_logn", "sigmoid_logn", None)]


@pytest.mark.parametrize("fn, norm, kw", CORRECT + [pytest.param(*c, marks=pytest.mark.slow) for c in CORRECT_SLOW])
def test_a_correct_kernel_of_each_normalizer_agrees_in_every_class_it_reaches(fn, norm, kw):
    report = attention(fn, norm, kw=kw)
    assert report.agrees, report.to_markdown()
    reached = set(report.results[0].per_class)
    assert {"finite", "scores", "masked", "padding", "fully-masked", "very-long", "causal", "window"} <= reached


@pytest.mark.slow
@pytest.mark.parametrize("fn, norm, kw", CORRECT + CORRECT_SLOW)
def test_a_correct_kernel_agrees_in_both_dtypes_with_the_search(fn, norm, kw):
    report = attention(fn, norm, dtypes=("float64", "float32"), examples=20, kw=kw)
    assert report.agrees, report.to_markdown()
    assert all(r.searched >= 20 for r in report.results)


def test_the_parameters_take_the_entrys_edge_values_in_turn_and_the_report_says_so():
    report = attention("softcap", "softcap", kw={"c": "softcap"})
    md = report.to_markdown()
    assert "Called as `fn(q, k, v, softcap=… (c), mask=… (mask), scale=… (scale))`" in md
    assert "Stated about the kernel: masked keys carry -inf in the additive mask; c = 50, 1, 5 (passed as softcap=…), " \
           "in turn over the calls." in md
    fixed = attention("softcap", "softcap", kw={"c": "softcap"}, params={"c": 30.0})
    assert fixed.agrees and "c = 30 (passed as softcap=…)." in fixed.to_markdown()


@pytest.mark.parametrize("fn, norm, kw, first, failing", [
    # the cap on q·k before the scale: wrong on the first call (scores 9 and 1.5 against a cap of 50 · 1/4 ...)
    ("softcap_before_scale", "softcap", {"c": "softcap"}, "finite", None),
    ("sigmoid_bias_dropped", "sigmoid", None, "finite", None),
    # log N of every key: right wherever no key of the row is masked
    pytest.param("ssmax_all_keys", "ssmax", None, "scores", {"scores", "causal", "padding", "window", "layout"},
                 marks=pytest.mark.slow),
    # e^x − 1 unshifted: inf/inf from scores of about 710 (the realised rows reach 1e4)
    ("softpick_unshifted", "softpick", None, "scores", None),
    # the stretch without the clip: a masked key gets γ < 0, a large weight more than 1
    pytest.param("clipped_unclipped", "clipped", None, "finite", None, marks=pytest.mark.slow),
    # log N of every key: right on rows with no masked key (the layouts' call masks some keys)
    pytest.param("sigmoid_logn_all_keys", "sigmoid_logn", None, "scores", {"scores", "causal", "window", "layout",
                                                                             "padding"}, marks=pytest.mark.slow),
])
def test_each_faulty_kernel_fails_where_its_bug_lives(fn, norm, kw, first, failing):
    report = attention(fn, norm, dtypes=("float64",), kw=kw)
    assert report.verdict == "disagrees" and report.exit_code() == 1
    found = classes(report)
    assert next(iter(found)) == first
    if failing is not None:
        assert set(found) == failing, sorted(found)
        assert "finite" not in found and "fully-masked" not in found


def test_a_dropped_sigmoid_bias_is_shown_with_the_bias_of_its_call():
    report = attention("sigmoid_bias_dropped", "sigmoid", dtypes=("float64",))
    f = classes(report)["finite"]
    assert f.case.describe() == "B = 1, H = 1, 2 queries, 2 keys, d = 16, b = 1.5"
    assert (f.where, f.output, f.exact) == ((0, 0, 0, 0), [-2.408540448944849], [-2.4762319920289872])
    assert f.row == [9.0, 1.5]


@pytest.mark.parametrize("fn, norm, settings, message", [
    ("sigmoid", "sigmoid", {"kw_names": {"b": "bias"}}, "--kw b=bias: tests/zoo/attention_normalizers.py:sigmoid takes no "
                                             "keyword 'bias'"),
    ("relu_n", "softcap", {}, "--as softcap has the parameter c; tests/zoo/attention_normalizers.py:relu_n takes no keyword c: "
                    "name its keyword with --kw c=NAME, or give the value the kernel uses with --param c=VALUE"),
    ("sigmoid", "sigmoid", {"backward": True}, "--backward in the attention form compares the gradients of the softmax family; "
                                    "sigmoid is checked forward only"),
    ("sigmoid", "bias_kv", {}, "--form attention supports the normalizers softmax, softmax1, sink, zero_token, sigmoid, clipped, "
                    "softcap, softpick, ssmax, sigmoid_logn, stick_breaking, relu_n; not bias_kv"),
    ("sigmoid", "tests/normalizer_specs/differential.toml", {}, "not differential"),
])
def test_what_the_attention_form_cannot_pass_is_a_usage_error(fn, norm, settings, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        attention(fn, norm, **settings)


def test_param_is_refused_for_the_softmax_family_whose_sinks_are_drawn(capsys):
    code = main(["impl", "tests/zoo/attention_numpy.py:eager", "--as", "sink", "--form", "attention", "--param", "s=1"])
    assert code == 2
    assert "--param applies to --form attention only for a normalizer outside the softmax family; sink's sinks are " \
           "drawn per head" in capsys.readouterr().err


@pytest.mark.slow
def test_a_parameter_built_into_the_kernel_is_given_with_param(tmp_path):
    code = tmp_path / "capped.py"
    code.write_text("import sys\nsys.path.insert(0, '.')\nfrom tests.zoo.attention_normalizers import softcap\n\n"
                    "def gemma(q, k, v, *, scale):\n    return softcap(q, k, v, scale=scale, softcap=50.0)\n")
    report = check_implementation(f"{code}:gemma", "softcap", form="attention", dtypes=("float32",), examples=0,
                                  params={"c": 50.0}, attention={"layout": "bhnd", "out_layout": None, "scale": None,
                                                                 "causal": False, "start_q": None, "window": 0,
                                                                 "mask_value": "-inf", "backward": False,
                                                                 "kw_names": {}})
    assert report.agrees and "c = 50 (built into the kernel: not passed)." in report.to_markdown()
    wrong = check_implementation(f"{code}:gemma", "softcap", form="attention", dtypes=("float32",), examples=0,
                                 params={"c": 30.0}, attention={"layout": "bhnd", "out_layout": None, "scale": None,
                                                                "causal": False, "start_q": None, "window": 0,
                                                                "mask_value": "-inf", "backward": False,
                                                                "kw_names": {}})
    assert wrong.verdict == "disagrees"


def test_a_weight_of_the_query_position_is_judged_at_each_querys_position():
    assert attention("by_position", "tests/normalizer_specs/position.toml").agrees
    wrong = attention("by_key_count", "tests/normalizer_specs/position.toml", dtypes=("float64",))
    f = classes(wrong)["finite"]
    assert (f.where[:3], f.case.M, f.case.N) == ((0, 0, 0), 2, 2)  # query 0 (i = 1) divided by N = 2


def test_rows_whose_condition_overflows_are_not_judged_rather_than_failed():
    # --mask-value finfo-min in float64: a fully masked row has κ = ∞ and every weight 0 (its bound was NaN)
    report = attention("sigmoid", "sigmoid", dtypes=("float64",), mask_value="finfo-min")
    assert report.agrees, report.to_markdown()
    assert report.results[0].vacuous_rows > 0


@pytest.mark.parametrize("params, message", [
    ({"b": float("nan")}, "--param b=nan: a parameter's value is a finite number"),
    ({"b": float("inf")}, "--param b=inf: a parameter's value is a finite number"),
])
def test_a_parameter_value_is_finite(params, message):
    with pytest.raises(InputError, match=message):
        attention("sigmoid", "sigmoid", params=params)


def test_a_parameter_that_would_take_a_roles_keyword_is_refused(tmp_path):
    spec = tmp_path / "scaled.toml"
    spec.write_text('name = "a parameter named scale"\nscore = "dot(q, k) / sqrt(d)"\n[normalizer]\nname = "scaled"\n'
                    'weight = "sigmoid(x_j * scale)"\n[symbols]\nscale = "scalar positive"\n[claims]\n'
                    'sum1 = "weights_sum_to_one"\n')
    with pytest.raises(InputError, match="its parameter scale would be passed as scale=…, the keyword of the role "
                                         "scale; name the parameter's keyword with --kw scale=NAME"):
        attention("relu_n", str(spec))


def test_alibi_with_one_slope_is_a_user_defined_normalizer_of_the_positions():
    assert attention("alibi", "tests/normalizer_specs/alibi.toml", dtypes=("float64",)).agrees
    flipped = attention("alibi_flipped", "tests/normalizer_specs/alibi.toml", dtypes=("float64",))
    f = classes(flipped)["finite"]
    assert f.case.describe() == "B = 1, H = 1, 2 queries, 2 keys, d = 16, m = 1.5"  # one key: i − j = 0 = j − i
