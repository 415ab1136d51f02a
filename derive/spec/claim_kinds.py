"""Claim kinds: one record each, the single source of every table about claims.

A record holds the kind's name, the argument it takes, its meaning, the prover that decides it
and the help text of its SARIF rule. Generated from it: the claim parsing of the spec loader
(:data:`CLAIM_ARGS`), the dispatch to provers (``derive.claims.provers.PROVERS``), the claim table of
``docs/spec.md`` (:func:`markdown_table`, written by :mod:`derive.spec.tables`) and the SARIF rules (:mod:`derive.report.sarif`).
Claim kinds are part of the spec language, so the record lives with the loader; it imports
nothing heavy, and names each prover as ``module:function``: text, which the claims (a floor
above, :mod:`derive.claims.provers`) import on first use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CLAIM_ARGS", "EXPECTATIONS", "KINDS", "NORMALIZER_PROPERTIES", "ClaimKind", "by_name", "markdown_table"]

# The verdicts a claim may be expected to have (``expect = "refuted"``); the first is the default.
EXPECTATIONS = ("proved", "refuted", "undecided")


@dataclass(frozen=True)
class ClaimKind:
    name: str
    arg: str | None  # "name" (a declared name), "expr" (a quoted expression), "file" (a quoted path), None
    meaning: str  # what a proof of the claim means, as in docs/spec.md (Markdown)
    prover: str  # "module:function": the function (ctx, claim) -> Outcome that decides it
    help: str = ""  # more for the SARIF rule's help text (what to do about a refutation)
    # The verdict that rests on a symbolic proof about the normalizer's weights ("" if the kind does
    # not read them): a weight whose symbolic reading has a value where the formula has none
    # (derive.normalizers.partial) never gets it.
    by_proof: str = "proved"
    # A property of the normalizer alone (with the mask's rows), decided by its property prover
    # (derive.normalizers.properties) and derived once for every normalizer in docs/normalizers.md,
    # where the atlas links it.
    of_normalizer: bool = False
    # What a proof and a refutation mean, said before the prover's own reason ("" : nothing said).
    says_proved: str = ""
    says_refuted: str = ""

    @property
    def usage(self) -> str:
        """How the claim is written: ``invariant(NAME)``, ``row_constant("EXPR")``, ``can_abstain``."""
        shape = {"name": "NAME", "expr": '"EXPR"', "file": '"OTHER.toml"'}.get(self.arg or "")
        return f"{self.name}({shape})" if shape else self.name

    @property
    def anchor(self) -> str:
        """The anchor of the claims section of docs/spec.md (one section lists every kind)."""
        return "claims"

    def plain_help(self) -> str:
        return _unplaceholder(self.help)

    def plain(self) -> str:
        """The meaning as plain text without placeholders (no Markdown, no NAME/EXPR/OTHER): for
        SARIF rule descriptions, which code scanning shows as they are."""
        return _unplaceholder(self.meaning.replace("`", "").replace("\\|", "|"))


def _unplaceholder(text: str) -> str:
    for placeholder, words in (("the spec OTHER.toml", "the other spec"), ("OTHER.toml", "the other spec"),
                               ("OTHER", "the other spec"),
                               ("NAME", "the named parameter"), ("EXPR", "the given expression")):
        text = re.sub(rf"(?<![:\w]){re.escape(placeholder)}\b", words, text)
    return text


_P, _F = "derive.claims.provers", "derive.claims.modifiers"

KINDS: tuple[ClaimKind, ...] = (
    ClaimKind("invariant", "name", "the attention weights of every row are the same for all values of NAME",
              f"{_P}:invariant",
              "A refutation comes with a certified counterexample: two values of NAME that give different "
              "weights. Remove the claim, or keep it as a known negative fact with expect = \"refuted\"."),
    ClaimKind("depends", "name", "some value of NAME changes some weight (the negation of `invariant`)",
              f"{_P}:depends",
              "A refutation is a proof that NAME never changes the weights: the parameter is redundant.", "refuted"),
    ClaimKind("output_invariant", "name", "the outputs Σ_j p_ij·value_j are the same for all values of NAME",
              f"{_P}:output_invariant",
              "A refutation comes with inputs whose outputs differ for two values of NAME."),
    ClaimKind("output_shift", "name",
              "(extension) NAME is a `vector`: the output with NAME equals the output with NAME = 0, plus NAME "
              "— a V-bias that folds into the output-projection bias",
              f"{_P}:output_shift",
              "A refutation: the weights of a row need not sum to 1, so NAME does not pass through unchanged."),
    ClaimKind("row_constant", "expr",
              "EXPR has the same value for every allowed key j of a row: under a mask, a term constant on the "
              "allowed keys but not on all keys is row-constant (the proof step says so)",
              f"{_P}:row_constant",
              "A refutation comes with a row and two allowed keys where EXPR differs.", ""),
    ClaimKind("equivalent", "expr", "replacing the score by EXPR gives the same weights for all inputs",
              f"{_P}:equivalent",
              "A refutation comes with inputs whose weights differ under the two scores."),
    ClaimKind("shift_invariant", None,
              "adding the same constant to every input of the normalizer in a row leaves the weights unchanged; "
              "the input is the spec's `score`, before anything the normalizer itself does to it (`softcap` caps "
              "its input, so a shift before the cap counts) — the row-shift invariance of `docs/normalizers.md`",
              f"{_P}:shift_invariant",
              "A property of the normalizer alone (docs/normalizers.md).", of_normalizer=True,
              says_proved="adding one constant to every score of a row leaves its weights unchanged",
              says_refuted="adding one constant to every score of a row changes its weights"),
    ClaimKind("can_abstain", None,
              "in every row (any non-empty allowed set) the scores can make every weight tend to 0 — the "
              "abstention of `docs/normalizers.md`; a total below 1 is not enough (a row whose weights sum to "
              "1/2 does not abstain)",
              f"{_P}:can_abstain",
              "A property of the normalizer alone (docs/normalizers.md).", of_normalizer=True),
    ClaimKind("weights_sum_to_one", None,
              "the weights of every row sum to 1; false when the mask can leave a row with no allowed key "
              "(its weights are all 0, see [Masks](#masks))",
              f"{_P}:weights_sum_to_one",
              "A property of the normalizer and the mask (docs/normalizers.md; a row with no allowed key "
              "has weights 0).", of_normalizer=True,
              says_proved="the weights of every row sum to 1", says_refuted="the weights of a row need not sum to 1"),
    ClaimKind("decreasing_in_distance", None,
              "for a fixed query i and a fixed s = ⟨q_i, k_j⟩/√d, the score is non-increasing in \\|i − j\\| "
              "over the allowed keys",
              "derive.claims.distance:decreasing_in_distance",
              "A refutation comes with a query and two keys where the farther key scores higher.", ""),
    ClaimKind("equivalent_to", "file",
              "this variant and the spec OTHER.toml (path relative to this file) give the same weights: e.g. a "
              "`score_mod` against its hand-written spec",
              f"{_F}:equivalent_to",
              "A refutation comes with inputs whose weights differ between the two specs."),
    ClaimKind("mask_equivalent", "file",
              "the masks of the two specs allow the same keys, for every n; the other side may also be a "
              "`mask_mod` itself, `mask_equivalent(\"mods.py:NAME\")` or "
              "`mask_equivalent(\"mods.py:FACTORY(ARGS)\")` (path relative to this file), traced like the "
              "`mask_mod` key (in the child process; untraceable code is bad input, exit 2, under the claim's key)",
              f"{_F}:mask_equivalent",
              "A refutation comes with n, a query and a key that one mask allows and the other does not.", ""),
)

CLAIM_ARGS: dict[str, str | None] = {k.name: k.arg for k in KINDS}
_BY_NAME = {k.name: k for k in KINDS}
NORMALIZER_PROPERTIES = tuple(k.name for k in KINDS if k.of_normalizer)


def by_name(kind: str) -> ClaimKind:
    return _BY_NAME[kind]


def markdown_table() -> str:
    """The claim table of docs/spec.md."""
    rows = ["| claim | meaning |", "|---|---|"]
    rows += [f"| `{k.usage}` | {k.meaning} |" for k in KINDS]
    return "\n".join(rows) + "\n"

