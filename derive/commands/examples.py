"""``derive examples``: list the shipped variant specs (the atlas), usable with ``derive check``."""

from __future__ import annotations

HELP = "list the shipped example specs (the atlas of variants)"
DESCRIPTION = """Print the path and name of every shipped spec; each works with `derive check PATH`."""


def add_arguments(parser) -> None:
    parser.add_argument("--paths", action="store_true", help="print only the paths")


def run(args) -> int:
    import os
    import sys

    from derive.atlas import spec_paths
    from derive.spec import load_spec

    try:
        for path in spec_paths():
            print(path if args.paths else f"{path}\t{load_spec(path).name}")
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `derive examples | head -1`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
