"""Adversarial-row cross-checks of every registry entry's stable implementation (evidence)."""

from __future__ import annotations

import numpy as np
import pytest

from derive.normalizers.numeric import FIXED_ROWS, Check, check_many, identity_check, stable_check
from derive.normalizers.registry import REGISTRY, get


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_stable_matches_definition_on_adversarial_rows(name):
    e = get(name)
    params = {k: float(v) for k, v in e.sample_values().items()}
    [result] = check_many([stable_check(e, params, examples=60)])
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
        assert np.all(out >= 0) and (name == "relu_n" or np.all(out <= 1))  # ReLU(x)/n is unbounded


def test_zero_token_and_bias_kv_implementations_agree_with_sinks():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 7)) * 10
    assert np.allclose(get("zero_token").stable(x), get("softmax1").stable(x), rtol=1e-12, atol=1e-15)
    s_star = rng.normal(size=5)
    sink_rows = np.stack([get("sink").stable(x[r], s=s_star[r]) for r in range(5)])
    assert np.allclose(get("bias_kv").stable(x, s_star=s_star), sink_rows, rtol=1e-12, atol=1e-15)


def test_a_false_identity_fails_its_numeric_check():
    s1 = get("softmax1").reference
    [shifted] = check_many([identity_check(
        "softmax1 shift", lambda x, m: s1([v + 2 for v in x], m), lambda x, m: s1(x, m), examples=30
    )])
    assert not shifted.passed and shifted.witness


# One search serves many checks: each searched row is compared by every check, a failing check
# keeps its first failing row, and every check reports the counts it would report alone.

_NONEMPTY_FIXED = sum(1 for _, m in FIXED_ROWS if m is None or any(m))
_FIXED_LENGTHS = {len(x) for x, _ in FIXED_ROWS}


def _softmax_identities(examples=80):
    sm = get("softmax").reference
    return [
        identity_check("softmax: weights sum to 1", lambda x, m: [sum(sm(x, m))], lambda x, m: [1], examples),
        identity_check("softmax: shift invariance", lambda x, m: sm([v + 1.5 for v in x], m), lambda x, m: sm(x, m),
                       examples, tol=1e-9),
    ]


def test_fixed_rows_cover_every_mask_kind():
    assert _NONEMPTY_FIXED == len(FIXED_ROWS) - 1  # one fully masked row
    assert not _FIXED_LENGTHS >= set(range(1, 13))  # some searched lengths are not among them


def test_counts_of_one_search_are_those_of_each_check_alone():
    e = get("softmax")
    params = {k: float(v) for k, v in e.sample_values().items()}
    checks = [stable_check(e, params), *_softmax_identities(), stable_check(e, params, examples=30)]
    results = check_many(checks)
    assert [r.name for r in results] == [c.name for c in checks]
    assert all(r.passed and r.witness is None for r in results)
    assert [(r.examples, r.searched) for r in results] == [
        (len(FIXED_ROWS), 80), (_NONEMPTY_FIXED, 80), (_NONEMPTY_FIXED, 80), (len(FIXED_ROWS), 30)]
    alone = [check_many([c])[0] for c in checks]
    assert [(r.examples, r.searched, r.passed) for r in alone] == [(r.examples, r.searched, r.passed) for r in results]


def test_a_wrong_identity_among_correct_ones_fails_with_its_row_and_the_others_pass():
    wrong = identity_check("wrong on lengths no fixed row has", lambda x, m: [1],
                           lambda x, m: [1 if len(x) in _FIXED_LENGTHS else 2])
    first, second = _softmax_identities()
    results = check_many([first, wrong, second])
    assert [r.passed for r in results] == [True, False, True]
    bad = results[1]
    assert bad.witness is not None and len(bad.witness["x"]) not in _FIXED_LENGTHS
    assert bad.witness["mask"] is None or any(bad.witness["mask"])
    # found by the search, and the checks after it were still compared on every searched row
    assert [(r.examples, r.searched) for r in results] == [(_NONEMPTY_FIXED, 80)] * 3
    assert results[0].witness is None and results[2].witness is None


def test_a_check_failing_on_a_fixed_row_is_reported_with_it_and_not_searched():
    sm = get("softmax").reference
    wrong = identity_check("softmax under scaling", lambda x, m: sm([2 * v for v in x], m), lambda x, m: sm(x, m))
    results = check_many([wrong, *_softmax_identities()])
    assert [r.passed for r in results] == [False, True, True]
    assert results[0].witness in [{"x": x, "mask": m} for x, m in FIXED_ROWS]
    assert (results[0].examples, results[0].searched) == (_NONEMPTY_FIXED, 0)
    assert [(r.examples, r.searched) for r in results[1:]] == [(_NONEMPTY_FIXED, 80)] * 2


def _wrong_on_empty_masks(x, m):
    """Fails only on a fully masked row of a length no fully masked fixed row has."""
    empty = m is not None and not any(m)
    fixed_empty = {len(fx) for fx, fm in FIXED_ROWS if fm is not None and not any(fm)}
    return [(1, 2 if empty and len(x) not in fixed_empty else 1)]


def test_a_check_that_fails_only_on_an_empty_mask_is_found_and_strict_checks_never_see_one():
    loose = Check("wrong on empty masks", _wrong_on_empty_masks, allow_empty=True)
    strict = Check("wrong on empty masks, given none", _wrong_on_empty_masks, allow_empty=False)
    sees_none = Check("never given an empty mask", lambda x, m: [(1, 2 if m is not None and not any(m) else 1)],
                      allow_empty=False)
    results = check_many([loose, strict, sees_none])
    assert [r.passed for r in results] == [False, True, True]
    w = results[0].witness
    assert w["mask"] is not None and not any(w["mask"]) and len(w["mask"]) == len(w["x"])
    assert [(r.examples, r.searched) for r in results] == [
        (len(FIXED_ROWS), 80), (_NONEMPTY_FIXED, 80), (_NONEMPTY_FIXED, 80)]


def test_a_fully_masked_fixed_row_fails_an_allow_empty_check():
    check = Check("wrong on every empty mask", lambda x, m: [(1, 2 if m is not None and not any(m) else 1)])
    [result] = check_many([check])
    assert not result.passed and result.searched == 0
    assert result.witness["mask"] is not None and not any(result.witness["mask"])


def test_no_checks_no_search():
    assert check_many([]) == []


@pytest.mark.parametrize("name", ["softmax", "clipped", "softpick", "stick_breaking", "ssmax"])
def test_stacked_stable_weights_are_the_row_by_row_ones(name):
    """``prepare`` computes a stack of rows at once; the pairs then compared are the row-by-row
    implementation's values (bit for bit below 8 keys, where numpy adds in order either way; to
    float64 rounding above) next to the same reference."""
    e = get(name)
    params = {k: float(v) for k, v in e.sample_values().items()}
    rows = list(FIXED_ROWS) + [([float(v) for v in np.linspace(-3, 3, k)], None) for k in (1, 4, 9, 12)]
    check = stable_check(e, params)
    check.prepare(rows)
    for x, mask in rows:
        got, ref = zip(*check.pairs(x, mask)) if x else ((), ())
        alone = e.stable(np.asarray(x, dtype=np.float64), None if mask is None else np.asarray(mask), **params)
        if len(x) < 8:
            assert np.asarray(got, dtype=np.float64).tobytes() == np.asarray(alone, dtype=np.float64).tobytes()
        else:
            np.testing.assert_allclose(got, alone, rtol=1e-14, atol=1e-300)
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_a_stable_implementation_wrong_on_one_stacked_row_fails_with_that_row():
    """A stacked evaluation must not hide a wrong weight: an implementation that is wrong on the
    fixed row [3, 3, 3] only (computed in a stack with the other rows of 3 keys) fails there."""
    e = get("softmax")

    class Wrong:
        name, reference = "wrong", e.reference

        @staticmethod
        def stable(x, mask=None, **p):
            out = np.array(e.stable(x, mask, **p), dtype=np.float64)
            out[np.all(np.asarray(x) == 3.0, axis=-1)] *= 1.5
            return out

    [result] = check_many([stable_check(Wrong, {})])
    assert not result.passed and result.witness == {"x": [3.0, 3.0, 3.0], "mask": None}
