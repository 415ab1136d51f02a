"""``--format sarif``: SARIF 2.1.0 for code-scanning dashboards.

One rule per claim kind (all kinds, in the order of the spec language), one result per
refuted (level ``error``) or undecided (level ``warning``) claim at the line and column of the
claim's key, the reason as the message, the counterexample and the claim in ``properties``.
With a baseline, each result has a ``baselineState`` (``new``, ``unchanged``, ``updated``) and a
claim that was refuted at the baseline and is not any more is an ``absent`` result.
The output validates against the official schema (``tests/sarif-schema-2.1.0.json``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import PurePath
from urllib.parse import quote

from derive.prove.verdict import REFUTED, UNDECIDED
from derive.render.markup import plain_math

__all__ = ["RULES", "SCHEMA_URI", "to_sarif"]

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVELS = {REFUTED: "error", UNDECIDED: "warning"}

# claim kind -> what a proof of it means (docs/spec.md, "Claims")
RULES = {
    "invariant": "the attention weights of every row are the same for all values of NAME",
    "depends": "some value of NAME changes some weight (the negation of invariant)",
    "output_invariant": "the outputs of every row are the same for all values of NAME",
    "output_shift": "the output with NAME equals the output with NAME = 0, plus NAME",
    "row_constant": "EXPR has the same value for every allowed key j of a row",
    "equivalent": "replacing the score by EXPR gives the same weights for all inputs",
    "shift_invariant": "adding the same constant to every score of a row leaves the weights unchanged",
    "can_abstain": "a row can give its keys less than all the weight (total < 1)",
    "weights_sum_to_one": "the weights of every row sum to 1",
    "decreasing_in_distance": "for a fixed query and dot product, the score does not increase with |i - j| over "
                              "the allowed keys",
    "equivalent_to": "this variant and the spec OTHER give the same weights",
    "mask_equivalent": "the masks of this spec and of OTHER allow the same keys",
}


def _uri(file: str) -> str:
    path = PurePath(file)
    if path.is_absolute():
        return path.as_uri()
    return quote(path.as_posix())


def _rules() -> list[dict]:
    return [{"id": kind, "name": "".join(w.capitalize() for w in kind.split("_")),
             "shortDescription": {"text": f"{kind}: {meaning}"},
             "fullDescription": {"text": f"The claim {kind} of a derive variant spec: {meaning}. "
                                         "Refuted claims are errors, undecided ones warnings."},
             "defaultConfiguration": {"level": "error"}} for kind, meaning in RULES.items()]


def _kind(result, claim) -> str:
    for c in result.spec.claims:
        if c.name == claim.name:
            return c.kind
    return claim.claim.split("(")[0].strip()


def _result(result, claim, level: str, state: str | None = None) -> dict:
    from derive.report.github import claim_position

    kinds = list(RULES)
    kind = _kind(result, claim)
    line, col = claim_position(result, claim.name)
    fingerprint = hashlib.sha256(f"{result.file}\0{claim.name}\0{claim.claim}".encode()).hexdigest()[:32]
    out = {"ruleId": kind}
    if kind in RULES:
        out["ruleIndex"] = kinds.index(kind)
    out.update({
        "level": level,
        "message": {"text": f"{claim.name} = {claim.claim} is {claim.verdict}: {plain_math(claim.reason)}"},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": _uri(result.file)},
            "region": {"startLine": line, "startColumn": col}}}],
        "partialFingerprints": {"deriveClaim/v1": fingerprint},
    })
    if state:
        out["baselineState"] = state
    out["properties"] = {"spec": result.name, "claim": claim.name, "statement": claim.claim,
                         "verdict": claim.verdict, "counterexample": claim.counterexample}
    return out


def to_sarif(results: list, baseline: dict | None = None) -> str:
    """``baseline``: (file, claim name) -> the verdict at the baseline (absent: no such claim)."""
    from derive import __version__

    out = []
    for r in results:
        for c in r.claims:
            if c.verdict in LEVELS:
                state = None
                if baseline is not None:
                    before = baseline.get((r.file, c.name))
                    state = "unchanged" if before == c.verdict else "updated" if before in LEVELS else "new"
                out.append(_result(r, c, LEVELS[c.verdict], state))
            elif baseline is not None and baseline.get((r.file, c.name)) == REFUTED:
                out.append(_result(r, c, "none", "absent"))
    doc = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "derive", "version": __version__, "rules": _rules()}},
            "columnKind": "unicodeCodePoints",
            "results": out,
        }],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
