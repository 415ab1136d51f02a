"""``derive impl --form online|split|backward`` on the kernel zoo: every correct kernel-shaped
implementation agrees, every faulty one is caught and diagnosed as the known kernel fault it
has (derive/kernels/faults.py), in numpy and in torch."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from derive.errors import InputError
from derive.impl import check_implementation
from derive.impl.forms.kernel import (FIXED_LISTS, MAX_PARTS, ROWS, SINK_VALUES, KernelChecker, blocks, kernel_row,
                                split_counts)
from derive.normalizers import get
from derive.testing import assert_implements

NP = "tests/zoo/kernels_numpy.py:"
TORCH = "tests/zoo/kernels_torch.py:"


def need_torch():
    if os.environ.get("CI") == "true":
        import torch

        return torch
    return pytest.importorskip("torch", reason="the torch half of the kernel zoo needs torch")


CORRECT = [
    ("softmax_online", "softmax", "online", "natural", "out, lse"),
    ("softmax_online_out_only", "softmax", "online", "natural", "out"),
    ("softmax1_online", "softmax1", "online", "natural", "out, lse"),
    ("softmax1_online_base2", "softmax1", "online", "natural", "out, lse"),
    ("softmax1_online_finalized", "softmax1", "online", "natural", "out, lse"),
    ("softmax1_online", "zero_token", "online", "natural", "out, lse"),
    ("sink_online", "sink", "online", "natural", "out, lse"),
    ("sink_online_base2_lse", "sink", "online", "base2", "out, lse"),
    ("sink_online_kv_lse", "sink", "online", "kv-only", "out, lse"),
    ("softmax_split", "softmax", "split", "natural", "out, lse"),
    ("softmax1_split", "softmax1", "split", "natural", "out, lse"),
    ("softmax1_split", "zero_token", "split", "natural", "out, lse"),
    ("sink_split", "sink", "split", "natural", "out, lse"),
    ("softmax_backward", "softmax", "backward", "natural", "dx, dv"),
    ("softmax1_backward", "softmax1", "backward", "natural", "dx, dv"),
    ("softmax1_backward", "zero_token", "backward", "natural", "dx, dv"),
    ("sink_backward", "sink", "backward", "natural", "dx, dv, ds"),
]


@pytest.mark.slow
@pytest.mark.parametrize("fn,norm,form,lse,returned", CORRECT)
def test_correct_numpy_kernels_agree(fn, norm, form, lse, returned):
    report = check_implementation(NP + fn, norm, form=form, lse=lse)
    assert report.agrees, report.to_markdown()
    assert report.exit_code() == 0 and report.diagnosis is None
    assert [r.returned for r in report.results] == [returned, returned]
    assert all(r.calls >= 8 and r.rows >= 40 for r in report.results)


SLOW = pytest.mark.slow  # CI runs these; the comment names the default test that covers the same

FAULTY = [
    # by default in test_float16_numpy_kernels (the same kernel, the same fault named, in float16)
    pytest.param("sink_online_extra_per_tile", "sink", "online", "extra_per_tile", marks=SLOW),
    # NaN at n = 0; by default in test_extra_per_tile_named_where_a_row_of_no_key_is_nan (same kernel, diagnosis)
    pytest.param("sink_online_extra_per_tile_unguarded", "sink", "online", "extra_per_tile", marks=SLOW),
    ("sink_online_missing_log2e", "sink", "online", "missing_log2e"),
    ("sink_online_scale_on_extra", "sink", "online", "scale_on_extra"),
    ("softmax1_online_unshifted_one", "softmax1", "online", "unshifted_extra"),
    ("softmax_online_acc_not_rescaled", "softmax", "online", "acc_not_rescaled"),
    ("softmax_online_unguarded", "softmax", "online", "missing_neg_inf_guard"),
    ("softmax1_online_sum_not_rescaled", "softmax1", "online", "sum_not_rescaled"),
    # the extra logit added once at finalization instead of seeded: the same faults, named (the two above
    # by default)
    pytest.param("softmax1_online_finalized_sum_not_rescaled", "softmax1", "online", "sum_not_rescaled", marks=SLOW),
    pytest.param("sink_online_finalized_acc_not_rescaled", "sink", "online", "acc_not_rescaled", marks=SLOW),
    # by default in test_assert_implements_with_a_form (same kernel and form, the diagnosis named in the error)
    pytest.param("sink_split_extra_per_split", "sink", "split", "extra_per_tile", marks=SLOW),
    ("sink_split_seeded_twice", "sink", "split", "seeded_twice_empty_split"),
    ("softmax1_split_nan_empty", "softmax1", "split", "nan_empty_split"),
    ("softmax1_backward_kv_only_lse", "softmax1", "backward", "kv_only_lse_backward"),
    ("sink_backward_grad_missing", "sink", "backward", "extra_grad_missing"),
    ("sink_backward_grad_sign", "sink", "backward", "extra_grad_sign"),
]


_REPORTS: dict = {}


def float64_report(fn, norm, form):
    """The float64 report on the numpy kernel ``fn`` (a check is deterministic: tests that read the
    same one share it)."""
    key = (fn, norm, form)
    if key not in _REPORTS:
        _REPORTS[key] = check_implementation(NP + fn, norm, form=form, dtypes=("float64",))
    return _REPORTS[key]


@pytest.mark.parametrize("fn,norm,form,fault", FAULTY)
def test_faulty_numpy_kernels_are_caught_and_diagnosed(fn, norm, form, fault):
    from derive.kernels.faults import FAULTS

    report = float64_report(fn, norm, form)
    assert not report.agrees and report.exit_code() == 1
    assert [m.name for m in report.diagnosis.matched] == [fault], report.to_markdown()
    entry = next(f for f in FAULTS if f.key == fault)
    md = report.to_markdown()
    assert f"Fix: {entry.fix}." in md and entry.title in md  # one wording: the fault's own entry


TORCH_CORRECT = [
    ("softmax_online", "softmax", "online"), ("softmax1_online", "softmax1", "online"),
    ("sink_online", "sink", "online"), ("softmax_split", "softmax", "split"),
    ("softmax1_split", "softmax1", "split"), ("sink_split", "sink", "split"),
    ("softmax1_backward", "softmax1", "backward"), ("sink_backward", "sink", "backward"),
]


@pytest.mark.slow
@pytest.mark.parametrize("fn,norm,form", TORCH_CORRECT)
def test_correct_torch_kernels_agree(fn, norm, form):
    need_torch()
    report = check_implementation(TORCH + fn, norm, form=form, dtypes=("float64", "float32", "bfloat16"))
    assert report.api == "torch"
    # bfloat16 meets rows of κ ≥ 15, whose bound cannot fail: not judged, counted in a note; every class
    # has judged rows, so every dtype agrees
    assert [r.verdict for r in report.results] == ["agrees", "agrees", "agrees"], report.to_markdown()
    assert report.results[2].vacuous_rows > 0 and report.results[1].vacuous_rows == 0
    assert report.failure is None and report.verdict == "agrees" and report.exit_code() == 0


TORCH_FAULTY = [
    # by default in test_float16_numpy_kernels (the same kernel, the same fault named, in float16)
    pytest.param("sink_online_extra_per_tile", "sink", "online", "extra_per_tile", marks=SLOW),
    ("softmax_online_acc_not_rescaled", "softmax", "online", "acc_not_rescaled"),
    ("softmax_online_unguarded", "softmax", "online", "missing_neg_inf_guard"),
    ("sink_split_nan_empty", "sink", "split", "nan_empty_split"),
    ("sink_backward_grad_sign", "sink", "backward", "extra_grad_sign"),
]


@pytest.mark.slow
@pytest.mark.parametrize("fn,norm,form,fault", TORCH_FAULTY)
def test_faulty_torch_kernels_are_caught_and_diagnosed(fn, norm, form, fault):
    need_torch()
    report = check_implementation(TORCH + fn, norm, form=form, dtypes=("float32",))
    assert not report.agrees and report.api == "torch"
    assert [m.name for m in report.diagnosis.matched] == [fault], report.to_markdown()


def test_first_counterexample_is_the_smallest_input_and_exact():
    """An empty split seeded with the sink doubles it: on n = 0 keys with s = 0 the lse is ln 2, not 0."""
    report = float64_report("sink_split_seeded_twice", "sink", "split")
    f = report.failure
    assert (f.what, f.call.third, f.call.params, f.call.x.shape) == ("lse", 1, {"s": 0.0}, (16, 0))
    assert f.output == [math.log(2.0)] and f.exact == [0.0]
    md = report.to_markdown()
    assert "**Verdict: disagrees** (float64, lse) on scores of shape [16, 0], splits = 1, s = 0.0." in md
    assert "What the faulty kernel does: an empty split returns the seeded state" in md


def test_unshifted_one_is_caught_without_keys():
    """softmax₁ finalized with ℓ + 1 at m = −∞ (no keys yet): lse = −∞ + ln 1, where the definition is ln 1 = 0."""
    report = float64_report("softmax1_online_unshifted_one", "softmax1", "online")
    f = report.failure
    assert (f.what, f.call.x.shape, f.output, f.exact) == ("lse", (16, 0), [-math.inf], [0.0])
    assert [m.name for m in report.diagnosis.matched] == ["unshifted_extra"]


def test_unshifted_one_out_only_is_caught_on_one_key():
    """Without an lse, the out of one key x = 1: v·e/(e + 1) exactly, the faulty kernel v/(1 + 1)."""
    report = check_implementation(NP + "softmax1_online_unshifted_one_out", "softmax1", form="online",
                                  dtypes=("float64",))
    f = report.failure
    assert f.call.x.tolist()[f.row] == [1.0] and f.what == "out"
    v0 = f.call.v[f.row][0]
    assert f.exact == pytest.approx(list(v0 * math.e / (math.e + 1)), rel=1e-15)
    assert f.output == pytest.approx(list(v0 / 2), rel=1e-15)
    assert [m.name for m in report.diagnosis.matched] == ["unshifted_extra"]


@pytest.mark.slow
def test_lse_in_the_wrong_convention_says_which_flag():
    report = check_implementation(NP + "sink_online_base2_lse", "sink", form="online", dtypes=("float64",))
    assert not report.agrees and report.failure.what == "lse"
    assert report.diagnosis.matched == []
    assert "The lse returned is the base2 log-sum-exp" in report.to_markdown()
    assert "--lse base2" in report.to_markdown()
    kv = check_implementation(NP + "sink_online_kv_lse", "sink", form="online", dtypes=("float64",))
    assert "--lse kv-only" in kv.to_markdown()


def test_fixed_sink_and_a_sink_of_minus_infinity():
    for s in (-math.inf, 1e4, -0.5):
        report = check_implementation(NP + "sink_online", "sink", form="online", params={"s": s},
                                      dtypes=("float64",))
        assert report.agrees and report.params == {"s": s} and report.free_params == ()


# by default in test_impl_cases.py::test_a_missing_parameter_gradient_fails_unless_not_asked_for (the same
# kernel, both checks, the same assertions and the message naming the missing gradient)
@pytest.mark.slow
def test_a_missing_parameter_gradient_fails_and_is_a_note_only_when_not_asked_for():
    report = check_implementation(NP + "sink_backward_no_dparams", "sink", form="backward", dtypes=("float64",))
    assert not report.agrees and report.failure.what == "ds"
    unchecked = check_implementation(NP + "sink_backward_no_dparams", "sink", form="backward", dtypes=("float64",),
                                     param_grad=False)
    assert unchecked.agrees
    assert "the gradient of s was not checked (--no-param-grad)" in unchecked.to_markdown()


def test_exact_reference_edge_cases():
    sink_empty = kernel_row([], [], 1.5, None, 60)
    assert sink_empty.defined and sink_empty.out == [0.0, 0.0, 0.0] and sink_empty.lse["natural"] == 1.5
    assert sink_empty.lse["kv-only"] == -math.inf
    assert kernel_row([-math.inf, -math.inf], [[1, 2, 3], [4, 5, 6]], -math.inf, None, 60).defined is False
    soft = kernel_row([0.0, 0.0], [[1, 0, 0], [3, 0, 0]], None, [1.0, 0.0, 0.0], 60)
    assert soft.out == [2.0, 0.0, 0.0] and soft.lse["natural"] == pytest.approx(math.log(2), rel=1e-16)
    assert soft.dx == [-0.5, 0.5]  # P_t(⟨g, v_t⟩ − D) = ½(1 − 2), ½(3 − 2)
    big = kernel_row([1e4], [[1, 0, 0]], 1e4, [1.0, 0.0, 0.0], 60)
    assert big.out[0] == 0.5 and big.ds == -0.25  # −P_s·D = −½·½


def test_partitions_cover_the_adversarial_cases():
    """The full list (numpy, torch): one key per tile, many tiles and splits, empty splits up to 2n + 3.
    The interpreter list: at most 17 tiles or splits per row."""
    assert blocks(0) == [1] and blocks(5) == [1, 2, 3, 5, 6] and blocks(17) == [1, 2, 3, 16, 17, 18]
    assert blocks(40) == [1, 2, 3, 16, 32, 40, 41] and blocks(64) == [1, 2, 3, 16, 32, 64, 65]
    assert split_counts(0) == [1, 2, 3, 8] and split_counts(5) == [1, 2, 3, 5, 6, 8, 13]
    assert split_counts(8) == [1, 2, 3, 8, 9, 19] and split_counts(64) == [1, 2, 3, 8, 64, 65, 131]
    assert blocks(17, True) == [1, 2, 3, 16, 17, 18]
    assert blocks(40, True) == [3, 16, 32, 40, 41] and blocks(64, True) == [4, 16, 32, 64, 65]
    assert split_counts(0, True) == [1, 2, 3] and split_counts(5, True) == [1, 2, 3, 5, 6, 13]
    assert split_counts(8, True) == [1, 2, 3, 8, 9] and split_counts(64, True) == [1, 2, 3, 8, 17]
    assert all(-(-n // b) <= MAX_PARTS for n in ROWS for b in blocks(n, True))
    assert all(s <= MAX_PARTS for n in ROWS for s in split_counts(n, True))
    assert any(all(v == -math.inf for v in r) for r in ROWS[5])  # a fully masked row
    assert any(r[:3] == (-math.inf,) * 3 and r[3] > -math.inf for r in ROWS[5])  # first split masked


@pytest.mark.parametrize("form", ["online", "split"])
def test_the_full_list_crosses_every_sink_value_with_every_partition(form):
    calls = list(KernelChecker(get("sink"), None, form, "natural", 30, {}, ("s",)).calls("float32"))
    part = {"online": blocks, "split": split_counts}[form]
    want = {(n, t, s) for n in ROWS for t in part(n) for s in SINK_VALUES}
    got = [(c.x.shape[1], c.third, c.params["s"]) for c in calls if c.x.shape[1] in ROWS]
    assert len(got) == len(set(got)) and set(got) == want
    assert all(c.x.shape[0] == 16 for c in calls)  # 16 rows per call
    long = [(c.x.shape[1], c.third) for c in calls if c.x.shape[1] not in ROWS]  # each real size once
    assert sorted(long) == sorted((n, t) for n in (200, 1024, 1025) for t in part(n))
    assert sum(c.x.shape[0] for c in calls) == {"online": 4704, "split": 6192}[form]


@pytest.mark.parametrize("form", ["online", "split", "backward"])
def test_the_full_list_per_head_puts_every_sink_value_on_every_partition(form):
    calls = list(KernelChecker(get("sink"), None, form, "natural", 30, {}, ("s",), per_head=True).calls("float32"))
    part = {"online": blocks, "split": split_counts}.get(form, lambda n: [0, 1])
    for n in ROWS:
        for t in part(n):
            seen = {float(s) for c in calls if c.x.shape[1] == n and c.third == t for s in c.params["s"]} \
                if form != "backward" else {float(s) for c in calls if c.x.shape[1] == n for s in c.params["s"]}
            assert seen == set(SINK_VALUES), (n, t)


@pytest.mark.parametrize("form", ["online", "split"])
def test_the_interpreter_list_spreads_the_sink_values_over_the_partitions(form):
    """One sink value per tile size or split count, in turn: every value meets several lengths,
    a partition of two or more parts with a finite result, and one of a single part."""
    calls = list(KernelChecker(get("sink"), None, form, "natural", 30, {}, ("s",), thin=True).calls("float32"))
    parts = {(c.x.shape[1], c.third) for c in calls}
    assert len(parts) == len(calls)  # each partition once
    for s in SINK_VALUES:
        mine = [c for c in calls if c.params["s"] == s or (math.isnan(s) and math.isnan(c.params["s"]))]
        assert len({c.x.shape[1] for c in mine}) >= 3, s
        several = [c for c in mine if c.x.shape[1] >= 2 and (c.third < c.x.shape[1] if form == "online"
                                                               else 2 <= c.third)]
        assert several, s
    rows = sum(c.x.shape[0] for c in calls)
    assert rows == {"online": 704, "split": 768}[form]


LATE = NP + "sink_online_no_rescale_past_17_tiles"


def test_a_tile_fault_past_17_tiles_is_caught_by_the_full_list():
    """The running state is not rescaled from the 18th tile on: a numpy target gets the full list,
    whose rows of 40 keys in tiles of one key show it (the search draws at most 4 tiles, the
    interpreter list at most 17)."""
    report = check_implementation(LATE, "sink", form="online", dtypes=("float64",))
    assert not report.agrees and report.fixed_list == "full"
    md = report.to_markdown()
    assert f"Fixed list: {FIXED_LISTS['full']}." in md
    assert "**Verdict: disagrees** (float64, out) on scores of shape [16, 40], block = 1, s = 0.0.\n" in md
    assert "- out returned: [0.026861020731092686, 0.9308665752377254, 1.9177493113190245]" in md
    assert "- exact: [0.19588072344537905, 0.8464458420816037, 1.8862840695657492]" in md
    data = report.as_json()
    assert data["fixed_list"] == "full" and data["results"][0]["source"] == "fixed list"
    assert data["results"][0]["searched"] == 0


def test_the_interpreter_list_catches_it_on_rows_of_1024_keys(monkeypatch):
    """The same target as if derive had launched it under Triton's interpreter with a Triton
    kernel in its file (the parent's decision forced): the thinned list keeps at most 17 tiles on
    rows of up to 64 keys, but its rows of 1024 keys in tiles of 16 (64 tiles) show the fault."""
    import derive.impl.api as api

    monkeypatch.setattr(api, "interpreted", lambda env, target: True)
    report = check_implementation(LATE, "sink", form="online", dtypes=("float64",), examples=1)
    assert not report.agrees and report.fixed_list == "interpreter"
    md = report.to_markdown()
    assert f"Fixed list: {FIXED_LISTS['interpreter']}." in md
    assert "**Verdict: disagrees** (float64, out) on scores of shape [16, 1024], head dimension 64, block = 16" in md


def test_a_kernel_that_claims_the_interpreter_gets_the_full_list():
    """A numpy kernel that installs a fake triton with its interpreter on and sets TRITON_INTERPRET
    in its own process, run with the interpreter variable set by derive as well: the parent decides
    the list from what it launched (its file defines no Triton kernel), so the full list runs and
    the fault from the 18th tile is caught."""
    report = check_implementation("tests/zoo/claims_interpreter.py:sink_online_no_rescale_past_17_tiles", "sink",
                                  form="online", dtypes=("float64",), env={"TRITON_INTERPRET": "1"})
    assert not report.agrees and report.fixed_list == "full"
    assert "**Verdict: disagrees** (float64, out) on scores of shape [16, 40], block = 1, s = 0.0.\n" \
        in report.to_markdown()


def test_the_parent_decides_the_list_from_the_file_and_the_environment(monkeypatch):
    from derive.impl.run.triton_env import defines_kernel, interpreted

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    online = "tests/zoo/triton_kernels/online.py:sink_online"
    assert defines_kernel(online) and defines_kernel("tests/zoo/triton_kernels/split.py:sink_split")
    assert not defines_kernel("tests/zoo/triton_kernels/numpy_late_tiles.py:sink_online_no_rescale_past_17_tiles")
    assert not defines_kernel("tests/zoo/claims_interpreter.py:sink_online_no_rescale_past_17_tiles")
    assert not defines_kernel(LATE)
    assert interpreted({"TRITON_INTERPRET": "1"}, online) and not interpreted({}, online)
    assert not interpreted({"TRITON_INTERPRET": "0"}, online)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert interpreted(None, online) and not interpreted(None, LATE)


def test_extra_per_tile_named_where_a_row_of_no_key_is_nan():
    """A per-tile kernel never adds the extra logit to a row of no tile: 0/0 at n = 0. The first
    failure is that row; the diagnosis still names the fault, matched on rows of two or more
    tiles with finite results (the fault model realizes the NaN too)."""
    report = check_implementation(NP + "sink_online_extra_per_tile_unguarded", "sink", form="online",
                                  dtypes=("float64",))
    md = report.to_markdown()
    assert "**Verdict: disagrees** (float64, out) on scores of shape [16, 0], block = 1, s = 0.0." in md
    assert "- out returned: [nan, nan, nan]" in md
    assert "**Known kernel fault: extra logit added per tile or per split** (`extra_per_tile`, matched on " in md, md
    assert "NaN" not in md.split("Known kernel fault")[1].split("\n\n")[0]  # the diagnosis paragraph


@pytest.mark.slow
def test_assert_implements_with_a_form():
    report = assert_implements(NP + "sink_split", "sink", form="split", dtypes=("float64",))
    assert report.agrees
    with pytest.raises(AssertionError, match="extra logit added per tile or per split"):
        assert_implements(NP + "sink_split_extra_per_split", "sink", form="split", dtypes=("float64",))


@pytest.mark.slow
def test_the_worker_environment_hook_is_set_before_import():
    odd = "tests/zoo/kernels_odd.py:needs_env"
    with pytest.raises(InputError, match="DERIVE_KERNEL_TEST_ENV was not set"):
        check_implementation(odd, "sink", form="online", dtypes=("float64",))
    report = check_implementation(odd, "sink", form="online", dtypes=("float64",),
                                  env={"DERIVE_KERNEL_TEST_ENV": "1"})
    assert report.agrees


@pytest.mark.parametrize("fn,norm,form,message", [
    ("wrong_out_shape", "softmax", "online", "returned out of shape [16, 0]; expected [16, 3]"),
    ("one_row_only", "softmax", "online", "returned out of shape [16, 16, 3]; expected [16, 3] for scores of shape "
                                          "[16, 0] and values of shape [16, 0, 3] (the kernel forms pass every row "
                                          "of a length in one call"),
    ("raises_on_empty", "softmax", "online", "raised ValueError: no keys on a valid float64 input in online form"),
    ("sink_ds_per_row", "sink", "backward", "returned the gradient of s with shape [16]; s was passed as a scalar"),
    ("unknown_param_grad", "softmax", "backward", "returned a gradient for 'tau', which is not a parameter"),
    ("sink_without_s", "sink", "online", "does not take as a keyword: declare it (e.g. `def fn(x, v, block, *, s)`)"),
])
def test_bad_kernel_functions_are_usage_errors(fn, norm, form, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]").replace("*", r"\*")):
        check_implementation("tests/zoo/kernels_odd.py:" + fn, norm, form=form, dtypes=("float64",))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "derive", "impl", *args], capture_output=True, text=True)


@pytest.mark.slow
def test_cli_exit_codes_and_json():
    ok = _cli(NP + "softmax1_split", "--as", "softmax1", "--form", "split", "--dtype", "float64", "--format", "json")
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert (data["agrees"], data["form"], data["lse"], data["results"][0]["returned"]) == (True, "split", "natural",
                                                                                          "out, lse")
    again = _cli(NP + "softmax1_split", "--as", "softmax1", "--form", "split", "--dtype", "float64", "--format", "json")
    assert again.stdout == ok.stdout  # deterministic
    bad = _cli(NP + "softmax_online_acc_not_rescaled", "--as", "softmax", "--form", "online", "--dtype", "float32")
    assert bad.returncode == 1 and "`acc_not_rescaled`" in bad.stdout
    usage = _cli(NP + "softmax1_backward", "--as", "softmax1", "--form", "backward", "--lse", "base2")
    assert usage.returncode == 2 and "--lse base2 applies to --form online, split or attention" in usage.stderr
    assert "Traceback" not in usage.stderr
    nonsense = _cli(NP + "softmax1_split", "--as", "softmax1", "--form", "diagonal")
    assert nonsense.returncode == 2
    unsupported = _cli(NP + "softmax1_split", "--as", "stick_breaking", "--form", "split")
    assert unsupported.returncode == 2 and ("stick_breaking has no kernel form checked here: its weight is not of the "
                                            "form") in unsupported.stderr


def test_bias_kv_has_no_checked_kernel_form_and_says_why():
    from derive.kernels.forms import registry_forms
    from derive.render.markup import plain_math

    with pytest.raises(InputError) as err:
        check_implementation(NP + "softmax1_online", "bias_kv", form="online", dtypes=("float64",))
    assert str(err.value) == ("--form online supports the normalizers of the softmax family (sink, softmax, softmax1, "
                              "zero_token) and, online and split, the ratios of row sums (relu_n, sigmoid, sigmoid_logn, "
                              "softcap, softpick, ssmax); bias_kv has no kernel form checked here: "
                              + plain_math(registry_forms().not_checked["bias_kv"]))
    assert "no keyword to pass v* and no output to compare" in str(err.value) and "$" not in str(err.value)


def test_help_documents_the_new_flags(capsys):
    from derive.cli import main

    with pytest.raises(SystemExit):
        main(["impl", "--help"])
    out = capsys.readouterr().out
    for words in ("--form", "--lse", "fn(x, v, block)", "fn(x, v, splits)", "fn(x, v, dout)", "kv-only"):
        assert words in out


def test_a_hanging_kernel_is_stopped_at_the_timeout():
    with pytest.raises(InputError, match="did not finish within the timeout of 2 s while being called in split form"):
        check_implementation("tests/zoo/kernels_odd.py:hangs", "softmax", form="split", dtypes=("float64",),
                             timeout=2)


@pytest.mark.slow
def test_float16_numpy_kernels():
    # nothing fails, but rows of κ ≥ 127 (large scores or sinks) have a float16 bound no output could exceed
    split = check_implementation(NP + "sink_split", "sink", form="split", dtypes=("float16",))
    assert split.failure is None and split.verdict == "agrees" and split.exit_code() == 0
    r = split.results[0]
    assert (r.rows, r.vacuous_rows) == (4909, 1283)  # the 48 rows of 1025 keys: κ ≥ 1025, out of reach in float16 and r.vacuous_reason.startswith("at float16 the rounding bound")
    # every class has judged rows (the rows of 1025 keys are also judged in float64): agrees, with the note
    assert "every class has judged rows" in split.to_markdown() and split.as_json()["verdict"] == "agrees"
    assert not r.class_unjudged.keys() - r.class_rows.keys()
    bad = check_implementation(NP + "sink_online_extra_per_tile", "sink", form="online", dtypes=("float16",))
    assert [m.name for m in bad.diagnosis.matched] == ["extra_per_tile"]


def test_a_dropped_partial_tile_is_caught_and_not_misnamed():
    report = check_implementation(NP + "softmax_online_drops_last_tile", "softmax", form="online",
                                  dtypes=("float64",))
    f = report.failure
    assert not report.agrees and report.diagnosis.matched == []
    assert f.call.x.shape[-1] % f.call.third != 0  # only a partial tile shows it
    assert "No known kernel fault of the online form matches" in report.to_markdown()


def test_a_fully_masked_tile_without_the_guard_is_caught():
    report = check_implementation(NP + "softmax_online_unguarded", "softmax", form="online", dtypes=("float64",))
    f = report.failure
    row = f.call.x[f.row].tolist()
    assert [m.name for m in report.diagnosis.matched] == ["missing_neg_inf_guard"]
    assert any(math.isnan(y) for y in f.output)
    assert row[:f.call.third] == [-math.inf] * f.call.third and any(v > -math.inf for v in row)  # a masked first tile
    assert "**Known kernel fault: no −∞ guard on the shift** (`missing_neg_inf_guard`" in report.to_markdown()


def test_a_kernel_that_changes_its_input_is_named_in_a_note():
    report = check_implementation("tests/zoo/kernels_odd.py:mutates_scores", "softmax", form="online",
                                  dtypes=("float64",))
    assert report.agrees
    assert "Note: the function modifies one of its input arrays in place" in report.to_markdown()
    assert "modifies" not in check_implementation(NP + "softmax_online", "softmax", form="online",
                                                  dtypes=("float64",)).to_markdown()


def test_assert_implements_with_a_callable_kernel():
    from tests.zoo import kernels_numpy

    assert assert_implements(kernels_numpy.sink_backward, "sink", form="backward", dtypes=("float32",)).agrees
    with pytest.raises(AssertionError, match="extra_grad_missing"):
        assert_implements(kernels_numpy.sink_backward_grad_missing, "sink", form="backward", dtypes=("float32",))


def test_env_must_be_strings():
    with pytest.raises(InputError, match="env must map names to strings"):
        check_implementation(NP + "softmax_online", "softmax", form="online", env={"TRITON_INTERPRET": 1})


def test_the_tolerance_admits_an_ulp_and_not_a_relative_1e9():
    odd = "tests/zoo/kernels_odd.py:"
    assert check_implementation(odd + "sink_online_one_ulp_off", "sink", form="online", dtypes=("float64",)).agrees
    bad = check_implementation(odd + "sink_online_1e9_off", "sink", form="online", dtypes=("float64",))
    f = bad.failure
    assert f.what == "out" and bad.diagnosis.matched == []
    assert all(e > b for e, b in zip(f.errors, f.bounds) if e > 0)
    assert max(f.bounds) < 1e-12


@pytest.mark.slow
def test_a_failing_report_as_json_is_deterministic():
    args = (NP + "sink_backward_grad_missing", "--as", "sink", "--form", "backward", "--dtype", "float32",
            "--format", "json")
    one, two = _cli(*args), _cli(*args)
    assert one.returncode == 1 and one.stdout == two.stdout
    data = json.loads(one.stdout)
    assert data["diagnosis"]["matched"][0]["name"] == "extra_grad_missing"
    failure = data["results"][0]["failure"]
    assert (failure["what"], failure["output"], failure["row"]) == ("ds", [0.0], None)


# ---- a sink per head (--per-head): s of shape (H,) along the last leading axis of x ----------------

PH = "tests/zoo/kernels_per_head.py:"


@pytest.mark.slow
@pytest.mark.parametrize("fn,form", [("sink_online", "online"), ("sink_split", "split"),
                                     ("sink_backward", "backward")])
def test_a_sink_per_head_agrees_in_every_form(fn, form):
    report = check_implementation(PH + fn, "sink", form=form, per_head=True)
    assert report.agrees, report.to_markdown()
    assert report.as_json()["per_head"] is True
    assert "Per head: s passed as an array of shape (2,), one value per head along the last leading axis of x " \
           "(R, 2, n); a gradient has shape (2,), entry h the sum over the rows of head h." in report.to_markdown()
    scalar = check_implementation(PH + fn, "sink", form=form, dtypes=("float64",))  # the same code, one sink
    assert scalar.agrees and scalar.as_json()["per_head"] is False


def test_per_head_calls_put_the_sink_values_side_by_side():
    calls = list(KernelChecker(get("sink"), None, "backward", "natural", 30, {}, ("s",), True).calls("float64"))
    first = calls[0]
    assert first.lead == (16, 2) and first.heads == 2 and first.params["s"].tolist() == [0.0, 1.5]
    assert [first.row_sigma(r) for r in range(2)] == [0.0, 1.5]
    x, v, dout = first.args()
    assert x.shape == (16, 2, 0) and v.shape == (16, 2, 0, 3) and dout.shape == (16, 2, 3)
    assert {float(s) for c in calls for s in c.params["s"]} >= {0.0, 1.5, -2.0, 30.0, -30.0, 1e4}
    assert any(math.isinf(s) for c in calls for s in c.params["s"])


@pytest.mark.slow
@pytest.mark.parametrize("fn,form", [("sink_online_head0_scores", "online"),
                                     ("sink_backward_head0_scores", "backward")])
def test_a_kernel_reading_head_0_for_every_head_disagrees(fn, form):
    """Each head gets its own rows (scores rolled by h, values negated for odd h): a head stride
    of 0 for x and v, with each head's own sink, is caught (with a row repeated as it is for
    every head, head 0's row was the right row)."""
    report = check_implementation(PH + fn, "sink", form=form, per_head=True, dtypes=("float64",))
    assert not report.agrees
    assert report.failure.call.heads == 2 and report.failure.what in ("out", "lse", "dx", "dv", "ds")
    assert check_implementation(PH + fn, "sink", form=form, dtypes=("float64",)).agrees  # one shared sink: right


@pytest.mark.parametrize("fn,fault", [("sink_backward_grad_zero", "extra_grad_missing"),
                                      ("sink_backward_grad_sign", "extra_grad_sign")])
def test_a_per_head_sink_gradient_zero_or_of_the_wrong_sign_is_named(fn, fault):
    report = check_implementation(PH + fn, "sink", form="backward", per_head=True, dtypes=("float64",))
    assert [m.name for m in report.diagnosis.matched] == [fault], report.to_markdown()
    f = report.failure
    assert f.what == "ds" and f.row == -1 and len(f.output) == 2 and f.call.lead == (16, 2)


def test_a_per_head_sink_gradient_summed_over_every_row_is_refuted_per_entry():
    """Each head's entry must be the sum over that head's rows: the sum over all rows in every
    entry is right for a scalar sink only."""
    assert check_implementation(PH + "sink_backward_summed_over_heads", "sink", form="backward",
                                dtypes=("float64",)).agrees
    report = check_implementation(PH + "sink_backward_summed_over_heads", "sink", form="backward", per_head=True,
                                  dtypes=("float64",))
    md = report.to_markdown()
    assert "**Verdict: disagrees** (float64, ds) on scores of shape [16, 2, 1], s = [-2.0, 30.0] (one per head)." \
        in md
    assert "- exact: [-5.575618400152315, 3.6433944960037916e-11]" in md  # head 1: its values negated
    assert report.failure.output[0] == report.failure.output[1]  # one number in both entries
    assert "No known kernel fault of the backward form matches" in md


def test_a_per_head_sink_gradient_not_summed_is_a_usage_error():
    with pytest.raises(InputError, match=r"returned the gradient of s with shape \[16, 2\]; s was passed per head "
                                         r"with shape \[2\] \(scores of shape \[16, 2, 0\]\), so its gradient has "
                                         r"shape \[2\]: entry h is the sum over the rows of head h"):
        check_implementation(PH + "sink_backward_not_summed", "sink", form="backward", per_head=True,
                             dtypes=("float64",))


@pytest.mark.slow
def test_per_head_usage_errors():
    with pytest.raises(InputError, match="--per-head applies to a kernel form"):
        check_implementation("tests/zoo/sink_numpy.py:sink", "sink", per_head=True)
    with pytest.raises(InputError, match="--per-head passes the normalizer's parameters per head; softmax1 has none"):
        check_implementation(NP + "softmax1_online", "softmax1", form="online", per_head=True)
    cli = _cli(PH + "sink_split", "--as", "sink", "--form", "split", "--per-head", "--dtype", "float32")
    assert cli.returncode == 0 and "Per head: s passed as an array of shape (2,)" in cli.stdout


# ---- the Hypothesis search after the fixed list ----------------------------------------------------

@pytest.mark.slow
def test_the_search_reaches_a_partition_the_fixed_list_lacks():
    """A tail path that forgets to store out when a last tile of 3 keys follows full ones: every
    partition of the fixed list misses it; the search draws one and shrinks it."""
    assert not any(n > b and n % b == 3 for n in ROWS for thin in (False, True) for b in blocks(n, thin))
    report = check_implementation(NP + "softmax_online_short_tail", "softmax", form="online", dtypes=("float64",))
    md = report.to_markdown()
    assert ("**Verdict: disagrees** (float64, out) on scores of shape [1, 7], block = 4 (found by the Hypothesis "
            "search after the fixed list, shrunk).") in md, md
    assert "- out returned: [0.0, 0.0, 0.0]" in md and "- exact: [0.3, 1.0, 1.7]" in md
    r = report.results[0]
    assert r.source == "search" and r.calls == 54 and r.searched > 20  # the full list; 20 drawn, then shrinking
    again = check_implementation(NP + "softmax_online_short_tail", "softmax", form="online", dtypes=("float64",))
    assert again.to_json() == report.to_json()  # derandomized: the same search every run


@pytest.mark.slow
def test_the_search_budget_is_a_count():
    report = check_implementation(NP + "sink_split", "sink", form="split", dtypes=("float64",))
    assert report.agrees and report.results[0].searched == 25 and report.results[0].source == ""  # 20 + 20/4 long
    report = check_implementation(NP + "sink_split", "sink", form="split", dtypes=("float64",), examples=3)
    assert report.agrees and report.results[0].searched == 4
    assert report.as_json()["results"][0]["searched"] == 4
    report = check_implementation(PH + "sink_backward", "sink", form="backward", dtypes=("float64",), examples=5,
                                  per_head=True)
    assert report.agrees and report.results[0].searched == 6


@pytest.mark.slow
def test_a_per_head_failure_names_the_head_of_the_failing_row():
    assert check_implementation(PH + "sink_online_first_head_only", "sink", form="online", dtypes=("float64",)).agrees
    report = check_implementation(PH + "sink_online_first_head_only", "sink", form="online", per_head=True,
                                  dtypes=("float64",))
    md = report.to_markdown()
    assert "**Verdict: disagrees** (float64, lse) on scores of shape [16, 2, 0], block = 1, s = [0.0, 1.5] (one per " \
           "head)." in md
    assert "- failing row 1 (head 1: s = 1.5): x = []" in md and "- exact: [1.5]" in md
    assert report.as_json()["results"][0]["failure"]["params"] == {"s": [0.0, 1.5]}


@pytest.mark.slow
def test_torch_autograd_sink_gradient_per_head_and_shared():
    """torch autograd through the definition: the sink's gradient summed over the rows sharing each
    entry, per head or over every row; both agree with the recompute form's check."""
    need_torch()
    for per_head in (False, True):
        report = check_implementation(TORCH + "sink_backward_autograd", "sink", form="backward", per_head=per_head,
                                      dtypes=("float64", "float32"))
        assert report.agrees, report.to_markdown()
        assert report.api == "torch" and [r.returned for r in report.results] == ["dx, dv, ds"] * 2
