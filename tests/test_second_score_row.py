"""A user normalizer's second score row (score2, y_j in the weight) is part of the variant: a
substitution reaches it, and a claim's lemma compares it too (a lemma that looked at x_j alone
proved invariant(b) for a b read only by y_j; the cross-check caught it, as undecided)."""

from __future__ import annotations

from derive.claims.run import DEFAULT_CHECK, check_spec
from derive.spec import load_spec

SPEC = """name = "differential"
score = "dot(q, k) / sqrt(d)"
score2 = "dot(q, k) / sqrt(d) + {extra}"
mask = "causal"
[normalizer]
weight = "exp(x_j)/sum_t(exp(x_t)) - lam*exp(y_j)/sum_t(exp(y_t))"
[symbols]
lam = "scalar positive"
b = "vector"
[claims]
inv = "invariant(b)"
dep = "depends(b)"
out = "output_invariant(b)"
"""


def _verdicts(tmp_path, extra: str) -> dict:
    (tmp_path / "s.toml").write_text(SPEC.format(extra=extra))
    return {c.name: (c.verdict, c.reason) for c in check_spec(load_spec(tmp_path / "s.toml"), DEFAULT_CHECK).claims}


def test_a_key_dependent_term_in_the_second_row_is_refuted_with_its_reason(tmp_path):
    got = _verdicts(tmp_path, "dot(k, b)")
    assert {k: v[0] for k, v in got.items()} == {"inv": "refuted", "dep": "proved", "out": "refuted"}
    assert got["inv"][1].startswith("the scores x_j do not change, but the second score row y_j changes by")


def test_a_row_constant_term_in_the_second_row_is_proved_harmless(tmp_path):
    # ⟨q_i, b⟩ is the same for every key of a row, and each softmax of the weight cancels it
    got = _verdicts(tmp_path, "dot(q, b)")
    assert {k: v[0] for k, v in got.items()} == {"inv": "proved", "dep": "refuted", "out": "proved"}
