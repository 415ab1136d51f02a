"""Wall-clock benchmarks of ``derive check`` (interpreter start and imports included).

    python benchmarks/bench_check.py

Targets: one spec of about five claims under 1.5 s; the whole atlas under 10 s (2 cores).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ONE = ROOT / "tests" / "specs" / "golden.toml"  # five claims


def wall(argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stderr}")
    return elapsed


def main() -> int:
    rows = [
        ("one spec, 5 claims (derive check)", ["-m", "derive", "check", str(ONE), "--format", "json"], 1.5),
        ("whole atlas (12 specs, 76 claims)",
         ["-m", "derive", "check", *sorted(str(p) for p in (ROOT / "derive" / "atlas").glob("*.derive.toml")),
          "--format", "json"], 10.0),
    ]
    ok = True
    for label, argv, target in rows:
        best = min(wall(argv) for _ in range(3))
        status = "ok" if best <= target else "SLOW"
        ok &= best <= target
        print(f"{label:40s} {best:6.2f} s  (target {target:4.1f} s)  {status}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
