"""A weight that reads the row's index (1/i) on a row of one allowed key: the refutation of
can_abstain prints its witness at the instance's own row, i = 1 (it once failed converting 1/i to
a float, an internal error on a valid spec)."""

from __future__ import annotations


def test_a_one_key_weight_that_reads_i_is_refuted_at_row_one(tmp_path):
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    (tmp_path / "w.toml").write_text('name = "w"\nscore = "dot(q, k) / sqrt(d)"\nmask = "causal"\n'
                                     '[normalizer]\nweight = "1/i"\n[claims]\nabst = "can_abstain"\n')
    (c,) = check_spec(load_spec(tmp_path / "w.toml")).claims
    assert (c.verdict, c.reason) == ("refuted", "with one allowed key the weight is 1/i for every score")
    assert c.counterexample is None  # refuted by a proof of the negation (docs/spec.md)


def test_the_property_witness_is_at_row_one():
    from derive.normalizers.properties import _one_key_witness
    from derive.normalizers.registry import get
    from derive.model.attention import i

    entry = get("softmax")
    w = _one_key_witness(entry, {}, 1 / i)
    assert w["indices"] == {"i": 1} and w["lhs"] == 1.0
