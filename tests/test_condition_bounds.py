"""A reduction's condition that reaches past either end of the row (t > i - 3 at row 1, t > -3,
t != 0, t < n + 3, t == j + 1 at the last key) runs over the row's keys 1..n only. It once ran its
sum from the bound itself, so the evaluator read key 0 (a padding entry) and key -1 (numpy's
wrap-around to the last key), and refuted true claims with counterexamples that do not replay
(e^0/(e^0 + e^0) printed for a row of one key, whose weight is 1), or raised IndexError past n."""

from __future__ import annotations

import pytest


def _check(tmp_path, weight: str, claims: dict, mask: str = "none") -> dict:
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    (tmp_path / "w.toml").write_text(
        f'name = "w"\nscore = "dot(q, k) / sqrt(d)"\nmask = "{mask}"\n[normalizer]\nweight = "{weight}"\n[claims]\n'
        + "".join(f'{k} = "{v}"\n' for k, v in claims.items()))
    return {c.name: c for c in check_spec(load_spec(tmp_path / "w.toml")).claims}


def test_a_bound_is_kept_only_where_it_is_a_key_of_every_row():
    import sympy as sp

    from derive.normalizers.formula import _at_least_one, _at_most_n
    from derive.model.attention import M, i, j, n

    r = sp.Symbol("r", integer=True, positive=True)
    count = sp.Sum(M[i, r], (r, 1, n))
    assert [_at_least_one(e) for e in (i, j + 1, j - 1, i - 2, sp.Integer(-2), count, count + 1)] == [
        True, True, False, False, False, False, True]
    assert [_at_most_n(e) for e in (i, j - 1, j + 1, n + 2, count, count + 1, n)] == [
        True, True, False, False, True, False, True]


@pytest.mark.parametrize("weight,mask", [
    ("exp(x_j) / sum_t(exp(x_t), t > i - 3)", "causal_window(3)"),  # every allowed key of the window
    ("exp(x_j) / sum_t(exp(x_t), t > -3)", "none"),
    ("exp(x_j) / sum_t(exp(x_t), t != 0)", "none"),
    ("exp(x_j) / sum_t(exp(x_t), t < n + 3)", "none"),
])
def test_a_sum_over_the_whole_row_is_not_refuted(tmp_path, weight, mask):
    got = _check(tmp_path, weight, {"sum1": "weights_sum_to_one"}, mask)["sum1"]
    assert got.verdict in ("proved", "undecided"), (got.verdict, got.reason, got.counterexample)


def test_a_key_past_the_last_is_no_key(tmp_path):
    # e^x_j / (e^x_j + e^x_{j+1}): the last key has no key j + 1 and weight 1 (so no abstention);
    # a row of two equal scores sums to 1/2 + 1
    got = _check(tmp_path, "exp(x_j) / (exp(x_j) + sum_t(exp(x_t), t == j + 1))",
                 {"abst": "can_abstain", "sum1": "weights_sum_to_one"})
    assert got["abst"].verdict == "refuted"
    assert got["abst"].reason == "with one allowed key the weight is 1 for every score"
    assert got["sum1"].verdict == "refuted"


@pytest.mark.slow
def test_the_whole_row_is_equivalent_to_softmax_or_undecided(tmp_path):
    (tmp_path / "sm.toml").write_text('name = "sm"\nscore = "dot(q, k) / sqrt(d)"\nnormalizer = "softmax"\n')
    for weight in ("exp(x_j) / sum_t(exp(x_t), t > -3)", "exp(x_j) / sum_t(exp(x_t), t != 0)"):
        got = _check(tmp_path, weight, {"sm": 'equivalent_to(\\"sm.toml\\")'})["sm"]
        assert got.verdict in ("proved", "undecided"), (weight, got.verdict, got.reason)
