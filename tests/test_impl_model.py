"""The one call model of ``derive impl``: the mask of a call (the model's own, lowered to what a
kernel takes), the fixed list and the search drawn from it, the contract they stay inside, and the
zoo of kernels whose faults live at one feature of a call (tests/zoo/attention_model.py), each
checked through its own signature."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derive.cli import main
from derive.errors import InputError
from derive.impl import check_implementation
from derive.impl.cases.attention import Case, Setup, case_classes
from derive.impl.cases.attention_search import drawn_cases
from derive.impl.cases.contract import parse_contract
from derive.impl.cases.fixed import cases
from derive.impl.cases.masks import keep, lower, model_keep, parse_window, positions_keep, window_arg
from tests.conftest import require_module

Z = "tests/zoo/attention_model.py:"


def setup_of(takes=("scale",), extra=None, causal=False, start_q=None, window=(), assume=(), **kw):
    return Setup(extra=extra, takes=frozenset(takes), causal=causal, start_q=start_q, window=window,
                 has_batch=True, has_heads=True, contract=parse_contract(list(assume)), **kw)


def attention(target, norm="softmax", dtypes=("float64",), assume=(), examples=0, **kw):
    settings_ = {"layout": "bhnd", "out_layout": None, "scale": None, "causal": False, "start_q": None,
                 "window": 0, "mask_value": "-inf", "backward": False, "kw_names": {}}
    settings_.update(kw)
    return check_implementation(target, norm, form="attention", dtypes=dtypes, assume=assume, attention=settings_,
                                examples=examples)


def failing(report) -> set:
    return {cls for r in report.results for cls in r.failures}


# ---- the one mask ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, start, causal, window", [
    ("causal", 0, True, ()), ("causal", 3, True, ()), ("sliding_window(3)", 0, False, (2, 2)),
    ("sliding_window(2)", 5, False, (1, 1)), ("causal_window(3)", 2, True, (2, -1)), ("none", 4, False, ()),
])
def test_the_positions_of_a_call_are_the_models_masks(text, start, causal, window):
    """causal and windows as the call model writes them (positions start_q + i) are the model's
    masks (derive/model/masks.py) evaluated at those positions: one definition."""
    if text == "none":
        assert positions_keep(4, 9, start, causal, window).all()
        return
    assert np.array_equal(model_keep(text, 4, 9, start), positions_keep(4, 9, start, causal, window))


def test_prefix_and_document_masks_are_the_models():
    prefix = model_keep("prefix_lm(2)", 4, 5, 0)
    assert prefix.astype(int).tolist() == [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]]
    doc = model_keep("document(IDS)", 3, 6, 1, ids=np.arange(8) // 3)  # positions 1, 2, 3: documents 0, 0, 1
    assert doc.astype(int).tolist() == [[1, 1, 1, 0, 0, 0], [1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]]


def test_padding_masks_whole_tiles_before_the_visible_keys_per_batch():
    case = Case("padding", B=2, M=3, N=200, mask="padding", pad=64)
    k = keep(case)
    assert not k[0, :, :64].any() and k[0, :, 64:].all()  # batch 0: a whole tile of 64 masked
    assert not k[1, :, :32].any() and k[1, :, 32:].all()  # batch 1: half a tile


def test_the_mask_is_lowered_to_each_form():
    case = Case("masked", B=1, M=2, N=3, causal=True)
    arg, bias = lower(case, ("causal",), "additive", -np.inf)
    assert arg[0, 0].tolist() == [[0, -np.inf, -np.inf], [0, 0, -np.inf]] and bias is None
    arg, bias = lower(case, ("causal",), "additive", -1e6)  # finite: the definition sees score − 1e6 there
    assert arg[0, 0].tolist() == [[0, -1e6, -1e6], [0, 0, -1e6]] and bias[0].tolist() == arg[0, 0].tolist()
    assert lower(case, ("causal",), "keep", -np.inf)[0][0, 0].tolist() == [[True, False, False], [True, True, False]]
    assert lower(case, ("causal",), "drop", -np.inf)[0][0, 0].tolist() == [[False, True, True], [False, False, True]]
    assert lower(case, (), "keep", -np.inf) == (None, None)  # causality by the flag: nothing in the mask


def test_windows_as_an_int_or_a_pair():
    assert parse_window("4") == (3, -1) and parse_window("2,1") == (2, 1) and parse_window("-1,0") == (-1, 0)
    assert window_arg((3, -1), "int") == 4 and window_arg((2, 1), "pair") == (2, 1)
    for bad in ("0", "x", "1,2,3", "-1,-1", "-2,1"):
        with pytest.raises(ValueError):
            parse_window(bad)


# ---- the fixed list and the search: what they reach ---------------------------------------------------


def test_the_fixed_list_reaches_every_size_the_model_names():
    setup = setup_of(takes=("scale", "mask", "block", "splits", "causal", "window", "start_q"), extra="sinks",
                     gqa=True, window_form="pair")
    listed = cases(setup)
    keys = {c.N for c in listed}
    assert {1024, 1025, 2048, 4096} <= keys and max(keys) == 4096
    assert {c.block for c in listed if c.block} == {1, 2, 4, 16, 32, 64, 128, 256}
    assert {c.splits for c in listed if c.splits} == {2, 3, 8, 64}
    assert {c.groups for c in listed} == {1, 2, 4, 8}
    assert {64, 128} <= {c.D for c in listed} and max(c.B for c in listed) == 2 and max(c.H for c in listed) == 8
    assert any(c.mask == "padding" and c.pad == 64 for c in listed)  # a whole tile of 64 before the visible keys
    assert any(c.causal and c.M != c.N for c in listed)
    assert {c.window for c in listed if c.window} >= {(0, 0), (2, 1), (-1, 2), (3, -1)}
    assert setup.skipped == {}


def test_a_top_left_causal_kernel_without_start_q_sees_long_rows_through_late_queries():
    setup = setup_of(causal=True)
    long = [c for c in cases(setup) if c.cls == "very-long"]
    assert [(c.M, c.N, c.sample) for c in long] == [(1024, 1024, 0), (1025, 1025, 256), (2048, 2048, 256),
                                                     (4096, 4096, 256), (1025, 1025, 256)]
    assert long[3].judged().sum() == 8 + 4096 // 256 + 8 - 1  # the first 8, every 256th, the last 8 (one both)
    bottom = [c for c in cases(setup_of(causal=True, start_q="end")) if c.cls == "very-long"]
    assert all(c.M == 4 and c.start_q == c.N - 4 for c in bottom)


def test_the_contract_raises_head_dims_and_key_lengths_instead_of_dropping_classes():
    setup = setup_of(takes=("scale", "block"), assume=("min-head-dim=64", "head-dim-multiple=32",
                                                       "keys-multiple=block", "queries-le-keys"))
    listed = cases(setup)
    assert all(c.D >= 64 and c.D % 32 == 0 and c.Dv >= 64 and c.Dv % 32 == 0 for c in listed)
    assert all(c.N % c.block == 0 for c in listed if c.block) and all(c.M <= c.N for c in listed)
    assert "tiles" not in setup.skipped and "headdim" not in setup.skipped


def test_the_search_draws_groups_windows_padding_and_splits_inside_the_contract():
    setup = setup_of(takes=("scale", "mask", "splits", "window"), extra="sinks", gqa=True,
                     assume=("min-head-dim=32", "finite-sinks=-5:5"), window_form="pair")
    seen = {"groups": set(), "mask": set(), "splits": set(), "window": set()}

    @settings(max_examples=150, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(drawn_cases(setup))
    def inside(case):
        assert case.D >= 32 and case.Dv >= 32 and all(-5 <= s <= 5 for s in case.sinks)
        assert len(case.sinks) == case.H and case.H % case.kv == 0
        assert case_classes(case, setup)[0] == case.cls
        seen["groups"].add(case.groups)
        seen["mask"].add(case.mask)
        seen["splits"].add(case.splits > 1)
        seen["window"].add(bool(case.window) and case.window[1] != -1)

    inside()
    assert seen["groups"] >= {1, 2, 4} and "padding" in seen["mask"] and True in seen["splits"]
    assert True in seen["window"]  # a (left, right) pair with both sides bounded


# ---- the zoo: each fault at its feature, through the kernel's own signature ---------------------------


def test_a_gqa_head_mapping_fault_fails_only_with_grouped_kv_heads():
    good = attention(Z + "gqa", norm="sink", gqa=True)
    assert good.agrees, good.to_markdown()
    cov = good.results[0].coverage.as_json()
    assert cov["kv_groups"] == [1, 2, 4, 8] and cov["largest_keys"] == 4096
    bad = attention(Z + "gqa_tiled_heads", norm="sink", gqa=True)
    assert failing(bad) == {"gqa"}
    f = bad.results[0].failures["gqa"]
    assert f.case.describe().startswith("B = 1, H = 8, Hkv = 4 (groups of 2)") and f.where[1] >= 1
    assert [x.key for x in f.faults] == ["gqa_head_mapping"]  # named, with its fix
    assert "Fix: query head h reads kv head h // (H / Hkv)" in bad.to_markdown()
    # without --gqa k and v have every head: the fault is out of reach, and the report says so
    blind = attention(Z + "gqa_tiled_heads", norm="sink")
    assert blind.agrees and "--gqa not given" in blind.skipped["gqa"]


@pytest.mark.slow
def test_the_alignment_of_a_causal_kernel_is_stated_and_the_other_one_is_named():
    good = attention(Z + "bottom_right", layout="bnhd", causal="bottom-right", gqa=True)
    assert good.agrees, good.to_markdown()
    assert good.roles == {"scale": "softmax_scale", "causal": "causal", "window": "window_size"}
    bad = attention(Z + "bottom_right", layout="bnhd", causal=True, gqa=True)  # top-left assumed
    f = bad.results[0].failures["causal"]
    assert f.case.M != f.case.N
    assert "matches the other causal alignment, bottom-right" in f.note and "--causal bottom-right" in f.note
    other = attention(Z + "top_left", layout="bnhd", causal="bottom-right", gqa=True)
    assert "matches the other causal alignment, top-left" in other.results[0].failures["causal"].note


def test_a_window_pair_off_by_one_fails_in_the_window_class_only():
    bad = attention(Z + "bottom_right_window_off_by_one", layout="bnhd", causal="bottom-right", gqa=True)
    assert failing(bad) == {"window"}
    assert bad.results[0].failures["window"].case.window[0] >= 0
    assert [x.key for x in bad.results[0].failures["window"].faults] == ["window_left_off_by_one"]


def test_faults_of_the_call_are_not_named_for_other_faults():
    """A kernel wrong in another way is named no fault of the call (nor of the extra logit)."""
    bad = attention(Z + "flash_unguarded")
    assert all([x.key for x in f.faults] == ["missing_neg_inf_guard"] for r in bad.results
               for f in r.failures.values()), bad.to_markdown()
    late = attention(Z + "sink_values_late", norm="sink", gqa=False)
    assert all(f.faults == [] for r in late.results for f in r.failures.values())


def test_a_missing_guard_fails_on_padding_that_masks_a_whole_tile():
    assert attention(Z + "flash_guarded").agrees
    bad = attention(Z + "flash_unguarded")
    assert "padding" in failing(bad)
    f = bad.results[0].failures["padding"]
    assert f.case.pad == 64 and f.where[0] == 0  # batch 0: its first tile of 64 keys fully masked
    assert [x.key for x in f.faults] == ["missing_neg_inf_guard"]
    assert "Fix: while m = −∞ exponentiate against a finite stand-in (0)" in bad.to_markdown()


@pytest.mark.slow
@pytest.mark.parametrize("fn, classes, named", [
    ("flash_fixed_1024", {"very-long"}, ["keys_past_bound_dropped"]),  # N = 1025: the keys from 1024 on
    ("flash_from_key_1024", {"very-long"}, []),  # values of the key before: no fault of the catalogue
    ("flash_fixed_tile4", {"very-long"}, []),
    ("flash_key_4096", {"very-long"}, ["keys_past_bound_dropped"]),  # N = 4096: a loop bound of N − 1
])
def test_faults_past_the_1024th_key_or_in_the_4th_tile_of_128(fn, classes, named):
    assert attention(Z + "flash_fixed").agrees
    bad = attention(Z + fn)
    assert failing(bad) == classes, bad.to_markdown()
    f = bad.results[0].failures["very-long"]
    assert f.case.N >= 1024 and [x.key for x in f.faults] == named


@pytest.mark.slow
def test_256_key_tiles_are_run_and_a_fault_only_there_is_found():
    good = attention(Z + "flash_block")
    assert good.agrees and good.results[0].coverage.as_json()["tiles"] == [1, 2, 4, 16, 32, 64, 128, 256]
    bad = attention(Z + "flash_block_256")
    assert failing(bad) == {"tiles"} and bad.results[0].failures["tiles"].case.block == 256


@pytest.mark.slow
@pytest.mark.parametrize("fn, form", [("keep_mask", "keep"), ("drop_mask", "drop")])
def test_boolean_masks_are_passed_as_the_kernel_takes_them(fn, form):
    good = attention(Z + fn, mask=form)
    assert good.agrees, good.to_markdown()
    assert {"masked", "padding", "fully-masked", "causal", "window"} <= set(good.results[0].per_class)
    flipped = attention(Z + fn, mask="drop" if form == "keep" else "keep")
    assert not flipped.agrees


def test_the_report_states_what_ran(capsys):
    code = main(["impl", Z + "gqa", "--as", "softmax", "--form", "attention", "--dtype", "float64", "--gqa",
                 "--examples", "0"])
    out = capsys.readouterr().out
    assert code == 0
    assert ("What ran (float64): key lengths up to 4096 (1024, 1025, 2048, 4096 among them); up to 300 queries; "
            "start_q up to 0; no tile size passed below a key length; no split count of 2 or more passed; "
            "query heads per kv head 1, 2, 4, 8;") in out
    assert "- not tested, several tiles (a tile size passed below the row length): the kernel takes no tile size" in out


def test_a_kernel_asserting_d_at_least_64_needs_no_adapter(tmp_path):
    code = tmp_path / "d64.py"
    code.write_text("import sys\nsys.path.insert(0, '.')\nfrom tests.zoo.attention_model import gqa\n\n"
                    "def attend(q, k, v, *, scale):\n"
                    "    assert q.shape[-1] >= 64 and q.shape[-1] % 64 == 0, 'head dim'\n"
                    "    return gqa(q, k, v, scale=scale)\n")
    report = attention(f"{code}:attend", assume=["min-head-dim=64", "head-dim-multiple=64"])
    assert report.agrees and report.results[0].coverage.as_json()["head_dims"] == [64, 128]
    assert "head dimensions are at least 64; head dimensions are multiples of 64" in report.to_markdown()
    free = attention(f"{code}:attend")  # without it, d = 16 is valid: the assertion is the kernel's failure
    assert free.verdict == "disagrees" and free.results[0].failures["finite"].what == "raised"
    assert "- the kernel raised `AssertionError: head dim (at d64.py:6, in attend)`" in free.to_markdown()


@pytest.mark.slow
def test_pytorch_sdpa_and_flex_attention_agree_through_their_own_signatures():
    require_module("torch", "torch kernels")
    torch_zoo = "tests/zoo/attention_torch.py:"
    sdpa = attention(torch_zoo + "sdpa_torch", dtypes=("float32",), gqa=True)
    assert sdpa.agrees, sdpa.to_markdown()
    assert sdpa.roles == {"causal": "is_causal", "gqa": "enable_gqa", "mask": "attn_mask", "scale": "scale"}
    assert {"gqa", "causal", "masked", "padding", "fully-masked", "very-long"} <= set(sdpa.results[0].per_class)
    for fn, form in (("flex", "block-mask"), ("flex_mod", "mask-mod")):
        report = attention(torch_zoo + fn, dtypes=("float32",), mask=form)
        assert report.agrees, report.to_markdown()
        assert {"causal", "masked", "padding", "window"} <= set(report.results[0].per_class)


def test_the_kernel_forms_rows_of_1025_keys_are_calls_of_the_model():
    """The kernel forms get rows projected from calls (the scores each query sees, −∞ where masked): the
    same scores the attention reference forms from the call's q and k."""
    from derive.impl.cases.attention import arrays, call_rows
    from derive.impl.cases.kernel import LONG_ROWS, PROJECTED, lengths
    from derive.impl.exact.reference import exact_attention

    call = Case("very-long", H=2, Hkv=1, M=2, N=PROJECTED, D=64, causal=True, start_q=PROJECTED - 2)
    rows = call_rows(call)
    assert np.array_equal(np.array(LONG_ROWS[PROJECTED][:4]), rows)
    q, k, v, _ = arrays(call, 1 / 8, lambda a: a)
    ex = exact_attention(q, k, v, 1 / 8, call.keep(), None, None, 30)
    assert np.array_equal(ex.rows.reshape(-1, PROJECTED), rows)
    assert PROJECTED in lengths() and PROJECTED not in lengths(thin=True)
    padded = np.array(LONG_ROWS[PROJECTED][8:12])
    assert np.isinf(padded[:2, :256]).all() and np.isinf(padded[2:, :128]).all() and np.isfinite(padded[:, 256:]).all()


@pytest.mark.slow
@pytest.mark.triton
def test_a_triton_kernel_asserting_d_at_least_64_runs_inside_its_contract():
    require_module("torch", "the Triton kernels take torch tensors")
    require_module("triton", "the Triton zoo")
    report = attention("tests/zoo/triton_kernels/attention.py:attention_d64", norm="sink", dtypes=("float32",),
                       causal=True, assume=["min-head-dim=64", "head-dim-multiple=64"])
    assert report.agrees, report.to_markdown()
    assert report.results[0].coverage.as_json()["head_dims"] == [64, 128]


def _one_query(scores, values, dtype="float32"):
    """A call of one query over keys with the given scores (a one-hot q, k carrying the scores) and
    values (dv = 1): (the checker's compare, the case, the exact reference, v, keep, tol)."""
    from derive.impl.exact.tolerance import tolerance
    from derive.impl.judge.attention import AttentionChecker
    from derive.kernels.layouts import parse_layout

    from derive.impl.exact.reference import exact_attention
    n = len(scores)
    case = Case("finite", M=1, N=n, D=1, Dv=1)
    q = np.ones((1, 1, 1, 1))
    k = np.array(scores, dtype=np.float64).reshape(1, 1, n, 1)
    v = np.array(values, dtype=np.float64).reshape(1, 1, n, 1)
    keep = np.ones((1, 1, n), dtype=bool)
    L = parse_layout("bhnd")
    checker = AttentionChecker(None, None, L, L, {}, setup_of(), 1.0, "-inf", False, 30)
    ex = exact_attention(q, k, v, 1.0, keep, None, None, 30, None, np.ones(1, dtype=bool))
    return checker, case, ex, v, keep, tolerance(dtype)


def test_the_float32_floor_scales_with_the_values_a_flushed_subnormal_weight_multiplies():
    """A weight of e^−88.4 ≈ 4·10⁻³⁹ (subnormal in float32) beside v = 3, the other key's value 0: the
    exact out is 1.2·10⁻³⁸ > FLT_MIN. Flushing the weight to 0 (as SDPA's kernels may) is within the
    floor FLT_MIN·Σ|v|; dropping a normal weight of e^−69 ≈ 10⁻³⁰ is not."""
    checker, case, ex, v, keep, tol = _one_query([0.0, -88.4], [0.0, 3.0])
    assert 1.18e-38 < ex.out[0, 0, 0, 0] < 1.3e-38
    flushed = {"out": np.zeros((1, 1, 1, 1))}
    assert checker.compare(case, flushed, ex, v, keep, tol) is None
    checker, case, ex, v, keep, tol = _one_query([0.0, -69.0], [0.0, 3.0])
    fail = checker.compare(case, {"out": np.zeros((1, 1, 1, 1))}, ex, v, keep, tol)
    assert fail is not None and fail.what == "out" and fail.bounds[0] < 1e-32
    # the floor is FLT_MIN·Σ|v|, not more: an error of 4·FLT_MIN beside Σ|v| = 3 fails
    checker, case, ex, v, keep, tol = _one_query([0.0, -88.4], [0.0, 3.0])
    off = {"out": np.full((1, 1, 1, 1), ex.out[0, 0, 0, 0] + 4 * 2.0**-126)}
    assert checker.compare(case, off, ex, v, keep, tol) is not None


@pytest.mark.parametrize("fn,fault", [("sink_scaled", "scale_on_extra"), ("sink_log2e_missing", "missing_log2e"),
                                      ("sink_unshifted", "unshifted_extra"), ("sink_per_tile", "extra_per_tile"),
                                      ("sink_values_late", None), ("sink_right", "agrees")])
def test_the_attention_form_names_the_catalogues_fault_and_its_fix(fn, fault):
    """A fault of the extra logit is named from the one catalogue (the record the online and split forms
    use), with its fix; a kernel wrong in another way is named no fault; the correct one agrees."""
    from derive.kernels.faults import by_key

    report = attention(Z + fn, norm="sink")
    if fault == "agrees":
        assert report.agrees, report.to_markdown()
        return
    fails = [f for r in report.results for f in r.failures.values()]
    assert fails and not report.agrees
    named = {x.key for f in fails for x in f.faults}
    if fault is None:
        assert named == set(), report.to_markdown()
        return
    assert named == {fault}, report.to_markdown()
    assert f"matches the known fault **{by_key(fault).title}**" in report.to_markdown()
    assert "Fix: " + by_key(fault).fix in report.to_markdown()


def test_an_lse_laid_out_bhm_beside_an_out_bmhd_is_read_in_its_own_layout():
    report = attention(Z + "flash_lse_bhm", layout="bnhd", lse_layout="bhn")
    assert report.agrees and report.results[0].returned == "out, lse", report.to_markdown()
    bad = attention(Z + "flash_lse_bhm_base2", layout="bnhd", lse_layout="bhn")
    assert {f.what for r in bad.results for f in r.failures.values()} == {"lse"}
    with pytest.raises(InputError, match="--lse-layout 'bhd': expected the axes of out without d"):
        attention(Z + "flash_lse_bhm", layout="bnhd", lse_layout="bhd")


def test_the_cli_takes_an_lse_layout(capsys):
    code = main(["impl", Z + "flash_lse_bhm", "--as", "softmax", "--form", "attention", "--layout", "bnhd",
                 "--lse-layout", "bhn", "--dtype", "float64", "--examples", "0"])
    assert code == 0, capsys.readouterr()
    code = main(["impl", Z + "flash_lse_bhm", "--as", "softmax", "--form", "row", "--lse-layout", "bhn"])
    assert code == 2 and "--lse-layout" in capsys.readouterr().err


def test_repeated_dtype_options_add_up(capsys):
    code = main(["impl", Z + "gqa", "--as", "softmax", "--form", "attention", "--gqa", "--dtype", "float64",
                 "--dtype", "float32", "--examples", "0", "--format", "json"])
    import json

    data = json.loads(capsys.readouterr().out)
    assert code == 0 and [r["dtype"] for r in data["results"]] == ["float64", "float32"]


def test_softmax1_with_its_one_unshifted_is_named_in_the_attention_form():
    from derive.kernels.faults import by_key

    report = attention(Z + "softmax1_unshifted", norm="softmax1")
    named = {x.key for r in report.results for f in r.failures.values() for x in f.faults}
    assert not report.agrees and named == {"unshifted_extra"}, report.to_markdown()
    assert "Fix: " + by_key("unshifted_extra").fix in report.to_markdown()


def test_the_dv_floor_scales_with_the_cotangents_a_flushed_subnormal_weight_multiplies():
    from derive.impl.exact.reference import exact_attention
    from derive.impl.exact.tolerance import dv_magnitude

    checker, case, _, v, keep, tol = _one_query([0.0, -88.4], [0.0, 3.0])
    q, k = np.ones((1, 1, 1, 1)), np.array([0.0, -88.4]).reshape(1, 1, 2, 1)
    g = np.full((1, 1, 1, 1), 3.0)
    ex = exact_attention(q, k, v, 1.0, keep, None, None, 30, g, np.ones(1, dtype=bool))
    got = {name: ex.grads[name][0].copy() for name in ("dq", "dk", "dv")}
    assert 1.18e-38 < got["dv"][0, 0, 1, 0] < 1.3e-38
    got["dv"][0, 0, 1, 0] = 0.0  # the weight e^−88.4 flushed to 0
    assert checker.compare_grads(case, got, ex, tol) is not None  # against FLT_MIN alone: refused
    assert checker.compare_grads(case, got, ex, tol, dv_magnitude(keep, g, 1)) is None
    got["dv"][0, 0, 1, 0] = -4 * 2.0**-126
    assert checker.compare_grads(case, got, ex, tol, dv_magnitude(keep, g, 1)) is not None


# ---- a raise or a crash is the failure of its input; the rest is still reported -------------------------

BROKEN = "tests/zoo/attention_broken.py:"


def test_a_kernel_raising_past_1024_keys_fails_there_and_passes_the_rest():
    report = attention(BROKEN + "raises_past_1024", dtypes=("float64", "float32"))
    assert report.verdict == "disagrees" and report.exit_code() == 1
    for r in report.results:
        assert set(r.failures) == {"very-long"}  # filed there; long rows and the rest fail with it
        f = r.failures["very-long"]
        assert (f.what, f.case.N) == ("raised", 1025)
        assert f.note == "RuntimeError: at most 1024 keys, got 1025 (at attention_broken.py:29, in raises_past_1024)"
        assert {"finite", "scores", "late", "layout"} <= {c for c in r.per_class if c not in r.failed_in}
    md = report.to_markdown()
    assert "| finite rows (one batch, one head, dense q and k, none of the features below) | passes (4) | passes (4) |" \
        in md
    assert "- the kernel raised `RuntimeError: at most 1024 keys, got 1025 (at attention_broken.py:29, in " \
           "raises_past_1024)`" in md
    assert report.as_json()["results"][0]["failures"]["very-long"]["what"] == "raised"


def test_a_kernel_crashing_in_float32_is_reported_with_float64_agreeing():
    report = attention(BROKEN + "aborts_in_float32", dtypes=("float64", "float32"))
    f64, f32 = report.results
    assert (f64.verdict, f32.verdict, report.verdict) == ("agrees", "disagrees", "disagrees")
    assert f32.failures and all(f.what == "crashed" for f in f32.failures.values())
    assert f32.failures["finite"].note == "the process running it was killed by SIGABRT"
    assert "- the kernel crashed: the process running it was killed by SIGABRT" in report.to_markdown()


def test_a_kernel_that_never_returns_gives_no_verdict():
    with pytest.raises(InputError, match=r"aborts_in_float32 crashed on every call \(B = 1, H = 1, 1 query, 1 key, "
                                         r"d = 16, float32, the first\): no output was compared; no verdict"):
        attention(BROKEN + "aborts_in_float32", dtypes=("float32",))


def test_an_exit_or_a_hang_is_still_a_usage_error_and_no_verdict(tmp_path):
    code = tmp_path / "leaves.py"
    code.write_text("import sys, time\n\ndef exits(q, k, v, *, scale):\n    sys.exit(0)\n\n"
                    "def hangs(q, k, v, *, scale):\n    time.sleep(60)\n")
    with pytest.raises(InputError, match=r"exits called sys.exit\(0\) while being called in attention form"):
        attention(f"{code}:exits")
    with pytest.raises(InputError, match="did not finish within the timeout of 2 s"):
        check_implementation(f"{code}:hangs", "softmax", form="attention", dtypes=("float64",), examples=0,
                             timeout=2.0, attention={"layout": "bhnd", "out_layout": None, "scale": None,
                                                     "causal": False, "start_q": None, "window": 0,
                                                     "mask_value": "-inf", "backward": False, "kw_names": {}})


@pytest.mark.slow
def test_the_kernels_own_error_is_shown_when_numpy_arrays_make_it_raise_too():
    require_module("torch", "a torch kernel")
    report = attention("tests/zoo/attention_torch.py:needs_two_keys")
    f = report.results[0].failures["finite"]
    assert f.note.startswith("ValueError: this kernel needs two keys or more (at attention_torch.py:")


# ---- layouts with a group axis and merged heads ---------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st_layout=st.sampled_from(
    [("bhnd", "--layout"), ("bnhd", "--layout"), ("nhgd", "--layout"), ("bnhgd", "--layout"), ("hgnd", "--layout"),
     ("bn(hd)", "--out-layout"), ("n(hgd)", "--out-layout"), ("bn(hgd)", "--out-layout")]),
       kv=st.integers(1, 3), groups=st.sampled_from([1, 2, 4]))
def test_a_layout_round_trips_and_a_group_axis_orders_query_heads_by_kv_head(st_layout, kv, groups):
    from derive.kernels.layouts import parse_layout

    L = parse_layout(*st_layout)
    H = kv * groups
    a = np.arange(2 * H * 3 * 5, dtype=np.float64).reshape(2, H, 3, 5) if "b" in L.axes else \
        np.arange(H * 3 * 5, dtype=np.float64).reshape(1, H, 3, 5)
    y = L.to_layout(a, groups=groups)
    assert y.shape == L.shape(a.shape[0], H, 3, 5, groups)
    assert np.array_equal(L.from_layout(y, groups=groups, heads=H), a)
    if "g" in L.axes and not L.flat:  # query head h·G + g sits at (kv head h, member g)
        at = {x: i for i, x in enumerate(L.axes)}
        pick = [0] * y.ndim
        pick[at["h"]], pick[at["g"]] = kv - 1, groups - 1
        pick[at["n"]], pick[at["d"]] = 2, 4
        if "b" in at:
            pick[at["b"]] = 0
        assert y[tuple(pick)] == a[0, H - 1, 2, 4]
    assert L.kv.axes == L.axes.replace("g", "")


@pytest.mark.parametrize("text, flag, says", [
    ("bn(hd)", "--layout", "g right after h splits q's heads by kv head (nhgd)."),
    ("nghd", "--layout", "g right after h"),
    ("bnh(d)", "--out-layout", "An output may merge its head axes with d at the end: bn(hd), n(hgd)."),
    ("b(nhd)", "--out-layout", "An output may merge its head axes with d at the end"),
])
def test_a_layout_outside_the_grammar_is_refused_with_what_is_expected(text, flag, says):
    from derive.kernels.layouts import parse_layout

    with pytest.raises(InputError) as err:
        parse_layout(text, flag)
    assert str(err.value).startswith(f"{flag} {text!r}: a layout names the axes") and says in str(err.value)


def test_an_output_with_the_heads_merged_is_read_through_out_layout():
    good = attention(Z + "flat_heads", layout="bnhd", out_layout="bn(hd)")
    assert good.agrees, good.to_markdown()
    assert "layout bnhd, out in bn(hd)" in good.to_markdown()
    with pytest.raises(InputError) as err:
        attention(Z + "flat_heads", layout="bnhd")
    assert "returned out of shape [1, 1, 16]; expected [1, 1, 1, 16] (its last axis holds the heads and the head " \
           "dimension merged: state --out-layout with them in parentheses, e.g. bn(hd))" in str(err.value)


@pytest.mark.slow
def test_a_group_axis_layout_with_sinks_per_query_head_needs_no_adapter():
    kw = {"layout": "nhgd", "out_layout": "n(hgd)", "gqa": True, "causal": True}
    good = attention(Z + "grouped_axis", norm="sink", assume=["equal-lengths"], **kw)
    assert good.agrees, good.to_markdown()
    bad = attention(Z + "grouped_axis_wrong_group", norm="sink", assume=["equal-lengths"], **kw)
    assert failing(bad) == {"gqa"}, bad.to_markdown()


def test_half_precision_long_rows_are_judged_as_summing_in_float32():
    """κ's n − 1 roundings of a sum are float32's in float16 and bfloat16 (fused kernels and PyTorch's
    attention accumulate there), so rows of 1024 keys and more are judged; the small-score call of the
    fixed list gives bfloat16 judged long rows too; --assume half-accumulation restores the half sums."""
    from derive.impl.exact.tolerance import TOLERANCES, kappas

    row = [[0.5] * 4096]
    assert kappas(row, [{}]) == [4096.0]  # 2·0.5 + 4095
    f16, bf16 = TOLERANCES["float16"], TOLERANCES["bfloat16"]
    assert f16.sums == 2.0 ** -13 and bf16.sums == 2.0 ** -16 and TOLERANCES["float32"].sums == 1.0
    assert kappas(row, [{}], f16.sums) == [1.0 + 4095 * 2.0 ** -13]
    assert not f16.vacuous(kappas(row, [{}], f16.sums)[0]) and f16.own_sums().sums == 1.0
    small = [c for c in cases(setup_of()) if c.cls == "very-long" and c.pattern == "drawn"]
    assert [(c.N, c.D, c.amp) for c in small] == [(1025, 64, 1.0)]


def test_a_float16_kernel_summing_in_float16_is_judged_with_its_own_sums_when_stated(tmp_path):
    require_module("torch", "torch kernels")
    sdpa = "tests/zoo/attention_torch.py:sdpa_torch"
    report = attention(sdpa, dtypes=("float16", "bfloat16"), gqa=True)
    assert report.agrees, report.to_markdown()
    assert all(r.per_class["very-long"] for r in report.results)
    md = report.to_markdown()
    assert "float16 and bfloat16 are judged as summing in float32, as fused kernels and PyTorch's attention do " \
           "(--assume half-accumulation for a kernel that sums in them)" in md
    own = attention(sdpa, dtypes=("float16",), gqa=True, assume=["half-accumulation"])
    assert own.verdict == "undecided" and "in float16 no row of very long rows (1024 keys or more); padding" in \
        own.to_markdown()
    assert "in float16 and bfloat16 the kernel sums in that precision" in own.to_markdown()


# ---- installed code by import path -------------------------------------------------------------------------


def test_a_builtin_states_its_signature_in_its_docstring_which_is_parsed_not_run():
    from derive.impl.run.attention_child import _doc_signature

    def sdpa(*args, **kwargs):
        return None

    sdpa.__doc__ = ("sdpa(query, key, value, attn_mask=None, dropout_p=0.0,\n        is_causal=False, scale=None, *, "
                    "enable_gqa=False) -> Tensor:\n\n    Computes attention.")
    sig = _doc_signature(sdpa)
    assert [(p.name, p.kind.name, p.default) for p in sig.parameters.values()] == [
        ("query", "POSITIONAL_OR_KEYWORD", sig.empty), ("key", "POSITIONAL_OR_KEYWORD", sig.empty),
        ("value", "POSITIONAL_OR_KEYWORD", sig.empty), ("attn_mask", "POSITIONAL_OR_KEYWORD", None),
        ("dropout_p", "POSITIONAL_OR_KEYWORD", 0.0), ("is_causal", "POSITIONAL_OR_KEYWORD", False),
        ("scale", "POSITIONAL_OR_KEYWORD", None), ("enable_gqa", "KEYWORD_ONLY", False)]
    sdpa.__doc__ = "sdpa(q, k, v, scale=__import__('os').system('exit 3'))\n"
    assert _doc_signature(sdpa).parameters["scale"].default is ...  # present, never evaluated
    sdpa.__doc__ = "other(q, k, v)\n"
    assert _doc_signature(sdpa) is None  # another function's signature is not taken
    sdpa.__doc__ = "sdpa(q, k, v\n"
    assert _doc_signature(sdpa) is None


def test_a_causal_flag_goes_alone_when_the_call_passes_no_mask():
    """A kernel with a causal flag and a mask argument but no window keyword (PyTorch's SDPA) gets its
    window through the mask only when the call has one, and its causal flag alone otherwise (SDPA refuses
    both at once)."""
    setup = setup_of(takes=("scale", "causal", "mask"), causal=True)
    plain = next(c for c in cases(setup) if c.cls == "headdim")
    assert not plain.mask and not plain.window and setup.in_mask(plain) == ()
    windowed = next(c for c in cases(setup) if c.cls == "window")
    assert setup.in_mask(windowed) == ("causal", "window")


@pytest.mark.slow
def test_pytorch_sdpa_by_its_import_path_agrees_forward_and_backward():
    require_module("torch", "torch kernels")
    report = attention("torch.nn.functional:scaled_dot_product_attention", dtypes=("float64", "float32"), gqa=True,
                       causal="top-left", backward=True)
    assert report.agrees, report.to_markdown()
    assert report.roles == {"causal": "is_causal", "gqa": "enable_gqa", "mask": "attn_mask", "scale": "scale"}
    assert report.results[0].returned == "out, dq, dk, dv"
    assert {"gqa", "causal", "padding", "window", "very-long"} <= set(report.results[0].per_class)


def test_a_call_whose_every_row_has_no_value_still_has_the_gradient_shapes():
    """Every query of a causal call behind padding sees only masked keys: no row has a value, so none
    carries a cotangent; the exact gradient of v keeps v's head dimension (it was 0 wide: an internal error)."""
    from derive.impl.exact.reference import exact_attention

    B, H, M, N, D = 1, 1, 2, 4, 3
    q, k, v = np.ones((B, H, M, D)), np.ones((B, H, N, D)), np.ones((B, H, N, 5))
    keep = np.zeros((B, M, N), dtype=bool)
    ex = exact_attention(q, k, v, 0.5, keep, None, None, 30, g=np.ones((B, H, M, 5)))
    assert not ex.defined.any() and ex.grads["dv"][0].shape == (B, H, N, 5)
