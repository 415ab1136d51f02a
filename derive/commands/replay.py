"""``derive replay PATH...``: check proof certificates with the checker alone."""

from __future__ import annotations

import sys
from pathlib import Path

from derive.errors import InputError

HELP = "check proof certificates (JSON files, or folders of them) with derive's independent checker"
DESCRIPTION = """Replay each certificate with derive's checker alone (derive.replay: python-flint and
the standard library, no SymPy, nothing of the engine): its steps re-applied, its claim decided
exactly, its side conditions discharged. A folder is searched for *.json files.
Certificates are written by `derive check --certificates DIR` and by the documents' build
(build/certificates/).

Exit code: 0 when every certificate replays, 1 when one does not (the step or the condition
is named), 2 when a file is not a certificate (malformed)."""


def add_arguments(parser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="certificate files (*.json) or folders of them")
    parser.add_argument("--quiet", action="store_true", help="print only what does not replay, and the total")


def files(paths) -> list[Path]:
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(p.rglob("*.json"))
        elif p.is_file():
            out.append(p)
        else:
            raise InputError(f"{p}: no such file or folder")
    return out


def run(args) -> int:
    from derive.replay import Malformed, Rejected, replay_text

    found = files(args.paths)
    if not found:
        raise InputError(f"no certificate (*.json) in {', '.join(args.paths)}")
    counts = {"replayed": 0, "rejected": 0, "malformed": 0}
    for path in found:
        try:
            out = replay_text(path.read_text(encoding="utf-8"))
        except Malformed as exc:
            counts["malformed"] += 1
            print(f"{path}: malformed: {exc}")
        except Rejected as exc:
            counts["rejected"] += 1
            print(f"{path}: does not replay: {exc}")
        except (OSError, UnicodeDecodeError) as exc:
            counts["malformed"] += 1
            print(f"{path}: cannot read: {exc}")
        else:
            counts["replayed"] += 1
            if not args.quiet:
                what = f"{out['bits']} bits" if "bits" in out else f"{out['steps']} steps, {out['conditions']} conditions"
                print(f"{path}: replayed ({what})")
    n = len(found)
    print(f"{n} certificate{'' if n == 1 else 's'}: {counts['replayed']} replayed, {counts['rejected']} rejected, "
          f"{counts['malformed']} malformed")
    sys.stdout.flush()
    return 2 if counts["malformed"] else 1 if counts["rejected"] else 0
