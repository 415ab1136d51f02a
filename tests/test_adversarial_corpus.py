"""The adversarial spec corpus (tests/specs/adversarial/): user-defined and built-in normalizers,
masks and FlexAttention modifiers, with claims chosen so that about half are true, many of them
true or false only at an edge (one row length, a parameter's sign, one mask, a difference of
1e-300). The truth of every claim is written by hand in truth.json (and next to each claim in its
file); tests/adversarial_oracle.py confirms it independently where it can judge (the normalizer
claims, at 360 digits with mpmath).

derive may leave a claim undecided, never prove a false one or refute a true one. Its verdicts
are pinned in verdicts.json, so a change that loses a decision (or gains one) is seen.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
import sympy as sp

from derive.errors import InputError
from derive.spec.load import parse_spec

CORPUS = Path(__file__).parent / "specs" / "adversarial"
TRUTH = json.loads((CORPUS / "truth.json").read_text())
PINNED = json.loads((CORPUS / "verdicts.json").read_text())


def _verdicts(stem: str) -> dict:
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    return {c.name: c.verdict for c in check_spec(load_spec(CORPUS / f"{stem}.toml")).claims}


def _wrong(stem: str, verdicts: dict) -> list:
    return [(stem, name, v) for name, v in verdicts.items()
            if v != "undecided" and (v == "proved") != TRUTH[stem][name]]


def test_the_corpus_is_balanced_and_its_truth_is_written_in_every_file():
    claims = [(stem, name, t) for stem, cl in TRUTH.items() for name, t in cl.items()]
    assert len(TRUTH) >= 40 and len(claims) >= 150
    true = sum(t for _, _, t in claims)
    assert 0.4 < true / len(claims) < 0.6
    for stem, cl in TRUTH.items():
        text = (CORPUS / f"{stem}.toml").read_text()
        for name, t in cl.items():
            assert re.search(rf'^{name} = .*# {"true" if t else "false"}$', text, re.M), (stem, name)
    assert set(PINNED) == set(TRUTH) and all(set(PINNED[s]) == set(TRUTH[s]) for s in TRUTH)


def test_no_pinned_verdict_is_wrong():
    assert [w for stem in PINNED for w in _wrong(stem, PINNED[stem])] == []


# Specs that once got a wrong verdict: each is checked on every run.
REGRESSIONS = {
    # can_abstain proved: SymPy took lim_{Z→0⁺} Z/(Z + a²) = 0, true only for a ≠ 0 (a = 0 is softmax);
    # now refuted by that instance: at a = 0 a row's weights sum to 1
    "sign_aa_any": {"abst": "refuted", "sum1": "refuted", "shift": "refuted"},
    # can_abstain proved: the uniform path's limit e^{−τ}/(N e^{−τ} + 1 − min(N − 1, 1)) → 0 holds for N = 1 only;
    # now refuted by a row of 2 keys, whose weights sum to 1
    "n1_trap": {"abst": "refuted", "sum1": "refuted", "shift": "refuted"},
    # weights_sum_to_one refuted on a row of two keys, which causal_window(1) never makes; now proved
    # on the rows of one key the mask makes
    "nm1_one_key": {"sum1": "proved"},
    # … and still refuted, on a row of the mask, where the mask does make such a row
    "nm1_causal": {"sum1": "refuted", "kb": "refuted"},
    # weights_sum_to_one refuted on a row where n ≠ i, or a key after i: under causal n = i and t ≤ i;
    # now proved on the rows of causal (keys 1..i)
    "n_over_i_causal": {"sum1": "proved"},
    "upto_i_causal": {"sum1": "proved"},
    # equivalent_to refuted: s declared scalar here and scalar positive there were two parameters,
    # drawn apart (s = 0 on one side, 1 on the other); matched by name they are one
    "sink_any": {"pos": "proved", "off": "refuted"},
    "softcap_nonzero_user": {"cap": "proved"},
}


def test_one_parameter_per_name_over_the_narrower_domain():
    from derive.claims.modifiers import one_symbol_per_name

    real, pos, neg = (sp.Symbol("s", real=True), sp.Symbol("s", positive=True), sp.Symbol("s", negative=True))
    assert one_symbol_per_name(real + 1, pos) == ({real: pos}, "")
    assert one_symbol_per_name(pos, real * 2) == ({real: pos}, "")
    assert one_symbol_per_name(pos, neg) == ({}, "s")
    assert one_symbol_per_name(real, real + 1) == ({}, "")


@pytest.mark.parametrize("stem", sorted(REGRESSIONS))
def test_specs_that_once_got_a_wrong_verdict(stem):
    got = _verdicts(stem)
    assert {k: got[k] for k in REGRESSIONS[stem]} == REGRESSIONS[stem]
    assert _wrong(stem, got) == []


def test_a_refutation_under_a_mask_is_an_instance_of_that_mask():
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    [c] = [c for c in check_spec(load_spec(CORPUS / "nm1_causal.toml")).claims if c.name == "sum1"]
    ce = c.counterexample
    # the normalizer's row of two keys, moved to the row of the mask with two allowed keys
    assert ce["mask"] == "causal" and ce["n"] == 2 and ce["indices"] == {"i": 2}
    assert ce["values"] == {"M": [[1, 0], [1, 1]], "x": [[0, 0], [2, 1]]}
    assert ce["original"] == 0.909969  # (e² + e)/(e² + e + 1)


def test_a_limit_is_refused_when_it_holds_only_for_generic_parameters():
    from derive.normalizers.limits import limit_of

    z, tau = sp.Symbol("Z", positive=True), sp.Symbol("tau", positive=True)
    a, big_n = sp.Symbol("a", real=True), sp.Symbol("N_i", integer=True, positive=True)
    assert limit_of(z / (z + a**2), z, 0) is None  # 1 at a = 0, 0 otherwise
    assert limit_of(z / (z + sp.Symbol("b", nonzero=True, real=True) ** 2), z, 0) == 0
    assert limit_of(z / (z + sp.exp(a)), z, 0) == 0
    w = sp.exp(-tau) / (big_n * sp.exp(-tau) + 1 - sp.Min(big_n - 1, 1))
    assert limit_of(w, tau, sp.oo) is None  # 0 at N = 1, 1/N for N ≥ 2
    assert limit_of(sp.exp(-tau) / (big_n * sp.exp(-tau) + 1), tau, sp.oo) == 0
    assert limit_of(1 / (a * tau + 1), tau, sp.oo) is None  # 1 at a = 0: SymPy says 0


@pytest.mark.slow
def test_every_verdict_of_the_corpus_is_pinned_and_none_is_wrong():
    got = {stem: _verdicts(stem) for stem in sorted(TRUTH)}
    assert [w for stem in got for w in _wrong(stem, got[stem])] == []
    assert got == PINNED


@pytest.mark.slow
def test_the_independent_oracle_confirms_the_truth_table():
    import adversarial_oracle as oracle

    judged = []
    for stem, claims in sorted(TRUTH.items()):
        doc = tomllib.loads((CORPUS / f"{stem}.toml").read_text())
        for name, truth in claims.items():
            v = oracle.judge(CORPUS, stem, doc["claims"][name])
            if v is not None:
                judged.append((stem, name, v, truth))
    assert [j for j in judged if j[2] != j[3]] == []
    assert len(judged) >= 150


BAD_WEIGHTS = [
    ("exp(x_j) / sum_t(exp(x_t), t > j, 1)", 12, "sum_t(E) or sum_t(E, CONDITION) takes 1 or 2 arguments, got 3"),
    ("max(x_j)", 1, "max() takes 2 or more arguments, got 1"),
    ("exp(y_j) / sum_t(exp(y_t))", 5, 'y_j is a score of the second row: give score2 = "…" in the spec'),
    ("exp(x_j) / sum_t(exp(x_t), j > 1)", 30,
     "the condition compares t with an index expression (i, j, n, integers), e.g. t > j"),
    ("exp(x_j) / sum_t(exp(x_t), t > q)", 32, "'q' in a condition: compare t with i, j, n and integers only"),
    ("exp(1e401 * x_j)", 5, "number 1e401 is too large or too small (limit 1e±400)"),
    ("1/0", 1, "the weight has no real value on any of 8 sample rows (a division by zero, or a log or sqrt "
               "of a negative number, whatever the scores)"),
    ("x_j / (n - n)", 1, "the weight has no real value on any of 8 sample rows (a division by zero, or a log or sqrt "
                         "of a negative number, whatever the scores)"),
    ("log(relu(x_j) - relu(x_j))", 1, "the weight has no real value on any of 8 sample rows (a division by zero, or a "
                                      "log or sqrt of a negative number, whatever the scores)"),
    ("exp(x_j) / (sum_t(exp(x_t)) + 2**2000)", 32, "the constant is too large: it would have about 603 digits "
                                                   "(limit 400)"),
    ("exp(x_j) / sum_t(exp(x_t)) ** 9", 31, "exponent 9 too large (limit ±8 for a base that is not a number)"),
]


def test_a_number_to_a_large_power_is_an_exact_constant_in_a_weight_as_in_a_score():
    from derive.normalizers.formula import compile_weight
    from derive.model.attention import ScalarBase, i, j

    x = ScalarBase("x")
    f = compile_weight("exp(x_j) / (sum_t(exp(x_t)) + 10**-300)", {})
    w = f.weight(lambda k: x[i, k], j)
    assert sp.Rational(1, 10**300) in w.atoms(sp.Rational)


@pytest.mark.parametrize("weight,col,message", BAD_WEIGHTS)
def test_a_bad_weight_names_file_key_and_column(weight, col, message):
    src = f'name = "b"\nscore = "dot(q, k)"\n[normalizer]\nweight = "{weight}"\n'
    with pytest.raises(InputError) as err:
        parse_spec(src, "b.toml")
    assert str(err.value) == f"b.toml: key 'normalizer.weight', column {col}: {message}"


@pytest.mark.slow
def test_a_tower_of_exponentials_is_judged_within_the_budgets(tmp_path):
    import subprocess
    import sys

    spec = tmp_path / "tower.toml"
    spec.write_text('name = "tower"\nscore = "dot(q, k)"\n[normalizer]\n'
                    'weight = "exp(exp(exp(exp(exp(exp(exp(exp(x_j))))))))"\n[claims]\ns = "shift_invariant"\n')
    done = subprocess.run([sys.executable, "-m", "derive", "check", str(spec)], capture_output=True, text=True,
                          timeout=150)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr
