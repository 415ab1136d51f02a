"""The mutation benchmark's machinery: every operator makes mutants, one change each, and the
equivalence filter keeps exactly the mutants that change behaviour."""

from __future__ import annotations

import signal
import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_mutants as bm  # noqa: E402


def test_row_softmax1_mutants_one_change_each():
    found = bm.mutants("tests/zoo/softmax1_numpy.py", "softmax1")
    whats = [w.split(": ", 1)[1] for w, _ in found]
    assert {".maximum → .minimum", ".max → .min", "Sub → Add", "Div → Mult", "Add → Sub", "drop the right operand",
            "drop the left operand", "0 → 1"} <= set(whats)
    original = (Path(bm.ROOT) / "tests/zoo/softmax1_numpy.py").read_text(encoding="utf-8")
    assert len({src for _, src in found}) == len(found) and all(src != original for _, src in found)


def test_off_by_one_and_constants_reach_range_and_slice_bounds():
    whats = [w.split(": ", 1)[1] for w, _ in bm.mutants("tests/zoo/mutation_kernels.py", "sink_backward")]
    assert whats.count("bound + 1") >= 8 and whats.count("bound − 1") >= 8
    assert "64 → 0" in whats and "64 → 1" in whats and "1.0 → -inf" in whats and "inf → 0" in whats


def test_equivalence_filter(tmp_path):
    signal.signal(signal.SIGALRM, bm._alarm)
    inputs = bm._inputs("row")
    src = (Path(bm.ROOT) / "tests/zoo/softmax1_numpy.py").read_text(encoding="utf-8")
    orig, _ = bm._load(src, tmp_path, "o")
    same, _ = bm._load(src.replace("e.sum(axis=axis", "np.sum(e, axis=axis"), tmp_path, "s")
    other, _ = bm._load(src.replace("np.maximum(", "np.minimum("), tmp_path, "m")
    base = bm.behaviour(orig.softmax1, inputs)
    assert all(bm._same(a, b) for a, b in zip(base, bm.behaviour(same.softmax1, inputs)))
    assert not all(bm._same(a, b) for a, b in zip(base, bm.behaviour(other.softmax1, inputs)))
    assert sum(not isinstance(b, str) for b in base) > len(base) // 2  # most inputs return weights
