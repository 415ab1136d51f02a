"""Soundness: claims with known truth, covering every construct. No false claim is proved.

Each row is (score, normalizer, mask, symbols, claim, value, truth). A claim may be
undecided, never wrong: a false claim must not be proved, a true one must not be refuted.
The corpus runs in the slow lane (CI runs it); the default run checks only the table's size and balance.
"""

from __future__ import annotations

import json

import pytest

from derive.claims.run import DEFAULT_CHECK, check_spec
from derive.spec import parse_spec

S1 = "dot(q + b_q, k + b_k) / sqrt(d)"
S2 = "dot(rope(q + b_q, i), rope(k + b_k, j)) / sqrt(d)"
BIAS = {"b_q": "vector", "b_k": "vector", "b_v": "vector"}
SOFTPLUS = "log(1 + exp(300 * x)) - log(1 + exp(-300 * x)) - 300 * x"  # exactly 0
TANH = "tanh(300 * x) * (exp(600 * x) + 1) - exp(600 * x) + 1"  # exactly 0

GROUPS = [
    (S1, "softmax", "causal", BIAS, "v + b_v", [
        ("invariant(b_k)", True), ("depends(b_q)", True), ("invariant(b_q)", False), ("depends(b_k)", False),
        ("output_shift(b_v)", True), ("output_invariant(b_v)", False), ("output_invariant(b_k)", True),
        ("row_constant('dot(q, b_k)')", True), ("row_constant('dot(b_q, k)')", False),
        ("equivalent('dot(q + b_q, k) / sqrt(d)')", True), ("equivalent('dot(q, k + b_k) / sqrt(d)')", False),
        ("shift_invariant", True), ("can_abstain", False), ("weights_sum_to_one", True),
    ]),
    (S2, "softmax", "causal", BIAS, "v + b_v", [
        ("invariant(b_k)", False), ("depends(b_q)", True),
        ("row_constant('dot(rope(q, i), rope(b_k, j))')", False),
        ("row_constant('dot(rope(q, i), rope(b_k, i))')", True),
        ("equivalent('dot(q + b_q, rope(k + b_k, j - i)) / sqrt(d)')", True),
        ("equivalent('dot(q + b_q, rope(k + b_k, i - j)) / sqrt(d)')", False),
        ("invariant(b_v)", True),
    ]),
    (S1, "softmax1", "causal", BIAS, "v + b_v", [
        ("invariant(b_k)", False), ("equivalent('dot(q + b_q, k + b_k) / sqrt(d) + 1')", False),
        ("equivalent('dot(q + b_q, k + b_k) / sqrt(d)')", True), ("shift_invariant", False),
        ("can_abstain", True), ("weights_sum_to_one", False), ("output_shift(b_v)", False),
        ("invariant(b_v)", True),
    ]),
    (S1, "sink(s)", "none", {**BIAS, "s": "scalar"}, "v + b_v", [
        ("depends(s)", True), ("invariant(s)", False), ("output_invariant(s)", False), ("shift_invariant", False),
    ]),
    (S1 + " + b", "sigmoid", "causal", {**BIAS, "b": "scalar"}, "v", [
        ("invariant(b_k)", False), ("depends(b)", True), ("weights_sum_to_one", False), ("can_abstain", True),
    ]),
    ("dot(q, k) / sqrt(d) - m * (i - j)", "softmax", "causal", {"m": "scalar"}, "v", [
        ("equivalent('dot(q, k) / sqrt(d) + m * j')", True), ("equivalent('dot(q, k) / sqrt(d) - m * j')", False),
        ("row_constant('m * i')", True), ("row_constant('m * (i - j)')", False),
        ("depends(m)", True), ("invariant(m)", False),
    ]),
    ("dot(q, k) + r(j - i)", "softmax", "none", {"r": "function"}, "v", [
        ("depends(r)", True), ("invariant(r)", False), ("row_constant('r(i)')", True),
        ("row_constant('r(j)')", False), ("equivalent('dot(q, k) + r(j - i) + r(i)')", True),
        ("equivalent('dot(q, k) + r(i - j)')", False),
    ]),
    ("dot(f(q) + b_q, f(k) + b_k) / sqrt(d)", "softmax", "causal", {**BIAS, "f": "function"}, "v", [
        ("invariant(b_k)", True), ("invariant(b_q)", False), ("row_constant('dot(f(q), b_k)')", True),
        ("row_constant('dot(f(k + b_k), q)')", False), ("equivalent('dot(f(q) + b_q, f(k)) / sqrt(d)')", True),
        ("equivalent('dot(f(q), f(k)) / sqrt(d)')", False),
    ]),
    ("c * tanh(dot(q, k + b_k) / c)", "softmax", "none", {"b_k": "vector", "c": "scalar"}, "v", [
        ("invariant(b_k)", False), ("row_constant('exp(log(2)) * c ** 2')", True),
        ("row_constant('abs(dot(q, k))')", False),
        ("equivalent('c * tanh(dot(q, k + b_k) / c) + abs(c) ** 3')", True),
        ("equivalent('c * tanh(dot(q, k) / c)')", False),
    ]),
    ("dot(q, k + e) / sqrt(d)", "softmax", "causal", {"e": "key"}, "v", [
        ("invariant(e)", False), ("depends(e)", True),
    ]),
    ("dot(q + w, k) / sqrt(d)", "softmax", "none", {"w": "query"}, "v", [
        ("invariant(w)", False), ("row_constant('dot(w, q)')", True), ("output_invariant(v)", False),
    ]),
    # Identities whose cancellation needs hundreds of digits: x enters only through a term
    # that is exactly 0 (log(1 + e^a) - log(1 + e^-a) = a), multiplied by a huge factor.
    (f"dot(q, k) / sqrt(d) + ({SOFTPLUS}) * exp(300 * x) * j", "softmax", "none", {"x": "scalar"}, "v", [
        ("invariant(x)", True), ("depends(x)", False), ("output_invariant(x)", True),
        ("equivalent('dot(q, k) / sqrt(d)')", True),
        (f"row_constant('({SOFTPLUS}) * exp(300 * x) * j')", True),
        ("equivalent('dot(q, k) / sqrt(d) + j * exp(-300 * x)')", False),
        ("row_constant('j * exp(-300 * x)')", False), ("output_invariant(v)", False),
    ]),
    # tanh(a)·(e^{2a} + 1) = e^{2a} − 1: 0 for every x, with e^{600x} on both sides.
    (f"dot(q, k) + ({TANH}) * j", "softmax1", "causal", {"x": "scalar", "b_k": "vector"}, "v", [
        ("invariant(x)", True), ("depends(x)", False), ("equivalent('dot(q, k)')", True),
        (f"row_constant('({TANH}) * j')", True),
        ("row_constant('(tanh(300 * x) * (exp(600 * x) + 1) - exp(600 * x)) * j')", False),
        ("equivalent('dot(q, k) + j')", False), ("invariant(b_k)", True), ("shift_invariant", False),
    ]),
    # The same cancellation under a sink whose logit is the huge term itself.
    (S1, "sink(s)", "causal", {**BIAS, "s": "scalar", "x": "scalar"}, "v", [
        (f"equivalent('dot(q + b_q, k + b_k) / sqrt(d) + ({SOFTPLUS}) * exp(300 * x)')", True),
        ("equivalent('dot(q + b_q, k + b_k) / sqrt(d) + exp(-300 * x)')", False),
        ("invariant(x)", True), ("invariant(b_k)", False), ("depends(b_k)", True), ("weights_sum_to_one", False),
    ]),
    # False only for d ≥ 4, for n = 1, or at non-integer values.
    ("dot(q, k) + (d - 1) * (d - 2) * (d - 3) * j", "softmax", "none", {}, "v", [
        ("equivalent('dot(q, k)')", False), ("row_constant('(d - 1) * (d - 2) * (d - 3) * j')", False),
        ("row_constant('(d - 1) * (d - 2) * (d - 3) * i')", True),
        ("equivalent('dot(q, k) + (d - 1) * (d - 2) * (d - 3) * (j + 5)')", True),
    ]),
    ("dot(q, k) + m * j", "sigmoid", "none", {"m": "scalar"}, "v", [
        ("row_constant('m * (m - 1) * (m + 1) * (m - 2) * (m + 2) * (m - 3) * (m + 3) * j')", False),
        ("row_constant('m * (m - 1) * (m + 1) * (m - 2) * (m + 2) * (m - 3) * (m + 3) * i')", True),
        ("invariant(m)", False), ("depends(m)", True), ("equivalent('dot(q, k) + m * j + 0 * m')", True),
    ]),
    ("dot(q, k) / sqrt(d) + log(1 + exp(m)) * j", "softmax", "causal", {"m": "scalar", "b_v": "vector"},
     "v + b_v", [
        ("equivalent('dot(q, k) / sqrt(d) + (m + log(1 + exp(-m))) * j')", True),
        ("equivalent('dot(q, k) / sqrt(d) + (m + log(1 + exp(m))) * j')", False),
        ("row_constant('log(1 + exp(m)) * i - m * i')", True), ("depends(m)", True), ("invariant(m)", False),
        ("output_shift(b_v)", True), ("output_invariant(b_v)", False),
    ]),
    # A temperature named t (the summation variable's name) declared positive.
    ("dot(q, k) / (t * sqrt(d))", "softmax", "causal", {"t": "scalar positive"}, "v", [
        ("depends(t)", True), ("invariant(t)", False), ("equivalent('dot(q, k) * (1 / t) / sqrt(d)')", True),
        ("equivalent('dot(q, k) / (abs(t) * sqrt(d))')", True),
        ("equivalent('dot(q, k) / (t ** 2 * sqrt(d))')", False),
        ("row_constant('t * i')", True), ("row_constant('t * j')", False),
    ]),
    # Scientific notation and numeric powers: 1e-30 and 10**-30 are the same number, 2**-100 is not.
    ("dot(q, k) / sqrt(d) + 1e-30 * j", "softmax", "none", {}, "v", [
        ("equivalent('dot(q, k) / sqrt(d)')", False), ("equivalent('dot(q, k) / sqrt(d) + 10**-30 * j')", True),
        ("equivalent('dot(q, k) / sqrt(d) + 2**-100 * j')", False),
        ("row_constant('1e-30 * i + 2.5E3')", True), ("row_constant('(2**400 + j) - 2**400')", False),
        ("equivalent('dot(q, k) / sqrt(d) + 1e-30 * (j + 2**400)')", True),
    ]),
    # The learned key/value token of add_bias_kv: s*_i = <q_i, k*>/sqrt(d), v* in the output.
    (S1, "bias_kv(k_star, v_star)", "none", {**BIAS, "k_star": "vector", "v_star": "vector"}, "v + b_v", [
        ("invariant(b_k)", False), ("invariant(v_star)", True), ("output_invariant(v_star)", False),
        ("depends(k_star)", True), ("output_shift(b_v)", False), ("invariant(b_v)", True),
        ("depends(b_q)", True),
    ]),
    (S1, "sigmoid(b)", "causal", {**BIAS, "b": "scalar"}, "v", [
        ("depends(b)", True), ("invariant(b)", False), ("shift_invariant", False), ("weights_sum_to_one", False),
    ]),
    (S1, "softmax", "none", BIAS, "2 * v - b_v / 2", [
        ("invariant(b_k)", True), ("row_constant('dot(b_q, k)')", False), ("depends(b_q)", True),
        ("output_shift(b_v)", False), ("output_invariant(b_k)", True),
    ]),
]


def _toml(score, norm, mask, symbols, value, claims) -> str:
    lines = ['name = "soundness"', f'score = "{score}"', f'normalizer = "{norm}"', f'mask = "{mask}"',
             f'value = "{value}"', "[symbols]"]
    lines += [f'{k} = "{v}"' for k, v in symbols.items()]
    lines += ["[claims]"] + [f'c{n} = "{c}"' for n, (c, _) in enumerate(claims)]
    return "\n".join(lines) + "\n"


def _run(cfg=DEFAULT_CHECK):
    rows, reports = [], []
    for score, norm, mask, symbols, value, claims in GROUPS:
        spec = parse_spec(_toml(score, norm, mask, symbols, value, claims), "soundness.toml")
        res = check_spec(spec, cfg)
        reports.append(json.dumps(res.as_json(), sort_keys=True, default=str))
        for (text, truth), r in zip(claims, res.claims):
            rows.append((score, norm, text, truth, r.verdict, r.reason))
    return rows, reports


@pytest.fixture(scope="module")
def run():
    return _run()


@pytest.fixture(scope="module")
def verdicts(run):
    return run[0]


def test_table_size_and_balance():
    claims = [c for g in GROUPS for c in g[5]]
    assert len(claims) >= 120
    false = sum(1 for _, truth in claims if not truth)
    assert 0.4 <= false / len(claims) <= 0.6


@pytest.mark.slow
def test_no_false_claim_proved_no_true_claim_refuted(verdicts):
    wrong = [v for v in verdicts if (v[4] == "proved" and not v[3]) or (v[4] == "refuted" and v[3])]
    assert not wrong, wrong


@pytest.mark.slow
def test_most_claims_decided(verdicts):
    decided = sum(1 for v in verdicts if v[4] != "undecided")
    print(f"\nsoundness suite: {decided} of {len(verdicts)} claims decided")
    undecided = [v for v in verdicts if v[4] == "undecided"]
    assert decided >= 0.9 * len(verdicts), undecided


@pytest.mark.slow
def test_same_verdicts_and_text_with_a_quarter_of_the_time(run):
    """A machine four times slower decides the same: work is bounded by counts, not the clock."""
    quarter = _run(DEFAULT_CHECK.merge(time_limit=DEFAULT_CHECK.time_limit / 4))
    assert quarter[0] == run[0]
    assert quarter[1] == run[1]
