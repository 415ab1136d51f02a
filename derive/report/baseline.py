"""Reports of ``derive check --baseline REF``: only what changed since REF.

Markdown: the summary line of the current verdicts, then per spec the claims whose verdict
changed, then one line for the unchanged claims. JSON: the same as data. github: an error for
each change that fails (a new refutation, a regression, an engine error), a warning for each new
undecided claim, a notice for each fixed one.
SARIF: the ordinary report with a ``baselineState`` on every result.
"""

from __future__ import annotations

import json

from derive.prove.verdict import REFUTED, UNDECIDED

__all__ = ["render_baseline"]

TITLES = {"error": "internal error (no verdict)", REFUTED: "new refutation",
          "regressed": "regression: no longer as expected", UNDECIDED: "newly undecided",
          "changed": "refuted before, undecided now", "fixed": "fixed", "proved": "newly proved",
          "removed": "claim removed"}
AT_REF = {"absent": "not at {ref}: every claim is new", "invalid": "not a valid spec at {ref}: every claim is new",
          "deleted": "deleted since {ref}: every claim is removed"}


def _unchanged_line(counts: dict, ref: str) -> str:
    from derive.report.common import summary_line

    if not counts["claims"]:
        return f"No claim is unchanged since `{ref}`."
    return f"Unchanged since `{ref}`: {summary_line(counts)}."


def _markdown(results: list, base) -> str:
    from derive import __version__
    from derive.claims.result import ICONS
    from derive.report.common import results_summary
    from derive.report.render import expect_note_text, md_cell, one_line, outcome, reason_cell

    def cell(v):
        return f"{ICONS[v]} {outcome(v)}" if v else "—"

    n = len(base.statuses())
    lines = [results_summary(results), "",
             f"### derive check against `{base.ref}`: {n} claim{'' if n == 1 else 's'} changed", ""]
    for s in base.specs:
        if not s.changes and s.at_ref == "present":
            continue
        lines += [f"#### {md_cell(s.name)} (`{s.file}`)", ""]
        if s.renamed_from:
            lines += [f"Renamed from `{s.renamed_from}` since `{base.ref}`.", ""]
        if s.at_ref != "present":
            lines += [AT_REF[s.at_ref].format(ref=f"`{base.ref}`") + (f" ({one_line(s.note)})" if s.note else "")
                      + ".", ""]
        if s.changes:
            lines += [f"| Claim | Statement | Change | `{base.ref}` | Now | Reason (now) |",
                      "|---|---|---|---|---|---|"]
            for c in s.changes:
                lines.append(f"| `{md_cell(c['name'])}` | `{md_cell(c['claim'])}` | {TITLES[c['status']]} "
                             f"| {cell(c['old'])} | {cell(c['new'])}{expect_note_text(c['expected'], c['new'])} "
                             f"| {reason_cell(c['reason'])} |")
            lines.append("")
    lines += [_unchanged_line(base.unchanged(), base.ref), "",
              f"<sub>derive {__version__} — `derive check --baseline {base.ref}`: only the claims whose verdict "
              "changed are listed</sub>"]
    return "\n".join(lines) + "\n"


def _json(results: list, base) -> str:
    from derive import __version__
    from derive.report.common import total_counts
    from derive.report.render import SCHEMA_VERSION

    doc = {"version": __version__, "schema": SCHEMA_VERSION, "baseline": base.ref, "counts": total_counts(results),
           "unchanged": base.unchanged(), "specs": [s.as_json() for s in base.specs], "gone": base.gone}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _github(results: list, base) -> str:
    from derive.report.common import results_summary
    from derive.report.github import claim_annotation

    from derive.report.common import repo_path

    by_file = {repo_path(r.file): r for r in results}
    lines = []
    for s in base.specs:
        if s.file not in by_file:  # deleted since REF
            continue
        r = by_file[s.file]
        claims = {c.name: c for c in r.claims}
        for ch in s.changes:
            if ch["fails"]:  # not the expected verdict now
                level = "warning" if ch["new"] == UNDECIDED else "error"
            elif ch["status"] == "fixed":
                level = "notice"
            else:
                continue
            note = f" (was {ch['old'] or 'absent'} at {base.ref})"
            lines.append(claim_annotation(r, claims[ch["name"]], level, note))
    n = len(base.statuses())
    lines.append(f"{results_summary(results)}; {n} changed since {base.ref}; "
                 + _unchanged_line(base.unchanged(), base.ref).replace("`", ""))
    return "\n".join(lines) + "\n"


def render_baseline(results: list, base, fmt: str) -> str:
    if fmt == "md":
        return _markdown(results, base)
    if fmt == "json":
        return _json(results, base)
    if fmt == "github":
        return _github(results, base)
    if fmt == "sarif":
        from derive.report.sarif import to_sarif

        return to_sarif(results, base.verdicts, base.gone)
    raise ValueError(fmt)
