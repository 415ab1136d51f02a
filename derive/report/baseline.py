"""Reports of ``derive check --baseline REF``: only what changed since REF.

Markdown: the summary line of the current verdicts, then per spec the claims whose verdict
changed, then one line for the unchanged claims. JSON: the same as data. github: an error for
each new refutation, a warning for each new undecided claim, a notice for each fixed one.
SARIF: the ordinary report with a ``baselineState`` on every result.
"""

from __future__ import annotations

import json

from derive.prove.verdict import REFUTED, UNDECIDED

__all__ = ["render_baseline"]

TITLES = {REFUTED: "new refutation", UNDECIDED: "newly undecided", "changed": "refuted before, undecided now",
          "fixed": "fixed", "proved": "newly proved", "removed": "claim removed"}
AT_REF = {"absent": "not at {ref}: every claim is new", "invalid": "not a valid spec at {ref}: every claim is new"}


def _unchanged_line(counts: dict, ref: str) -> str:
    from derive.claims.run import summary_line

    if not counts["claims"]:
        return f"No claim is unchanged since `{ref}`."
    return f"Unchanged since `{ref}`: {summary_line(counts)}."


def _markdown(results: list, base) -> str:
    from derive import __version__
    from derive.claims.result import ICONS
    from derive.claims.run import summary_line
    from derive.report.render import one_line, reason_cell, total_counts

    def cell(v):
        return f"{ICONS[v]} {v}" if v else "—"

    n = len(base.statuses())
    lines = [summary_line(total_counts(results)), "",
             f"### derive check against `{base.ref}`: {n} claim{'' if n == 1 else 's'} changed", ""]
    for s in base.specs:
        if not s.changes and s.at_ref == "present":
            continue
        lines += [f"#### {s.name} (`{s.file}`)", ""]
        if s.at_ref != "present":
            lines += [AT_REF[s.at_ref].format(ref=f"`{base.ref}`") + (f" ({one_line(s.note)})" if s.note else "")
                      + ".", ""]
        if s.changes:
            lines += [f"| Claim | Statement | Change | `{base.ref}` | Now | Reason (now) |",
                      "|---|---|---|---|---|---|"]
            for c in s.changes:
                lines.append(f"| `{c['name']}` | `{c['claim']}` | {TITLES[c['status']]} | {cell(c['old'])} "
                             f"| {cell(c['new'])} | {reason_cell(c['reason'])} |")
            lines.append("")
    lines += [_unchanged_line(base.unchanged(), base.ref), "",
              f"<sub>derive {__version__} — `derive check --baseline {base.ref}`: only the claims whose verdict "
              "changed are listed</sub>"]
    return "\n".join(lines) + "\n"


def _json(results: list, base) -> str:
    from derive import __version__
    from derive.report.render import SCHEMA_VERSION, total_counts

    doc = {"version": __version__, "schema": SCHEMA_VERSION, "baseline": base.ref, "counts": total_counts(results),
           "unchanged": base.unchanged(), "specs": [s.as_json() for s in base.specs]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _github(results: list, base) -> str:
    from derive.claims.run import summary_line
    from derive.report.github import claim_annotation
    from derive.report.render import total_counts

    levels = {REFUTED: "error", UNDECIDED: "warning", "changed": "warning", "fixed": "notice"}
    by_file = {r.file: r for r in results}
    lines = []
    for s in base.specs:
        r = by_file[s.file]
        claims = {c.name: c for c in r.claims}
        for ch in s.changes:
            if ch["status"] in levels:
                note = f" (was {ch['old'] or 'absent'} at {base.ref})"
                lines.append(claim_annotation(r, claims[ch["name"]], levels[ch["status"]], note))
    n = len(base.statuses())
    lines.append(f"{summary_line(total_counts(results))}; {n} changed since {base.ref}; "
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

        return to_sarif(results, base.verdicts)
    raise ValueError(fmt)
