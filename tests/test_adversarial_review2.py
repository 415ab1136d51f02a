"""Adversarial review, round 2: claims with hand-derived truth that try to fool derive.

A false claim must never be proved, a true one never refuted (undecided is always allowed).
Truth is taken on the domain the spec language documents (docs/spec.md, "Domains").
Cases marked xfail(strict=True) are defects found in this round; each reason says what
the correct behaviour is.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from derive.claims.run import DEFAULT_CHECK, check_spec
from derive.errors import InputError
from derive.settings import Settings
from derive.spec import parse_spec


def _spec(score, symbols, claims, norm="softmax", mask="none", value="v"):
    lines = ['name = "adversarial2"', f'score = "{score}"', f'normalizer = "{norm}"', f'mask = "{mask}"',
             f'value = "{value}"', "[symbols]"]
    lines += [f'{k} = "{v}"' for k, v in symbols.items()]
    lines += ["[claims]"] + [f"c{n} = '{c}'" for n, c in enumerate(claims)]
    return "\n".join(lines) + "\n"


def _results(score, symbols, claims, cfg=DEFAULT_CHECK, **kw):
    return check_spec(parse_spec(_spec(score, symbols, claims, **kw), "adversarial2.toml"), cfg).claims


def _ok(verdict, truth):
    return verdict == "undecided" or verdict == ("proved" if truth else "refuted")


# (score, symbols, claims, truths, options) — every truth derived by hand.
CASES = [
    # Many-digit identities: the two sides are equal, exactly.
    ("dot(q, k) + (exp(300*x) + 1) * exp(-300*x) - exp(-300*x)", {"x": "scalar"},
     ["invariant(x)", "depends(x)", 'equivalent("dot(q, k)")'], [True, False, True], {}),
    ("dot(q, k) * (2**400 + x**2 - 2**400)", {"x": "scalar"},
     ['equivalent("dot(q, k) * x**2")', "depends(x)"], [True, True], {}),
    ("dot(q, k) + j * (x + 10**-300 - x) * 10**300", {"x": "scalar"},
     ['equivalent("dot(q, k) + j")', "invariant(x)"], [True, True], {}),
    ("dot(q, k) + j * (x + 1e-300 - x) * 1e300", {"x": "scalar"}, ["invariant(x)"], [True], {}),
    # log(1 + e^{300x}) − 300x = log(1 + e^{−300x}): SymPy does not see it, the search must not refute it.
    ("dot(q, k) + j * (log(1 + exp(300*x)) - 300*x - log(1 + exp(-300*x)))", {"x": "scalar"},
     ["invariant(x)", "depends(x)"], [True, False], {}),
    ("dot(q, k) + j * (tanh(150*x) - (exp(300*x) - 1)/(exp(300*x) + 1))", {"x": "scalar"},
     ["invariant(x)", "depends(x)"], [True, False], {}),
    ("dot(q, k) + j * (log(exp(300*x) + exp(-300*x)) - log(exp(600*x) + 1) + 300*x)", {"x": "scalar"},
     ["invariant(x)", "depends(x)"], [True, False], {}),
    # tanh(x + 200) − 1 ≈ −2e^{−400−2x} ≠ 0, scaled by e^{400}: the score depends on x.
    ("dot(q, k) + j*(tanh(x + 200) - 1) * exp(400)", {"x": "scalar"},
     ["invariant(x)", "depends(x)"], [False, True], {}),
    # (sqrt(2^800 + 1) − 2^400)·2^401 = 1 − O(2^-800): not j·x.
    ("dot(q, k) + j * x * (sqrt(2**800 + 1) - 2**400) * 2**401", {"x": "scalar"},
     ['equivalent("dot(q, k) + j * x")'], [False], {}),
    # abs at exactly 0 (i = j), causal masks: true only on the allowed keys.
    ("dot(q, k) + abs(i - j) - abs(j - i)", {}, ['equivalent("dot(q, k)")'], [True], {}),
    ("dot(q, k) + abs(i - j)", {}, ['equivalent("dot(q, k) - j")'], [True], {"mask": "causal"}),
    ("dot(q, k) + abs(i - j)", {}, ['equivalent("dot(q, k) - j")'], [False], {}),
    ("dot(q, k)", {}, ['row_constant("abs(j - i) - i + j")'], [True], {"mask": "causal"}),
    ("dot(q, k)", {}, ['row_constant("abs(j - i) - i + j")'], [False], {}),
    # Integer index arithmetic with division.
    ("dot(q, k) + 1 / (i - j + 1/2)", {}, ['equivalent("dot(q, k) + 2 / (2*i - 2*j + 1)")',
                                           'equivalent("dot(q, k)")'], [True, False], {}),
    # (j - i)**-2 itself is undefined at j = i, which causal allows in every row: a domain error
    # (tests/test_substitution.py); one key later it is defined on every allowed key.
    ("dot(q, k) + (j - i - 1)**-2", {}, ['equivalent("dot(q, k) + (i - j + 1)**-2")'], [True], {"mask": "causal"}),
    # Signed scalars.
    ("dot(q, k) * sqrt(t**2) / t", {"t": "scalar positive"},
     ["invariant(t)", 'equivalent("dot(q, k)")', "depends(t)"], [True, True, False], {}),
    ("dot(q, k) * sqrt(t**2) / t", {"t": "scalar"},
     ["invariant(t)", 'equivalent("dot(q, k)")', "depends(t)"], [False, False, True], {}),
    ("dot(q, k) * sqrt(t**2) / t", {"t": "scalar negative"},
     ['equivalent("-dot(q, k)")', 'equivalent("dot(q, k)")'], [True, False], {}),
    ("dot(q, k) + j * (t + abs(t))", {"t": "scalar negative"}, ["invariant(t)"], [True], {}),
    ("dot(q, k) + j * (t + abs(t))", {"t": "scalar"}, ["invariant(t)"], [False], {}),
    # Normalizers with parameters.
    ("dot(q, k) / sqrt(d)", {"ks": "vector", "vs": "vector", "bv": "vector"},
     ["shift_invariant", "can_abstain", "weights_sum_to_one", "depends(ks)", "invariant(vs)",
      "output_invariant(vs)", "output_shift(bv)"], [False, True, False, True, True, False, False],
     {"norm": "bias_kv(ks, vs)", "value": "v + bv"}),
    ("dot(q, k) / sqrt(d)", {"s": "scalar", "bv": "vector"},
     ["shift_invariant", "can_abstain", "weights_sum_to_one", "depends(s)", "output_shift(bv)"],
     [False, True, False, True, False], {"norm": "sink(s)", "value": "v + bv"}),
    # e^{a+s}/(e^s + Σ e^{a+s}) = e^a/(1 + Σ e^a): s cancels.
    ("dot(q, k) / sqrt(d) + s", {"s": "scalar"}, ["invariant(s)", "depends(s)"], [True, False],
     {"norm": "sink(s)"}),
    ("dot(q, k) / sqrt(d)", {"b": "scalar", "bv": "vector"},
     ["shift_invariant", "can_abstain", "weights_sum_to_one", "depends(b)", "output_shift(bv)"],
     [False, True, False, True, False], {"norm": "sigmoid(b)", "value": "v + bv"}),
    ("dot(q, k) / sqrt(d) + b", {"b": "scalar"}, ["invariant(b)", "depends(b)"], [False, True],
     {"norm": "sigmoid"}),
    # RoPE with irrational angles.
    ("dot(rope(q, sqrt(2) * i), rope(k, sqrt(2) * j))", {},
     ['equivalent("dot(q, rope(k, sqrt(2)*(j - i)))")',
      'equivalent("dot(rope(q, sqrt(2)*i + 7/3), rope(k, sqrt(2)*j + 7/3))")'], [True, True], {}),
    ("dot(rope(q, i * x), rope(k, j * x))", {"x": "scalar"}, ["invariant(x)"], [False], {}),
    # Declared functions: nothing may be proved that fails for some f.
    ("dot(q, F(k + b))", {"F": "function", "b": "vector"},
     ["invariant(b)", 'equivalent("dot(q, F(k) + F(b))")', 'equivalent("dot(q, F(b + k))")'],
     [False, False, True], {}),
    ("dot(F(rope(q, i)), rope(k, j))", {"F": "function"},
     ['equivalent("dot(rope(F(q), i), rope(k, j))")'], [False], {}),
    ("dot(q, k) + f(i - j)", {"f": "function"},
     ['equivalent("dot(q, k) + f(j - i)")', 'equivalent("dot(q, k) + f(i - j) + f(i)")'], [False, True], {}),
    ("dot(q, k) + sqrt(f(j)**2)", {"f": "function"},
     ['equivalent("dot(q, k) + f(j)")', 'equivalent("dot(q, k) + abs(f(j))")'], [False, True], {}),
    ("dot(q, k) + f(j + 4) - 4*f(j + 3) + 6*f(j+2) - 4*f(j+1) + f(j)", {"f": "function"},
     ['equivalent("dot(q, k)")'], [False], {}),
    # False only far outside the drawn values: never proved.
    ("dot(q, k) + j * (abs(x - 10) + abs(x + 10) - 20)", {"x": "scalar"}, ["invariant(x)"], [False], {}),
    ("dot(q, k) + abs(dot(q, k) - 1000) + abs(dot(q, k) + 1000) - 2000", {},
     ['equivalent("dot(q, k)")'], [False], {}),
    ("dot(q, k) + j * x * exp(-1000 * x**2)", {"x": "scalar"}, ["invariant(x)"], [False], {}),
    # Domain guards on fresh copies and on claim expressions.
    ("dot(q, k) + j * (sqrt(dot(b, b) - 1)**2 - abs(dot(b, b) - 1))", {"b": "vector"},
     ["invariant(b)", "depends(b)"], [True, False], {}),
    ("dot(q, q) + sqrt(dot(k, k) - 1)**2 - abs(dot(k, k) - 1)", {}, ["invariant(k)"], [True], {}),
    ("dot(q, k) + j * (sqrt(f(x))**2 - abs(f(x)))", {"f": "function", "x": "scalar"},
     ["invariant(f)", "depends(f)"], [True, False], {}),
    ("dot(q, k) + j * abs(x)", {"x": "scalar"},
     ['equivalent("dot(q, k) + j * sqrt(x)**2")', 'row_constant("sqrt(x)**2 * j - abs(x) * j")'],
     [True, True], {}),
    ("dot(q, k)", {"x": "scalar"}, ["output_invariant(x)"], [True],
     {"value": "v * (1 + j * (sqrt(x)**2 - abs(x)))"}),
]


@pytest.mark.slow
@pytest.mark.parametrize("score,symbols,claims,truths,opts", CASES)
def test_round2_verdicts_agree_with_hand_derived_truth(score, symbols, claims, truths, opts):
    got = [c.verdict for c in _results(score, symbols, claims, **opts)]
    for claim, verdict, truth in zip(claims, got, truths):
        assert _ok(verdict, truth), (score, claim, verdict, truth)


def test_the_sink_logit_added_to_every_score_cancels():
    # Not a bug, a trap for reviewers: with sink(s) and score a + s the weights are
    # e^a / (1 + Σ e^a), so invariant(s) is proved and depends(s) refuted.
    got = [c.verdict for c in _results("dot(q, k) + s", {"s": "scalar"}, ["invariant(s)", "depends(s)"],
                                       norm="sink(s)")]
    assert got == ["proved", "refuted"]


# ---- defects found in round 2 -------------------------------------------------------------

_SLOW_IDENTITY = "dot(q, k) + j * (log(exp(300*x) + exp(-300*x)) - log(exp(600*x) + 1) + 300*x)"


@pytest.mark.slow
def test_same_text_with_the_time_limit_divided_by_4():
    fast = _results(_SLOW_IDENTITY, {"x": "scalar"}, ["invariant(x)"],
                    cfg=Settings(examples=20, witness_examples=200, time_limit=10.0))
    slow = _results(_SLOW_IDENTITY, {"x": "scalar"}, ["invariant(x)"],
                    cfg=Settings(examples=20, witness_examples=200, time_limit=2.5))
    assert [(c.verdict, c.reason) for c in fast] == [(c.verdict, c.reason) for c in slow]


def _run_cli(tmp_path, text, *args, timeout=60):
    path = tmp_path / "v.toml"
    path.write_text(textwrap.dedent(text))
    return subprocess.run([sys.executable, "-m", "derive", "check", str(path), *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_a_huge_constant_in_the_value_does_not_hang(tmp_path):
    # SymPy's printer ordered terms by evaluating exp(-exp(10^12)); printing is bounded now
    out = _run_cli(tmp_path, '''\
        name = "a"
        score = "dot(q, k)"
        value = "v * exp(-exp(1e12))"
        [claims]
        o = "output_invariant(v)"
        ''', "--time-limit", "2.5", timeout=40)
    assert out.returncode in (0, 1)


def test_the_json_report_is_strict_json_when_scores_are_huge(tmp_path):
    # 1e300 is row-constant but 1e-300·j is not: the claim is false, and refuted (correctly).
    out = _run_cli(tmp_path, '''\
        name = "a"
        score = "dot(q, k) + 1e300 + 1e-300 * j"
        [claims]
        c = 'equivalent("dot(q, k)")'
        ''', "--format", "json", "--time-limit", "2.5")
    assert out.returncode == 1

    def reject(c):
        raise ValueError(f"non-standard JSON constant {c}")

    report = json.loads(out.stdout, parse_constant=reject)
    assert report["specs"][0]["claims"][0]["verdict"] == "refuted"


def test_division_by_an_exact_zero_constant_is_not_a_proof():
    text = _spec("dot(q, k) + j / (log(4) - 2*log(2))", {}, ['equivalent("dot(q, k)")', 'equivalent("dot(q, k) - j")'])
    try:
        res = check_spec(parse_spec(text, "zero.toml"), DEFAULT_CHECK)
    except InputError:
        return
    assert "proved" not in [c.verdict for c in res.claims]


_TANH_ADDITION = "dot(q, k) + j * (tanh(x + 2*y) * (1 + tanh(x) * tanh(2*y)) - tanh(x) - tanh(2*y))"


@pytest.mark.slow
def test_same_verdict_whatever_the_time_limit():
    # tanh(x + 2y)·(1 + tanh x·tanh 2y) = tanh x + tanh 2y exactly: the score is dot(q, k).
    verdicts = []
    for limit in (10.0, 1.0):
        [c] = _results(_TANH_ADDITION, {"x": "scalar", "y": "scalar"}, ['equivalent("dot(q, k)")'],
                       cfg=Settings(examples=20, witness_examples=200, time_limit=limit))
        verdicts.append(c.verdict)
    assert verdicts[0] == "proved"
    assert verdicts[0] == verdicts[1]
