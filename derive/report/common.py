"""What every report format of ``derive check`` shares: counts, the summary line, the level of a
claim, its position in the spec file, the counterexample on one line and repository paths.

The formats ``render`` (Markdown, JSON, LaTeX), ``github`` and ``sarif`` import this module and
never one another (``render`` picks the others at call time), so there is no import circle among
them; ``baseline`` sits on top of all three. It imports nothing heavy (no SymPy).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from derive.claims.counts import count_verdicts, summary_line
from derive.paths import repo_path, repo_root

__all__ = ["claim_level", "claim_message", "claim_position", "claim_region", "claim_title", "count_verdicts",
           "counterexample_line",
           "expectation_note", "repo_path", "repo_root", "results_summary", "summary_line", "total_counts"]

PROVED, REFUTED, UNDECIDED = "proved", "refuted", "undecided"


def total_counts(results: list) -> dict[str, int]:
    """The verdict counts of every claim of every spec (``SpecResult.counts`` summed)."""
    return count_verdicts(c.verdict for r in results for c in r.claims)


def expectation_note(claims) -> int | None:
    """The number of claims not as expected, or None when every claim expects proved (the summary
    line then says nothing about expectations)."""
    claims = list(claims)
    if all(c.expected == PROVED for c in claims):
        return None
    return sum(not c.as_expected for c in claims)


def results_summary(results: list) -> str:
    """The summary line of a whole report."""
    claims = [c for r in results for c in r.claims]
    return summary_line(total_counts(results), expectation_note(claims))


def claim_level(claim) -> str | None:
    """``error`` for a claim whose verdict is not the expected one (``warning`` when it is merely
    undecided), ``note`` for a refuted or undecided claim that meets its expectation, None for a
    claim proved as expected."""
    if not claim.as_expected:  # an engine error is never as expected: an error
        return "warning" if claim.verdict == UNDECIDED else "error"
    return None if claim.verdict == PROVED else "note"


def claim_position(result, claim_name: str) -> tuple[int, int]:
    """(line, column) of the claim's key in its spec file; (1, 1) when the spec has no positions."""
    positions = getattr(result.spec, "positions", None) or {}
    return positions.get(("claims", claim_name)) or positions.get(("claims",)) or (1, 1)


@lru_cache(maxsize=256)
def _lines(file: str) -> tuple[str, ...]:
    try:
        return tuple(Path(file).read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return ()


def claim_region(result, claim_name: str) -> dict:
    """The SARIF region of a claim: from its key to the end of that line of the spec file."""
    line, col = claim_position(result, claim_name)
    region = {"startLine": line, "startColumn": col}
    lines = _lines(str(getattr(result.spec, "file", "") or ""))
    if 0 < line <= len(lines):
        region.update(endLine=line, endColumn=max(col, len(lines[line - 1].rstrip()) + 1))
    return region


def claim_title(claim) -> str:
    if claim.is_error:
        return f"{claim.name}: internal error"
    if claim.as_expected and claim.expected != "proved":
        return f"{claim.name} is {claim.verdict} (as expected)"
    if not claim.as_expected and claim.expected != "proved":
        return f"{claim.name}: {claim.miss}"
    return f"{claim.name} is {claim.verdict}"


def claim_message(claim, note: str = "", code: str = "`") -> str:
    """The message of a claim's annotation or SARIF result: statement (in ``code`` quotes), verdict,
    expectation, reason, and the counterexample on its own line."""
    from derive.render.markup import plain_math

    if claim.is_error:  # the reason says what failed, where, and asks for a report
        return f"{code}{claim.claim}{code} has no verdict: {claim.reason}"
    expect = f" ({claim.miss})" if claim.expected != "proved" and not claim.as_expected else \
        " (as expected)" if claim.expected != "proved" else ""
    message = f"{code}{claim.claim}{code} is {claim.verdict}{expect}{note}: {plain_math(claim.reason)}"
    extra = counterexample_line(claim.counterexample)
    return message + "\n" + extra if extra else message


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
