"""Fully masked rows: one rule for every normalizer, as data (derive.impl.exact.masked).

Where the definition has a value there (softmax₁ and sinks: exactly 0), it is required;
where it has none (softmax, clipped, softcap: 0/0), NaN, zeros and the uniform row of
finfo.min masking are each accepted, and the report says which one the code uses."""

from __future__ import annotations

import math

import mpmath
import pytest

from derive.impl import check_implementation
from derive.impl.exact.masked import CONVENTIONS, rule, rules
from derive.normalizers.registry import REGISTRY, get
from tests.test_impl_zoo import need_torch

Z = "tests/zoo/masking.py:"
FAST = {"dtypes": ("float64", "float32"), "examples": 20}
CLIP = {"zeta": 1.0, "gamma": -0.1}


def test_every_registered_normalizer_has_a_masked_row_rule_that_matches_its_definition():
    assert set(rules()) == set(REGISTRY)
    for name, r in rules().items():
        norm = get(name)
        inner = get("softmax") if name == "clipped" else norm  # clipped = clip of softmax
        params = {p: 0.5 for p in inner.params}
        with mpmath.workdps(30):
            values = inner.reference([0.0, 1.0], mask=[False, False], **params)
        assert r.defined == (not any(mpmath.isnan(v) for v in values)), name
        if r.defined:
            assert values == [0, 0], name
    assert [rule(get(n)).defined for n in ("softmax", "softmax1", "sink", "clipped", "softcap")] == [
        False, True, True, False, False]
    assert list(CONVENTIONS) == ["nan", "zeros", "uniform"]


ACCEPTED = [
    ("softmax_hf", "softmax", {}, "uniform"),
    ("softmax_hf_additive", "softmax", {}, "uniform"),
    ("softmax_zeros", "softmax", {}, "zeros"),
    ("clipped", "clipped", CLIP, "nan"),
    ("clipped_hf", "clipped", CLIP, "uniform"),
    ("clipped_zeros", "clipped", CLIP, "zeros"),
    ("softcap", "softcap", {"c": 5.0}, "nan"),
]


@pytest.mark.slow
@pytest.mark.parametrize("fn,norm,params,conv", ACCEPTED)
def test_each_convention_is_accepted_with_a_note(fn, norm, params, conv):
    need_torch()
    report = check_implementation(Z + fn, norm, params=params, **FAST)
    assert report.agrees, report.to_markdown()
    seen = {c for r in report.results for c in r.conventions}
    # on long rows clip((ζ − γ)/n + γ) is 0: the uniform row is then the zero row, named zeros
    assert conv in seen and seen <= {conv, "zeros"}
    note = report.masked_note()
    assert note.startswith(f"Fully masked rows (every score −∞): {norm} gives no value")
    assert f"This implementation returns " in note and f"{CONVENTIONS[conv]} (" in note
    assert note.endswith("accepted, by convention, not by the definition.")
    assert note in report.to_markdown()


@pytest.mark.parametrize("fn,norm,params", [("softmax1_hf", "softmax1", {}), ("sigmoid", "sigmoid", {"b": 0.5})])
def test_where_the_definition_has_a_value_it_is_required_and_said(fn, norm, params):
    need_torch()
    report = check_implementation(Z + fn, norm, params=params, **FAST)
    assert report.agrees, report.to_markdown()
    assert all(r.conventions == {} and r.masked_rows > 0 for r in report.results)
    assert report.masked_note().endswith("; that value is required, as on any other row "
                                         f"({sum(r.masked_rows for r in report.results)} such rows tested).")


@pytest.mark.slow
def test_a_value_no_convention_gives_is_a_disagreement():
    need_torch()
    report = check_implementation(Z + "softmax_wrong_masked", "softmax", **FAST)
    f = report.failure
    assert f.row == [-math.inf] and not f.defined
    assert f.output == [0.5]
    md = report.to_markdown()
    assert "The definition has no value on this row (every score is masked); NaN (the 0/0 of the formula)" in md


def test_nan_on_a_masked_row_is_still_wrong_for_softmax1():
    report = check_implementation("tests/zoo/softmax1_nan_masked.py:softmax1", "softmax1", **FAST)
    assert [m.name for m in report.diagnosis.matched] == ["all-masked-nan"]


def test_uniform_masking_is_wrong_for_softmax1():
    report = check_implementation("tests.zoo.odd:uniform_when_masked", "softmax1", **FAST)
    assert report.failure.row == [-math.inf]


@pytest.mark.slow  # heavy (8–15 s); CI runs it
def test_a_soft_cap_applied_to_the_mask_gives_masked_keys_weight():
    need_torch()
    report = check_implementation(Z + "softcap_caps_the_mask", "softcap", params={"c": 5.0}, **FAST)
    f = report.failure
    assert (f.row, f.exact) == ([0.0, -math.inf], [1.0, 0.0])
    assert f.output == [pytest.approx(1 / (1 + math.exp(-5))), pytest.approx(math.exp(-5) / (1 + math.exp(-5)))]


def test_a_row_with_no_value_that_is_not_masked_is_not_called_masked():
    # (1 − p_j)/(n − 1) has no value on a row of one key, masked or not: the report said "every
    # score is masked" of the row [0]
    report = check_implementation("tests.zoo.odd:leave_one_out_42", "tests/specs/adversarial/leave_one_out.toml",
                                  **FAST)
    f = report.failure
    assert not f.defined and f.output == [42.0] and all(v != -math.inf for v in f.row)
    md = report.to_markdown()
    assert ("The definition has no value on this row (the formula has none there, though not every score is "
            "masked); NaN (the 0/0 of the formula)") in md
    assert "(every score is masked)" not in md
