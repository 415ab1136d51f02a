"""Every (normalizer, property) verdict against the known mathematics, from the generic provers."""

from __future__ import annotations

import pytest

from derive.errors import InputError
from derive.normalizers.properties import PROPERTIES, decide, derive_property
from derive.normalizers.registry import names
from derive.normalizers.table import build_table, markdown

P, R, U = "proved", "refuted", "undecided"
BUILT_IN = ("bias_kv", "clipped", "sigmoid", "sink", "softcap", "softmax", "softmax1", "zero_token")
ALL = BUILT_IN + ("relu_n", "sigmoid_logn", "softpick", "ssmax", "stick_breaking")


# Known mathematics, written independently of the provers.
EXPECTED = {
    "shift_invariant": {
        "softmax": P,
        "clipped": P,
        "softmax1": R,
        "sink": R,
        "zero_token": R,
        "bias_kv": R,
        "sigmoid": R,
        "softcap": R,
    },
    "shift_effect": {nm: P for nm in ALL} | {"softcap": U},
    "weights_sum_to_one": {nm: R for nm in ALL} | {"softmax": P, "softcap": P},
    "mass_range": {nm: P for nm in ALL} | {"clipped": U},
    "can_abstain": {
        "softmax1": P,
        "sink": P,
        "zero_token": P,
        "bias_kv": P,
        "sigmoid": P,
        "softmax": R,
        "softcap": R,
        "clipped": R,
    },
    "limit_uniform": {nm: P for nm in ALL},
    "limit_iterated": {nm: P for nm in ALL},
    "limit_any_path": {nm: P for nm in ALL} | {"softmax": R, "clipped": R},
    "ratio_identity": {nm: P for nm in ALL} | {"sigmoid": R, "clipped": R, "softcap": R},
    "jacobian_diagonal": {nm: P for nm in ALL} | {"clipped": R},
    "jacobian_offdiagonal": {nm: P for nm in ALL} | {"clipped": R, "sigmoid": R},
    "gradient_nonvanishing": {nm: P for nm in ALL} | {"clipped": R},
    "k_bias_cancels": {nm: R for nm in ALL} | {"softmax": P, "clipped": P},
    "stable_form": {nm: P for nm in ALL},
}
# The entries written in the formula language since: what the provers give, checked against the
# mathematics (U where the statement is true or false but no rule applies; a wrong P or R fails).
ORDER = ("shift_invariant", "shift_effect", "weights_sum_to_one", "mass_range", "can_abstain", "limit_uniform",
         "limit_iterated", "limit_any_path", "ratio_identity", "jacobian_diagonal", "jacobian_offdiagonal",
         "gradient_nonvanishing", "k_bias_cancels", "stable_form")
NEW = {
    # ReLU(e^x - 1)/(Σ|e^x - 1| + ε): abstains (weights exactly 0 for scores ≤ 0), shown on the uniform path
    "softpick": "RURUPPUURUUURP",
    # softmax of s·log(N)·x: shift-invariant, sums to 1, ratio N^{s(x1 - x2)}
    "ssmax": "PPPURPURRUUUPP",
    # σ(x - log N): elementwise in x, the bias depends on the row
    "sigmoid_logn": "RURUPPUURPRPRP",
    # σ(x_j)·Π_{t>j}(1 - σ(x_t)): the mass is 1 - Π(1 - σ) < 1; each weight is at most σ(x_j), so it abstains
    "stick_breaking": "RURUPUUURUUURP",
    # ReLU(x)/N: 0 on every negative score, independent of the other scores
    "relu_n": "RURUPPUURRRRRP",
}
for _name, _row in NEW.items():
    for _prop, _v in zip(ORDER, _row):
        EXPECTED[_prop][_name] = {"P": P, "R": R, "U": U}[_v]

VALUES = {
    ("softmax", "mass_range"): "{1}",
    ("softmax1", "mass_range"): "(0, 1)",
    ("sink", "mass_range"): "(0, 1)",
    ("sigmoid", "mass_range"): "(0, N)",
    ("softmax", "limit_uniform"): "\\frac{1}{N_{i}}",
    ("softmax1", "limit_uniform"): "$0$",
    ("softcap", "limit_uniform"): "\\frac{1}{N_{i}}",
    ("softmax", "limit_iterated"): "(1, 0, …, 0)",
    ("softmax1", "limit_iterated"): "0 for every key",
    ("softcap", "limit_iterated"): "1/k",
    ("clipped", "limit_iterated"): "(1, 0, …, 0)",
    ("softmax", "limit_any_path"): "depends on the path",
    ("softmax1", "shift_effect"): "`sink` with $s = - c$",
    ("sink", "shift_effect"): "`sink` with $s \\mapsto s - c$",
    ("softmax1", "k_bias_cancels"): "becomes `sink`",
}


@pytest.fixture(scope="module")
def table():
    return build_table()


def test_registry_and_properties_are_covered():
    assert set(names()) == set(ALL)
    assert set(EXPECTED) == set(PROPERTIES)
    for required in ("shift_invariant", "can_abstain", "weights_sum_to_one"):
        assert required in PROPERTIES


@pytest.mark.parametrize("prop", sorted(EXPECTED))
def test_verdicts_match_the_mathematics(table, prop):
    for name in ALL:
        der = table[(name, prop)]
        assert der.verdict.status == EXPECTED[prop][name], (name, prop, der.verdict.reason)
        if der.verdict.status == R:
            assert der.verdict.witness, (name, prop)
        if der.verdict.status == U:
            assert der.verdict.reason, (name, prop)


@pytest.mark.parametrize(("key", "text"), sorted(VALUES.items()))
def test_values(table, key, text):
    assert text in table[key].value_text(), table[key].value_text()


def test_decide_is_the_public_api(table):
    assert decide("softmax", "shift_invariant").status == P
    assert decide("softmax1", "shift_invariant").status == R  # a false statement, refuted
    assert decide("softmax1", "can_abstain").status == P
    assert decide("softmax", "can_abstain").status == R
    assert decide("softmax", "weights_sum_to_one").status == P
    assert decide("softmax1", "weights_sum_to_one").status == R


def test_decide_with_concrete_parameters():
    assert decide("sink", "shift_invariant", s=0).status == R
    assert decide("sink", "ratio_identity", s=3).status == P
    assert decide("sigmoid", "can_abstain", b=-2).status == P


def test_unknown_names_are_input_errors():
    with pytest.raises(InputError, match="did you mean"):
        decide("softmx", "shift_invariant")
    with pytest.raises(InputError, match="unknown property"):
        decide("softmax", "is_fast")
    with pytest.raises(InputError, match="no parameter"):
        decide("softmax", "shift_invariant", s=1)
    with pytest.raises(InputError, match="outside its domain"):
        decide("softcap", "shift_invariant", c=-1)
    with pytest.raises(InputError, match="outside its domain"):
        decide("clipped", "can_abstain", zeta=0.5, gamma=-0.1)


def test_markdown_table_has_every_cell(table):
    md = markdown(table)
    assert md.count("\n") == len(PROPERTIES) + 2
    for name in ALL:
        assert name in md.splitlines()[0]


def test_proved_cells_carry_derivation_steps(table):
    for (name, prop), der in table.items():
        if der.verdict.status == P and prop not in ("shift_effect",):
            assert der.steps or der.equality, (name, prop)


def test_derivation_is_cached():
    assert derive_property("softmax", "ratio_identity") is derive_property("softmax", "ratio_identity")


@pytest.mark.parametrize("name", ["softmax1", "sink", "sigmoid", "softcap", "bias_kv", "zero_token"])
def test_shift_counterexamples_recomputed_independently(table, name):
    """A refutation's instance, recomputed with the entry's mpmath reference: the sides differ."""
    import mpmath

    from derive.normalizers.registry import get

    w = table[(name, "shift_invariant")].verdict.witness
    inst, idx = w["instance"], w["indices"]
    row = inst["x"][idx["i"] - 1]
    mask = [bool(v) for v in inst["M"][idx["i"] - 1]]
    params = {k: float(v) for k, v in w.get("parameters", {}).items()}
    ref = get(name).reference
    with mpmath.workdps(50):
        shifted = float(ref([v + inst["c"] for v in row], mask, **params)[idx["j"] - 1])
        plain = float(ref(row, mask, **params)[idx["j"] - 1])
    # the first side is the weight as it is, the second the weight after the shift: as labelled
    assert w["compared"] == ["p_ij", "p_ij with c added to every score"]
    assert _within(plain, w["enclosures"]["lhs"])
    assert _within(shifted, w["enclosures"]["rhs"])
    assert plain == pytest.approx(w["lhs"], rel=1e-5) and shifted == pytest.approx(w["rhs"], rel=1e-5)
    assert abs(shifted - plain) > 1e-3


def _within(value: float, ball: str) -> bool:
    """Does the printed enclosure "m ± r" (or an exact "m") contain ``value``?"""
    mid, _, rad = ball.partition(" ± ")
    return abs(value - float(mid)) <= (float(rad) if rad else 0.0) + 1e-15 * abs(value)


def _instantiate(prop_der, sub_text):
    """The referenced equation under the substitution its text states, rebuilt from that text."""
    import sympy as sp

    from derive.model.attention import X
    from derive.normalizers.overflow import MSHIFT
    from derive.normalizers.properties import C
    from derive.render.latex import tex

    lhs, rhs = prop_der.equality
    shift = -MSHIFT if "x_{i,t} \\mapsto x_{i,t} - m" in sub_text else 0
    c = -MSHIFT if "c = - m" in sub_text else MSHIFT
    params = {v for e in (lhs, rhs) for v in e.free_symbols if f"{tex(v)} \\mapsto {tex(v)} - m" in sub_text}
    sub = {C: c} | {v: v - MSHIFT for v in params}
    out = []
    for e in (lhs, rhs):
        scores = {a: a + shift for a in e.atoms(sp.Indexed) if a.base == X}
        out.append(e.xreplace(sub | scores))
    return out


@pytest.mark.parametrize("name, prop, reverse", [("softmax", "shift_invariant", False),
                                                 ("bias_kv", "shift_effect", False),
                                                 ("sink", "shift_effect", False),
                                                 ("softmax1", "shift_effect", True)])
def test_an_overflow_free_form_that_is_a_shift_equation_under_a_substitution_says_so(name, prop, reverse):
    """The document refers to the shift equation instead of checking the form again: the
    substitution it records must turn that equation into form = definition, side for side."""
    der = derive_property(name, "stable_form")
    ((index, got_prop, sub, got_reverse),) = der.restates
    assert (got_prop, got_reverse) == (prop, reverse)
    form = der.steps[index][1]
    from derive.normalizers.algebra import weight
    from derive.normalizers.properties import params_for
    from derive.normalizers.registry import get

    plain = weight(get(name), params_for(get(name)))
    lhs, rhs = _instantiate(derive_property(name, prop), sub)
    assert (rhs, lhs) == (form, plain) if reverse else (lhs, rhs) == (form, plain)


@pytest.mark.parametrize("name", ["ssmax", "softcap", "sigmoid", "stick_breaking", "softpick"])
def test_a_form_that_is_no_score_shift_refers_to_nothing(name):
    """ssmax and softcap subtract m from an exponent that is not the score; sigmoid's branch form
    and softpick's homogeneity rewrite are no shift of the row: each form is checked itself."""
    assert derive_property(name, "stable_form").restates == ()


def test_derivatives_are_shown_factored_and_their_signs_still_decided():
    der = derive_property("softcap", "jacobian_diagonal")
    assert der.verdict.status == P
    shown = der.latex_steps()[1][1]
    assert "\\cosh^{2}" in shown and "\\tanh^{2}" not in shown  # 1 − tanh² written 1/cosh²
    soft = derive_property("softmax", "jacobian_offdiagonal")
    assert soft.verdict.status == P
    assert soft.latex_steps()[1][1] == ("\\frac{\\partial p_j}{\\partial x_k} = - \\frac{e^{x_{j} + x_{k}}}"
                                        "{\\left(r + e^{x_{j}} + e^{x_{k}}\\right)^{2}}")


@pytest.mark.parametrize("name, restated", [("softmax", True), ("ssmax", True), ("clipped", True),
                                            ("relu_n", False), ("softcap", False)])
def test_a_cancelled_k_bias_is_row_shift_invariance_under_a_substitution(name, restated):
    """Where the K bias cancels, the derivation says it is row-shift invariance with
    c = ⟨q_i, b_K⟩/√d; where it does not (or nothing is shift-invariant), it says nothing of it."""
    der = derive_property(name, "k_bias_cancels")
    props = [p for _i, p, _s, _r in der.restates]
    assert props == (["shift_invariant"] if restated else [])
    assert der.verdict.status == (P if restated else R)
