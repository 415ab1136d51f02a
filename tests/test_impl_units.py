"""Parts of ``derive impl``: tolerances, the exact reference and Jacobian, the faulty forms."""

from __future__ import annotations

import math

import mpmath
import pytest

from derive.errors import InputError
from derive.impl.faults.row import FAULTS, variants
from derive.impl.exact.reference import exact_row, jacobian
from derive.impl.exact.tolerance import TOLERANCES, tolerance
from derive.normalizers.registry import get


def test_tolerance_table():
    assert {k: (t.ulps, t.eps, t.abs) for k, t in TOLERANCES.items()} == {
        "float64": (64, 2.0**-52, 2.0**-1022),
        "float32": (64, 2.0**-23, 2.0**-126),
        "float16": (8, 2.0**-10, 2.0**-14),
        "bfloat16": (8, 2.0**-7, 2.0**-126),
    }
    t = tolerance("float32")
    assert t.bound(0.5, 0.0) == 2.0**-126 + 64 * 2.0**-23 * 0.5
    assert t.bound(0.5, 3.0) == 2.0**-126 + 64 * 2.0**-23 * 4 * 0.5
    with pytest.raises(InputError, match=r"^unknown dtype 'int8': expected one of float64, float32"):
        tolerance("int8")


def test_reference_of_masked_rows():
    sm, sm1 = get("softmax"), get("softmax1")
    dead = exact_row(sm, [-math.inf, -math.inf], {}, 60)
    assert not dead.defined  # softmax of a fully masked row has no value
    quiet = exact_row(sm1, [-math.inf, -math.inf], {}, 60)
    assert quiet.defined and quiet.floats() == [0.0, 0.0]  # softmax₁ of it is exactly 0
    half = exact_row(sm1, [0.0, -math.inf], {}, 60)
    assert half.floats() == [0.5, 0.0]


@pytest.mark.parametrize("name,params", [("softmax", {}), ("softmax1", {}), ("sink", {"s": 0.75})])
def test_derived_jacobian_is_diag_p_minus_ppT(name, params):
    norm = get(name)
    row = [1.0, -2.0, -math.inf, 0.5]
    with mpmath.workdps(60):
        p = norm.reference([1.0, -2.0, 0.0, 0.5], mask=[True, True, False, True], **params)  # 60 digits
        assert [float(v) for v in p] == exact_row(norm, row, params, 60).values  # rounded once
        jac = jacobian(norm, row, params, 60)
        for j in range(4):
            for k in range(4):
                expected = (p[j] if j == k else 0) - p[j] * p[k]
                assert abs(jac[j][k] - expected) < mpmath.mpf(10) ** -50
    assert all(jac[2][k] == 0 and jac[k][2] == 0 for k in range(4))  # the masked key


def test_faulty_forms_are_data_with_explanations_and_fixes():
    names = [f.name for f in FAULTS]
    assert names[:7] == ["unshifted-extra-term", "extra-terms-dropped", "extra-one-added", "extra-logit-scaled",
                         "exp2-units", "all-masked-nan", "no-max-subtraction"]
    assert all(f.explanation and f.fix and f.title for f in FAULTS)
    assert {e.name for e, _, _ in variants("softmax")} == {"extra-one-added", "exp2-units",
                                                           "no-max-subtraction"}


def test_unshifted_form_is_softmax1_of_the_shifted_row_and_sums_to_at_least_half():
    form = next(ev for e, f, ev in variants("softmax1") if e.name == "unshifted-extra-term" and not f)
    row = [3.0, 1.0, -0.5]
    got = form(row, {}, "float64")
    e = [math.exp(v - 3.0) for v in row]  # softmax₁ of x − max x
    assert got == pytest.approx([v / (1 + sum(e)) for v in e], rel=1e-15)
    assert sum(got) >= 0.5
    assert form([-math.inf], {}, "float64")[0] != form([-math.inf], {}, "float64")[0]  # NaN
    guarded = next(ev for e, f, ev in variants("softmax1") if e.name == "unshifted-extra-term" and f)
    assert guarded([-math.inf], {}, "float64") == [0.0]  # m taken as 0 there


def test_no_max_subtraction_form_overflows_in_the_dtype():
    form = next(ev for e, _, ev in variants("softmax1") if e.name == "no-max-subtraction")
    assert math.isnan(form([89.0], {}, "float32")[0])  # exp(89) > float32 max
    assert form([89.0], {}, "float64")[0] == pytest.approx(1.0)


@pytest.mark.slow
def test_inputs_reach_long_rows_and_every_decade():
    from hypothesis import HealthCheck, given, settings

    from derive.impl.cases.rows import LONG_N, MAX_N, cases

    lengths, decades = set(), set()

    def collect(case):
        x, _ = case
        lengths.add(x.shape[-1])
        for v in x.ravel():
            if v != 0 and math.isfinite(v):
                decades.add(math.floor(math.log10(abs(v))))

    for strategy in (cases(0, (), False), cases(0, (), True, long=True)):
        settings(max_examples=200, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck))(given(strategy)(collect))()
    assert set(LONG_N) <= lengths | {200, 257}  # rows that span several tiles of 16..128
    assert max(lengths) == 512 and any(n <= MAX_N for n in lengths)
    assert set(range(-3, 4)) <= decades  # 1e-3 .. 1e3 (and so up to 1e4)


def test_clipped_rows_near_the_clip_and_their_tolerance():
    from derive.impl.cases.rows import special_rows

    params = {"zeta": 1.0, "gamma": -0.1}
    rows = special_rows(get("clipped"), params)
    assert len(rows) == 12 and special_rows(get("softmax"), {}) == []
    ex = exact_row(get("clipped"), list(rows[0]), params, 60)
    assert abs(ex.values[0]) < 1e-15  # (ζ − γ)p + γ = 0 up to the rounding of the row
    # the tolerance is relative to the terms that cancel, |ζ − γ|·p + |γ| ≈ 0.2, not to p ≈ 0
    assert ex.scales[0] == pytest.approx(0.2, rel=1e-6)


def test_one_counterexample_type_for_every_form():
    from derive.impl.judge.attention import Failure as AttentionFailure
    from derive.impl.judge.row import Failure
    from derive.impl.judge.counterexample import Counterexample
    from derive.impl.judge.kernel import KernelFailure

    assert all(issubclass(t, Counterexample) for t in (Failure, KernelFailure, AttentionFailure))
    f = Failure(dtype="float32", what="value", row=[1.0, -math.inf], params={}, shape=(2,), output=[0.5, 0.0],
                exact=[0.7310585786300049, 0.0], errors=[0.2310585786300049, 0.0], bounds=[1.5e-5, 1e-38])
    assert f.failing() == [0] and f.worst() == pytest.approx(0.2310585786300049 / 1.5e-5)
    masked = Failure(dtype="float64", what="value", row=[-math.inf], params={}, shape=(1,), output=[0.3],
                     exact=[math.nan], errors=[math.inf], bounds=[math.nan], defined=False)
    assert masked.failing() == [0] and masked.worst() == math.inf  # a NaN bound allows nothing


def _kappa_by_hand(row, params):
    """The condition number as the module docstring states it, one key at a time (the oracle)."""
    live = [v for v in row if v != float("-inf") and v == v]
    top = max(live, default=0.0)
    carrying = [abs(v) for v in live if v >= top - 800.0]
    return (2 * max(carrying, default=0.0) + max((abs(v) for v in params.values()), default=0.0)
            + max(len(live) - 1, 0))


def test_kappas_is_kappa_row_by_row():
    """The rows-at-once condition number gives the very floats of the rule stated key by key, on
    every row, with −∞, NaN, +∞, −0.0, scores far below the top, no keys and every parameter kind;
    and :func:`kappa` of one row is the same."""
    import random

    import numpy as np

    from derive.impl.exact.tolerance import kappa, kappas

    rng = random.Random(1)
    vals = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e300, -1e300, 5e-324, 800.0, -800.0, 1e4, -1e4,
            801.5, 3.0]
    params = [{}, {"s": 1.5}, {"s": -30.0, "t": 2.0}, {"s": math.inf}, {"s": -0.0}]
    for n in range(7):
        rows = [[rng.choice(vals) for _ in range(n)] for _ in range(200)]
        ps = [rng.choice(params) for _ in rows]
        got = kappas(np.array(rows, dtype=np.float64).reshape(len(rows), n), ps)
        want = [float(_kappa_by_hand(r, p)).hex() for r, p in zip(rows, ps)]
        assert [v.hex() for v in got] == want
        assert [float(kappa(r, p)).hex() for r, p in zip(rows, ps)] == want
