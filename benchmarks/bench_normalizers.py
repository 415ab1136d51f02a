#!/usr/bin/env python3
"""Time the full normalizer table (every registered normalizer × every property).

Usage: ``python benchmarks/bench_normalizers.py``. Prints the table and the time to build it
in one process (wall and CPU seconds).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from derive.normalizers.properties import PROPERTIES
from derive.normalizers.registry import names
from derive.normalizers.table import build_table, markdown


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    t0, c0 = time.perf_counter(), time.process_time()
    table = build_table()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(markdown(table))
    counts = {}
    for der in table.values():
        counts[der.verdict.status] = counts.get(der.verdict.status, 0) + 1
    print(
        f"{len(names())} normalizers × {len(PROPERTIES)} properties = {len(table)} cells: "
        + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    )
    print(f"built in {elapsed:.2f} s wall, {cpu:.2f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
