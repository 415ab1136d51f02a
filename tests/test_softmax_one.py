"""softmax₁: the article's statements, the stable and faulty forms, equivalences, refutations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from derive.model.attention import M, i, j
from derive.normalizers import equivalences, limits
from derive.normalizers.algebra import X, settle, weight
from derive.normalizers.registry import get
from derive.normalizers.stable import (
    MSHIFT,
    bf16,
    faulty_weight,
    float_table,
    run_form,
    stable_form,
)

S1, SM, SINK = get("softmax1"), get("softmax"), get("sink")


def test_false_statements_are_refuted_with_counterexamples():
    # "softmax1 is shift-invariant"
    v = settle(weight(S1, {}, lambda k: X[i, k] + 1), weight(S1, {}), S1, {})
    assert v.status == "refuted" and v.witness
    # "the faulty form equals softmax1"
    v = settle(faulty_weight(), weight(S1, {}), S1, {})
    assert v.status == "refuted" and v.witness
    # "softmax1's weights sum to one"
    from derive.normalizers.algebra import mass

    v = settle(mass(S1, {}), sp.S.One, S1, {})
    assert v.status == "refuted"


def test_true_identities_are_proved():
    assert settle(stable_form(S1, {}), weight(S1, {}), S1, {}).proved
    assert settle(faulty_weight(), weight(SINK, {"s": MSHIFT}), S1, {}).proved
    assert settle(faulty_weight(), weight(S1, {}, lambda k: X[i, k] - MSHIFT), S1, {}).proved
    assert settle(weight(SINK, {"s": sp.S.Zero}), weight(S1, {}), S1, {}).proved
    for name in ("softmax", "sink", "zero_token", "bias_kv"):
        e = get(name)
        assert settle(stable_form(e, e.symbols()), weight(e, e.symbols()), e, e.symbols()).proved, name


def test_the_articles_iterated_limit_is_wrong_as_written_for_softmax():
    for k in (1, 2, 3, 4):
        got = limits.explicit_iterated(SM, {}, k)
        assert got == [1] + [0] * (k - 1)  # all weight on the key whose limit is taken last
        assert limits.explicit_iterated(S1, {}, k) == [0] * k  # softmax1's statement holds as written
    assert limits.explicit_iterated(SM, {}, 3) != [sp.Rational(1, 3)] * 3


def test_two_paths_disagree_for_softmax_but_not_softmax1():
    tau = limits.TAU
    a, b = (-tau, -2 * tau), (-2 * tau, -tau)
    assert limits.path_limit(SM, {}, a) == [1, 0]
    assert limits.path_limit(SM, {}, b) == [0, 1]
    assert limits.path_limit(S1, {}, a) == limits.path_limit(S1, {}, b) == [0, 0]


@pytest.mark.parametrize(("eq", "verdict"), [(e.name, e.expect) for e in equivalences.EQUIVALENCES])
def test_equivalences(eq, verdict):
    results = {e.name: v for e, v in equivalences.decide_all()}
    assert results[eq].status == verdict
    if verdict == "refuted":
        assert results[eq].witness


rows = st.lists(st.floats(-60, 60, allow_nan=False), min_size=1, max_size=10)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(rows)
def test_faulty_form_weights_sum_to_at_least_half(x):
    w = run_form("softmax₁ faulty", x, None, "float64")
    assert w.sum() >= 0.5 - 1e-12
    assert w.sum() < 1.0
    s1 = run_form("softmax₁ stable", x, None, "float64")
    assert s1.sum() <= 1.0 + 1e-15  # < 1 exactly; rounds to 1 for scores above ~37


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(rows)
def test_faulty_equals_softmax1_exactly_when_max_is_zero(x):
    x = [v - max(x) for v in x]  # now max x = 0
    a = run_form("softmax₁ faulty", x, None, "float64")
    b = run_form("softmax₁ stable", x, None, "float64")
    assert np.allclose(a, b, rtol=1e-12, atol=1e-15)


def test_concrete_counterexample():
    x = [-10.0, -10.0]
    assert np.allclose(run_form("softmax₁ faulty", x, None, "float64"), [1 / 3, 1 / 3])
    e = math.exp(-10)
    assert np.allclose(run_form("softmax₁ stable", x, None, "float64"), [e / (1 + 2 * e)] * 2)


def test_fully_masked_rows():
    mask = np.array([False, False, False])
    x = np.array([1e4, -1e4, 0.0])
    assert np.all(S1.stable(x, mask) == 0)  # softmax1 is defined: every weight 0
    assert np.all(np.isnan(SM.stable(x, mask)))  # softmax is not
    assert np.all(np.isnan(run_form("softmax₁ faulty", x, mask, "float64")))  # −∞ − (−∞)


def test_float_table_cells():
    table = {(r[0], r[1]): r[2:] for r in float_table()}
    assert all(c.startswith("ok") for c in table[("softmax₁ stable", "large (1e4, 0)")])
    assert all(c.startswith("NaN") for c in table[("softmax naive", "large (1e4, 0)")])
    assert table[("softmax naive", "f16 overflow (12, 0)")][0].startswith("NaN")
    assert table[("softmax naive", "f16 overflow (12, 0)")][3] == "ok"
    assert all(c.startswith("wrong") for c in table[("softmax₁ faulty", "moderate (1, 2, 3)")])
    for form in ("softmax₁ stable", "softmax stable"):
        for case, cells in table.items():
            if case[0] == form and case[1] != "all masked":
                assert all(c.startswith("ok") for c in cells), (case, cells)


def test_bf16_rounding():
    assert bf16(1.0 + 2.0**-9) == 1.0  # below half an ulp (2^-8 at 1.0)
    assert bf16(1.0 + 2.0**-7) == 1.0 + 2.0**-7
    assert np.isinf(bf16(np.float32(3.4e38)))  # rounds past the largest bfloat16
    assert np.isnan(bf16(np.nan))


def test_one_key_rows():
    from derive.normalizers.properties import single_key_weight

    x1 = sp.Symbol("x1", real=True)
    one1 = single_key_weight(S1, {}).xreplace({X[i, 1]: x1})
    assert sp.simplify(one1 - sp.exp(x1) / (1 + sp.exp(x1))) == 0
    assert sp.simplify(sp.diff(one1, x1)).is_positive  # softmax1's diagonal derivative is > 0 even here
    assert single_key_weight(SM, {}) == 1  # softmax's is the constant 1: derivative 0
    assert M[i, j] in weight(S1, {}).atoms(sp.Indexed)


def test_faulty_form_counterexample_takes_m_as_the_row_maximum():
    # the faulty form is defined with m = max x: its counterexample must be an instance of that
    import importlib.util
    from pathlib import Path

    from derive import Document

    path = Path(__file__).resolve().parent.parent / "proofs" / "softmax_one.py"
    spec = importlib.util.spec_from_file_location("softmax_one_proof", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    doc = Document("t", "t")
    text = mod._faulty_counterexample(doc, (2, 1))
    assert doc.facts["faulty form equals softmax₁"].status == "refuted"
    assert "m = \\max_j x_j = 2" in text and "0.4223" in text and "0.6652" in text
