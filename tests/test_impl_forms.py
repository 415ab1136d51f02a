"""Faulty-form tables for every registered normalizer: each form derived symbolically and
recognised on a zoo implementation that has exactly that fault."""

from __future__ import annotations

import pytest

from derive.impl import check_implementation
from derive.impl.derivations import derive_fault
from derive.impl.faults import variants
from derive.normalizers.registry import names

Z = "tests/zoo/forms.py:"


def test_every_registered_normalizer_has_faulty_forms():
    counts = {name: len({e.name for e, _, _ in variants(name)}) for name in names()}
    # the entries added in the formula language have no fault table yet: they are listed here, so
    # that fault models written as formula transformations must cover them to pass
    without = {"relu_n", "sigmoid_logn", "softpick", "ssmax", "stick_breaking"}
    assert {name for name, n in counts.items() if n == 0} == without, counts
    assert all(n >= 2 for name, n in counts.items() if name not in without), counts
    assert {e.name for e, _, _ in variants("sigmoid")} == {"sigmoid-bias-sign", "softmax-for-sigmoid",
                                                           "sigmoid-exp-ratio"}
    assert {e.name for e, _, _ in variants("clipped")} == {"clipped-one-sided", "softmax-for-clipped"}
    assert {e.name for e, _, _ in variants("softcap")} == {"softcap-missing", "softcap-misscaled",
                                                           "softcap-caps-the-mask"}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sigmoid", "clipped", "softcap", "zero_token", "bias_kv"])
def test_the_forms_are_derived_symbolically(name):
    seen = set()
    for entry, fields, _ in variants(name):
        if entry.name in seen or entry.name == "sink-scaled":
            continue
        seen.add(entry.name)
        d = derive_fault(entry.name, name, tuple(sorted(fields.items())))
        if d is None:  # a masking fault: described, not derived
            assert entry.name in {"all-masked-nan", "softcap-caps-the-mask"}
            continue
        assert d.identity.status == "proved", (entry.name, d.identity.reason)
        if d.closed == d.definition:  # numerical only
            assert d.versus_definition.status == "proved"
        else:
            assert d.versus_definition.status == "refuted", (entry.name, d.versus_definition.reason)


def test_a_refutation_is_at_parameters_in_the_domain():
    d = derive_fault("softmax-for-clipped", "clipped", ())
    assert d.definition == "clip(x) at γ = -1/2, ζ = 1"  # ζ ≥ 1, γ ≤ 0
    assert d.as_json()["closed_form_equals_definition"]["counterexample"]["lhs"] == 0.5


CLIP = {"zeta": 1.5, "gamma": -0.2}
ZOO = [
    ("sigmoid_bias_sign", "sigmoid", {"b": 0.5}, "sigmoid-bias-sign"),
    ("sigmoid_softmax", "sigmoid", {"b": 0.5}, "softmax-for-sigmoid"),
    ("sigmoid_exp_ratio", "sigmoid", {"b": 0.5}, "sigmoid-exp-ratio"),
    ("clipped_no_upper_clip", "clipped", CLIP, "clipped-one-sided"),
    ("clipped_softmax", "clipped", CLIP, "softmax-for-clipped"),
    ("softcap_missing", "softcap", {"c": 5.0}, "softcap-missing"),
    ("softcap_tanh_only", "softcap", {"c": 5.0}, "softcap-misscaled"),
    ("softcap_not_divided", "softcap", {"c": 5.0}, "softcap-misscaled"),
    ("zero_token_unshifted", "zero_token", {}, "unshifted-sink-term"),
    ("zero_token_forgotten", "zero_token", {}, "softmax-for-softmax1"),
    ("bias_kv_unshifted", "bias_kv", {"s_star": 0.75}, "unshifted-sink-term"),
    ("bias_kv_forgotten", "bias_kv", {"s_star": 0.75}, "softmax-for-softmax1"),
]


@pytest.mark.slow
@pytest.mark.parametrize("fn,norm,params,form", ZOO)
def test_each_faulty_zoo_implementation_is_named(fn, norm, params, form):
    report = check_implementation(Z + fn, norm, params=params, dtypes=("float64", "float32"), examples=30)
    assert not report.agrees
    assert [m["name"] for m in report.diagnosis.matched] == [form], report.to_markdown()


@pytest.mark.slow
@pytest.mark.parametrize("fn,norm,params", [
    ("sigmoid", "sigmoid", {"b": 0.5}), ("clipped", "clipped", CLIP), ("softcap", "softcap", {"c": 5.0}),
    ("zero_token", "zero_token", {}), ("bias_kv", "bias_kv", {"s_star": 0.75}),
])
def test_the_right_ones_agree(fn, norm, params):
    report = check_implementation(Z + fn, norm, params=params, dtypes=("float64", "float32"), examples=30)
    assert report.agrees, report.to_markdown()
