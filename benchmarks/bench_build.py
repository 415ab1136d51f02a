#!/usr/bin/env python3
"""Wall time of the qk-bias document, per step, against a naive component-wise proof.

Targets (2-core machine): the whole qk-bias document — proofs, cross-checks, rendering, no
PDF — under 5 s after imports; the kernels document under 15 s; symbolic proof time
independent of n and d. The baseline
proves the same K-bias cancellation by expanding explicit components of n keys in d
dimensions and calling ``simplify``; its cost grows quickly with n = d.

    python benchmarks/bench_build.py            # baseline at n = d = 4, 8, 16
    python benchmarks/bench_build.py --full     # also n = d = 32 (about a minute)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

t_import = time.perf_counter()
import sympy as sp

from derive.build import load_document
from derive.render import render_document

IMPORT_S = time.perf_counter() - t_import


def naive_k_bias_cancellation(n: int, d: int) -> float:
    """Seconds to prove softmax(q·(k_j + b)) = softmax(q·k_j) with explicit components."""
    q = sp.symbols(f"q0:{d}", real=True)
    b = sp.symbols(f"b0:{d}", real=True)
    keys = [sp.symbols(f"k{j}_0:{d}", real=True) for j in range(n)]
    t0 = time.perf_counter()
    s0 = [sum(qc * kc for qc, kc in zip(q, k)) / sp.sqrt(d) for k in keys]
    s1 = [sum(qc * (kc + bc) for qc, kc, bc in zip(q, k, b)) / sp.sqrt(d) for k in keys]
    p0 = sp.exp(s0[0]) / sum(sp.exp(x) for x in s0)
    p1 = sp.exp(s1[0]) / sum(sp.exp(x) for x in s1)
    assert sp.simplify(p1 - p0) == 0
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="include the n = d = 32 baseline")
    args = ap.parse_args()

    t0 = time.perf_counter()
    doc = load_document(ROOT / "proofs" / "qk_bias.py")
    t1 = time.perf_counter()
    render_document(doc)
    t2 = time.perf_counter()
    total = t2 - t0
    print(f"imports: {IMPORT_S:.2f} s (not counted)")
    print(f"qk-bias: proofs + cross-checks {t1 - t0:.2f} s, rendering {t2 - t1:.2f} s, total {total:.2f} s "
          f"(target < 5 s: {'met' if total < 5 else 'MISSED'})")
    print(f"{'step':<48} {'proof s':>8} {'check s':>8}")
    for name, proof_s, check_s in doc.timings:
        print(f"{name:<48} {proof_s:8.3f} {check_s:8.3f}")

    t3 = time.perf_counter()
    kernels = load_document(ROOT / "proofs" / "kernels.py")
    render_document(kernels)
    k_total = time.perf_counter() - t3
    k_proof, k_check = sum(p for _, p, _ in kernels.timings), sum(c for _, _, c in kernels.timings)
    print(f"\nkernels: total {k_total:.2f} s (proofs {k_proof:.2f} s, cross-checks {k_check:.2f} s) "
          f"(target < 15 s: {'met' if k_total < 15 else 'MISSED'})")

    k_bias = dict((name, p) for name, p, _ in doc.timings)["K bias leaves the weights unchanged"]
    print(f"\nsymbolic K-bias cancellation (any n, d, mask): {k_bias:.3f} s")
    sizes = [4, 8, 16] + ([32] if args.full else [])
    for size in sizes:
        naive = naive_k_bias_cancellation(size, size)
        print(f"naive components n = d = {size:>2}: {naive:7.2f} s   ratio naive/symbolic {naive / k_bias:8.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
