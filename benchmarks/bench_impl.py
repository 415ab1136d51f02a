"""Wall time of ``derive impl`` per implementation with the default settings.

Target: a median under 5 s per implementation on a 2-core machine, torch import excluded.
The implementation runs in a child process, which imports torch itself when the code uses
it; that import is timed once (a fresh interpreter importing torch) and subtracted from
the torch cases. Run from the repository root:
``python benchmarks/bench_impl.py [TARGET NORMALIZER [NAME=VALUE ...]]``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from derive.impl import check_implementation

BUDGET = 5.0
CASES = (
    ("tests/zoo/softmax1_numpy.py:softmax1", "softmax1", {}),  # agrees: every example and edge case
    ("tests/zoo/softmax1_unshifted.py:softmax1", "softmax1", {}),  # disagrees: shrinking + diagnosis
    ("tests/zoo/sink_numpy.py:sink", "sink", {}),  # s varied by Hypothesis
    ("tests/zoo/tiled.py:softmax1_tiled_16", "softmax1", {}),  # long rows, agrees
    ("tests/zoo/tiled.py:softmax1_tiled_32_no_rescale", "softmax1", {}),  # long rows, disagrees
    ("tests/zoo/forms.py:clipped", "clipped", {}),  # zeta, gamma varied
    ("tests/zoo/forms.py:softcap_missing", "softcap", {"c": 5.0}),  # diagnosis of a named form
    ("tests/zoo/softmax1_torch.py:softmax1", "softmax1", {}),  # torch, with gradients
    ("tests/zoo/masking.py:softmax_hf", "softmax", {}),  # torch, HF-style masking
)


def torch_import_seconds() -> float | None:
    code = "import time; t = time.perf_counter(); import torch; print(time.perf_counter() - t)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return float(proc.stdout) if proc.returncode == 0 else None


def main(argv: list[str]) -> int:
    if len(argv) >= 2:
        cases = [(argv[0], argv[1], {k: float(v) for k, _, v in (a.partition("=") for a in argv[2:])})]
    else:
        cases = list(CASES)
    torch_s = torch_import_seconds()
    if torch_s is None:
        cases = [c for c in cases if "torch" not in c[0] and "masking" not in c[0]]
    else:
        print(f"torch import in a fresh process: {torch_s:.2f} s (subtracted from the torch cases)")
    times = []
    for spec, norm, params in cases:
        start = time.perf_counter()
        report = check_implementation(spec, norm, params=params)
        elapsed = time.perf_counter() - start
        if report.api == "torch" and torch_s is not None:
            elapsed = max(0.0, elapsed - torch_s)
        times.append(elapsed)
        verdict = "agrees" if report.agrees else "disagrees"
        print(f"{spec} as {norm}: {verdict} in {elapsed:.2f} s")
    median = statistics.median(times)
    print(f"median: {median:.2f} s, worst: {max(times):.2f} s (budget: median {BUDGET:.1f} s): "
          f"{'OK' if median <= BUDGET else 'TOO SLOW'}")
    return 0 if median <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
