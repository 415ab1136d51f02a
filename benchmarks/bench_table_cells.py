#!/usr/bin/env python3
"""Time each cell of the normalizer table in one process.

Usage: ``python benchmarks/bench_table_cells.py [--dump FILE]``. Cells run in the order
the table computes them (names() × PROPERTIES) with every cache cold at the start of the
process; prints the slowest cells, the CPU time per row and in total. ``--dump`` writes every
cell's verdict, value, reason, method, steps and witness as JSON (to compare two versions).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
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
    args = parser.parse_args(argv)
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
