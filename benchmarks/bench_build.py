#!/usr/bin/env python3
"""The document build's work: CPU time (user + system, every process) against ``import sympy``.

Target (cold: no cache; no PDF): the whole build takes at most 40 times the CPU time of
``python -c "import sympy"``, counting user + system time of every process the build runs
(its own and each document's, read with ``resource.getrusage(RUSAGE_CHILDREN)`` once the
build's process has exited). CPU time is what the build costs whatever else runs on the
machine; a ratio to ``import sympy``, measured the same way, travels between machines better
than seconds. Wall time is printed too, as a ratio as well: on a loaded machine it says little.

The whole build runs five times (``--runs``), each right after its own ``import sympy``
measurement (median of 9), in each virtual environment given (``--venvs``, default: the one
running this script): torch installed changes what the build imports, so the target is met only
when the median of the five ratios is within it in a venv with torch and in one without. A 2-core
machine shared with others drifts in speed by ±20% over minutes: the figures need an idle machine.

Each document is then built alone in a fresh interpreter, so nothing another document
computed is warm, and timed as the build's log prints it (from loading the module to the
rendered files); the "process" columns add the interpreter's start and the imports.

Last, the qk-bias document per step, against a naive component-wise proof: the baseline
proves the same K-bias cancellation by expanding explicit components of n keys in d
dimensions and calling ``simplify``; its cost grows quickly with n = d, the symbolic proof's
does not.

    python benchmarks/bench_build.py            # whole build, documents, baseline at n = d = 4, 8, 16
    python benchmarks/bench_build.py --full     # also n = d = 32 (about a minute)
    python benchmarks/bench_build.py --quick    # the whole build only
    python benchmarks/bench_build.py --runs 3   # the whole build 3 times (default 5), the median ratio
    python benchmarks/bench_build.py --quick --venvs .venv:.venv-deps-notorch   # with torch and without
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

from derive.build import load_document, proof_modules
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


CPU_TARGET = 40.0  # the whole cold build's CPU time, in units of `import sympy`'s


def torch_in(python: str) -> bool:
    """Is torch importable by the interpreter ``python`` (found, not imported)?"""
    return subprocess.run([python, "-c", "import importlib.util, sys; "
                           "sys.exit(0 if importlib.util.find_spec('torch') else 1)"]).returncode == 0


def run(argv: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the process and every process it waited for, stdout) of ``argv``."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(argv, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime), out


def import_sympy(runs: int = 5, python: str = sys.executable) -> tuple[float, float]:
    """Median (wall s, CPU s) of ``runs`` runs of ``python -c "import sympy"`` (one run varies by ±20%)."""
    got = [run([python, "-c", "import sympy"])[:2] for _ in range(runs)]
    return statistics.median(w for w, _ in got), statistics.median(c for _, c in got)


def whole_build(tmp: Path, jobs: int, python: str = sys.executable) -> tuple[float, float, str]:
    """The cold build without PDFs in a fresh interpreter, as a user runs it."""
    return run([python, "-m", "derive", "build", "--no-pdf", "--no-cache", "--no-progress",
                "--jobs", str(jobs), "--docs", str(tmp / "d"), "--out", str(tmp / "b")])


_ONE = """
import json, sys
from pathlib import Path
from derive.build import build
r = build([sys.argv[1]], docs=Path(sys.argv[2]), out=Path(sys.argv[3]), pdf=False, log=lambda m: None, jobs=1)
print(json.dumps(r.timings))
"""


def one_document(module: Path, tmp: Path) -> tuple[str, float, float, float, float]:
    """(slug, build wall, build CPU, process wall, process CPU) of one document built cold in a
    fresh interpreter."""
    wall, cpu, out = run([sys.executable, "-c", _ONE, str(module), str(tmp / "d1"), str(tmp / "b1")])
    (slug, b_wall, b_cpu, _), = json.loads(out.strip().splitlines()[-1])
    return slug, b_wall, b_cpu, wall, cpu


def report_build(jobs: int, runs: int, python: str = sys.executable) -> bool:
    """The whole build ``runs`` times with the interpreter ``python``, each against ``import sympy``
    measured just before it (the machine's speed drifts: a ratio to a baseline taken minutes earlier
    is noise); the verdict is the median ratio."""
    ratios, walls = [], []
    same = True
    venv = Path(python).parent.parent  # the venv (bin/python links to the base interpreter)
    print(f"venv {venv.name} ({'with' if torch_in(python) else 'without'} torch):")
    for r in range(runs):
        base_wall, base_cpu = import_sympy(9, python)
        with tempfile.TemporaryDirectory() as tmp:
            wall, cpu, _ = whole_build(Path(tmp), jobs, python)
            same &= all((Path(tmp) / "d" / p.name).read_bytes() == p.read_bytes()
                        for p in (ROOT / "docs").iterdir() if (Path(tmp) / "d" / p.name).exists())
        ratios.append(cpu / base_cpu)
        walls.append(wall / base_wall)
        print(f"  run {r + 1}: import sympy CPU {base_cpu:.2f} s (median of 9); whole build, cold, no PDF, {jobs} "
              f"processes: CPU {cpu:.2f} s = {cpu / base_cpu:.1f}× import sympy; wall {wall:.2f} s = "
              f"{wall / base_wall:.1f}×")
    ratio = statistics.median(ratios)
    ok = ratio <= CPU_TARGET
    print(f"  whole build: CPU {ratio:.1f}× import sympy, median of {runs} (target ≤ {CPU_TARGET:g}×: "
          f"{'met' if ok else 'MISSED'}); wall {statistics.median(walls):.1f}× import sympy")
    print(f"  the build wrote what docs/ holds: {same}")
    return ok and same


def report_documents(base_cpu: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'document (alone, fresh process, cold)':38} {'wall s':>7} {'CPU s':>7} {'CPU × sympy':>12}   "
              f"{'process wall s':>14} {'process CPU s':>13}")
        for module in proof_modules():
            slug, wall, cpu, p_wall, p_cpu = one_document(module, Path(tmp))
            print(f"{slug:38} {wall:7.2f} {cpu:7.2f} {cpu / base_cpu:12.1f}   {p_wall:14.2f} {p_cpu:13.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="include the n = d = 32 baseline")
    ap.add_argument("--quick", action="store_true", help="the whole build only")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes for the whole build")
    ap.add_argument("--runs", type=int, default=5, help="whole builds, each against its own import sympy")
    ap.add_argument("--venvs", default="", help="virtual environments to build in, separated by ':' (each a "
                    "folder with bin/python, e.g. .venv:.venv-deps-notorch); default: this interpreter's")
    args = ap.parse_args()

    print(f"documents: {len(proof_modules())} modules in proofs/\n")
    pythons = [str((ROOT / v / "bin" / "python") if not Path(v).is_absolute() else Path(v) / "bin" / "python")
               for v in args.venvs.split(":") if v] or [sys.executable]
    with_torch = {torch_in(p) for p in pythons}
    verdicts = [report_build(args.jobs, args.runs, p) for p in pythons]
    ok = all(verdicts)
    print(f"target met in every venv: {ok}" + ("" if with_torch == {True, False} else
                                               " (measured with torch " + ("installed" if True in with_torch else
                                                                           "absent") + " only: the target asks for both)"))
    base_wall, base_cpu = import_sympy()
    if args.quick:
        return 0 if ok else 1
    print()
    report_documents(base_cpu)
    print()

    t0 = time.perf_counter()
    doc = load_document(ROOT / "proofs" / "qk_bias.py")
    t1 = time.perf_counter()
    render_document(doc)
    t2 = time.perf_counter()
    total = t2 - t0
    print(f"imports: {IMPORT_S:.2f} s (not counted)")
    print(f"qk-bias: proofs + cross-checks {t1 - t0:.2f} s, rendering {t2 - t1:.2f} s, total {total:.2f} s")
    print(f"{'step':<48} {'proof s':>8} {'check s':>8}")
    for name, proof_s, check_s in doc.timings:
        print(f"{name:<48} {proof_s:8.3f} {check_s:8.3f}")

    t3 = time.perf_counter()
    kernels = load_document(ROOT / "proofs" / "kernels.py")
    render_document(kernels)
    k_total = time.perf_counter() - t3
    k_proof, k_check = sum(p for _, p, _ in kernels.timings), sum(c for _, _, c in kernels.timings)
    print(f"\nkernels: total {k_total:.2f} s (proofs {k_proof:.2f} s, cross-checks {k_check:.2f} s)")

    k_bias = dict((name, p) for name, p, _ in doc.timings)["K bias leaves the weights unchanged"]
    print(f"\nsymbolic K-bias cancellation (any n, d, mask): {k_bias:.3f} s")
    sizes = [4, 8, 16] + ([32] if args.full else [])
    for size in sizes:
        naive = naive_k_bias_cancellation(size, size)
        print(f"naive components n = d = {size:>2}: {naive:7.2f} s   ratio naive/symbolic {naive / k_bias:8.1f}x")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
