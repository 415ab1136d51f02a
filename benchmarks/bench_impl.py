"""Wall time of ``derive impl`` per implementation with the default settings.

Target: a median under 5 s per implementation on a 2-core machine, torch import excluded; an
attention-form check (:data:`ATTENTION_CASES`: calls of up to 4096 keys, both default dtypes, the
default search) within 15 s of CPU for a numpy kernel and 30 s for PyTorch's SDPA, measured as CPU
time (user + system, this process and its child), since the machine is shared;
every kernel-form check (``--form online|split|backward``, :data:`FORM_CASES`, at the real
sizes of the fixed list: rows of 1024 keys, tiles of 16 to 256 keys, 64 splits, head
dimensions 64 and 128, 16 rows per call) under 10 s, real Triton kernels under the
interpreter (:data:`TRITON_CASES`) included; the CPU time of a kernel-form check (this
process and its child) is reported too and counts when it is the smaller, as the 2-core
machine is shared and the checks are CPU-bound.
The implementation runs in a child process, which imports torch itself when the code uses
it; that import is timed once (a fresh interpreter importing torch) and subtracted from
the torch cases. Run from the repository root:
``python benchmarks/bench_impl.py [TARGET NORMALIZER [NAME=VALUE ...]]`` (``--attention``: the
attention-form checks alone)
(``--form FORM`` anywhere after them checks TARGET in that kernel form; a TARGET that imports
triton runs under the interpreter in float32).
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from derive.impl import check_implementation
from derive.impl.run.triton_env import imports_triton

BUDGET = 5.0
FORM_BUDGET = 10.0  # per kernel-form check
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

# kernel-form checks (default dtypes float64 and float32): agreeing, and disagreeing with diagnosis; numpy and
# torch get the full fixed list (every tile size and split count with every sink value)
FORM_CASES = (
    ("tests/zoo/kernels_numpy.py:sink_online", "sink", "online"),  # s over 7 values: the most calls
    ("tests/zoo/kernels_numpy.py:sink_split", "sink", "split"),
    ("tests/zoo/kernels_numpy.py:sink_backward", "sink", "backward"),
    ("tests/zoo/kernels_numpy.py:softmax1_online_sum_not_rescaled", "softmax1", "online"),  # diagnosis
    ("tests/zoo/kernels_cases.py:sink_backward_ds_from_dS", "sink", "backward"),  # −Σ dS, real sizes
    ("tests/zoo/kernels_cases.py:sink_online_no_rescale_past_20_tiles", "sink", "online"),  # a late fault
    ("tests/zoo/kernels_torch.py:sink_online", "sink", "online"),  # torch
    ("tests/zoo/kernels_torch.py:sink_split_nan_empty", "sink", "split"),  # torch, diagnosis
)
# real Triton kernels under Triton's CPU interpreter, float32 (the kernels compute in float32): the
# interpreter runs one program per row, one after the other, and pays milliseconds per tile, so these
# get the interpreter list (at most 17 tiles or splits per row, sink values spread over the partitions)
TRITON_CASES = (
    ("tests/zoo/triton_kernels/online.py:sink_online", "sink", "online"),
    ("tests/zoo/triton_kernels/online.py:sink_online_sink_per_tile", "sink", "online"),  # diagnosis
    ("tests/zoo/triton_kernels/split.py:sink_split", "sink", "split"),
    ("tests/zoo/triton_kernels/split.py:sink_split_empty_as_sink", "sink", "split"),  # diagnosis
)


# attention-form checks (default dtypes float64 and float32, the fixed list with calls of up to 4096 keys and the
# default search), each against a budget of CPU seconds (this process and its child: the machine is shared, wall
# time is not a measure there)
ATTENTION_CASES = (
    ("tests/zoo/attention_model.py:gqa", "sink", {"gqa": True}, 15.0),  # numpy, GQA, sinks
    ("tests/zoo/attention_model.py:flash_block", "softmax", {}, 15.0),  # numpy, tiles of 1 to 256, a mask
    ("tests/zoo/attention_torch.py:sdpa_torch", "softmax", {"gqa": True}, 30.0),  # PyTorch's own SDPA
)
ATTENTION = {"layout": "bhnd", "out_layout": None, "scale": None, "causal": False, "start_q": None, "window": 0,
             "mask_value": "-inf", "backward": False, "kw_names": {}}


def attention_cases(torch_s: float | None) -> bool:
    """Run ATTENTION_CASES; print each one's wall and CPU time; True when each is within its CPU budget."""
    ok = True
    for spec, norm, settings, budget in ATTENTION_CASES:
        if "torch" in spec and torch_s is None:
            continue
        start, cpu = time.perf_counter(), cpu_seconds()
        report = check_implementation(spec, norm, form="attention", attention={**ATTENTION, **settings})
        elapsed, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        cov = report.results[0].coverage.as_json()
        within = cpu <= budget
        ok = ok and within
        print(f"{spec} as {norm}, --form attention: {report.verdict} in {elapsed:.2f} s wall, CPU {cpu:.2f} s "
              f"(budget {budget:.0f} s CPU: {'OK' if within else 'TOO SLOW'}); {report.results[0].cases} calls per "
              f"dtype, keys up to {cov['largest_keys']}")
    return ok


def torch_import_seconds() -> float | None:
    code = "import time; t = time.perf_counter(); import torch; print(time.perf_counter() - t)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return float(proc.stdout) if proc.returncode == 0 else None


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the check's child process)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: list[str]) -> int:
    form = None
    if argv == ["--attention"]:  # the attention-form checks alone
        return 0 if attention_cases(torch_import_seconds()) else 1
    if "--form" in argv:
        k = argv.index("--form")
        form, argv = argv[k + 1], argv[:k] + argv[k + 2:]
    form_cases = []
    if len(argv) >= 2:
        params = {k: float(v) for k, _, v in (a.partition("=") for a in argv[2:])}
        cases = [] if form else [(argv[0], argv[1], params)]
        form_cases = [(argv[0], argv[1], form)] if form else []
    else:
        cases, form_cases = list(CASES), list(FORM_CASES)
    torch_s = torch_import_seconds()
    if torch_s is None:
        cases = [c for c in cases if "torch" not in c[0] and "masking" not in c[0]]
        form_cases = [c for c in form_cases if "torch" not in c[0]]
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
    ok = True
    if times:
        median = statistics.median(times)
        ok = median <= BUDGET
        print(f"median: {median:.2f} s, worst: {max(times):.2f} s (budget: median {BUDGET:.1f} s): "
              f"{'OK' if ok else 'TOO SLOW'}")
    form_times = []
    triton = [] if torch_s is None or len(argv) >= 2 else [(*c, True) for c in TRITON_CASES]
    for spec, norm, form, *interpreted in [(*c, imports_triton(c[0])) for c in form_cases] + triton:
        kw = {"dtypes": ("float32",), "env": {"TRITON_INTERPRET": "1"}} if interpreted[0] else {}
        start, cpu = time.perf_counter(), cpu_seconds()
        try:
            report = check_implementation(spec, norm, form=form, **kw)
        except Exception as exc:  # a call past derive's time guard (a loaded machine): over budget, go on
            print(f"{spec} as {norm}, --form {form}: stopped after {time.perf_counter() - start:.2f} s: {exc}")
            form_times.append(float("inf"))
            continue
        elapsed, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        if report.api == "torch" and torch_s is not None:
            elapsed, cpu = max(0.0, elapsed - torch_s), max(0.0, cpu - torch_s)
        form_times.append(min(elapsed, cpu))
        print(f"{spec} as {norm}, --form {form}: {'agrees' if report.agrees else 'disagrees'} in {elapsed:.2f} s"
              f" (CPU {cpu:.2f} s" + ("; Triton interpreter, float32)" if interpreted[0] else ")"))
    if len(argv) < 2 or "--attention" in argv:
        ok = attention_cases(torch_s) and ok
    if form_times:
        form_ok = max(form_times) <= FORM_BUDGET
        ok = ok and form_ok
        print(f"--form worst: {max(form_times):.2f} s (budget: {FORM_BUDGET:.1f} s each): "
              f"{'OK' if form_ok else 'TOO SLOW'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
