"""``derive impl`` on the command line: exit codes, error lines, deterministic output."""

from __future__ import annotations

import re

import json

import pytest

from derive.cli import main
from derive.errors import InputError
from derive.testing import assert_implements

GOOD = "tests/zoo/softmax1_numpy.py:softmax1"
BAD = "tests/zoo/softmax1_unshifted.py:softmax1"
QUICK = ["--dtype", "float32", "--examples", "20"]


def run(capsys, *argv):
    code = main(["impl", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_agreeing_implementation_exits_0(capsys):
    code, out, err = run(capsys, GOOD, "--as", "softmax1", *QUICK)
    assert code == 0 and re.fullmatch(r"derive impl: checked in [0-9.]+ s \([0-9.]+ s of CPU, this process and its "
                                      r"child\)\n", err)  # the time on stderr; the report is the same bytes each run
    assert "**Verdict: agrees.**" in out
    assert "This is differential testing: evidence, not a proof." in out


def test_disagreeing_implementation_exits_1_with_diagnosis(capsys):
    code, out, _ = run(capsys, BAD, "--as", "softmax1", *QUICK)
    assert code == 1
    assert "**Verdict: DISAGREES.**" in out
    assert "**Fix:** Shift the 1 too: use exp(−m) in place of 1" in out


def test_module_spec_and_json(capsys):
    code, out, _ = run(capsys, "tests.zoo.softmax1_unshifted:softmax1", "--as", "softmax1", *QUICK,
                       "--format", "json")
    data = json.loads(out)
    assert code == 1
    assert data["verdict"] == "disagrees"
    assert data["counterexample"]["row"] == [1.0]
    assert data["counterexample"]["output"] == [0.5]
    assert data["diagnosis"]["matched"][0]["name"] == "unshifted-extra-term"
    assert data["dtypes"][0]["tolerance"] == {"abs": 1.175e-38, "dtype": "float32", "rel": 7.629e-06,
                                              "ulps": 64}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["md", "json"])
def test_two_runs_are_byte_identical(capsys, fmt):
    """The report and the exit status; stderr's last line is the time it took, and only that differs."""
    timing = re.compile(r"derive impl: checked in [0-9.]+ s \([0-9.]+ s of CPU, this process and its child\)\n\Z")
    first = run(capsys, BAD, "--as", "softmax1", "--format", fmt, *QUICK)
    second = run(capsys, BAD, "--as", "softmax1", "--format", fmt, *QUICK)
    assert timing.search(first[2]) and timing.search(second[2])
    assert first[:2] == second[:2] and timing.sub("", first[2]) == timing.sub("", second[2])


ERRORS = [
    (["tests/zoo/nope.py:f", "--as", "softmax1"], "cannot import 'tests/zoo/nope.py:f': no file tests/zoo/nope.py"),
    (["tests.zoo.nomodule:f", "--as", "softmax1"],
     "cannot import 'tests.zoo.nomodule:f': no module named 'tests.zoo.nomodule'"),
    (["tests.zoo.softmax1_numpy:nope", "--as", "softmax1"],
     "cannot import 'tests.zoo.softmax1_numpy:nope': tests.zoo.softmax1_numpy has no attribute 'nope'"),
    (["tests/zoo/softmax1_numpy.py", "--as", "softmax1"], "expected MODULE_OR_FILE:FUNCTION"),
    ([GOOD, "--as", "softmax9"], "unknown normalizer 'softmax9'"),
    ([GOOD, "--as", "softmax1", "--dtype", "float8"], "unknown dtype 'float8'"),
    ([GOOD, "--as", "softmax1", "--dtype", "bfloat16"], "dtype bfloat16 needs a torch implementation"),
    ([GOOD, "--as", "softmax1", "--param", "s=1"], "unknown parameter 's' for normalizer 'softmax1'"),
    (["tests/zoo/sink_numpy.py:sink", "--as", "sink", "--param", "s=x"], "--param s: expected a number, got 'x'"),
    (["tests.zoo.softmax1_numpy:softmax1", "--as", "sink"], "normalizer 'sink' needs its parameter s"),
    (["tests.zoo.odd:raises_on_masked", "--as", "softmax1", "--dtype", "float64"],
     ("tests.zoo.odd:raises_on_masked raised ValueError: masked scores are not supported on a valid "
     "float64 input of shape [1]: [-inf]")),
]


@pytest.mark.parametrize("argv,message", ERRORS)
def test_bad_usage_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.startswith("derive: error: ") and err.count("\n") == 1
    assert message in err


def test_help_says_it_runs_your_code(capsys):
    with pytest.raises(SystemExit):
        main(["impl", "--help"])
    assert "it runs your code" in capsys.readouterr().out


@pytest.mark.slow
def test_assert_implements_passes_and_fails_with_the_report():
    from tests.zoo.softmax1_numpy import softmax1
    from tests.zoo.softmax1_unshifted import softmax1 as unshifted

    report = assert_implements(softmax1, "softmax1", dtypes=("float32",), examples=20)
    assert report.agrees
    with pytest.raises(AssertionError, match=r"(?s)Verdict: DISAGREES.*unshifted \+1"):
        assert_implements(unshifted, "softmax1", dtypes=("float32",), examples=20)
    with pytest.raises(InputError, match="unknown normalizer 'softmax3'"):
        assert_implements(softmax1, "softmax3")


def test_output_printed_by_the_implementation_goes_to_stderr(capsys):
    code, out, err = run(capsys, "tests.zoo.odd:chatty", "--as", "softmax1", *QUICK, "--format", "json")
    assert code == 0
    assert json.loads(out)["verdict"] == "agrees"
    assert "debug: computing softmax1" in err
