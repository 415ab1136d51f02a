"""User-defined normalizers: the ``[normalizer]`` weight formula of a spec, its errors, and the
verdicts of every claim on it, confirmed by an independent evaluator (tests/normalizer_oracle.py)."""

from __future__ import annotations

import re
from pathlib import Path

import mpmath
import pytest

from derive.errors import InputError
from derive.normalizers.formula import compile_weight
from derive.spec.load import parse_spec
from normalizer_oracle import NORMALIZERS, same_weights, truth
from tests.conftest import run_derive

SPECS = Path(__file__).parent / "normalizer_specs"
# claim name in the specs → the oracle's claim
MEANING = {"shift": "shift_invariant", "sum1": "weights_sum_to_one", "abstain": "can_abstain",
           "key_bias": "invariant_key_bias"}
SAME = {"softmax": "softmax", "softmax1": "softmax1", "softpick": "softmax"}  # equivalent_to's other side


def _verdicts(path: Path) -> dict:
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    return {c.name: c.verdict for c in check_spec(load_spec(path)).claims}


def _judge(name: str, verdicts: dict) -> tuple[int, int]:
    """(wrong, decided) against the oracle; asserts no verdict contradicts it."""
    wrong = decided = 0
    for claim, verdict in verdicts.items():
        true = same_weights(name, SAME[name]) if claim == "same" else truth(name, MEANING[claim])
        if verdict == "undecided":
            continue
        decided += 1
        if (verdict == "proved") != true:
            wrong += 1
            print(f"WRONG: {name}.{claim} is {verdict}, the oracle says {true}")
    return wrong, decided


FAST = ("softpick", "stick_breaking", "softmax")


@pytest.mark.parametrize("name", FAST)
def test_claims_on_user_defined_normalizers_agree_with_the_oracle(name):
    wrong, decided = _judge(name, _verdicts(SPECS / f"{name}.toml"))
    assert wrong == 0 and decided >= 3


@pytest.mark.slow
def test_every_normalizer_spec_agrees_with_the_oracle_and_most_claims_are_decided():
    total = wrong = decided = 0
    for name in NORMALIZERS:
        v = _verdicts(SPECS / f"{name}.toml")
        w, dd = _judge(name, v)
        total, wrong, decided = total + len(v), wrong + w, decided + dd
    assert wrong == 0
    assert decided >= 0.85 * total, (decided, total)


def test_the_oracle_is_not_trivial():
    assert truth("softmax", "shift_invariant") and not truth("sigmoid", "shift_invariant")
    assert truth("softmax", "weights_sum_to_one") and not truth("softpick", "weights_sum_to_one")
    assert truth("softpick", "can_abstain") and not truth("softmax", "can_abstain")
    assert not truth("stick_breaking", "weights_sum_to_one") and truth("ssmax", "shift_invariant")
    assert same_weights("softmax", "softmax") and not same_weights("softpick", "softmax")


def test_a_formula_equal_to_a_built_in_is_that_built_in():
    spec = parse_spec('name = "a"\nscore = "dot(q, k)"\n[normalizer]\nweight = "exp(x_j) / (1 + sum_t(exp(x_t)))"\n')
    assert spec.normalizer == "softmax1"
    spec = parse_spec('name = "a"\nscore = "dot(q, k)"\n[normalizer]\nweight = "exp(x_j) / (exp(s) + sum_t(exp(x_t)))"\n'
                      '[symbols]\ns = "scalar"\n')
    assert spec.normalizer == "sink" and spec.norm_params() == {"s": "s"}


def _error(text: str) -> str:
    with pytest.raises(InputError) as err:
        parse_spec(text, "f.toml")
    return str(err.value)


HEAD = 'name = "a"\nscore = "dot(q, k)"\n[normalizer]\n'


@pytest.mark.parametrize("weight, message", [
    ("exp(x_j) / sum_t(exp(x_t)) + epz",
     "f.toml: key 'normalizer.weight', column 30: unknown name 'epz'; did you mean 'eps'?"),
    ("exp(x_t)", "f.toml: key 'normalizer.weight', column 5: x_t is bound by a reduction"),
    ("exp(x_j) / summ_t(exp(x_t))", "f.toml: key 'normalizer.weight', column 12: unknown function 'summ_t'; did you "
                                    "mean 'sum_t'?"),
    ("log(-exp(x_j))", "f.toml: key 'normalizer.weight', column 1: the weight has no real value on any of 8 sample rows"),
    ("exp(x_j) / (sum_t(exp(x_t)) - sum_t(exp(x_t)))", "f.toml: key 'normalizer.weight', column 1: the weight has "
                                                        "no real value"),
    ("x_j > 0", "f.toml: key 'normalizer.weight', column 5: a comparison (>) is allowed only as the condition"),
    ("prod_t(x_t, t > k)", "f.toml: key 'normalizer.weight', column 17: 'k' in a condition"),
    ("sum_t(max_t(x_t))", "f.toml: key 'normalizer.weight', column 7: max_t inside sum_t"),
    ("exp(y_j)", "f.toml: key 'normalizer.weight', column 5: y_j is a score of the second row: give score2"),
    ("1 / (n - n)", "f.toml: key 'normalizer.weight', column 1: the weight has no real value on any of 8 sample rows"),
])
def test_a_bad_weight_is_an_error_with_file_key_and_column(weight, message):
    text = HEAD + f'weight = "{weight}"\n[symbols]\neps = "scalar positive"\n'
    assert _error(text).startswith(message)


@pytest.mark.parametrize("weight", ["1 / n", "2 * eps", "exp(0 * x_j) / sum_t(exp(0 * x_t))"])
def test_a_weight_free_of_the_scores_is_a_normalizer(weight):
    """A constant weight (1/n: every allowed key the same weight) is a normalizer like any other,
    as exp(0*x_j)/sum_t(exp(0*x_t)), which is 1/n too, always was."""
    from derive.spec.load import parse_spec

    spec = parse_spec(HEAD + f'weight = "{weight}"\n[symbols]\neps = "scalar positive"\n', "f.toml")
    assert spec.normalizer


def test_a_bad_normalizer_table_is_an_error():
    assert "key 'normalizer.wieght': unknown key; did you mean 'weight'?" in _error(HEAD + 'wieght = "exp(x_j)"\n')
    assert "key 'normalizer': missing required key 'weight'" in _error(HEAD + 'name = "x"\n')


def test_a_bad_weight_exits_2_without_traceback(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(HEAD + 'weight = "relu(exp(x_j) - 1) / (sum_t(abs(exp(x_t) - 1)) + epps)"\n[symbols]\neps = "scalar positive"\n')
    code, _, err = run_derive("check", str(f))  # an exception it let through would fail the test here
    assert code == 2 and "Traceback" not in err
    assert re.search(r"s\.toml: key 'normalizer\.weight', column 50: unknown name 'epps'; did you mean 'eps'\?",
                     err), err


def test_the_formula_reference_matches_the_oracle_on_rows():
    for name, (w, p) in NORMALIZERS.items():
        text = (SPECS / f"{name}.toml").read_text()
        weight = re.search(r'^weight = "(.*)"$', text, re.M).group(1)
        scalars = {k: {} for k in p}
        f = compile_weight(weight, scalars, score2=name == "differential")
        for x, y in (([0.3, -1.2, 2.0], [1.0, 0.0, -0.5]), ([1.5], [0.2]), ([-2.0, 0.1, 0.7, 3.0], [0.0] * 4)):
            with mpmath.workdps(30):
                got = [float(v) for v in f.reference(x, y=y if f.score2 else None, **p)]
            want = w(x, y, p)
            assert all(abs(a - b) < 1e-12 for a, b in zip(got, want)), (name, got, want)


def test_conditions_and_masks_in_the_reference():
    f = compile_weight("sigmoid(x_j) * prod_t(1 - sigmoid(x_t), t > j)")
    sig = lambda z: 1 / (1 + mpmath.exp(-z))  # noqa: E731
    with mpmath.workdps(30):
        got = f.reference([0.5, -1.0, 2.0], mask=[True, False, True])
        assert got[1] == 0 and abs(got[0] - sig(0.5) * (1 - sig(2.0))) < 1e-25 and abs(got[2] - sig(2.0)) < 1e-25
        g = compile_weight("exp(x_j) / sum_t(exp(x_t), t != j)")
        assert abs(g.reference([0.0, 1.0])[0] - 1 / mpmath.e) < 1e-25
        assert all(mpmath.isnan(v) for v in compile_weight("exp(x_j) / sum_t(exp(x_t))").reference([0.0, 1.0], [False, False]))
        assert compile_weight("exp(x_j) / (1 + sum_t(exp(x_t)))").reference([0.0, 1.0], [False, False]) == [0, 0]
        h = compile_weight("exp(x_j - max_t(x_t)) * n")
        assert h.reference([1.0, 3.0])[0] == 2 * mpmath.exp(-2)


# Every other claim kind on user-defined normalizers; the truth of each is plain mathematics:
# ssmax (the softmax of s·log(n)·x) is shift-invariant and sums to 1, softpick is neither.
KINDS = '''name = "NAME"
score = "dot(q + b_q, k) / sqrt(d)"
value = "v + b_v"
[normalizer]
name = "NAME"
weight = "WEIGHT"
[symbols]
b_q = "vector"
b_v = "vector"
PARAM
[claims]
q_bias = "depends(b_q)"
value_bias = "output_invariant(b_v)"
shifted = "output_shift(b_v)"
plus_one = "equivalent(\\"dot(q + b_q, k) / sqrt(d) + 1\\")"
const = "row_constant(\\"dot(q, k)\\")"
'''
TRUTH = {
    "ssmax": {"q_bias": "proved", "value_bias": "refuted", "shifted": "proved", "plus_one": "proved",
              "const": "refuted"},
    "softpick": {"q_bias": "proved", "value_bias": "refuted", "shifted": "refuted", "plus_one": "refuted",
                 "const": "refuted"},
}


@pytest.mark.parametrize("name, weight, param", [
    ("ssmax", "exp(s * log(n) * x_j) / sum_t(exp(s * log(n) * x_t))", 's = "scalar"'),
    ("softpick", "relu(exp(x_j) - 1) / (sum_t(abs(exp(x_t) - 1)) + eps)", 'eps = "scalar positive"'),
])
def test_every_claim_kind_on_a_user_defined_normalizer(name, weight, param):
    from derive.claims.run import check_spec

    spec = parse_spec(KINDS.replace("NAME", name).replace("WEIGHT", weight).replace("PARAM", param))
    got = {c.name: c.verdict for c in check_spec(spec).claims}
    wrong = {k: v for k, v in got.items() if v != "undecided" and v != TRUTH[name][k]}
    assert not wrong, got
    assert sum(v != "undecided" for v in got.values()) >= 4, got


def test_derive_normalizer_prints_the_property_table():
    import json

    code, out, err = run_derive("normalizer", str(SPECS / "stick_breaking.toml"), "--format", "json")
    assert code == 0, err
    t = json.loads(out)
    assert t["formula"] == "sigmoid(x_j) * prod_t(1 - sigmoid(x_t), t > j)"
    verdicts = {r["property"]: r["verdict"] for r in t["properties"]}
    assert verdicts["shift_invariant"] == "refuted" and verdicts["weights_sum_to_one"] == "refuted"
    assert not t["softmax_family"]["member"] and "not of the form" in t["softmax_family"]["why_not"]
    assert t["fully_masked_row"]["defined"]
    code, md, _ = run_derive("normalizer", "sink")
    assert code == 0 and "| row-shift invariance | ❌ refuted | no |" in md
    assert "softmax family: extra logit σ = s; kernel forms online, split and backward" in md
    code, _, err = run_derive("normalizer", "sinc")
    assert code == 2 and "no such spec file (or built-in normalizer" in err
