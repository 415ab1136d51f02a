#!/usr/bin/env python3
"""Wall time of the default test command, ``python -m pytest`` (slow tests skipped, no CI).

Target: at most 4 minutes of wall time on an idle 2-core machine. The suite runs in a fresh
process with ``CI`` unset (so tests marked slow are skipped, as on a developer's machine);
the wall time, the CPU time of every process it ran (user + system) and, as on a loaded
machine seconds say little, both as ratios to ``python -c "import sympy"`` are printed,
followed by the slowest tests (``--durations``): the candidates for ``@pytest.mark.slow``.

    python benchmarks/bench_tests.py               # the default suite
    python benchmarks/bench_tests.py --slow        # every test, as CI runs them
    python benchmarks/bench_tests.py -- tests/test_render.py   # some files only
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
TARGET_S = 240.0  # the default suite, idle 2-core machine


def run(argv: list[str], env: dict | None = None) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall s, CPU s of the process and every process it waited for, the finished process)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime), proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slow", action="store_true", help="run the slow tests too")
    ap.add_argument("--durations", type=int, default=30, help="slowest tests listed (default 30)")
    ap.add_argument("pytest_args", nargs="*", help="passed to pytest after --")
    args = ap.parse_args()

    base = [run([sys.executable, "-c", "import sympy"])[:2] for _ in range(5)]
    base_wall, base_cpu = statistics.median(w for w, _ in base), statistics.median(c for _, c in base)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--durations={args.durations}",
            *(["--slow"] if args.slow else []), *args.pytest_args]
    wall, cpu, proc = run(argv, env)
    tail = proc.stdout.splitlines()
    start = next((k for k, line in enumerate(tail) if "slowest" in line), len(tail))
    print("\n".join(tail[start:]))
    print(f"\nimport sympy: wall {base_wall:.2f} s, CPU {base_cpu:.2f} s (median of 5)")
    print(f"python -m pytest{' --slow' if args.slow else ''}: wall {wall:.1f} s = {wall / base_wall:.0f}× import sympy, "
          f"CPU {cpu:.1f} s = {cpu / base_cpu:.0f}× import sympy, exit {proc.returncode}")
    if not args.slow and not args.pytest_args:
        print(f"target: ≤ {TARGET_S:g} s wall on an idle 2-core machine: "
              f"{'met' if wall <= TARGET_S else 'MISSED'} here (a loaded machine takes longer)")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
