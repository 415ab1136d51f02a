"""No proof about a score where it has no value: a divisor of the score that a proof cancels (its
zeros shared by the numerator) or that SymPy drops as it builds (``c/c``) leaves every claim that
reads the score undecided, with the zero named; a divisor whose zeros are poles is kept by every
proof (decided as before), and the normalizer's own properties do not read the score."""

from __future__ import annotations

import pytest

TAIL = "but a proof about it may cancel that factor; derive proves claims only about the score as written, where it has a value"


def _check(tmp_path, score: str, claims: dict, value: str = "v") -> dict:
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    (tmp_path / "s.toml").write_text(
        f'name = "s"\nscore = "{score}"\nvalue = "{value}"\n[symbols]\nc = "scalar"\nb = "vector"\n[claims]\n'
        + "".join(f"{k} = '{v}'\n" for k, v in claims.items()))
    return {c.name: c for c in check_spec(load_spec(tmp_path / "s.toml")).claims}


def test_a_removable_singularity_of_the_score_gets_no_proof(tmp_path):
    # (c² − 1)/((c − 1)(c + 1)) is 1 except at c = ±1, where the score has no value
    got = _check(tmp_path, "dot(q, k) / sqrt(d) * (c**2 - 1)/((c - 1)*(c + 1))",
                 {"eq": 'equivalent("dot(q, k) / sqrt(d)")', "inv": "invariant(c)", "dep": "depends(c)",
                  "shift": "shift_invariant"})
    why = f"the score as written has no value where c - 1 = 0 (a divisor, (c - 1)*(c + 1)), {TAIL}"
    assert {k: (c.verdict, c.reason) for k, c in got.items() if k != "shift"} == {
        "eq": ("undecided", why), "inv": ("undecided", why), "dep": ("undecided", why)}
    assert got["shift"].verdict == "proved"  # softmax's own property, for every score


def test_a_singularity_that_depends_on_the_keys(tmp_path):
    got = _check(tmp_path, "dot(q, k) / sqrt(d) + (dot(k, b)**2 - 1)/((dot(k, b) - 1)*(dot(k, b) + 1))",
                 {"inv": "invariant(b)"})
    assert got["inv"].verdict == "undecided" and got["inv"].reason.startswith("the score as written has no value where")


@pytest.mark.parametrize("score", ["dot(q, k) / sqrt(d) * c / c", "dot(q, k) / sqrt(d) + 1/(c - 1) - 1/(c - 1)"])
def test_a_divisor_sympy_drops_gets_no_proof(tmp_path, score):
    assert _check(tmp_path, score, {"inv": "invariant(c)"})["inv"].verdict == "undecided"


@pytest.mark.parametrize("score,claim,verdict", [
    ("dot(q, k + b) / c", "invariant(b)", "proved"),  # a pole at c = 0: the proof holds where the score has a value
    ("dot(q, k) / (1 + dot(k, k)) + dot(q, b)", "invariant(b)", "proved"),  # never 0
])
def test_a_divisor_kept_as_a_pole_is_decided_as_before(tmp_path, score, claim, verdict):
    assert _check(tmp_path, score, {"x": claim})["x"].verdict == verdict


def test_the_value_bears_on_the_outputs_only(tmp_path):
    got = _check(tmp_path, "dot(q, k) / sqrt(d)", {"o": "output_invariant(c)", "w": "invariant(c)"},
                 value="v * (c*c - 1) / ((c - 1)*(c + 1))")
    assert got["o"].verdict == "undecided" and got["o"].reason.startswith("the value as written has no value where c - 1 = 0")
    assert got["w"].verdict == "proved"


def test_a_claims_expr_without_value_gets_no_proof(tmp_path):
    got = _check(tmp_path, "dot(q, k) / sqrt(d)",
                 {"e": 'equivalent("dot(q, k) / sqrt(d) * (c**2 - 1)/((c - 1)*(c + 1))")',
                  "r": 'row_constant("dot(q, k) * (c - 1) / (c - 1) - dot(q, k)")',
                  "ok": 'row_constant("dot(q, b) / c")'})
    why = "the claim's EXPR as written has no value where c - 1 = 0 (a divisor, {}), " + TAIL.replace("score", "claim's EXPR")
    assert (got["e"].verdict, got["e"].reason) == ("undecided", why.format("(c - 1)*(c + 1)"))
    assert (got["r"].verdict, got["r"].reason) == ("undecided", why.format("c - 1"))
    assert got["ok"].verdict == "proved"  # a pole at c = 0, kept
