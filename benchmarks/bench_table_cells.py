#!/usr/bin/env python3
"""Time each cell of the normalizer table in one process, and the pooled table's wall time.

Usage: ``python benchmarks/bench_table_cells.py [--dump FILE] [--pool]``. Cells run in the order
the table computes them (names() × PROPERTIES) with every cache cold at the start of the
process; prints the slowest cells, the CPU time per row and in total. ``--dump`` writes every
cell's verdict, value, reason, method, steps and witness as JSON (to compare two versions);
``--pool`` instead times ``build_table()`` with its default pool; ``--schedule`` times the
pool's tasks one after another in one process and replays them on two workers taking the next
task when free (the pool's order; a wall-time estimate that a loaded machine cannot spoil).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _record(der) -> dict:
    v = der.verdict
    return {
        "status": v.status,
        "reason": v.reason,
        "method": v.method,
        "witness": json.loads(json.dumps(v.witness, default=str)) if v.witness is not None else None,
        "value": der.value_text(),
        "steps": der.latex_steps(),
        "equality": [str(e) for e in der.equality] if der.equality else None,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", help="write every cell's result as JSON")
    parser.add_argument("--pool", action="store_true", help="time build_table() with its pool (a fresh process)")
    parser.add_argument("--schedule", action="store_true", help="per-task CPU and a two-worker replay")
    args = parser.parse_args(argv)
    if args.schedule:
        from derive.normalizers.registry import names
        from derive.normalizers.table import _task, _tasks

        free = [0.0, 0.0]
        for task in _tasks(names()):
            c0 = _cpu()
            _task(task)
            k = free.index(min(free))
            free[k] += _cpu() - c0
        print(f"tasks: {sum(free):.2f} s CPU; two workers would finish at {free[0]:.2f} s and {free[1]:.2f} s")
        return 0
    if args.pool:
        from derive.normalizers.table import build_table

        t0, c0 = time.perf_counter(), _cpu()
        build_table()
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(f"build_table(): {time.perf_counter() - t0:.2f} s wall, parent CPU {_cpu() - c0:.2f} s, "
              f"children CPU {kids.ru_utime + kids.ru_stime:.2f} s")
        return 0
    from derive.normalizers.properties import PROPERTIES, derive_property
    from derive.normalizers.registry import names

    times, out, rows = {}, {}, {}
    for name in names():
        for prop in PROPERTIES:
            c0 = _cpu()
            der = derive_property(name, prop)
            times[(name, prop)] = _cpu() - c0
            rows[name] = rows.get(name, 0) + times[(name, prop)]
            if args.dump:
                out[f"{name}/{prop}"] = _record(der)
    for (name, prop), s in sorted(times.items(), key=lambda kv: -kv[1])[:15]:
        print(f"{s:6.2f} s  {name} {prop}")
    print("rows: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(rows.items(), key=lambda kv: -kv[1])))
    print(f"total CPU {sum(times.values()):.2f} s")
    if args.dump:
        Path(args.dump).write_text(json.dumps(out, indent=1, ensure_ascii=False, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
