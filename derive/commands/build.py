"""``derive build``: prove, cross-check and render derivation documents."""

from __future__ import annotations

import sys
from pathlib import Path

from derive.build import PdfFailed, build
from derive.errors import StepFailed

HELP = "prove, cross-check and render derivation modules (default: every module in proofs/)"


def add_arguments(p) -> None:
    p.add_argument("modules", nargs="*", metavar="MODULE.py", help="derivation modules (default: proofs/*.py)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file in docs/ is stale")
    p.add_argument("--no-pdf", action="store_true", help="do not run pdflatex")
    p.add_argument("--docs", default="docs", help="where Markdown/JSON/SVG go (default: docs)")
    p.add_argument("--out", default="build", help="where LaTeX/PDF go (default: build)")


def run(args) -> int:
    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    log("derive build" + (" --check" if args.check else ""))
    try:
        report = build(args.modules or None, docs=Path(args.docs), out=Path(args.out),
                       check=args.check, pdf=not args.no_pdf, log=log)
    except StepFailed as exc:
        log(f"derive: step failed: {exc}")
        return 1
    except PdfFailed as exc:
        log(f"derive: {exc}")
        return 1
    if args.check and report.stale:
        for name in report.stale:
            log(f"stale: {name} differs from what the build writes; run `python build_docs.py`")
        return 1
    log(f"{report.documents} documents, {report.steps} steps proved, {report.checks} checks run, "
        f"{report.pdfs} PDFs, {report.seconds:.1f} s")
    return 0
