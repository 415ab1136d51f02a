"""Render check results. Output is deterministic: no time, no path of the machine."""

from __future__ import annotations

import functools

import json
import re

from derive.claims.result import ERROR, ICONS
from derive.report.common import repo_path, results_summary, total_counts
from derive.render.markup import gfm_escape, plain_math, tex_code, tex_text, to_gfm, to_tex

__all__ = ["SCHEMA_VERSION", "environment", "one_line", "plain_reason", "reason_cell", "render", "short_reason",
           "to_json", "total_counts"]

SCHEMA_VERSION = "3"  # "3": a claim may end in the error outcome; "2": cross_check has no measured errors


def one_line(text: str, limit: int = 140) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


_MATH_SPAN = re.compile(r"(\$[^$\n]+\$)")


def short_reason(reason: str, limit: int = 140) -> str:
    """A reason (prose markup) on one line, at most ``limit`` characters as read aloud; a long one
    is cut between words or before a whole math span, never inside one, and ends in ``…``."""
    reason = " ".join(str(reason).split())
    if len(plain_math(reason)) <= limit:
        return reason
    out, used = "", 0
    for part in _MATH_SPAN.split(reason):
        size = len(plain_math(part))
        if used + size <= limit - 1:
            out, used = out + part, used + size
            continue
        if not _MATH_SPAN.fullmatch(part):
            out += part[: limit - 1 - used]
        break
    return out.rstrip() + "…"


def plain_reason(reason: str) -> str:
    """A reason where no math renders (GitHub annotations, SARIF, a terminal): math read aloud."""
    return plain_math(str(reason))


def outcome(verdict: str | None) -> str:
    """A claim's outcome in words: its verdict, or ``internal error`` (the engine failed on it)."""
    return "internal error" if verdict == ERROR else verdict


def expect_note_text(expected: str | None, verdict: str | None) -> str:
    """`` (as expected)`` or `` (expected refuted, got proved)`` after a verdict; nothing for a claim
    that expects proved (the default), is absent, or has no verdict (an internal error, which the
    outcome says)."""
    if expected in (None, "proved") or verdict in (None, ERROR):
        return ""
    return " (as expected)" if expected == verdict else f" (expected {expected}, got {verdict})"


def expect_note(claim) -> str:
    return expect_note_text(claim.expected, claim.verdict)


def md_cell(text: str) -> str:
    """Text for a Markdown table cell (inside a code span too): ``|`` escaped, on one line."""
    return " ".join(str(text).split()).replace("|", "\\|")


def reason_cell(reason: str) -> str:
    """A reason in a Markdown table cell: one short line, math as math, ``|`` escaped for the table."""
    return to_gfm(short_reason(reason), inline=True).replace("|", "\\|")


def _md_reason(reason: str) -> str:
    """A reason as Markdown: prose markup, its formulas as math."""
    return to_gfm(" ".join(str(reason).split()), inline=True)


def _tex_reason(reason: str) -> str:
    return to_tex(" ".join(str(reason).split()), inline=True)


def _md_prose(text: str) -> str:
    """A short engine label (``p_ij with b_k``) as Markdown, its pseudo-math set as math."""
    return to_gfm(str(text), inline=True)


def _compact(data) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(", ", ": "))


def _ball(value) -> str:
    """A certified enclosure as prose writes it, ``0.41944 ± 1e-12`` (a list of them in brackets),
    not as the JSON string it is stored as."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_ball(v) for v in value) + "]"
    return gfm_escape(re.sub(r"(?<![\w.])-(?=[\d.])", "−", str(value)))  # a minus, not a hyphen


def anchor(*parts: str) -> str:
    raw = "-".join(parts).lower()
    return "".join(ch if ch.isalnum() else "-" for ch in raw).strip("-")


@functools.cache
def environment() -> jinja2.Environment:
    """The reports' environment (:func:`derive.render.output.environment`) with their filters, once
    per process, so a report template is compiled once (the atlas renders 12)."""
    from derive.render.output import environment as templates  # Jinja: only the text formats need it

    env = templates(reports=True)
    env.filters.update(repo_path=repo_path, expect_note=expect_note, md_cell=md_cell, outcome=outcome)
    env.filters.update(one_line=one_line, md_reason=_md_reason, reason_cell=reason_cell, tex_reason=_tex_reason, md_text=gfm_escape, md_prose=_md_prose, tex=tex_text, tex_code=tex_code, compact=_compact, ball=_ball, anchor=anchor)
    from derive.render.instance import instance_md, instance_tex, is_instance  # imports SymPy: only when rendering

    env.filters.update(instance_md=instance_md, instance_tex=instance_tex, is_instance=is_instance)
    env.filters.update(capfirst=lambda text: text[:1].upper() + text[1:])
    env.filters.update(embedded_steps=_embedded_steps)
    env.globals.update(icons=ICONS)
    return env


def _embedded_steps(steps: list, score: str | None, quiet: str | None, reason: str | None) -> list:
    """The steps a document that embeds the report shows: a difference of the scores expanded in
    the primed symbols and restated later with Δ (b' = b + Δb) is shown once, in Δ, where it was
    first stated; then the steps :func:`_hidden_step` leaves out are left out."""
    out = []
    for s in steps:
        diffs = [k for k, o in enumerate(out) if o.get("text", "").startswith("difference of the scores")]
        if diffs and s.get("text", "").startswith("the same, writing "):
            k = diffs[-1]  # the difference, in Δ, where it was first stated
            out[k] = {**s, "text": f"{out[k]['text']}, {s['text'][len('the same, '):]}"}
            continue
        out.append(s)
    return [s for s in out if not _hidden_step(s, score, quiet, reason)]


def _hidden_step(step: dict, score: str | None, quiet: str | None, reason: str | None = None) -> bool:
    """A step a document that embeds the report leaves out: the score it states once for the
    variant, the changed score (the score with primed symbols, which the document says once), a
    formula the claim's reason already shows (the difference of the scores, also when the reason
    writes it in another form), or the cross-check it states once for all."""
    text, latex = step.get("text"), step.get("latex")
    # the difference of the scores, when the reason already states it as a formula (in another form)
    restated = bool(reason and latex and str(text).startswith("difference of the scores")
                    and re.search(r"score changes by [^$]*\$", str(reason)))
    return bool((score is not None and (text == "compared with" or (text == "score" and latex == score)))
                or (quiet is not None and text == quiet)
                or (reason is not None and latex and f"${latex}$" in str(reason)) or restated)


def to_json(results: list) -> str:
    from derive import __version__

    # every claim whose outcome is not its expected verdict (a refuted claim that expects proved
    # too: the summary line leaves that count out when every claim expects proved, the JSON does not)
    missed = sum(not c.as_expected for r in results for c in r.claims)
    doc = {"version": __version__, "schema": SCHEMA_VERSION, "counts": total_counts(results),
           "not_as_expected": missed,
           "specs": [{**r.as_json(), "file": repo_path(r.file)} for r in results]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def render(results: list, fmt: str, summary: bool = True, see: dict | None = None,
           quiet: str | None = None, shared: dict | None = None) -> str:
    """The report of ``results`` in ``fmt``; ``summary=False`` leaves out the Markdown summary line
    (for documents that embed the report, such as the atlas). ``see`` maps (spec name, claim name)
    to a Markdown link that replaces the claim's steps (the atlas links normalizer properties to
    normalizers.md instead of repeating their derivation for every variant). With ``see`` the
    report is embedded in a document: each variant's score is stated once, its normalizer's
    properties are one list of links, each claim is stated once (no table above its details),
    and the cross-check step whose text is ``quiet`` (stated once by the document) is left out.
    ``shared`` maps (spec name, claim name) to a Markdown link to a derivation the document states
    once for several variants: the claim is one verdict line with that link."""
    if fmt == "json":
        return to_json(results)
    if fmt == "github":
        from derive.report.github import annotations

        return annotations(results)
    if fmt == "sarif":
        from derive.report.sarif import to_sarif

        return to_sarif(results)
    from derive import __version__

    template = environment().get_template(f"check.{fmt}.j2")
    line = results_summary(results) if summary else ""
    return template.render(results=results, version=__version__, summary=line, see=see or {},
                           embedded=bool(see), quiet=quiet, shared=shared or {})
