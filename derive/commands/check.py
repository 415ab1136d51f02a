"""``derive check FILE...``: prove or refute the claims of variant specs."""

from __future__ import annotations

import sys
from pathlib import Path

from derive.errors import InputError

HELP = "prove or refute the claims of variant spec files (TOML)"
DESCRIPTION = """Prove or refute each claim of each spec, for symbolic d and n.

Exit code: 0 when every claim gets its expected verdict (proved, unless the spec says
`NAME = { claim = "CLAIM", expect = "refuted" }` or "undecided"), 1 when one does not, 2 for bad
input (reported in the format asked for, and in the --summary file; nothing is proved then),
3 when derive's own engine failed on some claim (an internal error: no verdict, whatever the
other claims got; the report shows every claim, the failed ones with the exception: please
report it). With --fail-on refuted, a claim that is merely undecided does not fail.

With --baseline REF each spec, as it is in the working tree, is compared with the same spec in
the tree of REF, which git reads as committed (git ls-tree, git cat-file) into a temporary
directory (nothing is checked out), the files it refers to as they were at REF; renames are
followed (git diff --find-renames REF), specs deleted since REF and removed claims reported, and
only the claims whose verdict changed count. With --baseline and no FILE, only the deletions
since REF are reported (a pull request that deletes the last spec).

--changed takes FILE... as the changed files of a commit, of any kind (the pre-commit hook
passes them so): it checks every *.derive.toml spec of their repository that is one of them or
reads one of them (the spec of equivalent_to or mask_equivalent, a score_mod or mask_mod module
and the local modules it imports, transitively). --list-inputs checks nothing and prints each
spec with the files it reads. Files are named relative to the root of their git repository.
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
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="spec files (*.toml); with --changed, changed files of any kind")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="report format (default: github under GITHUB_ACTIONS=true, else md)")
    parser.add_argument("--output", metavar="PATH", help="write the report to PATH instead of stdout")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="CPU-time bound of each symbolic step, in seconds (default 10)")
    parser.add_argument("--baseline", metavar="REF",
                        help="compare each spec with the same spec in the tree of git revision REF (read as "
                             "committed, nothing checked out) and report only the claims whose verdict changed")
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
    parser.add_argument("--changed", action="store_true",
                        help="FILE... are changed files of any kind (as pre-commit passes them): check the "
                             "*.derive.toml specs of their repository that are among them or read one of them")
    parser.add_argument("--list-inputs", action="store_true",
                        help="check nothing: print each spec and the files it reads (other specs, modifier "
                             "modules and the local modules they import, transitively)")


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


def failing(claims, fail_on: str) -> bool:
    """Whether these claim results fail the check (a verdict that is not the expected one)."""
    return any(c.fails(fail_on) for c in claims)


def exit_code(claims, fail_on: str, failed: bool | None = None) -> int:
    """3 when the engine failed on some claim (an error outcome comes first: the run has no
    verdict for it), else 1 when the check fails (``failed``, or :func:`failing`), else 0."""
    claims = list(claims)
    if any(c.is_error for c in claims):
        return 3
    return 1 if (failing(claims, fail_on) if failed is None else failed) else 0


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
    return exit_code((c for r in results for c in r.claims), args.fail_on, base.failing(args.fail_on))


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


def reading(changed: list[str]) -> list[str]:
    """The specs (``*.derive.toml`` files of the repositories of ``changed``, tracked or not) that
    are among the changed files or read one of them (:func:`derive.spec.inputs.inputs`), named
    relative to the working directory."""
    import os

    from derive.paths import repo_files, repo_root
    from derive.spec.inputs import inputs

    wanted = {Path(f).resolve() for f in changed}
    roots = dict.fromkeys(repo_root(f) or Path.cwd().resolve() for f in changed)
    out = []
    for root in roots:
        for spec in repo_files(root, "*.derive.toml"):
            if spec in wanted or wanted.intersection(inputs(spec)):
                out.append(os.path.relpath(spec))
    return out


def list_inputs(files: list[str], fmt: str) -> str:
    """Each spec and the files it reads, named relative to the repository root: as text (the spec,
    then each input indented) or JSON (``{"specs": [{"file", "inputs"}]}``)."""
    import json

    from derive.paths import repo_path
    from derive.spec.inputs import inputs

    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        raise InputError("\n".join(f"{f}: no such file" for f in missing))
    specs = [{"file": repo_path(f), "inputs": [repo_path(p) for p in inputs(Path(f))]} for f in files]
    if fmt == "json":
        return json.dumps({"specs": specs}, indent=2, ensure_ascii=False) + "\n"
    return "".join(f"{s['file']}\n" + "".join(f"  {p}\n" for p in s["inputs"]) for s in specs)


def report_usage_error(message: str, argv: list[str]) -> bool:
    """A command line argparse rejected, reported like other bad input in the format it asked for
    (read leniently: an option argparse could not parse is not trusted, only --format, --output,
    --sarif and --summary are looked for). True when the error went to standard output as an
    annotation (``--format github``): then it is not printed again on standard error."""
    import argparse

    lenient = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    for flag in ("--format", "--output", "--sarif", "--summary"):
        lenient.add_argument(flag, default=None)
    try:
        args, _ = lenient.parse_known_args(argv)
    except (argparse.ArgumentError, SystemExit):
        return False
    if args.format not in FORMATS:
        args.format = default_format()
    exc = InputError(f"derive check: {message}")
    report_input_error(exc, args)
    return getattr(exc, "reported", False)


def report_input_error(exc: InputError, args) -> None:
    """Bad input in the format asked for: annotations (github), a failed SARIF invocation (sarif),
    and the --summary file; the plain lines on stderr follow (derive.cli), except when the
    annotations went to standard output (``--format github`` without ``--output``): the log of a
    job shows both streams, so each error is printed once (``exc.reported``)."""
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
            exc.reported = fmt == "github" and not getattr(args, "output", None)
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
    files = list(args.files)
    if getattr(args, "changed", False):
        files = reading(files)
    elif not files and getattr(args, "baseline", None) is None:
        raise InputError("derive check: no spec file given (FILE..., or --baseline REF alone for the specs "
                         "deleted since REF)")
    if getattr(args, "list_inputs", False):
        write(list_inputs(unique(files), args.format), args.output)
        return 0
    args.files = files
    if getattr(args, "baseline", None) is not None:
        return run_baseline(args, cfg)
    results = check_files(unique(args.files), cfg)
    write(render(results, args.format), args.output)
    if getattr(args, "summary", None):
        append(render(results, "md"), args.summary)
    if getattr(args, "sarif", None):
        write(render(results, "sarif"), args.sarif)
    return exit_code((c for r in results for c in r.claims), getattr(args, "fail_on", FAIL_ON[0]))
