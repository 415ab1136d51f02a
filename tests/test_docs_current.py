"""docs/softmax-one.md and docs/normalizers.md are what the build writes (slow: rebuilds them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_normalizer_documents_are_current():
    proc = subprocess.run(
        [sys.executable, "build_docs.py", "--check", "proofs/softmax_one.py", "proofs/normalizers.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_documents_exist_and_link_to_each_other():
    one = (ROOT / "docs" / "softmax-one.md").read_text()
    table = (ROOT / "docs" / "normalizers.md").read_text()
    assert "normalizers.md#nrm-softmax1-shift-invariant" in one
    for anchor in ("nrm-softmax1-shift-invariant", "nrm-clipped-gradient-nonvanishing", "nrm-table"):
        assert f'<a id="{anchor}"></a>' in table
    assert (ROOT / "docs" / "softmax-one.json").exists()
    assert (ROOT / "docs" / "softmax-one-mass-vs-shift.svg").exists()
