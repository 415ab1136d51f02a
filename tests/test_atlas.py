"""The atlas verdicts are tests: each known fact about each variant is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from derive.atlas import ORDER, spec_paths
from derive.atlas.render import atlas_markdown, check_atlas

P, R = "proved", "refuted"
SOFTMAX_NORM = {"shift_invariant": P, "can_abstain": R, "weights_sum_to_one": P}
ABSTAINING_NORM = {"shift_invariant": R, "can_abstain": P, "weights_sum_to_one": R}

FACTS = {
    # a shared K-bias only adds the row-constant ⟨q, b_k⟩ — unless RoPE rotates it, or the
    # normalizer is not shift-invariant, or a nonlinearity (soft-capping) sits in between
    "gpt2": {"k_bias_redundant": P, "q_bias_matters": P, "v_bias_shifts_output": P, **SOFTMAX_NORM},
    "qwen2": {"k_bias_redundant": R, "q_bias_matters": P, "v_bias_shifts_output": P, **SOFTMAX_NORM},
    "rope_bias_after": {"k_bias_redundant": P, "q_bias_matters": P, "v_bias_shifts_output": P, **SOFTMAX_NORM},
    "alibi": {"k_bias_redundant": P, "q_bias_matters": P, "v_bias_shifts_output": P, **SOFTMAX_NORM,
              "slope_matters": P, "query_part_of_bias_cancels": P},
    "t5": {"relative_bias_matters": P, "relative_bias_is_row_constant": R, **SOFTMAX_NORM},
    "qk_norm": {"k_bias_redundant": P, "q_bias_matters": P, "v_bias_shifts_output": P, **SOFTMAX_NORM},
    # the softcap normalizer caps its input: a shift of the scores before the cap is not cancelled
    "softcap": {"k_bias_redundant": R, "q_bias_matters": P, "v_bias_shifts_output": P,
                "shift_invariant": R, "can_abstain": R, "weights_sum_to_one": P},
    "softmax1": {"k_bias_redundant": R, "q_bias_matters": P, "v_bias_shifts_output": R, **ABSTAINING_NORM},
    "gpt_oss_sinks": {"k_bias_redundant": R, "q_bias_matters": P, "v_bias_shifts_output": R, **ABSTAINING_NORM,
                      "sink_matters": P},
    "zero_token": {"k_bias_redundant": R, "q_bias_matters": P, "v_bias_shifts_output": R, **ABSTAINING_NORM},
    "sigmoid": {"k_bias_redundant": R, "q_bias_matters": P, "v_bias_shifts_output": R, **ABSTAINING_NORM},
    "key_shift": {"k_bias_redundant": R, "q_bias_matters": P, "v_bias_shifts_output": P, **SOFTMAX_NORM},
}


@pytest.fixture(scope="module")
def results():
    return check_atlas()


def test_every_variant_has_a_spec():
    assert set(FACTS) == set(ORDER) and all(p.exists() for p in spec_paths())


@pytest.mark.slow
@pytest.mark.parametrize("variant", ORDER)
def test_known_facts(results, variant):
    r = results[ORDER.index(variant)]
    got = {c.name: c.verdict for c in r.claims}
    assert got == FACTS[variant], {c.name: c.reason for c in r.claims}


@pytest.mark.slow
def test_refutations_have_counterexamples(results):
    for r in results:
        for c in r.claims:
            if c.verdict == R and c.claim.startswith(("invariant", "output", "row_constant", "equiv")):
                assert c.counterexample and c.counterexample["d"] <= 3, (r.name, c.name)


@pytest.mark.slow
def test_committed_atlas_is_current(results):
    committed = (Path(__file__).resolve().parent.parent / "docs" / "atlas.md").read_text(encoding="utf-8")
    assert committed == atlas_markdown(results), "regenerate: python build_docs.py"


def test_every_claim_meets_its_expectation(results):
    """The atlas states its negative facts with expect = "refuted": `derive check derive/atlas/*.toml`
    exits 0, and each expectation is the known fact above."""
    for variant, r in zip(ORDER, results):
        for c in r.claims:
            assert c.as_expected, (variant, c.name, c.miss)
            assert c.expected == FACTS[variant][c.name], (variant, c.name)


def test_a_reason_says_what_its_one_key_instance_shows(results):
    """gpt-oss's K bias fails for two reasons (a key-dependent RoPE term; a sink that is not
    shift-invariant); an instance with one key cannot show the first, and the reason says so."""
    r = results[ORDER.index("gpt_oss_sinks")]
    (c,) = [c for c in r.claims if c.name == "k_bias_redundant"]
    assert c.verdict == R and c.counterexample["n"] == 1
    assert "key-dependent term" in c.reason and "not shift-invariant" in c.reason
    assert c.reason.endswith("(the certified instance has one key, so what it shows is the second reason alone)")
    # a variant whose counterexample has two keys says nothing of the kind
    for r in results:
        for c in r.claims:
            if c.counterexample and c.counterexample.get("n", 1) > 1:
                assert "has one key" not in c.reason, (r.name, c.name)
