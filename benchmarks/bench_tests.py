#!/usr/bin/env python3
"""Wall and CPU time of the default test command, ``python -m pytest`` (slow tests skipped, no CI).

Target: at most 3 minutes of wall time on an idle 2-core machine, and 6 minutes of CPU. The suite runs in a fresh
process with ``CI`` unset (so tests marked slow are skipped, as on a developer's machine) and
with the project's own options (``pyproject.toml``: pytest-xdist, one worker per core). Printed:

- the wall time, and the CPU time (user + system) of every process the run started: pytest,
  its workers, and the processes the tests run; both also as ratios to
  ``python -c "import sympy"``, since on a loaded machine seconds say little;
- the load average before and after, so a measurement on a shared machine says so;
- the tests that cost the most CPU (setup and teardown included, and the processes they ran),
  measured inside each worker by this file acting as a pytest plugin; CPU time hardly depends
  on what else the machine runs, unlike ``--durations``: these are the candidates for
  ``@pytest.mark.slow`` or for a cheaper test;
- the CPU time per test file, and whether the costliest files are those that
  ``tests/conftest.py`` starts first (``FIRST``: a long file handed out last keeps one worker
  busy alone at the end of the run).

A test's CPU time includes the child processes reaped while it ran, which are mostly its own;
a child that an earlier test left behind is counted where it is reaped.

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
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S, TARGET_CPU_S = 180.0, 360.0  # the default suite, idle 2-core machine: wall, CPU
LOG_ENV = "DERIVE_BENCH_TEST_CPU"  # where the plugin below appends one line per test


def _cpu() -> float:
    """CPU seconds of this process and of every child it has waited for."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# ---- the plugin (loaded in pytest and each xdist worker with -p bench_tests) ----------

try:
    import pytest
except ImportError:  # the plugin part is only used inside pytest
    pytest = None

if pytest is not None:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        """Append ``cpu<TAB>wall<TAB>nodeid`` for each test (setup, call and teardown)."""
        log = os.environ.get(LOG_ENV)
        c0, t0 = _cpu(), time.perf_counter()
        yield
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{_cpu() - c0:.3f}\t{time.perf_counter() - t0:.3f}\t{item.nodeid}\n")


# ---- the benchmark ----------------------------------------------------------------------

def run(argv: list[str], env: dict | None = None) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall s, CPU s of the process and every process it waited for, the finished process)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime), proc


def read_log(path: Path) -> list[tuple[float, float, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cpu, wall, nodeid = line.split("\t", 2)
        rows.append((float(cpu), float(wall), nodeid))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slow", action="store_true", help="run the slow tests too")
    ap.add_argument("--top", type=int, default=40, help="tests listed by CPU time (default 40)")
    ap.add_argument("--log", type=Path, help="keep the per-test CPU log here (tab-separated: CPU s, wall s, test)")
    ap.add_argument("pytest_args", nargs="*", help="passed to pytest after --")
    args = ap.parse_args()

    base = [run([sys.executable, "-c", "import sympy"])[:2] for _ in range(5)]
    base_wall, base_cpu = statistics.median(w for w, _ in base), statistics.median(c for _, c in base)
    with tempfile.TemporaryDirectory(prefix="bench-tests-") as tmp:
        log = args.log or Path(tmp) / "cpu.tsv"
        log.unlink(missing_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "CI"}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "benchmarks"),
                                             *filter(None, [env.get("PYTHONPATH")])])
        env[LOG_ENV] = str(log)
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "bench_tests",
                *(["--slow"] if args.slow else []), *args.pytest_args]
        load0 = os.getloadavg()[0]
        wall, cpu, proc = run(argv, env)
        load1 = os.getloadavg()[0]
        rows = read_log(log) if log.exists() else []

    by_file: dict[str, float] = defaultdict(float)
    for c, _, nodeid in rows:
        by_file[nodeid.split("::")[0]] += c
    print(f"{'CPU s':>7} {'wall s':>7}  test (setup + call + teardown, with the processes it ran)")
    for c, w, nodeid in sorted(rows, reverse=True)[:args.top]:
        print(f"{c:7.1f} {w:7.1f}  {nodeid}")
    print(f"\n{'CPU s':>7}  test file")
    for name, c in sorted(by_file.items(), key=lambda kv: -kv[1])[:25]:
        print(f"{c:7.1f}  {name}")
    if not args.pytest_args:
        sys.path.insert(0, str(ROOT / "tests"))
        from conftest import FIRST

        costliest = tuple(name.rsplit("/", 1)[-1] for name, _ in sorted(by_file.items(), key=lambda kv: -kv[1]))
        print(f"started first (tests/conftest.py FIRST): {', '.join(FIRST)}"
              + ("" if set(costliest[:len(FIRST)]) == set(FIRST) else
                 f"\nthe {len(FIRST)} costliest files here: {', '.join(costliest[:len(FIRST)])}"))
    print("\n" + ([line for line in proc.stdout.splitlines() if line.strip()] or ["(no output)"])[-1])
    if proc.returncode not in (0, 5):
        print(proc.stdout[-3000:], proc.stderr[-2000:], sep="\n")
    print(f"tests: {len(rows)} (skipped ones included), {sum(c for c, _, _ in rows):.1f} s CPU in the tests themselves")
    command = "python -m pytest" + (" --slow" if args.slow else "")
    print(f"import sympy: wall {base_wall:.2f} s, CPU {base_cpu:.2f} s (median of 5)")
    print(f"{command}: wall {wall:.1f} s = {wall / base_wall:.0f}× import sympy, "
          f"CPU {cpu:.1f} s = {cpu / base_cpu:.0f}× import sympy, exit {proc.returncode}; "
          f"{os.cpu_count()} cores, load average {load0:.1f} before, {load1:.1f} after")
    if not args.slow and not args.pytest_args:
        print(f"target: ≤ {TARGET_S:g} s wall on an idle 2-core machine: "
              f"{'met' if wall <= TARGET_S else 'MISSED'} here"
              f"{' (the machine was not idle: a loaded machine takes longer)' if max(load0, load1) > 0.5 else ''}; "
              f"on 2 idle cores the wall time is about CPU / 2 = {cpu / 2:.0f} s")
        print(f"target: ≤ {TARGET_CPU_S:g} s CPU: {'met' if cpu <= TARGET_CPU_S else 'MISSED'}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
