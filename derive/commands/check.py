"""``derive check FILE...``: prove or refute the claims of variant specs."""

from __future__ import annotations

import sys
from pathlib import Path

from derive.errors import InputError

HELP = "prove or refute the claims of variant spec files (TOML)"
DESCRIPTION = """Prove or refute each claim of each spec, for symbolic d and n.

Exit code: 0 when every claim is proved, 1 when any is refuted or undecided, 2 for bad input.
Shipped examples: `derive examples`."""

FORMATS = ("md", "json", "tex")


def add_arguments(parser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="spec files (*.toml)")
    parser.add_argument("--format", choices=FORMATS, default="md", help="report format (default md)")
    parser.add_argument("--output", metavar="PATH", help="write the report to PATH instead of stdout")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="CPU-time bound of each symbolic step, in seconds (default 10)")


def settings_from(args):
    from derive.claims.run import DEFAULT_CHECK

    limit = getattr(args, "time_limit", None)
    if limit is None:
        return DEFAULT_CHECK
    if not 0 < limit <= 3600:
        raise InputError(f"--time-limit must be in (0, 3600], got {limit:g}")
    return DEFAULT_CHECK.merge(time_limit=limit)


def check_files(files, cfg) -> list:
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    specs = [load_spec(f) for f in files]  # all input errors before any proof
    return [check_spec(s, cfg) for s in specs]


def write(text: str, output: str | None) -> None:
    if output:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{output}: cannot write: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(text)


def run(args) -> int:
    from derive.report import render

    cfg = settings_from(args)
    results = check_files(args.files, cfg)
    write(render(results, args.format), args.output)
    return 0 if all(r.all_proved for r in results) else 1
