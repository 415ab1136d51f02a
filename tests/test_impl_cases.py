"""derive impl's kernel forms on the cases a checker of real kernels must judge right: faults that
only real sizes show, correct kernels written the way real ones are, faults the diagnosis must
name (tests/zoo/kernels_cases.py), and the numeric reference kernels against the definition."""

from __future__ import annotations

import math

import numpy as np
import pytest

from derive.impl import check_implementation
from derive.impl.exact.reference import kernel_row
from derive.impl.cases.kernel import LONG_ROWS, MIN_ROWS, blocks, lengths, rows_of, split_counts
from derive.kernels import numeric

Z = "tests/zoo/kernels_cases.py:"
NEG = -math.inf


_REPORTS: dict = {}


def check(name, norm, form, **kw):
    """The report on ``name`` (a check is deterministic: tests that read the same one share it)."""
    key = (name, norm, form, tuple(sorted(kw.items())))
    if key not in _REPORTS:
        _REPORTS[key] = check_implementation(Z + name, norm, form=form, dtypes=kw.pop("dtypes", ("float64",)),
                                             examples=kw.pop("examples", 1), **kw)
    return _REPORTS[key]


def names(report) -> list[str]:
    return [m.name for m in report.diagnosis.matched] if report.diagnosis else []


# ---- the fixed list reaches real sizes ----------------------------------------------------------

def test_the_fixed_list_has_real_sizes():
    assert max(lengths()) >= 1024 and all(len(rows_of(n)) >= MIN_ROWS == 16 for n in lengths())
    assert {64, 128, 256} <= set(blocks(1024)) and 16 in blocks(1024)  # 64 tiles of 16 keys
    assert max(split_counts(1024)) == 64
    assert {64, 128, 256} <= set(blocks(1024, thin=True))


@pytest.mark.parametrize("target, where", [
    ("sink_online_drops_keys_past_64", "[16, 200], head dimension 64, block = 16"),
    # the same shape as the case above (by default)
    pytest.param("sink_online_head_dim_chunks", "[16, 200], head dimension 64, block = 16", marks=pytest.mark.slow),
    # tiles of one key past the 17th: by default in test_impl_kernels.py (past 17 tiles, the full list)
    pytest.param("sink_online_no_rescale_past_20_tiles", "[16, 40], block = 1", marks=pytest.mark.slow),
    ("sink_online_big_blocks", "[2, 8, 40], block = 40"),
    ("sink_online_batch0", "[2, 8, 2], block = 3"),
])
def test_faults_only_real_sizes_show_are_caught(target, where):
    report = check(target, "sink", "online")
    assert not report.agrees
    assert f"**Verdict: disagrees** (float64, out) on scores of shape {where}, " in report.to_markdown()


def test_a_fault_past_the_eighth_row_is_caught_there():
    report = check("sink_online_late_rows", "sink", "online")
    f = report.failure
    assert not report.agrees and f.row >= 8 and f.what == "lse"
    assert f"- failing row {f.row}: x = []" in report.to_markdown()


# ---- correct kernels written as real ones are ---------------------------------------------------

def test_ds_as_minus_the_sum_of_ds_returned_as_a_numpy_scalar_agrees():
    report = check("sink_backward_ds_from_dS", "sink", "backward", dtypes=("float32", "float64"))
    assert report.agrees, report.to_markdown()
    assert report.results[0].returned == "dx, dv, ds"


# by default: per-head sinks in the online form in test_impl_kernels.py (the head of a failing row), parameters
# by **kwargs in test_impl_attention.py (a var-keyword kernel)
@pytest.mark.slow
def test_a_kernel_for_b_h_n_with_s_of_h_and_one_with_params_agree():
    assert check("sink_online_bhn", "sink", "online", per_head=True).agrees
    kw = check("sink_online_kwargs", "sink", "online")
    assert kw.agrees and "did not change with block" not in kw.to_markdown()


def test_fully_masked_rows_follow_one_rule_with_a_note():
    finfo = check("softmax_online_finfo_min", "softmax", "online")
    assert finfo.agrees and finfo.results[0].conventions["uniform"] > 0
    assert "followed the convention uniform (the output of a row of equal scores)" in finfo.to_markdown()
    plus = check("softmax_online_lse_plus_inf", "softmax", "online")
    assert plus.agrees and "returned +∞ (FlashAttention's convention" in plus.to_markdown()


def test_a_missing_parameter_gradient_fails_unless_not_asked_for():
    bad = check_implementation("tests/zoo/kernels_numpy.py:sink_backward_no_dparams", "sink", form="backward",
                               dtypes=("float64",), examples=1)
    md = bad.to_markdown()
    assert not bad.agrees and bad.failure.what == "ds"
    assert '- ds returned: nothing (no {"s": …} in the dparams dict; --no-param-grad leaves this gradient ' \
           'unchecked)' in md
    ok = check_implementation("tests/zoo/kernels_numpy.py:sink_backward_no_dparams", "sink", form="backward",
                              dtypes=("float64",), examples=1, param_grad=False)
    assert ok.agrees and "the gradient of s was not checked (--no-param-grad)" in ok.to_markdown()


# ---- diagnoses ----------------------------------------------------------------------------------

@pytest.mark.parametrize("target, norm, form, fault, what", [
    ("softmax_online_guard_stored", "softmax", "online", "guard_stored_as_max", "out"),
    ("sink_split_missing_log2e", "sink", "split", "missing_log2e", "lse"),
    ("softmax1_split_unshifted_one", "softmax1", "split", "unshifted_extra", "lse"),
    ("sink_online_lse_per_tile", "sink", "online", "extra_per_tile", "lse"),
    ("attention_sink_default_zero", "softmax", "online", "equals-softmax1", "lse"),
    ("sink_backward_kv_only_lse_nan", "sink", "backward", "kv_only_lse_backward", "ds"),
    ("sink_backward_kv_only_p", "sink", "backward", "kv_only_lse_backward", "dx"),
])
def test_each_fault_is_named(target, norm, form, fault, what):
    report = check(target, norm, form)
    assert not report.agrees and report.failure.what == what
    assert names(report) == [fault], report.to_markdown()


def test_the_guard_fault_row_and_its_counterexample():
    md = check("softmax_online_guard_stored", "softmax", "online").to_markdown()
    assert "**Verdict: disagrees** (float64, out) on scores of shape [16, 2], block = 1." in md
    assert "- failing row 6: x = [-inf, -1000.0]" in md
    assert "- out returned: [0.0, 0.0, 0.0]" in md
    assert "**Known kernel fault: the −∞ guard stored as the running max** (`guard_stored_as_max`" in md


def test_an_lse_fault_is_matched_on_the_lse():
    md = check("sink_online_lse_per_tile", "sink", "online").to_markdown()
    assert "(in the lse returned; out is right)" in md


def test_a_sink_kernel_called_without_a_sink_computes_softmax1():
    md = check("attention_sink_default_zero", "softmax", "online").to_markdown()
    assert "**Known kernel fault: the output equals softmax₁ (QuietAttention), not softmax**" in md


def test_no_fault_is_named_against_the_counterexample_shown():
    """The kernel adds the sink per tile, but returns 5 on a row of no key: the per-tile fault
    gives 0 or NaN there, so naming it would contradict the counterexample printed."""
    report = check("sink_online_extra_per_tile_odd_empty", "sink", "online")
    assert report.failure.output == [5.0, 5.0, 5.0] and names(report) == []
    assert "No known kernel fault of the online form matches" in report.to_markdown()


# ---- the numeric reference kernels against the definition --------------------------------------

ADVERSARIAL = [
    [NEG, -1000.0], [NEG, NEG, -1000.0, -1001.0], [NEG, -800.0, -2000.0], [-1e4, NEG, -1e4], [NEG] * 3,
    [30.0, NEG, -745.5, 1e3], [0.0], [], [NEG, 1e4, NEG, -1e4],
]


@pytest.mark.parametrize("sigma", [None, 0.0, -1000.0, 1.5, NEG])
@pytest.mark.parametrize("row", ADVERSARIAL)
def test_numeric_kernels_equal_the_definition_on_adversarial_rows(row, sigma):
    n = len(row)
    v = np.arange(3 * n, dtype=float).reshape(n, 3) / 4.0 - 1.0
    ex = kernel_row(row, v, sigma, None, 30)
    x = np.array(row, dtype=float)
    got = [numeric.online(x, v, b, sigma, base2=b2) for b in (1, 2, max(1, n)) for b2 in (True, False)]
    got += [numeric.split(x, v, k, sigma) for k in (1, 2, n + 2)]
    for out, lse in got:
        if ex.defined:
            assert np.allclose(out, ex.out, rtol=1e-12, atol=1e-300), (row, sigma, out, ex.out)
            assert lse == pytest.approx(ex.lse["natural"], rel=1e-12) or lse == ex.lse["natural"]
        else:
            assert np.all(out == 0) and lse == NEG


def test_the_stored_guard_fault_is_wrong_on_the_row_of_the_issue():
    v = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    good = numeric.online(np.array([NEG, -1000.0]), v, 1, None)
    bad = numeric.online(np.array([NEG, -1000.0]), v, 1, None, fault="guard_stored_as_max")
    assert good[0].tolist() == [4.0, 5.0, 6.0] and good[1] == -1000.0
    assert bad[0].tolist() == [0.0, 0.0, 0.0] and bad[1] == NEG


def test_long_rows_hold_the_adversarial_patterns():
    rows = LONG_ROWS[1024]
    assert rows[6][-1] == -1000.0 and all(a == NEG for a in rows[6][:-1])  # the guard row
    assert rows[3][700] == 25.0  # a spike past key 64 and past tile 20 of 16 keys


# ---- --output: the report where no child can write ----------------------------------------------

def test_output_writes_the_report_to_a_file_and_nothing_to_stdout(tmp_path, capsys):
    from derive.cli import main

    out = tmp_path / "report.json"
    code = main(["impl", "tests/zoo/kernels_numpy.py:softmax1_split", "--as", "softmax1", "--form", "split",
                 "--dtype", "float64", "--examples", "1", "--format", "json", "--output", str(out)])
    got = capsys.readouterr()
    assert (code, got.out) == (0, "")
    import json

    assert json.loads(out.read_text())["agrees"] is True
    bad = main(["impl", "tests/zoo/kernels_cases.py:softmax_online_guard_stored", "--as", "softmax", "--form",
                "online", "--dtype", "float64", "--examples", "1", "--output", str(out)])
    assert bad == 1 and "**Verdict: disagrees**" in out.read_text() and capsys.readouterr().out == ""
    missing = main(["impl", "tests/zoo/kernels_numpy.py:softmax1_split", "--as", "softmax1", "--form", "split",
                    "--output", str(tmp_path / "no" / "r.md")])
    assert missing == 2 and f"--output {tmp_path / 'no' / 'r.md'}: no directory" in capsys.readouterr().err


def test_a_kernel_that_ignores_the_block_is_warned_about():
    report = check("sink_online_fixed_tiles", "sink", "online")
    assert report.agrees
    assert ("Note: the output did not change with block on rows of 17, 40, 64 keys (every tile size gave the same "
            "bits): the function may not use the block it is given") in report.to_markdown()


def test_the_search_draws_rows_of_1024_keys_and_64_splits():
    from hypothesis import find, settings

    from derive.impl.cases.rows import param_strategy
    from derive.impl.cases.kernel import kernel_cases
    from derive.normalizers.registry import get

    case = find(kernel_cases("split", {"s": param_strategy(get("sink"), "s")}, 1, long=True), lambda c: len(c[0][0]) >= 1024 and c[1] == 64,
                settings=settings(max_examples=2000, derandomize=True, database=None))
    assert len(case[0][0]) == 1024 and case[1] == 64
