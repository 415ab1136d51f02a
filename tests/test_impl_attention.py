"""``derive impl --form attention``: kernels with their real signatures, checked class by class.

Every correct kernel of the attention zoo agrees; every faulty twin fails in exactly the class
its bug lives in, with that class's smallest counterexample, and passes the others. The exact
reference is checked against a closed form, the layouts against numpy's own transposes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from derive.cli import main
from derive.errors import InputError
from derive.impl import check_implementation
from derive.impl.cases.attention import CLASSES, Case, arrays
from derive.impl.cases.masks import positions_keep
from derive.impl.exact.reference import exact_attention, exact_dots
from derive.impl.numbers import round_to
from derive.kernels.layouts import parse_layout
from tests.conftest import require_module

NP = "tests/zoo/attention_numpy.py:"
TORCH = "tests/zoo/attention_torch.py:"


def failing(report) -> dict:
    return {cls: f for r in report.results for cls, f in r.failures.items()}


def attention(target, norm="sink", dtypes=("float32",), assume=(), examples=0, lse="natural", **kw):
    """The fixed list alone unless ``examples`` asks for the search (the tests of the search do)."""
    settings = {"layout": "bhnd", "out_layout": None, "scale": None, "causal": False, "start_q": None,
                "window": 0, "mask_value": "-inf", "backward": False, "kw_names": {}}
    settings.update(kw)
    return check_implementation(target, norm, form="attention", dtypes=dtypes, assume=assume, attention=settings,
                                examples=examples, lse=lse)


def test_correct_numpy_kernel_agrees_in_every_class_it_can_reach():
    report = attention(NP + "eager", dtypes=("float64", "float32"))
    assert report.agrees and report.exit_code() == 0
    passed = {cls for r in report.results for cls in r.per_class}
    # causality and windows reach it through its mask (it has no flag for them)
    assert passed == {"finite", "scores", "causal", "masked", "padding", "fully-masked", "sinks", "long", "very-long",
                      "late", "lengths", "window", "layout", "headdim"}
    assert set(report.skipped) == {"tiles", "splits", "decode", "gqa"}
    assert "the kernel takes no start_q" in report.skipped["decode"]


@pytest.mark.parametrize("fn, classes", [
    ("eager_batch0", {"layout", "padding"}),  # padding is per batch: B = 2
    ("eager_v_at_k", {"headdim"}),
    ("eager_first_rows", {"late", "window"}),  # a window across tiles: 160 queries
    ("eager_no_max", {"scores", "very-long"}),  # a ramp to scores of about 1000
    ("eager_sink_shift", {"sinks", "scores", "very-long", "padding"}),  # padding: a call with a sink of −∞
])
def test_each_faulty_numpy_kernel_fails_in_its_class_only(fn, classes):
    report = attention(NP + fn)
    assert report.exit_code() == 1
    assert set(failing(report)) == classes
    passed = {cls for r in report.results for cls in r.per_class}
    assert "finite" in passed and {"finite", "layout", "late", "headdim"} - classes <= passed


def test_tiled_kernel_gets_its_tile_sizes_and_its_no_rescale_twin_fails_on_several_tiles_only():
    good = attention(NP + "tiled", assume=["block=pow2"])
    # blocks 1, 2, 4, 16, 32 on 64 keys; 16, 64, 128, 256 on 1025; 256 on 4096
    assert good.agrees and good.results[0].per_class["tiles"] == 10
    bad = attention(NP + "tiled_no_rescale", norm="softmax", dtypes=("float64",))
    fails = failing(bad)
    assert set(fails) == {"tiles", "scores", "very-long"}
    # the kernel forms' rows of 200 keys in its own tiles of 64; a ramp of 1025 keys
    assert fails["tiles"].case.block == 1 and fails["scores"].case.N == 200 and fails["very-long"].case.N == 1025
    only = attention(NP + "tiled", assume=["block=16,32"])
    assert only.results[0].per_class["tiles"] == 3  # 16 and 32 on 64 keys, 16 on 1025


def test_var_keyword_kernel_gets_scale_and_sinks_and_optional_roles_by_kw():
    report = attention(NP + "with_params")
    assert report.agrees and report.roles == {"scale": "scale", "sinks": "sinks"}
    assert "masked" in report.skipped
    masked = attention(NP + "with_params", kw_names={"mask": "mask"})
    assert masked.agrees and "masked" in masked.results[0].per_class


def test_batch0_counterexample_is_the_smallest_layout_case_and_names_batch_1():
    f = failing(attention(NP + "eager_batch0"))["layout"]
    assert f.case.describe() == "B = 2, H = 3, 5 queries, 5 keys, d = 16, sinks = [1.5, -2, 0.25]"
    assert f.where[0] == 1 and f.what == "out"
    md = attention(NP + "eager_batch0").to_markdown()
    assert "#### Fails: batch and head layouts (B > 1 or H > 1) (float32)" in md
    assert "| finite rows (one batch, one head, dense q and k, none of the features below) | passes (4) |" in md


def test_v_at_k_fails_only_when_the_value_dimension_differs():
    f = failing(attention(NP + "eager_v_at_k"))["headdim"]
    assert f.case.Dv != f.case.D and f.case.Dv == 8


def test_sink_contract_keeps_the_sinks_class_inside_the_range():
    report = attention(NP + "eager_sink_shift", assume=["finite-sinks=-20:20"])
    assert set(failing(report)) == {"scores", "very-long"}  # scores of 1e4, and a ramp to 1000, overflow its shift
    # the bounds -20 and 20, and -20 in place of -inf where a call pairs no sink with another feature (a call whose
    # every class already failed is not run)
    assert report.results[0].per_class["sinks"] == 4
    assert all(-20 <= s <= 20 for r in report.results for f in r.failures.values() for s in f.case.sinks)
    assert "Assumed (contract): sinks are finite and in [-20, 20]." in report.to_markdown()


@pytest.mark.slow
def test_torch_sdpa_shaped_kernel_needs_no_adapter_and_its_gradients_agree():
    require_module("torch", "torch kernels")
    report = attention(TORCH + "sdpa", layout="nhd", causal=True, backward=True, assume=["equal-lengths"])
    assert report.agrees, report.to_markdown()
    assert report.roles == {"scale": "sm_scale", "sinks": "S", "window": "sliding_window"}
    assert report.results[0].returned == "out, dq, dk, dv, dsinks"
    assert {"window", "causal", "layout", "long"} <= set(report.results[0].per_class)


@pytest.mark.slow
def test_torch_sink_without_gradient_fails_backward_with_a_note():
    require_module("torch", "torch kernels")
    report = attention(TORCH + "sdpa_sink_detached", layout="nhd", causal=True, backward=True,
                       assume=["equal-lengths"])
    fails = failing(report)
    assert "finite" in fails and fails["finite"].what == "dsinks"
    assert "no gradient reached the sinks" in fails["finite"].note
    assert [x.key for x in fails["finite"].faults] == ["extra_grad_missing"]
    # the forward alone is right
    assert attention(TORCH + "sdpa_sink_detached", layout="nhd", causal=True, assume=["equal-lengths"]).agrees


def test_a_negated_sink_gradient_is_named_with_its_fix():
    require_module("torch", "torch kernels")
    report = attention(TORCH + "sdpa_sink_grad_sign", layout="nhd", causal=True, backward=True,
                       assume=["equal-lengths"])
    fails = failing(report)
    assert fails and all(f.what == "dsinks" and [x.key for x in f.faults] == ["extra_grad_sign"]
                         for f in fails.values()), report.to_markdown()
    assert fails["finite"].output[0] == pytest.approx(-fails["finite"].exact[0])  # the counterexample shows the sign
    assert "gradient of the extra logit with the wrong sign" in report.to_markdown()


@pytest.mark.slow
def test_torch_window_off_by_one_fails_only_the_window():
    require_module("torch", "torch kernels")
    report = attention(TORCH + "sdpa_window_off_by_one", layout="nhd", causal=True, assume=["equal-lengths"])
    assert set(failing(report)) == {"window"}


@pytest.mark.slow
def test_hf_eager_shape_with_a_one_line_adapter_and_finfo_min_masks():
    require_module("torch", "torch kernels")
    report = attention(TORCH + "hf", norm="softmax", out_layout="bnhd", mask_value="finfo-min",
                       dtypes=("float32", "bfloat16"))
    # nothing fails; but a row where every key carries finfo.min (the definition: softmax(finfo.min + s), of
    # condition κ = 2·|finfo.min|) and, in bfloat16, every row of κ ≥ 15 has a bound no output could exceed:
    # those rows are not judged. Each dtype has judged rows in every class (bfloat16's sums counted in
    # float32, the call of 1025 keys with scores of about 1 among them): both agree, the rows not judged counted
    assert report.verdict == "agrees" and report.exit_code() == 0 and not any(r.failures for r in report.results)
    assert [r.verdict for r in report.results] == ["agrees", "agrees"]
    assert [(r.rows, r.vacuous_rows) for r in report.results] == [(827, 8), (135, 700)]
    assert "Rows not judged, neither agreeing nor disagreeing (8 rows in float32, 700 rows in bfloat16)" in \
        report.to_markdown()
    assert report.results[0].vacuous_reason == (
        "at float32 the rounding bound for this row, κ = 6.80565e+38, is at least the value compared "
        "(ulps·eps·(1 + κ) = 5.1923e+33 ≥ 1): the comparison cannot fail")
    assert {"masked", "fully-masked"} <= set(report.results[0].per_class)


def test_hf_eager_in_float64_is_caught_computing_its_softmax_in_float32():
    require_module("torch", "torch kernels")
    report = attention(TORCH + "hf", norm="softmax", out_layout="bnhd", dtypes=("float64",))
    assert "finite" in failing(report)


def test_exact_reference_against_a_closed_form():
    # one query, two keys: scores 1·(2·3) · 0.5 = 3 and 0, sink 1: weights e^3, 1 over e^3 + 1 + e
    q = np.array([[[[2.0, 0.0]]]])
    k = np.array([[[[3.0, 1.0], [0.0, 5.0]]]])
    v = np.array([[[[1.0], [-2.0]]]])
    ex = exact_attention(q, k, v, 0.5, positions_keep(1, 2, 0, False)[None], None, (1.0,), 30, g=np.array([[[[1.0]]]]))
    den = math.exp(3) + 1 + math.e
    assert ex.out[0, 0, 0, 0] == pytest.approx((math.exp(3) - 2) / den, rel=1e-15)
    assert ex.lse[0, 0, 0] == pytest.approx(math.log(den), rel=1e-15)
    assert ex.grads["dsinks"][0][0] == pytest.approx(-(math.e / den) * ex.out[0, 0, 0, 0], rel=1e-14)


def test_scores_are_realised_exactly_in_float16_and_wider():
    """(bfloat16 has 8 mantissa bits: there its k is rounded, and the reference uses the rounded k.)"""
    case = Case("scores", M=8, N=8, pattern="realised")
    for dtype in ("float16", "float32", "float64"):
        q, k, v, _ = arrays(case, 0.25, lambda a, d=dtype: round_to(a, d))
        dots, e = exact_dots(q[0, 0], k[0, 0])
        from derive.impl.cases.attention import REALISED
        want = np.array([REALISED[r][:8] for r in range(8)])
        got = np.array([[int(x) * 2.0 ** e * 0.25 for x in row] for row in dots])
        assert np.array_equal(got, want), dtype


@pytest.mark.parametrize("axes", ["bhnd", "bnhd", "nhd", "hnd", "nd"])
def test_layouts_round_trip(axes):
    L = parse_layout(axes)
    a = np.arange(2 * 3 * 4 * 5, dtype=float).reshape(2, 3, 4, 5)
    a = a[:, :1] if "h" not in axes else a
    a = a[:1] if "b" not in axes else a
    t = L.to_layout(a)
    assert t.shape == L.shape(a.shape[0], a.shape[1], 4, 5)
    assert np.array_equal(L.from_layout(t), a)
    if axes == "bnhd":
        assert np.array_equal(t, np.transpose(a, (0, 2, 1, 3)))


@pytest.mark.parametrize("args, message", [
    (["--layout", "bxnd"], "--layout 'bxnd': a layout names the axes"),
    (["--kw", "temperature=t"], "--kw temperature=t: temperature is neither a role (scale, causal, mask, sinks, "
                                "start_q, window, block, splits, gqa) nor a parameter of the normalizer"),
    (["--kw", "scale=2x"], "--kw 'scale=2x': expected ROLE=NAME"),
    (["--assume", "finite-sinks=20:-20"], "--assume 'finite-sinks=20:-20': the range 20:-20 is empty"),
    (["--assume", "blocks=pow2"], "--assume 'blocks=pow2': unknown item 'blocks'"),
    (["--start-q", "later"], "--start-q expects a whole number or end"),
    (["--mask-value", "big"], "--mask-value 'big': expected a number, -inf or finfo-min"),
])
def test_bad_attention_flags_exit_2_with_one_line(capsys, args, message):
    code = main(["impl", NP + "eager", "--as", "sink", "--form", "attention", "--dtype", "float32", *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert message in err


def test_attention_flags_outside_the_attention_form_are_refused(capsys):
    code = main(["impl", "tests/zoo/kernels_numpy.py:sink_online", "--as", "sink", "--form", "online", "--causal"])
    assert code == 2 and "apply to --form attention" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_mask_value_minus_1e6_and_json(capsys):
    code = main(["impl", NP + "eager", "--as", "softmax", "--form", "attention", "--dtype", "float32",
                 "--mask-value", "-1e6", "--format", "json"])
    out = capsys.readouterr().out
    import json
    data = json.loads(out)
    # the fully masked rows (every key at −1e6: κ ≈ 2·10⁶, so 64·2⁻²³·(1 + κ) ≥ 1) cannot fail: not judged,
    # counted; every class has judged rows, so it agrees
    assert code == 0 and data["verdict"] == "agrees" and data["results"][0]["vacuous_rows"] > 0
    assert data["results"][0]["classes"]["masked"] == "passes"
    assert data["results"][0]["classes"]["causal"] == "passes"  # causality reaches it through its mask
    assert data["results"][0]["classes"]["decode"] == "not tested"
    assert sorted(data["results"][0]["classes"]) == sorted(CLASSES)  # sort_keys: every class named


@pytest.mark.slow
@pytest.mark.triton
def test_triton_tiled_kernel_with_sinks_and_its_skip_before_start_twin():
    require_module("torch", "the Triton kernels take torch tensors")
    require_module("triton", "the Triton zoo")
    good = attention("tests/zoo/triton_kernels/attention.py:attention", causal=True)
    assert good.agrees, good.to_markdown()
    assert "decode" in good.results[0].per_class
    bad = attention("tests/zoo/triton_kernels/attention.py:attention_skip_before_start", causal=True)
    # every failing call has queries after position 0 (a decode offset, or the last queries of a long causal
    # call): filed under the call's own class first, and decode fails with them
    r = bad.results[0]
    assert "decode" in set(r.failures) | set(r.failed_in), bad.to_markdown()
    assert all(f.case.start_q > 0 for f in r.failures.values())


def test_required_keyword_of_no_known_role_is_named(capsys):
    code = main(["impl", NP + "needs_temperature", "--as", "softmax", "--form", "attention", "--dtype", "float32"])
    err = capsys.readouterr().err
    assert code == 2 and "has a required parameter 'temperature' that is none of the roles" in err


def test_backward_needs_a_torch_function(capsys):
    code = main(["impl", NP + "eager", "--as", "sink", "--form", "attention", "--dtype", "float32", "--backward"])
    err = capsys.readouterr().err
    assert code == 2 and "--backward differentiates the function with torch autograd" in err


def test_sinks_are_required_for_the_sink_normalizer(capsys):
    require_module("torch", "torch kernels")
    code = main(["impl", TORCH + "hf", "--as", "sink", "--form", "attention", "--dtype", "float32"])
    assert code == 2 and "takes no sinks keyword" in capsys.readouterr().err


@pytest.mark.slow
def test_the_search_finds_a_fault_at_a_key_length_the_fixed_list_does_not_have():
    # keys in chunks of 128 split in halves of 64; the faulty twins drop the second half of a final partial chunk:
    # eager_chunked_half always (the fixed list's rows of 200 keys show it), eager_chunked_short_tail only when
    # that half has fewer than 8 keys, N mod 128 in 65..71, which only the search draws (65 keys)
    good = attention(NP + "eager_chunked", examples=20)
    assert good.agrees and good.results[0].searched >= 20
    listed = attention(NP + "eager_chunked_half")
    assert not listed.agrees and {f.case.N for f in failing(listed).values()} == {200}
    bad = attention(NP + "eager_chunked_short_tail", examples=20, dtypes=("float64",))  # one key of 65: small
    r = bad.results[0]
    assert not bad.agrees and set(r.failures) == {"long"}
    f = r.failures["long"]
    assert f.source == "search" and 65 <= f.case.N % 128 <= 71 and f.case.M <= 4
    md = bad.to_markdown()
    assert "Counterexample found by the search (the simplest call Hypothesis shrank it to): " in md
    assert "a search of 20 drawn calls per dtype" in md
    assert md == attention(NP + "eager_chunked_short_tail", examples=20, dtypes=("float64",)).to_markdown()


def test_the_search_stays_inside_the_contract():
    from hypothesis import HealthCheck, given, settings

    from derive.impl.cases.attention import Setup
    from derive.impl.cases.attention_search import drawn_cases
    from derive.impl.cases.contract import parse_contract

    c = parse_contract(["finite-sinks=-3:3", "block=mult16", "equal-head-dims", "no-fully-masked", "min-keys=4"])
    setup = Setup(extra="sinks", takes=frozenset({"sinks", "block", "mask", "scale"}), causal=False, start_q=None,
                  window=(), has_batch=True, has_heads=True, contract=c)

    @settings(max_examples=200, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(drawn_cases(setup))
    def inside(case):
        assert all(-3 <= s <= 3 for s in case.sinks) and len(case.sinks) == case.H
        assert case.block % 16 == 0 and case.block >= 16 and case.Dv == case.D and case.mask != "rows"
        assert case.N >= 4

    inside()


def test_weights_returned_beside_out_are_checked_too():
    good = attention(NP + "eager_with_weights", dtypes=("float64",))
    assert good.agrees and good.results[0].returned == "out, weights", good.to_markdown()
    bad = attention(NP + "eager_weights_renormalized", dtypes=("float64",))
    f = failing(bad)["finite"]
    assert (f.what, f.where, f.output) == ("weights", (0, 0, 0, 0), [1.0])
    assert f.exact == [pytest.approx(math.exp(9.0) / (math.exp(9.0) + math.exp(1.5)), rel=1e-15)]
    assert "- weights at b = 0, h = 0, i = 0, j = 0: returned `1.0`, exact `0.9994472213630764`" in bad.to_markdown()


def test_an_lse_in_base_2_is_checked_with_lse_base2_and_named_without_it():
    assert attention(NP + "eager_lse_base2", dtypes=("float64",), lse="base2").agrees
    natural = attention(NP + "eager_lse_base2", dtypes=("float64",))
    f = failing(natural)["finite"]
    assert (f.what, f.output, f.exact) == ("lse", [pytest.approx(9.000552931475362 / math.log(2), rel=1e-14)],
                                           [pytest.approx(9.000552931475362, rel=1e-15)])
    assert f.note == ("the lse returned is the base2 log-sum-exp (log₂(e^σ + Σ e^x)) on every row of this call, not "
                      "the natural one: if that is the convention meant, check it with --lse base2")
    kv_only = attention(NP + "eager_lse_base2", dtypes=("float64",), lse="kv-only")
    assert failing(kv_only)["finite"].note.endswith("check it with --lse base2")


def test_lse_units_are_refused_for_a_normalizer_without_an_lse():
    with pytest.raises(InputError, match="--lse base2: sigmoid has no log-sum-exp"):
        check_implementation("tests/zoo/attention_normalizers.py:sigmoid", "sigmoid", form="attention",
                             dtypes=("float64",), examples=0, lse="base2",
                             attention={"layout": "bhnd", "out_layout": None, "scale": None, "causal": False,
                                        "start_q": None, "window": 0, "mask_value": "-inf", "backward": False,
                                        "kw_names": {}})


@pytest.mark.slow
def test_a_reentrant_checkpointed_kernel_gets_its_gradients_checked():
    require_module("torch", "torch kernels")
    report = attention(TORCH + "checkpointed", norm="softmax", dtypes=("float64",), backward=True)
    assert report.agrees, report.to_markdown()
    assert report.results[0].returned == "out, dq, dk, dv"


def test_a_required_keyword_of_no_role_takes_a_fixed_value_with_set(capsys):
    code = main(["impl", NP + "needs_temperature", "--as", "softmax", "--form", "attention", "--dtype", "float64",
                 "--examples", "0", "--set", "temperature=1"])
    out = capsys.readouterr().out
    assert code == 0 and "temperature = 1 on every call (--set)" in out
    code = main(["impl", NP + "needs_temperature", "--as", "softmax", "--form", "attention", "--dtype", "float64",
                 "--examples", "0", "--set", "temperature=2.0"])
    assert code == 1 and "temperature = 2.0 on every call (--set)" in capsys.readouterr().out


@pytest.mark.parametrize("value, message", [
    ("temperature=1+1", "--set 'temperature=1+1': VALUE is a number, true, false, none, @dtype or a word"),
    ("temperature=@float", "--set 'temperature=@float': VALUE is a number, true, false, none, @dtype or a word"),
    ("temperature", "--set 'temperature': expected NAME=VALUE"),
    ("scale=2", "--set scale=…: scale is the keyword of the role scale, which derive passes itself"),
    ("tau=1", "--set tau=…: tests/zoo/attention_numpy.py:needs_temperature takes no keyword 'tau'"),
    ("__import__('os')=1", "--set \"__import__('os')=1\": expected NAME=VALUE"),
])
def test_set_values_are_read_by_a_grammar_and_checked_against_the_signature(capsys, value, message):
    code = main(["impl", NP + "needs_temperature", "--as", "softmax", "--form", "attention", "--dtype", "float64",
                 "--examples", "0", "--set", value])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and message in err, err


def test_an_offset_passed_as_an_int32_tensor_and_a_dtype_parameter_need_no_adapter(capsys):
    require_module("torch", "torch kernels")
    base = ["impl", "--as", "softmax", "--form", "attention", "--dtype", "float64", "--dtype", "float32",
            "--examples", "0"]
    assert main(base + [TORCH + "decode_tensor_offset", "--causal", "--tensor", "start_q"]) == 0
    out = capsys.readouterr().out
    assert "start_q is passed as a 0-d tensor (int32 for a whole number) (--tensor)" in out
    assert "start_q up to 0" not in out  # the offsets were varied: the kernel takes start_q
    assert main(base + [TORCH + "decode_tensor_offset", "--causal"]) == 2
    assert "raised TypeError: start_q must be an int32 tensor, got int (at attention_torch.py:" in capsys.readouterr().err
    assert main(base + [TORCH + "accumulate_in", "--set", "dtype=@dtype"]) == 0
    assert "dtype = the call dtype on every call (--set)" in capsys.readouterr().out
    assert main(base + [TORCH + "accumulate_in"]) == 2
    assert "give it a value with --set dtype=VALUE (@dtype: the call's dtype)" in capsys.readouterr().err
    assert main(base + [TORCH + "accumulate_in", "--set", "dtype=@dtype", "--tensor", "block"]) == 2
    assert "--tensor block: tests/zoo/attention_torch.py:accumulate_in is passed no keyword block (--tensor names a " \
           "keyword of a role or of --set: dtype, scale)" in capsys.readouterr().err


def test_a_tensor_keyword_is_a_0d_array_of_the_calls_api():
    from derive.impl.run.attention_child import _tensor

    got = _tensor("numpy", 7, "float32")
    assert got.shape == () and got.dtype == np.int32 and int(got) == 7
    assert _tensor("numpy", 0.5, "float32").dtype == np.float32
    assert _tensor("numpy", (3, -1), "float64").tolist() == [3, -1]


SIG = "tests/zoo/attention_signatures.py:"


def test_a_factory_returning_a_module_or_a_bound_method_is_checked_as_what_it_returns():
    require_module("torch", "torch kernels")
    for target in ("make()", "make_bound()"):
        report = attention(SIG + target, norm="softmax", dtypes=("float64",))
        assert report.agrees and report.roles == {"scale": "scale"}, report.to_markdown()
    with pytest.raises(InputError, match=r"cannot import '.*attention_signatures.py:nothere\(\)': .* has no attribute "
                                         r"'nothere'"):
        attention(SIG + "nothere()", norm="softmax")


@pytest.mark.slow
def test_an_autograd_function_apply_is_called_positionally_and_its_backward_checked():
    require_module("torch", "torch kernels")
    good = attention(SIG + "Softmax.apply", norm="softmax", dtypes=("float64",), causal=True, backward=True)
    assert good.agrees and good.roles == {"causal": "causal", "scale": "scale"}, good.to_markdown()
    bad = attention(SIG + "SoftmaxNoDk.apply", norm="softmax", dtypes=("float64",), causal=True, backward=True)
    assert {f.what for f in failing(bad).values()} == {"dk"}, bad.to_markdown()


def test_an_eager_attention_reading_its_module_is_checked_with_no_adapter():
    require_module("torch", "torch kernels")
    report = attention(TORCH + "gpt_oss_eager", gqa=True, out_layout="bnhd")
    assert report.agrees, report.to_markdown()
    assert report.roles == {"mask": "attention_mask", "module": "module", "scale": "scaling"}
    assert report.results[0].returned == "out, weights" and "gqa" in report.results[0].per_class
    assert "Called as `fn(module, q, k, v, attention_mask=… (mask), scaling=… (scale))`" in report.to_markdown()
    tiled = attention(TORCH + "gpt_oss_eager_tiled_kv", gqa=True, out_layout="bnhd")
    assert [fault.key for fault in failing(tiled)["gqa"].faults] == ["gqa_head_mapping"]


@pytest.mark.slow
def test_an_eager_attention_reading_its_sinks_from_its_module_gets_the_sinks_gradient():
    require_module("torch", "torch kernels")
    report = attention(TORCH + "gpt_oss_eager", gqa=True, out_layout="bnhd", backward=True)
    assert report.agrees, report.to_markdown()
    assert report.results[0].returned == "out, weights, dq, dk, dv, dsinks"
    # its fully masked rows with a sink of −∞ are NaN: dk, dv and dsinks are not judged on that call, dq is
    assert "on 1 call a row without a value (every key masked, no finite extra logit) returned NaN" in report.notes[0]


def test_device_cpu_runs_the_same_path_and_cuda_without_a_gpu_gives_no_verdict(capsys):
    torch = require_module("torch", "torch kernels")
    base = ["impl", TORCH + "sdpa_torch", "--as", "softmax", "--form", "attention", "--gqa", "--dtype", "float32",
            "--examples", "0"]
    assert main(base + ["--device", "cpu"]) == 0
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: test_device_cuda_agrees_where_a_gpu_is runs there")
    assert main(base + ["--device", "cuda"]) == 2
    out, err = capsys.readouterr()
    assert "--device cuda: torch finds no CUDA device on this machine" in err and "no verdict" in err
    assert main(["impl", NP + "eager", "--as", "sink", "--form", "attention", "--device", "tpu"]) == 2
    assert "argument --device: invalid choice: 'tpu'" in capsys.readouterr().err


@pytest.mark.cuda
def test_device_cuda_agrees_where_a_gpu_is(capsys):
    torch = require_module("torch", "torch kernels")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    code = main(["impl", TORCH + "sdpa_torch", "--as", "softmax", "--form", "attention", "--gqa", "--device", "cuda",
                 "--dtype", "float32", "--dtype", "float64", "--examples", "0"])
    out = capsys.readouterr().out
    assert code == 0 and "its inputs are torch tensors on cuda (--device)" in out
