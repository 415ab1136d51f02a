"""Every diagnosis sentence is true of the probes it speaks of; none is printed otherwise."""

from __future__ import annotations

import math

import pytest

from derive.impl import check_implementation
from derive.impl.judge.row import Failure
from derive.impl.faults.diagnose import _pattern, _Probe
from derive.impl.exact.tolerance import tolerance
from tests.test_impl_zoo import need_torch

F64 = {"dtypes": ("float64",), "examples": 30}


@pytest.mark.slow  # heavy (8–15 s); CI runs it
def test_a_batch_dependent_fault_says_the_row_agrees_alone():
    report = check_implementation("tests.zoo.odd:global_max", "softmax1", **F64)
    f = report.failure
    assert len(f.shape) == 2 and f.output[0] != f.output[0]  # NaN on the row shown
    assert report.diagnosis.failing_probes == 0
    assert report.diagnosis.pattern == [
        f"The counterexample row agrees when run alone (shape [{len(f.row)}]): the error depends on the other "
        f"rows of the input (shape {list(f.shape)}), e.g. a maximum or sum taken over the wrong axis or over "
        "the whole batch."]
    md = report.to_markdown()
    assert "probe rows disagree). The error pattern:" not in md
    assert f"row {list(f.index)} of the input of shape {list(f.shape)}, normalized axis last" in md


def test_the_counterexample_row_is_the_failing_row():
    report = check_implementation("tests.zoo.odd:global_max", "softmax1", **F64)
    f = report.failure
    assert any(not math.isfinite(v) for v in f.output)  # the row shown is the one that fails
    assert report.as_json()["counterexample"]["row_index"] == list(f.index)


def test_a_tiny_factor_is_shown_as_its_relative_error():
    report = check_implementation("tests.zoo.odd:slightly_off", "softmax1", **F64)
    assert report.diagnosis.pattern[-1] == "The factor is the same on every failing row: 1 + 1e-09."


@pytest.mark.slow
def test_no_shift_invariance_sentence_for_clipped_softmax():
    need_torch()
    report = check_implementation("tests/zoo/masking.py:clipped_no_lower_clip", "clipped",
                                  params={"zeta": 1.0, "gamma": -0.1}, **F64)
    assert not report.agrees
    assert not any("shift-invariant" in line for line in report.diagnosis.pattern)


def _probe(row, output, exact, agrees):
    return _Probe(tuple(row), {}, {}, output, exact, True, agrees, tuple(row))


def test_forward_values_agree_is_said_only_when_every_probe_agrees():
    tol = tolerance("float64")
    failure = Failure(dtype="float64", what="gradient", row=[0.0], params={}, shape=(1,), output=[0.0], exact=[0.25],
                      errors=[0.25], bounds=[1e-15])
    good = [_probe([0.0], [0.5], [0.5], True), _probe([1.0, 0.0], [0.5, 0.2], [0.5, 0.2], True)]
    assert _pattern(good, failure, "softmax1", tol)[0].startswith(
        "Its forward values agree with the definition on all 2 probe rows")
    bad = good + [_probe([100.0], [0.9], [1.0], False)]
    lines = _pattern(bad, failure, "softmax1", tol)
    assert lines[0] == ("Its gradient (autograd) differs from the derived Jacobian on the counterexample row, "
                        "and its forward values disagree on 1 of 3 probe rows.")
    assert not any("values agree" in line for line in lines)
