"""Adversarial-row cross-checks of every registry entry's stable implementation (evidence)."""

from __future__ import annotations

import numpy as np
import pytest

from derive.normalizers.numeric import check_identity, check_stable
from derive.normalizers.registry import REGISTRY, get


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_stable_matches_definition_on_adversarial_rows(name):
    e = get(name)
    params = {k: float(v) for k, v in e.sample_values().items()}
    result = check_stable(e, params, examples=60)
    assert result.passed, result.witness
    assert result.examples + result.searched >= 60
    assert result.max_abs_error <= 1e-12


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_no_overflow_at_extreme_scores(name):
    e = get(name)
    params = {k: float(v) for k, v in e.sample_values().items()}
    for row in ([1e4, -1e4, 0.0], [1e308, 1e308], [-1e308, 5.0], [0.0]):
        out = e.stable(np.array(row), **params)
        assert np.all(np.isfinite(out)), (name, row, out)
        assert np.all((out >= 0) & (out <= 1))


def test_zero_token_and_bias_kv_implementations_agree_with_sinks():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 7)) * 10
    assert np.allclose(get("zero_token").stable(x), get("softmax1").stable(x), rtol=1e-12, atol=1e-15)
    s_star = rng.normal(size=5)
    sink_rows = np.stack([get("sink").stable(x[r], s=s_star[r]) for r in range(5)])
    assert np.allclose(get("bias_kv").stable(x, s_star=s_star), sink_rows, rtol=1e-12, atol=1e-15)


def test_a_false_identity_fails_its_numeric_check():
    s1 = get("softmax1").reference
    shifted = check_identity(
        "softmax1 shift", lambda x, m: s1([v + 2 for v in x], m), lambda x, m: s1(x, m), examples=30
    )
    assert not shifted.passed and shifted.witness
