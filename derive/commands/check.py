"""``derive check FILE...``: prove or refute the claims of variant specs."""

from __future__ import annotations

import sys
from pathlib import Path

from derive.errors import InputError

HELP = "prove or refute the claims of variant spec files (TOML)"
DESCRIPTION = """Prove or refute each claim of each spec, for symbolic d and n.

Exit code: 0 when every claim is proved, 1 when any is refuted or undecided, 2 for bad input.
With --fail-on refuted, undecided claims do not fail. With --baseline REF only the claims whose
verdict changed since REF count: a new refutation fails (exit 1).
Shipped examples: `derive examples`.

A spec with score_mod or mask_mod (a FlexAttention modifier, FILE.py:FUNCTION) RUNS that Python
code: it is imported and traced with torch.fx in a child process, with the isolation of `derive
impl` and a timeout (--timeout). This needs torch: pip install 'derive[torch]'."""

FORMATS = ("md", "json", "tex", "github", "sarif")


def add_arguments(parser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="spec files (*.toml)")
    parser.add_argument("--format", choices=FORMATS, default="md", help="report format (default md)")
    parser.add_argument("--output", metavar="PATH", help="write the report to PATH instead of stdout")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="CPU-time bound of each symbolic step, in seconds (default 10)")
    parser.add_argument("--baseline", metavar="REF",
                        help="compare with each file at git revision REF (read with git show) and report "
                             "only the claims whose verdict changed")
    parser.add_argument("--fail-on", choices=("refuted", "undecided"), default="undecided",
                        help="exit 1 on refuted claims only, or on refuted and undecided claims (default)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="time allowed to tracing each score_mod / mask_mod, which runs its code in a "
                             "child process (default 60)")
    parser.add_argument("--summary", metavar="PATH",
                        help="also append the Markdown report to PATH (e.g. $GITHUB_STEP_SUMMARY)")


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

    specs, errors = [], []
    for f in files:  # every input error of every file, before any proof
        try:
            specs.append(load_spec(f))
        except InputError as exc:
            errors.append(str(exc))
    if errors:
        raise InputError("\n".join(errors))
    return [check_spec(s, cfg) for s in specs]


def write(text: str, output: str | None) -> None:
    if output:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{output}: cannot write: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(text)


def append(text: str, path: str) -> None:
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise InputError(f"--summary {path}: cannot write: {exc.strerror or exc}") from None


def failing(verdicts, fail_on: str) -> bool:
    """Whether these verdicts (or, with a baseline, change statuses) fail the check."""
    bad = {"refuted"} if fail_on == "refuted" else {"refuted", "undecided"}
    return any(v in bad for v in verdicts)


def run_baseline(args, cfg) -> int:
    from derive.claims.baseline import check_against
    from derive.report.baseline import render_baseline

    if args.format == "tex":
        raise InputError("--baseline works with --format md, json, github or sarif, not tex")
    results, base = check_against(args.baseline, args.files, cfg)
    write(render_baseline(results, base, args.format), args.output)
    if args.summary:
        append(render_baseline(results, base, "md"), args.summary)
    return 1 if failing(base.statuses(), args.fail_on) else 0


def run(args) -> int:
    import gc

    # The objects that exist before the check (the imported modules) outlive it: the
    # collector need not walk them in every full collection of the run (Hypothesis also
    # starts one on first use). Unfrozen afterwards, for callers in the same process.
    gc.freeze()
    try:
        return _run(args)
    finally:
        gc.unfreeze()


def _run(args) -> int:
    from derive.report import render

    cfg = settings_from(args)
    timeout = getattr(args, "timeout", None)
    if timeout is not None:
        if not 0 < timeout <= 3600:
            raise InputError(f"--timeout must be in (0, 3600], got {timeout:g}")
        from derive.flex.spec import TIMEOUT

        TIMEOUT[0] = timeout
    if getattr(args, "baseline", None) is not None:
        return run_baseline(args, cfg)
    results = check_files(args.files, cfg)
    write(render(results, args.format), args.output)
    if getattr(args, "summary", None):
        append(render(results, "md"), args.summary)
    return 1 if failing((c.verdict for r in results for c in r.claims), getattr(args, "fail_on", "undecided")) else 0
