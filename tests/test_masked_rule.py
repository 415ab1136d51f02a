"""What a normalizer gives on a row with no allowed key, decided over every parameter value:
``exp(x_j) / (a**2 + sum_t(exp(x_t)))`` has the value 0 for a ≠ 0 and none (0/0) at a = 0, and
says so, where a rule read off one sample value of a said "0" for every a."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from derive.impl.exact.masked import derived_rule
from derive.impl.exact.reference import exact_row
from derive.normalizers.registry import from_formula

NONE = "every sum over the keys is 0 and $n = 0$"


def _rule(formula, scalars=None):
    return derived_rule(from_formula("masked_rule_test", "test", formula, scalars=scalars or {}))


@pytest.mark.parametrize("formula,scalars,defined,unless", [
    ("exp(x_j) / (a**2 + sum_t(exp(x_t)))", {"a": {}}, True, "$a = 0$"),
    ("exp(x_j) / (c + sum_t(exp(x_t)))", {"c": {}}, True, "$c = 0$"),
    ("exp(x_j) / (c + sum_t(exp(x_t)))", {"c": {"positive": True}}, True, ""),
    ("exp(x_j) / (a**2 + 1 + sum_t(exp(x_t)))", {"a": {}}, True, ""),
    ("exp(x_j) / (exp(s) + sum_t(exp(x_t)))", {"s": {}}, True, ""),
    ("exp(x_j) / sum_t(exp(x_t))", {}, False, ""),
    ("sigmoid(x_j - log(n))", {}, False, ""),
    ("exp(x_j - max_t(x_t)) / (1 + sum_t(exp(x_t)))", {}, False, ""),
    ("exp(x_j) / (c - c + sum_t(exp(x_t)))", {"c": {}}, False, ""),
    ("exp(x_j) * log(c) / (1 + sum_t(exp(x_t)))", {"c": {}}, True, "$c \\leq 0$"),
    ("exp(x_j) * sqrt(c) / (1 + sum_t(exp(x_t)))", {"c": {}}, True, "$c < 0$"),
    ("exp(x_j) / (sum_t(exp(x_t)) + n**2)", {}, False, ""),
    ("exp(x_j) / (1 + sum_t(exp(x_t)) - n**2)", {}, True, ""),
])
def test_the_rule_is_decided_over_every_parameter_value(formula, scalars, defined, unless):
    r = _rule(formula, scalars)
    assert (r.defined, r.unless) == (defined, unless)
    if not defined:
        assert r.says == f"no value (the formula has none with no allowed key: {NONE})"


def test_a_squared_extra_term_is_no_value_at_zero():
    r = _rule("exp(x_j) / (a**2 + sum_t(exp(x_t)))", {"a": {}})
    assert r.says == ("exactly 0 on every key, except where $a = 0$: there no value (the formula has none with no "
                      f"allowed key: {NONE})")
    norm = from_formula("a2_test", "test", "exp(x_j) / (a**2 + sum_t(exp(x_t)))", scalars={"a": {}})
    dead = [-math.inf, -math.inf]
    assert not exact_row(norm, dead, {"a": 0.0}, 30).defined  # 0/0: the conventions are accepted
    quiet = exact_row(norm, dead, {"a": 0.5}, 30)
    assert quiet.defined and quiet.floats() == [0.0, 0.0]  # required: 0 on every key


def test_derive_normalizer_states_where_the_empty_row_has_no_value(tmp_path):
    spec = tmp_path / "a2.toml"
    spec.write_text('name = "a squared"\nscore = "dot(q, k)"\n[normalizer]\n'
                    'weight = "exp(x_j) / (a**2 + sum_t(exp(x_t)))"\n[symbols]\na = "scalar"\n')
    run = lambda *a: subprocess.run([sys.executable, "-m", "derive", "normalizer", str(spec), *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=600)
    out = run("--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["fully_masked_row"] == {
        "defined": True, "undefined_where": "a = 0",
        "gives": ("exactly 0 on every key, except where a = 0: there no value (the formula has none with no allowed "
                  "key: every sum over the keys is 0 and n = 0)")}
    md = run()
    assert md.returncode == 0
    assert md.stdout.rstrip().endswith(
        "row with no allowed key: exactly 0 on every key, except where a = 0: there no value (the formula has none "
        "with no allowed key: every sum over the keys is 0 and n = 0)")


def test_derive_impl_accepts_a_convention_only_where_the_empty_row_has_no_value(monkeypatch, tmp_path):
    from derive.impl import check_implementation
    from derive.normalizers.registry import REGISTRY

    norm = from_formula("a2_impl_test", "test", "exp(x_j) / (a**2 + sum_t(exp(x_t)))", scalars={"a": {}})
    monkeypatch.setitem(REGISTRY, norm.name, norm)
    code = tmp_path / "a2.py"
    code.write_text("import numpy as np\n\n"
                    "def a2(x, a):\n"
                    "    m = np.max(x, axis=-1, keepdims=True)\n"
                    "    with np.errstate(invalid='ignore', over='ignore'):\n"
                    "        e = np.exp(x - m)\n"
                    "        extra = a * a * np.exp(-m) if a else 0.0\n"
                    "        return e / (extra + e.sum(axis=-1, keepdims=True))\n")
    report = check_implementation(f"{code}:a2", norm.name, params={"a": 0.0}, dtypes=("float64",), examples=5)
    assert report.verdict == "agrees", report.to_markdown()
    assert report.results[0].conventions == {"nan": report.results[0].undefined_rows}
    assert report.masked_note().startswith(
        "Fully masked rows (every score −∞): a2_impl_test gives exactly 0 on every key, except where a = 0: there "
        "no value (the formula has none with no allowed key: every sum over the keys is 0 and n = 0). Where it has "
        "a value, that value is required, as on any other row (")
    assert "Any one of these conventions is accepted where it has none: NaN" in report.masked_note()
    quiet = check_implementation(f"{code}:a2", norm.name, params={"a": 0.5}, dtypes=("float64",), examples=5)
    assert quiet.verdict == "disagrees" and quiet.failure.row == [-math.inf]  # NaN where the value is 0
