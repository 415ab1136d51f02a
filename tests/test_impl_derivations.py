"""The faulty forms derived symbolically: what the code computes, proved; that it is not the
definition, refuted with a certified counterexample; that the fix is the definition, proved."""

from __future__ import annotations

from pathlib import Path

import pytest

from derive.impl.faults.derivations import derive_fault
from derive.impl.faults.row import variants
from derive.impl.report.row import derivation_lines


def _derive(fault: str, name: str, **want):
    for entry, fields, _ in variants(name):
        if entry.name == fault and all(fields.get(k) == v for k, v in want.items()):
            return derive_fault(fault, name, tuple(sorted(fields.items())))
    raise AssertionError(f"no variant {fault} {want} for {name}")


def _statuses(d):
    return (d.identity.status, d.versus_definition.status, None if d.fix is None else d.fix.status)


def test_unshifted_plus_one_is_softmax1_of_the_shifted_row():
    d = _derive("unshifted-extra-term", "softmax1")
    assert d.written == "exp(x_j − m) / (1 + sum_t(exp(x_t − m)))"
    assert (d.closed, d.definition) == ("softmax₁(x − m)", "softmax₁(x)")
    assert _statuses(d) == ("proved", "refuted", "proved")
    w = d.versus_definition.witness
    assert w["instance"]["n"] == 1 and w["instance"]["m"] == 1
    assert w["lhs"] == pytest.approx(0.268941, rel=1e-6)  # e⁻¹/(1 + e⁻¹)
    assert w["rhs"] == 0.5
    assert w["enclosures"] == {"lhs": "0.26894142137 ± 1e-12", "rhs": "0.5", "difference": "-0.23105857863 ± 1e-12",
                               "bits": 64}
    assert derivation_lines(d.as_json())[1] == (
        "softmax₁(x − m) = softmax₁(x): **refuted**: at M = [[1]], i = 1, j = 1, m = 1, "
        "n = 1, x = [[0]] the two sides are 0.268941 and 0.5")


def test_missing_max_subtraction_is_exact_in_exact_arithmetic():
    d = _derive("no-max-subtraction", "softmax1")
    assert _statuses(d) == ("proved", "proved", "proved")
    assert derivation_lines(d.as_json())[1] == (
        "so the code equals softmax₁(x) in exact arithmetic: the fault is numerical only")


@pytest.mark.parametrize("fault,name,want,closed", [
    ("extra-terms-dropped", "softmax1", {}, "softmax(x)"),
    ("extra-one-added", "softmax", {}, "softmax₁(x)"),
    ("extra-logit-scaled", "sink", {"d": 64, "power": -1}, "sink_s(x) with s·1/√64"),
    ("exp2-units", "sink", {"where": "sink logit", "c": "ln 2"}, "sink_s(x) with s·ln 2"),
    ("exp2-units", "softmax1", {"where": "scores", "c": "ln 2"}, "softmax₁(ln 2·x)"),
])
def test_other_faulty_forms_are_proved_and_refuted(fault, name, want, closed):
    d = _derive(fault, name, **want)
    assert d.closed == closed
    assert _statuses(d)[:2] == ("proved", "refuted")


def test_no_derivation_for_a_pattern_only_fault():
    assert _derive("all-masked-nan", "softmax1") is None


def test_the_half_floor_of_the_unshifted_one_is_stated_only_as_proved(monkeypatch):
    """impl-check says the faulty softmax₁'s weights sum to at least 1/2 only with the step proved."""
    import derive.prove.equality as equality
    from derive.build import _load_module

    _mass_floor = _load_module(Path(__file__).resolve().parent.parent / "proofs" / "impl_check.py")._mass_floor
    from derive.prove.verdict import UNDECIDED, Verdict

    text = _mass_floor()
    assert "S/(1 + S) − 1/2 = ρ/(4 + 2ρ) (**proved**:" in text and "at least 1/2" in text
    monkeypatch.setattr(equality, "prove_equal", lambda a, b: Verdict(UNDECIDED, "no proof"))
    assert _mass_floor() == ""


def test_an_expected_refutation_searches_first_and_finds_prove_equals_witness(monkeypatch):
    """The closed form of an exact fault against the definition: the same certified witness as
    prove_equal's, found without a proof attempt; a true identity is still proved."""
    import sympy as sp

    from derive.impl.faults import derivations as dv
    from derive.prove.equality import prove_equal

    x = sp.Symbol("x", real=True)
    lhs, rhs = sp.exp(x) / (1 + sp.exp(x)), sp.exp(x) / (2 + sp.exp(x))
    full = prove_equal(lhs, rhs)
    keys = ("instance", "indices", "lhs", "rhs")

    def no_proof(*a, **k):
        raise AssertionError("a proof attempt although a certified counterexample exists")

    with monkeypatch.context() as m:
        m.setattr(dv, "prove_equal", no_proof)
        fast = dv._refute(lhs, rhs)
    assert fast.status == full.status == "refuted" and fast.method == "counterexample"
    assert {k: fast.witness[k] for k in keys} == {k: full.witness[k] for k in keys}
    assert dv._refute(lhs, 1 / (1 + sp.exp(-x))).status == "proved"
