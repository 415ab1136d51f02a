"""``derive diff OLD NEW``: which claims' verdicts change between two versions of a variant."""

from __future__ import annotations

import json

HELP = "compare the claim verdicts of two versions of a variant spec"
DESCRIPTION = """Check both specs and list the claims whose verdict changes (or that appear or vanish).

Exit code: 0 when no verdict changes, 1 when some do, 2 for bad input, 3 when derive's own
engine failed on a claim of either spec (an internal error: no verdict; please report it)."""


def add_arguments(parser) -> None:
    parser.add_argument("old", metavar="OLD.toml")
    parser.add_argument("new", metavar="NEW.toml")
    parser.add_argument("--format", choices=("md", "json"), default="md")
    parser.add_argument("--output", metavar="PATH")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS")


def run(args) -> int:
    from derive import __version__
    from derive.claims.result import ICONS
    from derive.commands.check import check_files, settings_from, write
    from derive.claims.baseline import compare
    from derive.claims.run import summary_line
    from derive.report.render import md_cell, outcome, reason_cell

    old, new = check_files([args.old, args.new], settings_from(args))
    rows = compare(old, new)
    changed = [r for r in rows if r["changed"]]
    if args.format == "json":
        text = json.dumps({"version": __version__, "old": args.old, "new": args.new,
                           "counts": {"old": old.counts, "new": new.counts}, "claims": rows},
                          indent=2, ensure_ascii=False) + "\n"
    else:
        def cell(v):
            return f"{ICONS[v]} {outcome(v)}" if v else "—"
        lines = [f"{summary_line(new.counts)} (before: {summary_line(old.counts)})", "",
                 f"### derive diff: {old.name} (`{args.old}`) → {new.name} (`{args.new}`)", "",
                 f"{len(changed)} of {len(rows)} claims change verdict.", "",
                 "| Claim | Statement | Old | New | Reason (new) |", "|---|---|---|---|---|"]
        for r in rows:
            mark = "**" if r["changed"] else ""
            lines.append(f"| {mark}`{md_cell(r['name'])}`{mark} | `{md_cell(r['claim'])}` | {cell(r['old'])} "
                         f"| {cell(r['new'])} | {reason_cell(r['reason'])} |")
        text = "\n".join(lines) + "\n"
    write(text, args.output)
    if old.errors or new.errors:
        return 3
    return 1 if changed else 0
