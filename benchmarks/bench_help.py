#!/usr/bin/env python3
"""``derive --help`` and ``derive check --help`` against ``python -c pass``.

Target: each at most 2 × the wall time of ``python -c pass`` plus 0.1 s. Each command runs in a
fresh interpreter REPEAT times; the median wall time is compared (the median CPU time, user +
sys, is printed beside it: on a busy machine it says more than the wall time). It also lists which of the
heavy packages (SymPy, Hypothesis, flint, NumPy, Jinja2) each command imports (``-X importtime``):
none should be. Wall times on a shared machine are noisy; the import list is not.

    python benchmarks/bench_help.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import resource
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


def wall(args: list[str], repeat: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + sys) of the child, in seconds."""
    times, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], capture_output=True, check=True, env=_env())
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times), statistics.median(cpus)


def heavy_imports(args: list[str]) -> list[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, env=_env(),
                          check=True)
    names = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    return [h for h in HEAVY if h in names]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    base, base_cpu = wall(COMMANDS["python -c pass"], args.repeat)
    ok = True
    print(f"{'command':<22} {'wall s':>7} {'target s':>9} {'CPU s':>6} {'target s':>9}  heavy imports")
    print(f"{'python -c pass':<22} {base:7.3f} {'':>9} {base_cpu:6.3f}")
    for name in ("derive --help", "derive check --help"):
        (t, cpu), heavy = wall(COMMANDS[name], args.repeat), heavy_imports(COMMANDS[name])
        target, cpu_target = 2 * base + 0.1, 2 * base_cpu + 0.1
        ok &= t <= target and not heavy
        print(f"{name:<22} {t:7.3f} {target:9.3f} {cpu:6.3f} {cpu_target:9.3f}  {', '.join(heavy) or 'none'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
