"""Faulty-form tables for every registered normalizer: each form derived symbolically and
recognised on a zoo implementation that has exactly that fault."""

from __future__ import annotations

import pytest

from derive.impl import check_implementation
from derive.impl.faults.derivations import derive_fault
from derive.impl.faults.row import variants

Z = "tests/zoo/forms.py:"


def test_a_fault_of_the_extra_logit_is_the_kernel_forms_definition():
    """The row form's exp2 mix-up on the extra logit rewrites it with the kernel fault missing_log2e."""
    from derive.impl.faults.row import faulty_formula
    from derive.normalizers.registry import get

    fields = next(f for e, f, _ in variants("sink") if e.name == "exp2-units" and f["where"] == "sink logit"
                  and f["c"] == "ln 2")
    assert fields["key"] == "missing_log2e"
    form = faulty_formula("sink", get("sink").formula, "exp2-units", tuple(sorted(fields.items())))
    assert form.text == "exp(x_j) / (exp(s * log(2)) + sum_t(exp(x_t)))"


def test_a_spec_normalizer_gets_the_faults_of_its_formula():
    from derive.normalizers.formula import compile_weight
    from derive.normalizers.registry import USER, user_entry

    key = user_entry("halfsink", compile_weight("exp(x_j) / (exp(a) + 2 * sum_t(exp(x_t)))", {"a": {}}))
    try:
        assert {e.name for e, _, _ in variants(key)} == {
            "unshifted-extra-term", "extra-terms-dropped", "extra-logit-scaled", "exp2-units", "all-masked-nan",
            "no-max-subtraction", "param-sign-flipped"}
    finally:
        USER.pop(key, None)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sigmoid", "clipped", "softcap", "zero_token", "bias_kv"])
def test_the_forms_are_derived_symbolically(name):
    seen = set()
    for entry, fields, _ in variants(name):
        if entry.name in seen or entry.name == "extra-logit-scaled":
            continue
        seen.add(entry.name)
        d = derive_fault(entry.name, name, tuple(sorted(fields.items())))
        if d is None:  # a masking fault: described, not derived
            assert entry.name in {"all-masked-nan", "mask-inside-formula"}
            continue
        assert d.identity.status == "proved", (entry.name, d.identity.reason)
        if d.closed == d.definition:  # numerical only
            assert d.versus_definition.status == "proved"
        else:
            assert d.versus_definition.status == "refuted", (entry.name, d.versus_definition.reason)


def test_a_refutation_is_at_parameters_in_the_domain():
    d = derive_fault("outer-function-dropped", "clipped", ())
    assert (d.closed, d.definition) == ("softmax(x)", "clip(x)")
    w = d.as_json()["closed_form_equals_definition"]["counterexample"]
    # ζ = 1 + ζ', γ = −γ' with ζ', γ' ≥ 0: the counterexample is at ζ = 2, γ = 0
    assert (w["instance"]["zeta'"], w["instance"]["gamma'"], w["lhs"], w["rhs"]) == (1, 0, 0.5, 1.0)


CLIP = {"zeta": 1.5, "gamma": -0.2}
ZOO = [
    ("sigmoid_bias_sign", "sigmoid", {"b": 0.5}, "param-sign-flipped"),
    ("sigmoid_softmax", "sigmoid", {"b": 0.5}, "softmax-for-elementwise"),
    ("sigmoid_exp_ratio", "sigmoid", {"b": 0.5}, "exp-ratio-overflow"),
    ("clipped_no_upper_clip", "clipped", CLIP, "bound-dropped"),
    ("clipped_softmax", "clipped", CLIP, "outer-function-dropped"),
    ("softcap_missing", "softcap", {"c": 5.0}, "tanh-cap-dropped"),
    ("softcap_tanh_only", "softcap", {"c": 5.0}, "tanh-cap-misscaled"),
    ("softcap_not_divided", "softcap", {"c": 5.0}, "tanh-cap-misscaled"),
    ("zero_token_unshifted", "zero_token", {}, "unshifted-extra-term"),
    ("zero_token_forgotten", "zero_token", {}, "extra-terms-dropped"),
    ("bias_kv_unshifted", "bias_kv", {"s_star": 0.75}, "unshifted-extra-term"),
    ("bias_kv_forgotten", "bias_kv", {"s_star": 0.75}, "extra-terms-dropped"),
    # faults that reach these normalizers through their formulas alone
    ("sigmoid_exp2", "sigmoid", {"b": 0.5}, "exp2-units"),
    ("softcap_exp2", "softcap", {"c": 5.0}, "exp2-units"),
    ("softpick_unshifted", "softpick", {"eps": 1e-3}, "unshifted-extra-term"),
    ("relu_n_counts_masked", "relu_n", {}, "mask-inside-formula"),
]


@pytest.mark.slow
@pytest.mark.parametrize("fn,norm,params,form", ZOO)
def test_each_faulty_zoo_implementation_is_named(fn, norm, params, form):
    report = check_implementation(Z + fn, norm, params=params, dtypes=("float64", "float32"), examples=30)
    assert not report.agrees
    assert [m.name for m in report.diagnosis.matched] == [form], report.to_markdown()


@pytest.mark.slow
@pytest.mark.parametrize("fn,norm,params", [
    ("sigmoid", "sigmoid", {"b": 0.5}), ("clipped", "clipped", CLIP), ("softcap", "softcap", {"c": 5.0}),
    ("zero_token", "zero_token", {}), ("bias_kv", "bias_kv", {"s_star": 0.75}),
    ("softpick", "softpick", {"eps": 1e-3}),
])
def test_the_right_ones_agree(fn, norm, params):
    report = check_implementation(Z + fn, norm, params=params, dtypes=("float64", "float32"), examples=30)
    assert report.agrees, report.to_markdown()


FAST = {"dtypes": ("float64",), "examples": 15}


def test_missing_log2e_is_diagnosed_for_sigmoid():
    report = check_implementation(Z + "sigmoid_exp2", "sigmoid", params={"b": 0.5}, **FAST)
    (m,) = report.diagnosis.matched
    assert (m.name, m.title, m.formula) == (
        "exp2-units", "exp/exp2 unit mix-up: a factor ln 2 on the scores", "sigmoid((ln 2) * (x_j + b))")
    assert m.derivation["closed_form"] == "sigmoid((ln 2) * (x_j + b))"
    assert m.derivation["written_equals_closed_form"]["status"] == "proved"
    assert m.derivation["closed_form_equals_definition"]["status"] == "refuted"


def test_the_unshifted_terms_of_softpick_are_diagnosed():
    report = check_implementation(Z + "softpick_unshifted", "softpick", params={"eps": 1e-3}, **FAST)
    (m,) = report.diagnosis.matched
    assert m.title == "unshifted 1 and eps: the row maximum is subtracted from the scores but not from the 1 and eps"
    assert m.fix == "Shift the 1 and eps too: use exp(−m) and eps * exp(−m) in place of 1 and eps."
    assert "So it computes softpick(x − max x), not softpick(x)." in m.explanation
    d = m.derivation
    assert (d["closed_form"], d["definition"]) == ("softpick(x − m)", "softpick(x)")
    assert d["closed_form_equals_definition"]["status"] == "refuted"
    # the fix is proved: the prover takes the positive factor e^−m out of ReLU and abs
    assert d["fix_equals_definition"]["status"] == "proved"


def test_the_overflow_free_fix_shifts_the_exponents_not_the_scores():
    """For softcap the exponent is c·tanh(x/c): the fix subtracts m from it, not from x."""
    from derive.impl.faults.derivations import derive_fault
    from derive.impl.faults.texts import texts

    words = texts("softcap", "no-max-subtraction", ())
    assert words["fix"] == ("Subtract m = the largest exponent of the row from every exponent: "
                            "exp(c * tanh(x_j / c) − m) / sum_t(exp(c * tanh(x_t / c) − m)).")
    assert derive_fault("no-max-subtraction", "softcap", ()).fix.status == "proved"
