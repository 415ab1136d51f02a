"""Contracts (``--assume``) and every failure class of the kernel forms.

A contract states what a kernel accepts; derive makes only inputs inside it and says what it
assumed. A kernel-form check no longer stops at its first failure: each class of input that
fails is listed with its smallest counterexample, and the classes that pass are named."""

from __future__ import annotations

import math

import pytest

from derive.cli import main
from derive.errors import InputError
from derive.impl import check_implementation
from derive.impl.cases.contract import GRAMMAR, parse_contract
from derive.impl.exact.tolerance import DTYPES

Z = "tests/zoo/kernels_contract.py:"
NP = "tests/zoo/kernels_numpy.py:"


def test_grammar_items_parse_and_describe():
    c = parse_contract(["finite-sinks=-20:20", "finite-scores", "block=mult16", "splits=1:8", "min-keys=1",
                        "no-fully-masked", "dtypes=float32,bfloat16", "equal-lengths", "equal-head-dims"], DTYPES)
    assert c.sink_ok(20.0) and c.sink_ok(-20.0) and not c.sink_ok(20.5) and not c.sink_ok(-math.inf)
    assert c.block_ok(32) and not c.block_ok(8) and not c.block_ok(24)
    assert c.splits_ok(8) and not c.splits_ok(9)
    assert c.masked_as("float32") == -3.4028234663852886e38 and c.masked_as("float16") == -65504.0
    assert c.dtype_ok("bfloat16") and not c.dtype_ok("float64")
    assert c.describe() == [
        "sinks are finite and in [-20, 20]", "no score is −∞: a masked key is passed as a finite mask value",
        "tile sizes are multiples of 16", "split counts are in [1, 8]", "every row has at least 1 key",
        "no row has every key masked", "the dtypes are float32, bfloat16", "as many keys as queries",
        "the value head dimension equals the key head dimension"]
    assert parse_contract(["block=pow2"]).block_ok(64) and not parse_contract(["block=pow2"]).block_ok(48)
    assert parse_contract(["block=64,16"]).block == (16, 64)
    assert parse_contract(["finite-sinks=-1:1"]).sink_values((0.0, 30.0, -math.inf)) == (0.0, -1.0, 1.0)


@pytest.mark.parametrize("item, message", [
    ("finite-sinks", "finite-sinks needs a value"),
    ("finite-sinks=a:1", "'a' is not a number"),
    ("finite-sinks=-inf:1", "'-inf' is not a finite number"),
    ("finite-sinks=1", "expected a range LO:HI"),
    ("finite-sinks=2:1", "the range 2:1 is empty"),
    ("finite-scores=yes", "finite-scores takes no value"),
    ("block=odd", "block is pow2, mult16 or a list of whole numbers"),
    ("block=0", "a tile size is at least 1"),
    ("splits=0:4", "a split count is at least 1"),
    ("min-keys=-1", "min-keys is at least 0"),
    ("dtypes=float8", "unknown dtype 'float8'"),
    ("sinks=0:1", "unknown item 'sinks'"),
    ("wat", "unknown item 'wat'"),
])
def test_bad_contract_items_are_input_errors_naming_the_grammar(item, message):
    with pytest.raises(InputError) as exc:
        parse_contract([item], DTYPES)
    assert message in str(exc.value) and GRAMMAR in str(exc.value)


def test_stated_twice_is_an_error():
    with pytest.raises(InputError, match="block is stated twice"):
        parse_contract(["block=pow2", "block=mult16"])


def test_cli_bad_assume_exits_2_one_line(capsys):
    code = main(["impl", NP + "sink_online", "--as", "sink", "--form", "online", "--assume", "finite-sinks=x"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "--assume 'finite-sinks=x'" in err


@pytest.mark.parametrize("item, message", [
    ("block=pow2", "--assume 'block=pow2' applies to a kernel form (--form attention, online, split or backward), "
                   "not row; the row form takes finite-sinks, finite-scores, min-keys, no-fully-masked, dtypes"),
    ("equal-lengths", "--assume 'equal-lengths' applies to a kernel form"),
    ("finite-sinks=-1:1", "--assume 'finite-sinks=-1:1': the normalizer has no parameter (no sink) to bound"),
])
def test_kernel_items_of_assume_are_refused_in_the_row_form(capsys, item, message):
    code = main(["impl", "tests/zoo/softmax_numpy.py:softmax", "--as", "softmax", "--assume", item])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


ROW_NAN = "tests/zoo/softmax1_nan_masked.py:softmax1"


def test_row_form_contract_no_fully_masked_leaves_those_rows_unjudged_and_says_so():
    # NaN where every key is masked and right elsewhere: inside no-fully-masked it agrees
    bad = check_implementation(ROW_NAN, "softmax1", dtypes=("float64",))
    assert not bad.agrees
    good = check_implementation(ROW_NAN, "softmax1", dtypes=("float64",), assume=["no-fully-masked"])
    assert good.agrees, good.to_markdown()
    md = good.to_markdown()
    assert "- assumed (contract, `--assume`): no row has every key masked; inputs outside it were not made" in md
    assert good.as_json()["contract"] == {"items": ["no-fully-masked"], "assumed": ["no row has every key masked"]}
    assert good.results[0].masked_rows == 0  # not one fully masked row was judged


def test_row_form_contract_finite_scores_passes_masked_keys_as_finfo_min_and_judges_them_as_masked():
    # with finfo.min for −∞ the max is finite, so the NaN goes; the exact weights are those of the masked row
    good = check_implementation(ROW_NAN, "softmax1", dtypes=("float64", "float32"), assume=["finite-scores"])
    assert good.agrees, good.to_markdown()
    assert good.results[0].masked_rows > 0
    assert "no score is −∞: a masked key is passed as a finite mask value" in good.to_markdown()
    # a kernel that ignores the mask value (treats finfo.min as a score) is still caught: the exact row is masked
    wrong = check_implementation("tests/zoo/softmax1_unshifted.py:softmax1", "softmax1", dtypes=("float64",),
                                 assume=["finite-scores"])
    assert not wrong.agrees


def test_row_form_contract_sinks_min_keys_and_dtypes():
    report = check_implementation("tests/zoo/sink_numpy.py:sink", "sink", dtypes=("float64", "float32"),
                                  assume=["finite-sinks=-5:5", "min-keys=2", "dtypes=float32"])
    assert [r.dtype for r in report.results] == ["float32"]
    assert report.notes == ["float64 was not tested: outside the contract (dtypes float32)"]
    md = report.to_markdown()
    assert ("assumed (contract, `--assume`): sinks are finite and in [-5, 5]; every row has at least 2 keys; "
            "the dtypes are float32; inputs outside it were not made; float64 was not tested") in md
    f = report.results[0].failure
    assert f is None or (len(f.row) >= 2 and -5 <= f.params["s"] <= 5)


def test_a_kernel_wrong_only_at_infinite_sinks_fails_that_class_and_passes_inside_its_contract():
    report = check_implementation(Z + "sink_online_finite_only", "sink", form="online", dtypes=("float64",))
    r = report.results[0]
    assert set(r.classes) == {"sinks"}
    assert r.classes["sinks"].call.params == {"s": -math.inf}
    assert {"finite", "masked", "fully-masked", "tiles", "long", "layout", "empty"} <= set(r.class_rows)
    inside = check_implementation(Z + "sink_online_finite_only", "sink", form="online", dtypes=("float64",),
                                  assume=["finite-sinks=-20:20"])
    assert inside.agrees
    md = inside.to_markdown()
    assert "Assumed (contract): sinks are finite and in [-20, 20]. Inputs outside it were not made." in md
    assert "| extreme sinks (|s| ≥ 30, −∞, or a bound of the contract's range) | passes" in md


def test_a_kernel_refusing_odd_tiles_is_checked_inside_block_pow2():
    with pytest.raises(InputError, match="block must be a power of two, got 3"):
        check_implementation(Z + "sink_online_pow2_tiles", "sink", form="online", dtypes=("float64",))
    report = check_implementation(Z + "sink_online_pow2_tiles", "sink", form="online", dtypes=("float64",),
                                  assume=["block=pow2"])
    assert report.agrees


def test_finite_scores_passes_masked_keys_as_finfo_min():
    # the unguarded kernel is NaN on a row whose first tile is all −∞; with masked keys as finfo.min it is right
    bad = check_implementation(NP + "softmax_online_unguarded", "softmax", form="online", dtypes=("float64",))
    assert set(bad.results[0].classes) == {"masked"}
    good = check_implementation(NP + "softmax_online_unguarded", "softmax", form="online", dtypes=("float64",),
                                assume=["finite-scores"])
    assert good.agrees, good.to_markdown()


@pytest.mark.slow
def test_every_class_is_listed_not_the_first_failure_only():
    report = check_implementation(Z + "sink_online_late_rows", "sink", form="online", dtypes=("float64",),
                                  per_head=True)
    r = report.results[0]
    assert "late" in r.classes and r.classes["late"].row >= 8
    # a row is filed under the first class that applies, so the fault shows in other classes too,
    # but every class's smallest counterexample is a row after the 8th, and the rows before pass
    assert len(r.classes) > 1 and all(f.row >= 8 for f in r.classes.values())
    assert {"tiles", "long", "empty", "late"} <= set(r.class_rows)
    # every call has at least 16 rows, so the fault is found without heads too
    plain = check_implementation(Z + "sink_online_late_rows", "sink", form="online", dtypes=("float64",))
    assert not plain.agrees and all(f.row >= 8 for f in plain.results[0].classes.values())


def test_a_failing_row_fails_every_class_it_belongs_to_not_only_the_one_it_is_filed_under():
    # every row it gets wrong is masked and long: filed under "masked" (or "sinks", which comes first, for a row
    # with an extreme sink), and "long" must not pass
    report = check_implementation(Z + "sink_online_long_masked", "sink", form="online", dtypes=("float64",))
    r = report.results[0]
    assert set(r.classes) == {"sinks", "masked"} and len(r.classes["masked"].call.x[r.classes["masked"].row]) == 17
    assert r.failed_in["long"] == "masked" and r.failed_in["masked"] == "masked"
    assert {"tiles", "late"} <= set(r.failed_in)  # the failing rows also have many tiles, some are late
    assert "finite" not in r.failed_in and r.class_rows["finite"] > 0
    md = report.to_markdown()
    assert "| long rows (17 keys or more) | **fails**, see masked rows (some keys masked, not all) |" in md
    assert "| finite rows (none of the above) | passes (" in md
    assert "every other class it belongs to fails with it" in md
    data = report.as_json()["classes"][0]
    assert data["fail_with"]["long"] == "masked" and "long" not in data["passes"]


def test_dtypes_outside_the_contract_are_left_out_with_a_note():
    report = check_implementation(NP + "sink_online", "sink", form="online", dtypes=("float64", "float32"),
                                  assume=["dtypes=float32"])
    assert [r.dtype for r in report.results] == ["float32"]
    assert "float64 was not tested: outside the contract (dtypes float32)" in report.notes


def test_row_form_lists_every_failing_class_and_the_passing_ones():
    # m = max x without max(0, ·): NaN only where every key is masked
    report = check_implementation("tests/zoo/softmax1_nan_masked.py:softmax1", "softmax1", dtypes=("float64",))
    r = report.results[0]
    assert set(r.classes) == {"masked", "long", "edge-fully-masked"}  # the long phase draws masked rows too
    for cls in ("masked", "long", "edge-fully-masked"):
        assert all(v == -math.inf for v in r.classes[cls].row), cls
    assert r.class_inputs["finite"] > 0 and r.class_inputs["edge-extreme"] > 0 and "finite" not in r.classes
    md = report.to_markdown()
    assert "| short finite rows (Hypothesis) | passes (" in md and "| fixed fully masked rows | **fails** |" in md
    data = report.as_json()["dtypes"][0]
    assert data["classes"]["finite"] == "passes" and data["classes"]["masked"] == "fails"


def test_row_form_tiling_fault_fails_long_rows_only():
    report = check_implementation("tests/zoo/tiled.py:softmax1_tiled_16_no_rescale", "softmax1", dtypes=("float64",))
    classes = set(report.results[0].classes)
    assert {"long", "edge-long"} <= classes and not {"finite", "masked", "edge", "edge-extreme"} & classes
    assert len(report.results[0].classes["edge-masked"].row) > 16  # a long fixed row that also has masked keys
