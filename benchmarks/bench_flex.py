"""CPU time of checking a traced FlexAttention modifier against the same claims on its
hand-written spec.

    python benchmarks/bench_flex.py

Target: tracing plus checking one modifier ≤ 2× the time of the same claims on the
hand-written spec, torch's import excluded: the time is this process's CPU time plus the CPU
time the tracing child spent on the modifier itself (it imports torch before it is given the
modifier, and reports the CPU time of the trace alone). CPU time, not wall time: the machine
may be shared. Median of 3 runs each.
"""

from __future__ import annotations

import resource
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FLEX = ROOT / "derive" / "atlas" / "flex"
RUNS = 3
CLAIMS = ('[claims]\nnear = "decreasing_in_distance"\nshift = "shift_invariant"\nsum = "weights_sum_to_one"\n'
          'same = \'equivalent_to("hand.toml")\'\n')
PAIRS = {  # name: (traced keys, hand-written keys)
    "ALiBi": ('score_mod = "mods.py:generate_alibi_bias(8)"\nmask_mod = "mods.py:causal"\n',
              'score = "dot(q, k) / sqrt(d) - alibi_slopes * abs(i - j)"\nmask = "causal"\n'
              '[symbols]\nalibi_slopes = "per_head positive"\n'),
    "soft-capping + ALiBi": ('score_mod = "mods.py:generate_softcap_alibi(30, 8)"\nmask_mod = "mods.py:causal"\n',
                             'score = "30 * tanh(dot(q, k) / sqrt(d) / 30) - alibi_slopes * (i - j)"\n'
                             'mask = "causal"\n[symbols]\nalibi_slopes = "per_head positive"\n'),
}


def cpu() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    return s.ru_utime + s.ru_stime


def run(path: Path) -> float:
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    t0 = cpu()
    spec = load_spec(path)
    result = check_spec(spec)
    elapsed = cpu() - t0
    assert [c.verdict for c in result.claims] == ["proved"] * 4, [c.reason for c in result.claims]
    return elapsed + sum(t.cpu_seconds for t in (spec.flex.traced if spec.flex else ()))


def main() -> int:
    tmp = Path(tempfile.mkdtemp())
    shutil.copy(FLEX / "mods.py", tmp / "mods.py")
    run_once = False
    ok = True
    for name, (traced, hand) in PAIRS.items():
        a, b = tmp / "traced.toml", tmp / "hand.toml"
        a.write_text(f'name = "{name} traced"\n{traced}{CLAIMS}')
        b.write_text(f'name = "{name} by hand"\n{hand}{CLAIMS}')
        if not run_once:
            run(b)  # warm imports (SymPy, Hypothesis) outside the measurement
            run_once = True
        t_hand = statistics.median(run(b) for _ in range(RUNS))
        t_flex = statistics.median(run(a) for _ in range(RUNS))
        ratio = t_flex / t_hand
        status = "ok" if ratio <= 2.0 else "SLOW"
        ok &= ratio <= 2.0
        print(f"{name:44s} traced {t_flex:6.2f} s, hand-written {t_hand:6.2f} s: {ratio:4.2f}× (target ≤ 2×) {status}")
    shutil.rmtree(tmp)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
