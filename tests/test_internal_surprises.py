"""Two specs on which the engine used to fail, each decided now with the right reason.

A coefficient that is exactly 0 as read (``(10**7 + 1 - 10**7 - 1) * dot(k, b)``) removes b from
the variant: the weights are the same for every b, so ``invariant(b)`` is proved and
``depends(b)`` refuted, not "please report this". A score scaled by 1e300 gives weights such as
e^(−10³⁰⁰), whose decimal exponents are beyond what Python's ``decimal`` can hold: its
counterexamples are certified and printed (``… e-434294481903251827651128918916605…``), not
"the engine failed on this claim (InvalidOperation)".
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from flint import arb

from derive.claims.run import check_spec
from derive.crosscheck.witness import rounded, show_ball
from derive.spec import parse_spec

ZERO = """name = "zero coefficient"
score = "dot(q, k) / sqrt(d) + (10**7 + 1 - 10**7 - 1) * dot(k, b)"
value = "v"

[symbols]
b = "vector"

[claims]
inv = "invariant(b)"
dep = { claim = "depends(b)", expect = "refuted" }
out = "output_invariant(b)"
"""

BIG = """name = "big scale"
score = "1e300 * dot(q, k) / sqrt(d)"

[claims]
eq = 'equivalent("dot(q, k) / sqrt(d)")'
inv = "invariant(q)"
shift = "shift_invariant"
"""


def _claims(text: str) -> dict:
    return {c.name: c for c in check_spec(parse_spec(text, "s.toml")).claims}


def test_a_coefficient_that_is_exactly_zero_removes_the_name():
    got = _claims(ZERO)
    why = ("every term that involves b is exactly 0 as read, so no part of the variant (score, value, mask, "
           "normalizer) depends on b")
    assert (got["inv"].verdict, got["inv"].reason) == ("proved", why)
    assert (got["out"].verdict, got["out"].reason) == ("proved", why)
    assert (got["dep"].verdict, got["dep"].reason) == ("refuted", f"the weights do not depend on b: {why}")
    assert got["dep"].as_expected
    assert got["inv"].steps[0]["text"] == "score as read" and "b" not in got["inv"].steps[0]["latex"]


def test_a_name_the_substitution_misses_is_an_engine_fault(monkeypatch):
    """If NAME's object is in the variant and the substitution changed nothing, the substitution
    has a gap: an internal error, never a proof."""
    from derive.claims import substitute

    monkeypatch.setattr(substitute, "substitution", lambda spec, name, to: (lambda expr: expr))
    got = _claims(ZERO.replace("(10**7 + 1 - 10**7 - 1) * ", "2 * "))
    assert got["inv"].verdict == "error"
    assert got["inv"].error["type"] == "RuntimeError"
    assert got["inv"].error["message"] == ("replacing b changed no part of the variant, although a part "
                                           "involves it")


def test_a_score_scaled_by_1e300_is_refuted_with_certified_enclosures():
    got = _claims(BIG)
    assert {k: c.verdict for k, c in got.items()} == {"eq": "refuted", "inv": "refuted", "shift": "proved"}
    assert got["eq"].reason.startswith("the score differs by a key-dependent term")
    assert got["inv"].reason.startswith("the score changes by a key-dependent term")
    inv = got["inv"].counterexample
    # weights far below float64's range on both sides, each printed with its exponent in full
    assert re.fullmatch(r"4\.99214e-32572086142743887073834668918745381172079775435274992458584033737439848\d+",
                        inv["original"])
    assert re.fullmatch(r"1\.83816e-434294481903251827651128918916605082294397005803666566114453783165864649"
                        r"\d+", inv["changed"])
    assert inv["enclosures"]["lhs"].startswith("4.99214022422e-3257208614274388707383466891874538117207977543")
    assert inv["enclosures"]["rhs"].startswith("1.83815600629e-4342944819032518276511289189166050822943970058")
    assert inv["enclosures"]["difference"].startswith("4.99214022422e-325720861427438870738346689187453811720797")


def test_enclosures_and_rounded_values_at_any_exponent():
    """A ball far beyond Decimal's exponent range is written like one inside it: 12 digits ± a
    unit of the last, and 6 significant digits for reading (the exponent carried by text)."""
    e = 3 * 10**299
    assert show_ball(arb(f"1.5e-{e}")) == f"1.5e-{e} ± 1e-{e + 11}"
    assert (show_ball(arb(f"1.5e-{e}") / 3), rounded(arb(f"1.5e-{e}") / 3)) == \
        (f"5e-{e + 1} ± 1e-{e + 12}", f"5.00000e-{e + 1}")
    assert (show_ball(arb(f"-2.5e+{e}") / 3), rounded(arb(f"-2.5e+{e}") / 3)) == \
        (f"-8.33333333333e+{e - 1} ± 1e+{e - 12}", f"-8.33333e+{e - 1}")
    assert show_ball(arb(f"9.99999999999999999e-{e}")) == f"1e-{e - 1} ± 1e-{e + 10}"  # rounding carries
    assert show_ball(arb(0, f"1e-{e}")) == f"0 ± 1.1e-{e}"  # r rounded up: m ± r holds the ball
    # inside Decimal's range, the text is what it was
    assert show_ball(arb("1e-4342945") / 3) == "3.33333333333e-4342946 ± 1e-4342957"
    assert (show_ball(arb(1) / 3), rounded(arb(1) / 3)) == ("0.333333333333 ± 1e-12", 0.333333)


def test_a_property_whose_shifted_weight_is_the_weight_as_built_needs_no_vacuous_cross_check():
    """x_t − x_j cancels a common shift as it is built, so both sides of the shift-invariance
    cross-check are one expression: the check is not run (it could not fail), and the proof
    stands, where the cross-check's refusal used to be swallowed as "no numeric evaluation"."""
    got = _claims('name = "r"\nscore = "dot(q, k) / sqrt(d)"\n[normalizer]\nname = "oneplus"\n'
                  'weight = "1 / (1 + sum_t(exp(x_t - x_j)))"\n[claims]\nshift = "shift_invariant"\n')
    c = got["shift"]
    assert (c.verdict, c.cross_check) == ("proved", None)
    assert c.steps[-1]["text"] == ("numeric cross-check: not run (both sides are one expression, so a numeric "
                                   "comparison could not fail); the verdict rests on the symbolic steps alone")


def test_a_row_maximum_under_a_mask_made_concrete_has_no_value_not_a_key_error():
    """max_t reads the row's mask M[i, t] implicitly; a counterexample search on the causal mask
    made concrete draws no table M, so the maximum cannot know the allowed keys: no value there
    (no certificate), as before, where a KeyError was swallowed; now any other KeyError is an
    engine error."""
    from derive.crosscheck.evaluate import Instance, evaluate
    from derive.errors import Unsupported
    from derive.model.attention import X, i, n, t
    from derive.model.reductions import RowMax

    with pytest.raises(Unsupported, match="the max over the allowed keys of a mask made concrete"):
        evaluate(RowMax(X[i, t], t, 1, n), Instance(d=1, n=2, tables={"x": np.zeros((3, 3))}), "arb", {i: 1})


def test_max_ratio_invariance_under_causal_is_proved():
    """The K bias adds q·b_k/√d to every score of a row, and e^{x_j}/max_t e^{x_t} ignores a row
    constant; under causal every row has key 1, so the max is over a nonempty set: true, and proved
    since a row's max_t sheds a term free of t (it was undecided before that rule)."""
    text = (Path(__file__).parent / "specs" / "adversarial" / "max_ratio.toml").read_text(encoding="utf-8")
    got = _claims(text.split("[claims]")[0] + '[claims]\nkb = "invariant(b_k)"\n')
    assert (got["kb"].verdict, got["kb"].reason) == (
        "proved", "the score changes only by a row-constant term and max_ratio is shift-invariant")
