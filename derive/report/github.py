"""``--format github``: GitHub Actions workflow commands, one annotation per claim that is not proved.

    ::error file=v.toml,line=11,col=1,title=k_bias_redundant is refuted::`invariant(b_k)` is refuted: …

A refuted claim is an ``error``, an undecided one a ``warning``, at the line and column of the
claim's key in the spec file. The last line is the summary (``3 claims: 2 proved, …``), plain text.
Escaping follows the runner's rules: ``%``, CR and LF in the message; also ``:`` and ``,`` in
the properties.
"""

from __future__ import annotations

import json

from derive.prove.verdict import REFUTED, UNDECIDED
from derive.render.markup import plain_math as plain_reason

__all__ = ["annotation", "annotations", "claim_position", "counterexample_line"]

LEVELS = {REFUTED: "error", UNDECIDED: "warning"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def claim_position(result, claim_name: str) -> tuple[int, int]:
    """(line, column) of the claim's key in its spec file; (1, 1) when the spec has no positions."""
    positions = getattr(result.spec, "positions", None) or {}
    return positions.get(("claims", claim_name)) or positions.get(("claims",)) or (1, 1)


def counterexample_line(ce: dict | None) -> str:
    """The counterexample in one line: sizes, mask, indices and the values of every input."""
    if not ce:
        return ""
    parts = [f"d = {ce.get('d')}", f"n = {ce.get('n')}", f"mask {ce.get('mask')}"]
    parts += [f"{k} = {v}" for k, v in (ce.get("indices") or {}).items()]
    values = ce.get("values") or {}
    text = "counterexample: " + ", ".join(parts)
    if values:
        text += "; " + "; ".join(f"{k} = {json.dumps(v)}" for k, v in values.items())
    if ce.get("functions"):
        text += "; " + "; ".join(f"{k} = {v}" for k, v in ce["functions"].items())
    return text


def annotation(level: str, file: str, line: int, col: int, title: str, message: str) -> str:
    return f"::{level} file={_prop(file)},line={line},col={col},title={_prop(title)}::{_data(message)}"


def claim_annotation(result, claim, level: str | None = None, note: str = "") -> str:
    line, col = claim_position(result, claim.name)
    message = f"`{claim.claim}` is {claim.verdict}{note}: {plain_reason(claim.reason)}"
    extra = counterexample_line(claim.counterexample)
    if extra:
        message += "\n" + extra
    return annotation(level or LEVELS[claim.verdict], result.file, line, col,
                      f"{claim.name} is {claim.verdict}", message)


def annotations(results: list) -> str:
    from derive.claims.run import summary_line
    from derive.report.render import total_counts

    lines = [claim_annotation(r, c) for r in results for c in r.claims if c.verdict in LEVELS]
    lines.append(summary_line(total_counts(results)))
    return "\n".join(lines) + "\n"
