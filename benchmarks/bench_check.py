"""Wall-clock benchmarks of ``derive check``, as ratios to ``python -c "import sympy"``.

    python benchmarks/bench_check.py

derive's modules are byte-compiled first (``compileall``, into the ``__pycache__`` folders git
ignores), as an installed package is: with ``PYTHONDONTWRITEBYTECODE`` set, every run would
otherwise compile derive's sources again (about 0.3 s of CPU), while SymPy's come compiled.

A ratio travels between machines better than seconds. Targets: the GPT-2-style spec of the
atlas (Q/K/V biases; shift, abstention and bias claims: 6 claims) in at most 3× the time of
importing SymPy, median of 5 runs each, interpreter start included; the same for a spec with a
user-defined normalizer (a ``[normalizer]`` weight formula); the whole atlas in at most 20×. The CPU time (user + system) of the same runs is printed beside, as a ratio too:
on a shared machine it moves less than the wall clock.
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ATLAS = ROOT / "derive" / "atlas"
ONE = ATLAS / "gpt2.derive.toml"  # six claims
USER = ROOT / "benchmarks" / "user_normalizer.toml"  # a [normalizer] weight formula, three claims
RUNS = 5


def wall(argv: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system of the child) of one run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    c0 = os.times()
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t0
    c1 = os.times()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stderr}")
    return elapsed, (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)


def median(argv: list[str]) -> tuple[float, float]:
    runs = [wall(argv) for _ in range(RUNS)]
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def main() -> int:
    compileall.compile_dir(ROOT / "derive", quiet=1)
    base, base_cpu = median(["-c", "import sympy"])
    print(f"{'import sympy':44s} {base:6.2f} s  (CPU {base_cpu:.2f} s)")
    rows = [
        ("GPT-2-style spec, 6 claims (derive check)", ["-m", "derive", "check", str(ONE), "--format", "json"], 3.0),
        ("user-defined normalizer, 3 claims", ["-m", "derive", "check", str(USER), "--format", "json"], 3.0),
        (f"whole atlas ({len(list(ATLAS.glob('*.derive.toml')))} specs)",
         ["-m", "derive", "check", *sorted(str(p) for p in ATLAS.glob("*.derive.toml")), "--format", "json"], 20.0),
    ]
    ok = True
    for label, argv, target in rows:
        t, cpu = median(argv)
        ratio = t / base
        status = "ok" if ratio <= target else "SLOW"
        ok &= ratio <= target
        print(f"{label:44s} {t:6.2f} s  {ratio:5.2f}× import sympy  (target ≤ {target:g}×)  {status}"
              f"  (CPU {cpu:.2f} s, {cpu / base_cpu:.2f}×)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
