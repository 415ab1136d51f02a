"""The atlas states a derivation once when several variants share its steps: only when they do."""

from __future__ import annotations

from types import SimpleNamespace

from derive.atlas.shared import shared_claims, shared_markdown
from derive.claims.result import ClaimResult

QUIET = "numeric cross-check: 20 random instances agree"


def _vbias(verdict: str, rope: bool = False, dv: str = "0") -> ClaimResult:
    how = " and R(a)ᵀR(b) = R(b − a)" if rope else ""
    steps = [{"text": "score", "latex": "s"}, {"text": "compared with", "latex": "s"},
             {"text": f"difference of the scores, expanded by bilinearity{how}", "latex": "0"},
             {"text": "the scores are identical, so are the weights", "latex": ""},
             {"text": "value minus b_v minus the value at b_v = 0", "latex": dv},
             {"text": f"weights sum to one: {verdict} (why)", "latex": ""}]
    if verdict == "proved":
        steps.append({"text": QUIET, "latex": ""})
    reason = "the output is shifted" if verdict == "proved" else "the weights need not sum to 1"
    ce = None if verdict == "proved" else {
        "d": 2, "n": 1, "mask": "causal", "indices": {"i": 1}, "values": {"b_v": [0, 1]}, "functions": None,
        "enclosures": {"lhs": ["0", "0.5"], "rhs": ["0", "1"], "difference": ["0", "-0.5"], "bits": 64},
        "compared": ["output", "output with b_v = 0, plus b_v"]}
    return ClaimResult("v_bias_shifts_output", "output_shift(b_v)", verdict, reason, ce, steps,
                       expected=verdict)


def _variant(name: str, claim: ClaimResult):
    return SimpleNamespace(name=name, claims=[claim])


def test_one_statement_for_the_variants_that_share_the_steps():
    results = [_variant("A", _vbias("proved")), _variant("B", _vbias("proved", rope=True)),
               _variant("C", _vbias("refuted")), _variant("D", _vbias("refuted"))]
    shared = shared_claims(results, QUIET, {"v_bias_shifts_output": "V-bias = output shift"})
    assert [s.name for s in shared] == ["v_bias_shifts_output"]
    assert [r.name for r, _c in shared[0].members] == ["A", "B", "C", "D"]
    text = "\n".join(shared_markdown(shared))
    assert text.count("### V-bias = output shift") == 1
    # the method differs (RoPE or not): the step is named by what it computes, its formula shown once
    assert "1. difference of the scores: $`0`$ in every variant" in text
    assert "2. the scores are identical, so are the weights\n" in text
    assert "4. weights sum to one: proved for the ✅ variants below, refuted for the ❌ variants below" in text
    assert "✅ **proved** for [A](#a), [B](#b): The output is shifted." in text
    assert "❌ **refuted** (as expected) for [C](#c), [D](#d): The weights need not sum to 1." in text
    assert "enclosures [0, 0.5] (output) vs [0, 1]" in text
    assert "- C, D: $`d = 2`$, $`n = 1`$, mask causal, $`i = 1`$, $`b_{v} = [0, 1]`$" in text


def test_one_counterexample_with_each_variants_own_parameter():
    sink = _vbias("refuted")
    sink.counterexample = {**sink.counterexample, "values": {"s": 0, "b_v": [0, 1]}}
    results = [_variant("A", _vbias("refuted")), _variant("B", sink), _variant("C", _vbias("refuted"))]
    text = "\n".join(shared_markdown(shared_claims(results, QUIET, {})))
    assert "- A, C: $`d = 2`$" in text and "- B: the same with $`s = 0`$" in text
    # another value of a shared input: each instance in full
    other = _vbias("refuted")
    other.counterexample = {**other.counterexample, "values": {"b_v": [1, 0]}}
    results = [_variant("A", _vbias("refuted")), _variant("B", other), _variant("C", _vbias("refuted"))]
    text = "\n".join(shared_markdown(shared_claims(results, QUIET, {})))
    assert "- B: $`d = 2`$, $`n = 1`$, mask causal, $`i = 1`$, $`b_{v} = [1, 0]`$" in text


def test_a_variant_whose_step_gives_another_formula_is_not_shared():
    results = [_variant("A", _vbias("proved")), _variant("B", _vbias("proved")),
               _variant("C", _vbias("proved", dv="b_v"))]
    assert shared_claims(results, QUIET, {}) == []


def test_too_few_variants_or_an_unusual_cross_check_are_not_shared():
    assert shared_claims([_variant("A", _vbias("proved")), _variant("B", _vbias("proved"))], QUIET, {}) == []
    # the cross-check ran differently in one variant: its details must say so, so nothing is shared
    results = [_variant(n, _vbias("proved")) for n in "ABC"]
    assert shared_claims(results, "another cross-check", {}) == []


def test_a_step_outcome_other_than_the_verdict_names_the_variants():
    odd = _vbias("proved")
    odd.verdict, odd.reason, odd.expected = "undecided", "the cross-check disagreed", "undecided"
    odd.steps = [s for s in odd.steps if s["text"] != QUIET]
    results = [_variant("A", _vbias("proved")), _variant("B", _vbias("proved")), _variant("C", odd)]
    text = "\n".join(shared_markdown(shared_claims(results, QUIET, {})))
    assert "4. weights sum to one: proved for [A](#a), [B](#b), [C](#c)" in text
    assert "❓ **undecided** (as expected) for [C](#c): The cross-check disagreed." in text
