"""Claims the counterexample search used to miss, and masks and equivalences decided on the integers.

Every false claim here must be refuted with a certified counterexample (ball arithmetic whose
difference excludes 0, replayed by hand below), every true one proved: the exact specs named
where each gap was reported, each with a true and a false variant."""

from __future__ import annotations

import pytest
from flint import arb

from derive.claims.run import check_spec
from derive.crosscheck.witness import Certificate, rounded, show_ball
from derive.spec.load import parse_spec


def _check(score: str, claims: list[str], mask: str = "none", normalizer: str = "softmax", symbols: str = ""):
    lines = [f'name = "x"\nscore = "{score}"\nmask = "{mask}"\nnormalizer = "{normalizer}"']
    if symbols:
        lines.append(f"[symbols]\n{symbols}")
    lines.append("[claims]\n" + "".join(f"c{k} = {c!r}\n" for k, c in enumerate(claims)))
    return check_spec(parse_spec("\n".join(lines) + "\n")).claims


def _ball(text: str) -> arb:
    """A shown enclosure read back as a ball: "x", "x ± u" or flint's "[m +/- r]"."""
    text = text.strip()
    if text.startswith("["):
        return arb(text)
    if " ± " in text:
        mid, rad = text.split(" ± ")
        return arb(f"[{mid} +/- {rad}]")
    return arb(text)


def _nonzero(difference) -> bool:
    """Does a shown difference (one enclosure, or one per key of a row) certainly exclude 0 somewhere?"""
    parts = difference if isinstance(difference, list) else [difference]
    return any(not _ball(p).contains(0) for p in parts)


def _refuted(res):
    assert res.verdict == "refuted", (res.claim, res.verdict, res.reason)
    ce = res.counterexample
    assert _nonzero(ce["enclosures"]["difference"]), ce["enclosures"]
    return ce


@pytest.mark.parametrize("mask", ["none", "causal"])
def test_row_constant_compares_every_pair_of_keys(mask):
    """(j − 1)(j − 2) is 0 at keys 1 and 2 and 2 at key 3: the search must reach key 3."""
    false, true = _check("dot(q, k) / sqrt(d)", ["row_constant('(j - 1)*(j - 2)')",
                                                  "row_constant('(i - 1)*(i - 2)')"], mask)
    ce = _refuted(false)
    idx = ce["indices"]
    one, two = idx["j_1"], idx["j_2"]
    assert (ce["original"], ce["changed"]) == ((one - 1) * (one - 2), (two - 1) * (two - 2))
    assert max(one, two) >= 3
    if mask == "causal":
        assert one <= idx["i"] and two <= idx["i"]  # both keys allowed
    assert true.verdict == "proved"


def test_the_head_index_starts_at_0():
    """|h − 1| − h + 1 is 0 for every head h ≥ 1 and 2 for head 0."""
    false, true = _check("dot(q, k) / sqrt(d)", ["row_constant('j*(abs(h - 1) - h + 1)')",
                                                  "row_constant('j*(abs(h + 1) - h - 1)')"])
    ce = _refuted(false)
    assert ce["indices"]["h"] == 0
    assert (ce["original"], ce["changed"]) == (2 * ce["indices"]["j_1"], 2 * ce["indices"]["j_2"])
    assert true.verdict == "proved"


def test_a_domain_guard_is_demanded_only_on_allowed_keys():
    """log(1 + i − j) is undefined at the masked keys j > i + 1 only: a counterexample exists."""
    claims = _check("dot(q, k) / sqrt(d) + log(1 + i - j)", [
        "invariant(q)", "equivalent('dot(q, k) / sqrt(d)')",
        "equivalent('dot(q, k) / sqrt(d) + log(1 + abs(i - j))')"], "causal")
    for res in claims[:2]:
        ce = _refuted(res)
        assert 1 <= ce["indices"]["i"] <= ce["n"]
    assert claims[2].verdict == "proved", claims[2].reason


def test_row_constant_demands_the_domain_on_allowed_keys_only():
    false, true = _check("dot(q, k) / sqrt(d)", ["row_constant('log(1 + i - j)')",
                                                  "row_constant('log(1 + i - j) - log(1 + abs(i - j))')"], "causal")
    ce = _refuted(false)
    idx = ce["indices"]
    assert max(idx["j_1"], idx["j_2"]) <= idx["i"]
    assert true.verdict == "proved"


def test_a_value_too_small_for_a_decimal_is_still_a_counterexample():
    """e^(−10⁷·…) is far below 1e−999999: formatted as text, never an engine failure."""
    claims = _check("dot(q, k)/sqrt(d) + 10**7*dot(k, b)",
                    ["invariant(b)", "depends(b)", "equivalent('dot(q, k)/sqrt(d)')", "invariant(q)"],
                    symbols='b = "vector"')
    assert [c.verdict for c in claims] == ["refuted", "proved", "refuted", "refuted"], [c.reason for c in claims]
    for res in (claims[0], claims[2]):
        _refuted(res)
    tiny = arb(-10**7).exp()
    assert show_ball(tiny) == "1.5169367809e-4342945 ± 1e-4342956"  # 12 digits: 1.51693678090
    assert rounded(tiny) == "1.51694e-4342945"
    assert rounded(-tiny) == "-1.51694e-4342945"


def test_two_sides_that_read_alike_show_their_difference():
    """0.4750211 vs 0.4750212 both read 0.475021: the difference is shown, certainly not 0."""
    a, b = arb("0.4750211"), arb("0.4750212")
    cert = Certificate(a, b, 64)
    shown = cert.as_json()
    assert rounded(a) == rounded(b) == 0.475021
    assert _nonzero(shown["difference"]) and _ball(shown["difference"]) < 0


@pytest.mark.parametrize("normalizer, verdict", [("softmax", "proved"), ("softmax1", "refuted")])
def test_equivalent_uses_the_mask_and_its_reason_is_true_under_it(normalizer, verdict):
    """Under causal, |i − j| = i − j on every allowed key; j·m + m·|i − j| equals m·i there: a
    row-constant, so the weights agree exactly when the normalizer is shift-invariant."""
    same, other, shifted = _check("dot(q, k) / sqrt(d) - m * abs(i - j)", [
        "equivalent('dot(q, k) / sqrt(d) - m * (i - j)')",
        "equivalent('dot(q, k) / sqrt(d) + m * (i - j)')",
        "equivalent('dot(q, k) / sqrt(d) + j * m')"], "causal", normalizer, 'm = "scalar positive"')
    assert same.verdict == "proved"
    assert same.reason == ("the scores agree on every key the mask causal allows, so the weights (which see only "
                           "allowed keys) are the same")
    _refuted(other)
    assert other.reason == ("the score differs by $2 m \\left(i - j\\right)$ on the keys the mask causal allows, "
                            "which depends on the key through $- 2 j m$")
    assert shifted.verdict == verdict
    if verdict == "proved":
        assert shifted.reason == ("the score changes only by a row-constant term on the keys the mask causal "
                                  "allows and softmax is shift-invariant")
    else:
        _refuted(shifted)
        assert shifted.reason == ("the score differs by the row-constant term $i m$ on the keys the mask causal allows, "
                                  "and softmax1 is not shift-invariant")


def test_without_a_mask_the_same_claims_are_refuted():
    claims = _check("dot(q, k) / sqrt(d) - m * abs(i - j)", [
        "equivalent('dot(q, k) / sqrt(d) - m * (i - j)')", "equivalent('dot(q, k) / sqrt(d) + j * m')"],
        "none", "softmax", 'm = "scalar positive"')
    for res in claims:
        ce = _refuted(res)
        assert res.reason.startswith("the score differs by ") and "key" in res.reason
        assert ce["n"] > ce["indices"]["i"]  # the row has a key after the query, where |i − j| ≠ i − j
