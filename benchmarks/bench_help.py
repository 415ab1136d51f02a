#!/usr/bin/env python3
"""``derive --help`` and ``derive check --help`` against ``python -c pass``.

Target: each at most 2 × the wall time of ``python -c pass`` plus 0.1 s. Each command runs in a
fresh interpreter REPEAT times; the median wall time is compared. It also lists which of the
heavy packages (SymPy, Hypothesis, flint, NumPy, Jinja2) each command imports (``-X importtime``):
none should be. Wall times on a shared machine are noisy; the import list is not.

    python benchmarks/bench_help.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("sympy", "hypothesis", "flint", "numpy", "jinja2")
COMMANDS = {"python -c pass": ["-c", "pass"], "derive --help": ["-m", "derive", "--help"],
            "derive check --help": ["-m", "derive", "check", "--help"]}


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def wall(args: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], capture_output=True, check=True, env=_env())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def heavy_imports(args: list[str]) -> list[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, env=_env(),
                          check=True)
    names = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    return [h for h in HEAVY if h in names]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    base = wall(COMMANDS["python -c pass"], args.repeat)
    ok = True
    print(f"{'command':<22} {'median s':>9} {'target s':>9}  heavy imports")
    print(f"{'python -c pass':<22} {base:9.3f} {'':>9}")
    for name in ("derive --help", "derive check --help"):
        t, heavy = wall(COMMANDS[name], args.repeat), heavy_imports(COMMANDS[name])
        target = 2 * base + 0.1
        ok &= t <= target and not heavy
        print(f"{name:<22} {t:9.3f} {target:9.3f}  {', '.join(heavy) or 'none'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
