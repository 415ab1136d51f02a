"""The adversarial corpus's categories (tests/specs/adversarial/categories.json) and the decided
fraction of each, read from the pinned verdicts (``python tests/adversarial_decided.py`` prints
the table; ``--run`` checks every spec again)."""

from __future__ import annotations

import json
from pathlib import Path

import adversarial_decided as decided

CORPUS = Path(__file__).parent / "specs" / "adversarial"
TRUTH = json.loads((CORPUS / "truth.json").read_text())
CATEGORIES = json.loads((CORPUS / "categories.json").read_text())


def test_every_spec_with_a_claim_is_in_exactly_one_category():
    listed = [stem for stems in CATEGORIES.values() for stem in stems]
    assert len(listed) == len(set(listed))
    assert set(listed) == {stem for stem, claims in TRUTH.items() if claims}


def test_the_table_counts_every_claim_and_names_a_wrong_verdict():
    rows, wrong = decided.table(decided.load("verdicts.json"), TRUTH, CATEGORIES)
    assert rows[-1][0] == "all" and rows[-1][1] == sum(len(c) for c in TRUTH.values())
    assert wrong == []
    # a verdict against the truth is counted and named: the table can fail
    flipped = {stem: dict(claims) for stem, claims in decided.load("verdicts.json").items()}
    flipped["softmax_causal"]["abst"] = "proved"  # can_abstain of softmax is false
    rows, wrong = decided.table(flipped, TRUTH, CATEGORIES)
    assert wrong == [("softmax_causal", "abst", "proved")] and rows[-1][3] == 1
