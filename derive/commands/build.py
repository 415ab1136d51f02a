"""``derive build``: prove, cross-check and render derivation documents."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from derive.errors import InternalError, StepFailed

HELP = "prove, cross-check and render derivation modules (default: every module in proofs/)"
DESCRIPTION = """Prove, cross-check and render derivation modules (default: every module in proofs/).

Exit code: 0 when every document was built (or, with --check, is current), 1 when a step does
not hold (it is named, with a numeric witness) or, with --check, a document is stale, 2 for
bad input (a module that defines no document(), or whose own code raises), 3 when derive's own
engine failed while building (an internal error, not a failed step: please report it)."""


def add_arguments(p) -> None:
    p.add_argument("modules", nargs="*", metavar="MODULE.py", help="derivation modules (default: proofs/*.py)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file in docs/ is stale")
    p.add_argument("--if-modules", action="store_true",
                   help="with --check: check nothing (exit 0) where there is no proofs/*.py, as in a repository whose "
                        "docs/ are its own (the derive-docs hook); without it, derive's own documents are checked")
    p.add_argument("--no-pdf", action="store_true", help="do not run pdflatex")
    p.add_argument("--docs", default="docs", help="where Markdown/JSON/SVG go (default: docs)")
    p.add_argument("--out", default="build", help="where LaTeX/PDF go (default: build)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="documents built at once, each in its own process (default: the number of cores)")
    p.add_argument("--no-cache", action="store_true",
                   help="build every document; by default a document whose inputs (its module, derive's sources, "
                        "templates, library versions) are unchanged is taken from OUT/cache. --check never uses it")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress lines on stderr while a document builds (default: when stderr is a terminal)")


def run(args) -> int:
    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    from derive.build import PdfFailed, build, rebuild_command

    log("derive build" + (" --check" if args.check else ""))
    if args.check and args.if_modules and not args.modules and not any(Path("proofs").glob("[!_]*.py")):
        # a repository without derivation modules (the derive-docs hook in a user's repository):
        # its docs/ are the user's own, not documents derive writes
        log("no derivation modules in proofs/ here: nothing to check")
        return 0
    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    if jobs < 1:
        log(f"derive: error: --jobs {jobs}: expected a whole number ≥ 1")
        return 2
    # --check proves that docs/ follows from the code, so it always builds cold.
    cache = None if args.no_cache or args.check else Path(args.out) / "cache"
    show = sys.stderr.isatty() if args.progress is None else args.progress
    try:
        report = build(args.modules or None, docs=Path(args.docs), out=Path(args.out),
                       check=args.check, pdf=not args.no_pdf, log=log, jobs=jobs, cache=cache,
                       show_progress=show)
    except StepFailed as exc:
        log(f"derive: step failed: {exc}")
        return 1
    except InternalError as exc:  # derive's engine failed while building: not a failed step
        log(f"derive: {exc}")
        return 3
    except PdfFailed as exc:
        log(f"derive: {exc}")
        return 1
    if args.check and report.stale:
        rebuild = rebuild_command()
        if rebuild == "derive build" and args.modules:
            rebuild += " " + " ".join(args.modules)
        for name in report.stale:
            log(f"stale: {name} differs from what the build writes; run `{rebuild}`")
        return 1
    cached = f", {report.cached} from the cache" if report.cached else ""
    decided = f"{report.decided} table claims decided, " if report.decided else ""
    log(f"{report.documents} documents{cached}, {report.steps} steps proved or refuted, {decided}"
        f"{report.checks} checks run, {report.pdfs} PDFs, {report.seconds:.1f} s (CPU {report.cpu:.1f} s)")
    return 0
