"""The ``derive`` command line: one subcommand per module in :mod:`derive.commands`.

Each command module defines ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
Only the module of the command being run is imported (``derive check`` must not pay for
the renderer of ``derive build``); ``derive --help`` imports none: it lists each command with the
``HELP`` string read from its module's source.
User mistakes (:class:`~derive.errors.InputError`) print one line per error and exit 2; no
traceback is shown for them. A failure of derive's own engine that ends a command
(:class:`~derive.errors.InternalError`, or any exception derive did not expect) is never a
verdict: one line ``derive: internal error: …`` with a request to report it, then the traceback
for the report, and exit 3.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from derive import __version__
from derive.errors import InputError

__all__ = ["COMMANDS", "UsageError", "main"]

COMMANDS = ("build", "check", "diff", "examples", "impl", "normalizer")


class UsageError(Exception):
    """A command line argparse rejects (an unknown option, a value of the wrong type)."""

    def __init__(self, parser: argparse.ArgumentParser, message: str):
        super().__init__(message)
        self.parser, self.message = parser, message


class _Parser(argparse.ArgumentParser):
    """argparse, except that a rejected command line is raised, not printed and exited, so a
    command can also report it in the format asked for (``derive check --format github``)."""

    def error(self, message: str):
        raise UsageError(self, message)


def _parser(available: dict) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="derive",
        description="Machine-checked derivations of attention-mechanism properties.",
    )
    parser.add_argument("--version", action="version", version=f"derive {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module in available.items():
        if isinstance(module, str):  # listed only (derive --help): its help line, nothing imported
            sub.add_parser(name, help=module)
            continue
        p = sub.add_parser(name, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def _help_line(name: str) -> str:
    """The ``HELP`` string of ``derive.commands.NAME``, read from its source without importing it
    (one line ``HELP = "…"``, read as a Python literal)."""
    import ast
    import importlib.util
    import re

    spec = importlib.util.find_spec(f"derive.commands.{name}")
    try:  # the file itself: a loader need not read sources (pytest's assertion rewriter does not)
        with open(spec.origin, encoding="utf-8") as fh:
            source = fh.read()
    except (AttributeError, TypeError, OSError):
        source = ""
    m = re.search(r"^HELP = (\"[^\"\n]*\")$", source, re.MULTILINE)
    return ast.literal_eval(m.group(1)) if m else ""


def _available(argv: list[str]) -> dict:
    if argv and argv[0] in COMMANDS:
        return {argv[0]: importlib.import_module(f"derive.commands.{argv[0]}")}
    return {name: _help_line(name) for name in COMMANDS}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    available = _available(argv)
    parser = _parser(available)
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        module = available.get(argv[0]) if argv else None
        reported = module is not None and hasattr(module, "report_usage_error") and \
            module.report_usage_error(exc.message, argv[1:])
        exc.parser.print_usage(sys.stderr)
        if not reported:  # an annotation on stdout already says it (--format github): once
            print(f"{exc.parser.prog}: error: {exc.message}", file=sys.stderr)
        return 2
    try:
        return int(args._run(args) or 0)
    except InputError as exc:
        if not getattr(exc, "reported", False):  # (an annotation on stdout already says it: once)
            for line in str(exc).splitlines() or [""]:  # several errors: one line each
                print(f"derive: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("derive: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the engine failed: exit 3, never a verdict
        _internal_error(exc)
        return 3


def _internal_error(exc: BaseException) -> None:
    import traceback

    from derive.errors import describe, error_text

    # an InternalError made by derive.errors.internal already says what failed, and where
    text = str(exc) if getattr(exc, "info", None) else error_text(describe(exc))
    for line in text.splitlines() or [""]:
        print(f"derive: {line}", file=sys.stderr)
    print("the traceback, for the report:", file=sys.stderr)
    traceback.print_exception(exc, file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
