"""Wall time of ``derive impl`` on one implementation with the default settings.

Target: under 5 s on a 2-core machine (torch import excluded). Run from the repository
root: ``python benchmarks/bench_impl.py [TARGET NORMALIZER]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from derive.impl import check_implementation

BUDGET = 5.0
CASES = (
    ("tests/zoo/softmax1_numpy.py:softmax1", "softmax1"),  # agrees: every example and edge case
    ("tests/zoo/softmax1_unshifted.py:softmax1", "softmax1"),  # disagrees: shrinking + diagnosis
    ("tests/zoo/softmax1_torch.py:softmax1", "softmax1"),  # torch, with gradients
)


def main(argv: list[str]) -> int:
    cases = [tuple(argv[:2])] if len(argv) >= 2 else list(CASES)
    try:
        import torch  # noqa: F401  (imported before timing: excluded from the budget)
    except ImportError:
        cases = [c for c in cases if "torch" not in c[0]]
    worst = 0.0
    for spec, norm in cases:
        start = time.perf_counter()
        report = check_implementation(spec, norm)
        elapsed = time.perf_counter() - start
        worst = max(worst, elapsed)
        verdict = "agrees" if report.agrees else "disagrees"
        print(f"{spec} as {norm}: {verdict} in {elapsed:.2f} s")
    print(f"worst: {worst:.2f} s (budget {BUDGET:.1f} s): {'OK' if worst < BUDGET else 'TOO SLOW'}")
    return 0 if worst < BUDGET else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
