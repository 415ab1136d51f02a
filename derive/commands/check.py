"""``derive check FILE...``: prove or refute the claims of variant specs."""

from __future__ import annotations

import sys
from pathlib import Path

from derive.errors import InputError

HELP = "prove or refute the claims of variant spec files (TOML)"
DESCRIPTION = """Prove or refute each claim of each spec, for symbolic d and n.

Exit code: 0 when every claim gets its expected verdict (proved, unless the spec says
`NAME = { claim = "CLAIM", expect = "refuted" }` or "undecided"), 1 when one does not, 2 for bad
input (reported in the format asked for, and in the --summary file). With --fail-on refuted, a
claim that is merely undecided does not fail. With --baseline REF only the claims whose verdict
changed since REF count (renamed specs are followed, deleted ones and removed claims reported).
Files are named relative to the root of their git repository.
--format defaults to github when GITHUB_ACTIONS=true (a GitHub Actions job), else to md.
Shipped examples: `derive examples`.

A spec with score_mod or mask_mod (a FlexAttention modifier, FILE.py:FUNCTION) RUNS that Python
code: it is imported and traced with torch.fx in a child process, with the isolation of `derive
impl` and a timeout (--timeout). This needs torch: pip install 'derive[torch]'."""

FORMATS = ("md", "json", "tex", "github", "sarif")
FAIL_ON = ("undecided", "refuted")  # the first is the default (the GitHub Action uses it too)


def default_format() -> str:
    """github in a GitHub Actions job (annotations), md for people everywhere else."""
    import os

    return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "md"


def add_arguments(parser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="spec files (*.toml)")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="report format (default: github under GITHUB_ACTIONS=true, else md)")
    parser.add_argument("--output", metavar="PATH", help="write the report to PATH instead of stdout")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="CPU-time bound of each symbolic step, in seconds (default 10)")
    parser.add_argument("--baseline", metavar="REF",
                        help="compare with each file at git revision REF (read with git show) and report "
                             "only the claims whose verdict changed")
    parser.add_argument("--fail-on", default=FAIL_ON[0], metavar="{" + ",".join(FAIL_ON) + "}",
                        help="undecided (default): exit 1 on any claim without its expected verdict; refuted: "
                             "not for claims that are merely undecided")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="time allowed to tracing each score_mod / mask_mod, which runs its code in a "
                             "child process (default 60)")
    parser.add_argument("--summary", metavar="PATH",
                        help="also append the Markdown report to PATH (e.g. $GITHUB_STEP_SUMMARY)")
    parser.add_argument("--sarif", metavar="PATH",
                        help="also write the SARIF report to PATH (for github/codeql-action/upload-sarif)")
    parser.add_argument("--certificates", metavar="DIR",
                        help="write the certificate of every proof that replayed to DIR/SPEC/CLAIM.json "
                             "(check them again with `derive replay DIR`)")


def settings_from(args):
    from derive.claims.run import DEFAULT_CHECK

    limit = getattr(args, "time_limit", None)
    if limit is None:
        return DEFAULT_CHECK
    if not 0 < limit <= 3600:
        raise InputError(f"--time-limit must be in (0, 3600], got {limit:g}")
    return DEFAULT_CHECK.merge(time_limit=limit)


def unique(files) -> list[str]:
    """The files in order, each once: ``a.toml``, ``./a.toml`` and its absolute path are one file
    (overlapping glob patterns must not check a spec twice)."""
    seen, out = set(), []
    for f in files:
        key = Path(f).resolve()
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def check_files(files, cfg) -> list:
    from derive.claims.run import check_spec
    from derive.spec import load_specs

    return [check_spec(s, cfg) for s in load_specs(files)]


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


def write_certificates(results, folder: Path) -> None:
    """Each replayed proof's certificate as FOLDER/SPEC/CLAIM.json (SPEC the file's name without
    .toml, numbered when two files share one)."""
    from derive.render.output import certificate_bytes

    used: set[str] = set()
    for r in results:
        stem, k = Path(r.file).name.removesuffix(".toml"), 1
        while stem in used:
            k += 1
            stem = f"{Path(r.file).name.removesuffix('.toml')}-{k}"
        used.add(stem)
        for c in r.claims:
            if c.verdict == "proved" and c.seal is not None and c.seal.certificate is not None:
                target = folder / stem / f"{c.name}.json"
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(certificate_bytes(c.seal.certificate))
                except OSError as exc:
                    raise InputError(f"--certificates {folder}: cannot write: {exc.strerror or exc}") from None


def failing(claims, fail_on: str) -> bool:
    """Whether these claim results fail the check (a verdict that is not the expected one)."""
    return any(c.fails(fail_on) for c in claims)


def run_baseline(args, cfg) -> int:
    from derive.claims.baseline import check_against
    from derive.report.baseline import render_baseline

    if args.format == "tex":
        raise InputError("--baseline works with --format md, json, github or sarif, not tex")
    results, base = check_against(args.baseline, unique(args.files), cfg)
    write(render_baseline(results, base, args.format), args.output)
    if args.summary:
        append(render_baseline(results, base, "md"), args.summary)
    if getattr(args, "sarif", None):
        write(render_baseline(results, base, "sarif"), args.sarif)
    return 1 if base.failing(args.fail_on) else 0


def run(args) -> int:
    import gc

    import derive.claims.run  # noqa: F401 - imported before the freeze below
    import derive.report  # noqa: F401

    # The objects that exist before the check (the imported modules) outlive it: the
    # collector need not walk them in every full collection of the run (Hypothesis also
    # starts one on first use). Unfrozen afterwards, for callers in the same process.
    gc.freeze()
    try:
        return _run(args)
    finally:
        gc.unfreeze()


def _run(args) -> int:
    if getattr(args, "format", None) is None:
        args.format = default_format()
    try:
        return _check(args)
    except InputError as exc:
        report_input_error(exc, args)
        raise


def report_usage_error(message: str, argv: list[str]) -> None:
    """A command line argparse rejected, reported like other bad input in the format it asked for
    (read leniently: an option argparse could not parse is not trusted, only --format, --output,
    --sarif and --summary are looked for)."""
    import argparse

    lenient = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    for flag in ("--format", "--output", "--sarif", "--summary"):
        lenient.add_argument(flag, default=None)
    try:
        args, _ = lenient.parse_known_args(argv)
    except (argparse.ArgumentError, SystemExit):
        return
    if args.format not in FORMATS:
        args.format = default_format()
    report_input_error(InputError(f"derive check: {message}"), args)


def report_input_error(exc: InputError, args) -> None:
    """Bad input in the format asked for: annotations (github), a failed SARIF invocation (sarif),
    and the --summary file; the plain lines on stderr follow (derive.cli)."""
    from derive.report.errors import problems

    found = problems(str(exc))
    fmt = getattr(args, "format", "md")
    text = None
    if fmt == "github":
        from derive.report.github import error_annotations

        text = error_annotations(found)
    elif fmt == "sarif":
        from derive.report.sarif import error_sarif

        text = error_sarif(found)
    if text is not None:
        try:
            write(text, getattr(args, "output", None))
        except InputError:
            pass
    if getattr(args, "sarif", None):
        from derive.report.sarif import error_sarif

        try:
            write(error_sarif(found), args.sarif)
        except InputError:
            pass
    if getattr(args, "summary", None):
        from derive.report.errors import markdown

        try:
            append(markdown(found), args.summary)
        except InputError:
            pass


def _check(args) -> int:
    from derive.report import render

    fail_on = getattr(args, "fail_on", FAIL_ON[0])
    if fail_on not in FAIL_ON:  # checked here, not by argparse: bad input is reported in the format asked for
        raise InputError(f"--fail-on: expected one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    cfg = settings_from(args)
    timeout = getattr(args, "timeout", None)
    if timeout is not None:
        if not 0 < timeout <= 3600:
            raise InputError(f"--timeout must be in (0, 3600], got {timeout:g}")
        from derive.flex.spec import TIMEOUT

        TIMEOUT[0] = timeout
    if getattr(args, "baseline", None) is not None:
        return run_baseline(args, cfg)
    results = check_files(unique(args.files), cfg)
    if getattr(args, "certificates", None):
        write_certificates(results, Path(args.certificates))
    write(render(results, args.format), args.output)
    if getattr(args, "summary", None):
        append(render(results, "md"), args.summary)
    if getattr(args, "sarif", None):
        write(render(results, "sarif"), args.sarif)
    return 1 if failing((c for r in results for c in r.claims), getattr(args, "fail_on", FAIL_ON[0])) else 0
