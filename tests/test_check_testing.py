"""The pytest integration: derive.testing.assert_claims and the *.derive.toml plugin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from derive.testing import assert_claims

ROOT = Path(__file__).resolve().parent.parent
GOOD = 'name = "g"\nscore = "dot(q + b_q, k + b_k)"\n[symbols]\nb_q = "vector"\nb_k = "vector"\n'


def test_assert_claims_passes_and_fails(tmp_path):
    p = tmp_path / "v.derive.toml"
    p.write_text(GOOD + '[claims]\nk = "invariant(b_k)"\nq = "depends(b_q)"\n')
    assert [c.verdict for c in assert_claims(p)] == ["proved", "proved"]
    p.write_text(GOOD + '[claims]\nq = "invariant(b_q)"\n')
    with pytest.raises(AssertionError, match=r"q = 'invariant\(b_q\)': refuted \(expected proved\)"):
        assert_claims(p)
    assert_claims(p, allow={"q": "refuted"})


@pytest.mark.slow
def test_plugin_collects_derive_toml(tmp_path):
    (tmp_path / "v.derive.toml").write_text(
        GOOD + '[claims]\nk = "invariant(b_k)"\nq__refuted = "invariant(b_q)"\nwrong = "invariant(b_q)"\n')
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "derive.pytest_plugin", "-q", "-p", "no:cacheprovider",
                           str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, check=False,
                          # the entry point of an installed derive would load the plugin a second time
                          env={**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "2 passed" in proc.stdout and "1 failed" in proc.stdout, proc.stdout + proc.stderr
    assert "wrong = 'invariant(b_q)': refuted (expected proved)" in proc.stdout


def test_plugin_follows_expect(tmp_path):
    """The plugin passes a claim that gets the verdict its ``expect`` names, as derive check does."""
    (tmp_path / "v.derive.toml").write_text(
        GOOD + '[claims]\nq = { claim = "invariant(b_q)", expect = "refuted" }\n'
        'k = { claim = "invariant(b_k)", expect = "refuted" }\n')
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "derive.pytest_plugin", "-q", "-p", "no:cacheprovider",
                           str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "1 passed" in proc.stdout and "1 failed" in proc.stdout, proc.stdout + proc.stderr
    assert "k = 'invariant(b_k)': proved (expected refuted)" in proc.stdout
