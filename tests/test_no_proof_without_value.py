"""No proof about a weight where it has no value (issue 30, point 3): a divisor that depends on the
scores and that a proof may cancel, and a reduction whose condition leaves it without a term on
some row, make every claim on the weights undecided, with the place named; a refutation
certified where the weight has a value stands, and weights whose singular points are poles (or
that have none) are decided as before."""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "specs" / "adversarial"
TAIL = ("but a proof about it may cancel that factor or hold only on the other rows; derive proves claims only about "
        "the weight as written, where it has a value")


def _check(stem: str, folder: Path = CORPUS) -> dict:
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    return {c.name: c for c in check_spec(load_spec(folder / f"{stem}.toml")).claims}


def test_no_value_at_x_j_plus_or_minus_one_names_both_points():
    got = _check("singular_score_factor")
    why = ("the weight as written has no value where x_j - 1 = 0, at x_j = 1; or x_j + 1 = 0, at x_j = -1 "
           f"(…/((x_j - 1)*(x_j + 1))), {TAIL}")
    assert {k: (c.verdict, c.reason) for k, c in got.items()} == {"shift": ("undecided", why),
                                                                   "sum1": ("undecided", why)}


def test_a_sum_over_the_other_keys_has_no_term_on_row_one_under_causal():
    got = _check("empty_condition_causal")
    why = ("the weight as written has no value where the reduction sum_t(exp(x_t), t != j) has no term (a row where no "
           f"allowed key t has t != j) (exp(x_j)/sum_t(exp(x_t), t != j)), {TAIL}")
    assert (got["shift"].verdict, got["shift"].reason) == ("undecided", why)
    # refuted on row 2, where it has a value: e^x1/e^x2 + e^x2/e^x1 >= 2
    ce = got["sum1"].counterexample
    assert got["sum1"].verdict == "refuted" and ce["indices"]["i"] >= 2


@pytest.mark.parametrize("weight,verdicts", [
    # a pole (positive numerator): the reading keeps the zeros, the claims are decided as before
    ("exp(x_j) / (sum_t(exp(x_t)) - 1)", {"abst": "proved", "shift": "refuted"}),
    # never 0: SymPy finds no real zero of 1 + x_j**2
    ("exp(x_j) * (1 + x_j**2) / ((1 + x_j**2) * sum_t(exp(x_t)))", {"shift": "proved"}),
    # the sum over the other keys plus e^x_j has key j's term: never 0
    ("exp(x_j)/(exp(x_j) + sum_t(exp(x_t), t != j))", {"shift": "proved"}),
])
def test_a_weight_with_a_value_where_its_reading_has_one_is_decided(tmp_path, weight, verdicts):
    claims = {"abst": "can_abstain", "shift": "shift_invariant"}
    (tmp_path / "w.toml").write_text(
        f'name = "w"\nscore = "dot(q, k) / sqrt(d)"\n[normalizer]\nweight = "{weight}"\n[claims]\n'
        + "".join(f'{k} = "{claims[k]}"\n' for k in verdicts))
    got = _check("w", tmp_path)
    assert {k: c.verdict for k, c in got.items()} == verdicts


@pytest.mark.slow
def test_a_near_miss_that_is_false_is_refuted_inside_the_domain(tmp_path):
    # (x_j**2 - 1)/((x_j - 1)(x_j + 1)) times e^x_j/(1 + sum): softmax1 where it has a value, so not
    # shift-invariant; the counterexample avoids x_j = ±1 in both rows it compares
    (tmp_path / "w.toml").write_text(
        'name = "w"\nscore = "dot(q, k) / sqrt(d)"\n[normalizer]\n'
        'weight = "exp(x_j)*(x_j**2 - 1)/((x_j - 1)*(x_j + 1))/(1 + sum_t(exp(x_t)))"\n'
        '[claims]\nshift = "shift_invariant"\n')
    c = _check("w", tmp_path)["shift"]
    assert c.verdict == "refuted"
    v = c.counterexample["values"]
    row, shift = v["x"][c.counterexample["indices"]["i"] - 1], v["c"]
    assert all(abs(x) != 1 and abs(x + shift) != 1 for x in row)
