"""What a cross-check records: counts, tolerance and verdict, never a measured float64 error."""

from __future__ import annotations

import sympy as sp

from derive.claims.numeric import check_numeric
from derive.crosscheck.check import cross_check, tolerance_text
from derive.settings import DEFAULT

X, Y = sp.symbols("x y", real=True)


def test_json_has_no_measured_error_and_both_tolerances():
    cfg = DEFAULT.merge(examples=5, atol=1e-10, rtol=1e-13)
    res = cross_check("exp rule", sp.exp(X + Y), sp.exp(X) * sp.exp(Y), cfg)
    j = res.as_json()
    assert res.passed and j["verdict"] == "passed"
    assert j["examples"] == 5 and j["hypothesis_examples"] == 5
    assert j["tolerance"] == {"rel": 1e-13, "abs": 1e-10}
    assert not [k for k in j if "error" in k]
    # the measured errors are still there for the caller, within the tolerance
    assert 0 <= res.max_abs_error <= 1e-10 + 1e-13 * 100


def test_tolerance_text():
    assert tolerance_text({"abs": 1e-12, "rel": 1e-12}) == "|a − b| ≤ 1e-12 + 1e-12·max(|a|, |b|)"
    assert tolerance_text({"abs": 5e-7, "rel": 0.001}) == "|a − b| ≤ 5e-07 + 0.001·max(|a|, |b|)"


def test_claim_check_reports_no_error_figure():
    out = check_numeric("square", (X + Y) ** 2, X**2 + 2 * X * Y + Y**2, DEFAULT.merge(examples=4))
    assert out["verdict"] == "passed" and out["tolerance"] == {"rel": 1e-12, "abs": 1e-12}
    assert not [k for k in out if "error" in k]


def test_a_failing_check_still_fails():
    res = cross_check("wrong", sp.exp(X + Y), sp.exp(X) + sp.exp(Y), DEFAULT.merge(examples=3))
    assert not res.passed and res.as_json()["verdict"] == "failed" and res.witness is not None
