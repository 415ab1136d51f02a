"""``--format github``: GitHub Actions workflow commands, one annotation per claim that is not proved
as expected.

    ::error file=specs/v.derive.toml,line=11,col=1,title=k_bias_redundant is refuted::`invariant(b_k)` is refuted: …

A claim whose verdict is not the expected one is an ``error`` (a ``warning`` when it is merely
undecided), at the line and column of the claim's key; a refuted or undecided claim that meets its
expectation (``expect = "refuted"``) is a ``notice``. Files are named relative to the repository
root. The last line is the summary (``3 claims: 2 proved, …``), plain text. Escaping follows the
runner's rules: ``%``, CR and LF in the message; also ``:`` and ``,`` in the properties.
"""

from __future__ import annotations

from derive.report.common import claim_level, claim_message, claim_position, claim_title, repo_path, results_summary

__all__ = ["annotation", "annotations", "claim_annotation", "error_annotations"]

LEVELS = {"error": "error", "warning": "warning", "note": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, file: str | None, line: int | None, col: int | None, title: str, message: str) -> str:
    props = []
    if file is not None:
        props.append(f"file={_prop(file)}")
        if line is not None:
            props.append(f"line={line}")
            if col is not None:
                props.append(f"col={col}")
    props.append(f"title={_prop(title)}")
    return f"::{level} {','.join(props)}::{_data(message)}"


def claim_annotation(result, claim, level: str | None = None, note: str = "") -> str:
    line, col = claim_position(result, claim.name)
    level = level or LEVELS[claim_level(claim) or "note"]
    return annotation(level, repo_path(result.file), line, col, claim_title(claim), claim_message(claim, note))


def annotations(results: list) -> str:
    lines = [claim_annotation(r, c) for r in results for c in r.claims if claim_level(c)]
    lines.append(results_summary(results))
    return "\n".join(lines) + "\n"


def error_annotations(problems: list) -> str:
    """Input errors (exit 2) as ``::error`` annotations: ``problems`` are (file, line, column, message),
    file and line None when unknown."""
    lines = [annotation("error", repo_path(f) if f else None, line, col, "derive: bad input", msg)
             for f, line, col, msg in problems]
    return "\n".join(lines) + "\n"
