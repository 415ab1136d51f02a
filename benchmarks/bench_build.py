#!/usr/bin/env python3
"""The document build: per-document and whole-build times against the targets.

Targets (2-core machine, no PDF, cold: no cache): every document at most 5 s, the kernels
document at most 15 s, the whole build at most 20 s wall with the documents built in
parallel processes. Each document is built alone in a fresh interpreter, so nothing another
document computed is warm, and timed as the build's log prints it (from loading the module
to the rendered files; the "process wall" column adds the interpreter's start and the
imports); a document alone has both cores. Each figure is printed in seconds and as a ratio to the wall time of
``python -c "import sympy"`` (a ratio travels between machines better than seconds, as in
``bench_check.py``); CPU seconds (user + sys, child processes included) are printed too,
since wall time on a shared machine depends on the load.

It then times the qk-bias document per step, against a naive component-wise proof: the
baseline proves the same K-bias cancellation by expanding explicit components of n keys in
d dimensions and calling ``simplify``; its cost grows quickly with n = d, the symbolic
proof's does not.

    python benchmarks/bench_build.py            # documents, whole build, baseline at n = d = 4, 8, 16
    python benchmarks/bench_build.py --full     # also n = d = 32 (about a minute)
    python benchmarks/bench_build.py --quick    # documents and whole build only
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

t_import = time.perf_counter()
import sympy as sp

from derive.build import build, load_document, proof_modules
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


DOC_TARGET_S = 5.0
TARGETS_S = {"kernels": 15.0}  # documents with their own target
WHOLE_TARGET_S = 20.0


def import_sympy_s(runs: int = 3) -> float:
    def once() -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import sympy"], check=True)
        return time.perf_counter() - t0
    return statistics.median(once() for _ in range(runs))


def status(seconds: float, target: float) -> str:
    return f"(target ≤ {target:g} s: {'met' if seconds <= target else 'MISSED'})"


_ONE = """
import json, sys
from pathlib import Path
from derive.build import build
r = build([sys.argv[1]], docs=Path(sys.argv[2]), out=Path(sys.argv[3]), pdf=False, log=lambda m: None, jobs=1)
print(json.dumps(r.timings))
"""


def one_document(module: Path, tmp: Path) -> tuple[str, float, float, float]:
    """(slug, build wall, build CPU, process wall) of one document built cold in a
    fresh interpreter: nothing an earlier document computed is warm. The build's figures are
    what its log prints for the document; the process's add the interpreter's start and the
    imports."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _ONE, str(module), str(tmp / "d1"), str(tmp / "b1")],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    (slug, b_wall, b_cpu, _), = json.loads(out.strip().splitlines()[-1])
    return slug, b_wall, b_cpu, wall


def documents(base: float, jobs: int) -> bool:
    """Each document alone (a fresh process each), then the whole build in ``jobs`` processes; all cold."""
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'document (alone, fresh process, cold)':38} {'wall s':>7} {'CPU s':>7} {'× sympy':>8}   "
              f"{'process wall s':>14}")
        for module in proof_modules():
            slug, wall, cpu, p_wall = one_document(module, Path(tmp))
            target = TARGETS_S.get(slug, DOC_TARGET_S)
            ok &= wall <= target
            print(f"{slug:38} {wall:7.2f} {cpu:7.2f} {wall / base:8.2f}   {p_wall:14.2f}  {status(wall, target)}")
        seq = build(None, docs=Path(tmp) / "d0", out=Path(tmp) / "b0", pdf=False, log=lambda m: None, jobs=1)
        cpu_total = sum(c for _, _, c, _ in seq.timings)
        print(f"{'all documents, one after another':38} {seq.seconds:7.2f} {cpu_total:7.2f} {seq.seconds / base:8.2f}")
        # the whole build in a fresh interpreter: a fork of this one would inherit SymPy's warm caches
        argv = [sys.executable, "-m", "derive", "build", "--no-pdf", "--no-cache", "--no-progress",
                "--jobs", str(jobs), "--docs", str(Path(tmp) / "d2"), "--out", str(Path(tmp) / "b2")]
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
        ok &= wall <= WHOLE_TARGET_S
        print(f"{f'whole build, {jobs} processes (fresh)':38} {wall:7.2f} {cpu:7.2f} {wall / base:8.2f}   "
              f"{'':14}  {status(wall, WHOLE_TARGET_S)}")
        same = all((Path(tmp) / d / p.name).read_bytes() == p.read_bytes()
                   for d in ("d0", "d1") for p in (Path(tmp) / "d2").iterdir())
        print(f"parallel and sequential builds wrote the same bytes: {same}")
        ok &= same
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="include the n = d = 32 baseline")
    ap.add_argument("--quick", action="store_true", help="documents and whole build only")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes for the whole build")
    args = ap.parse_args()

    base = import_sympy_s()  # measured before any build, like the documents below: all cold
    print(f"{'import sympy':34} {base:7.2f} s")
    print(f"documents: {len(proof_modules())} modules in proofs/\n")
    ok = documents(base, args.jobs)
    if args.quick:
        return 0 if ok else 1
    print()

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
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
