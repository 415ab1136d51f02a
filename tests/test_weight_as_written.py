"""A user weight is judged as written, not as SymPy reads it (tests/specs/as_written/).

SymPy evaluates as it reads a formula: 0/x_j and 0*log(x_j) are 0, x_t/x_t is 1, exp(2*log(p))
is p². The reading then has a value at rows where the formula has none, so a proof about it is
no proof about the formula there: such a claim is undecided, with the subterm named; a
counterexample certified at a row where the formula has a value still refutes; a formula whose
partial subterms survive in the reading (exp(x_j)/(sum_t(exp(x_t)) - 1)) or that is total is
decided as before.
"""

from __future__ import annotations

from pathlib import Path

import mpmath
import pytest

from derive.model.attention import X, i, j
from derive.normalizers.formula import compile_weight
from derive.normalizers.partial import domain, dropped, why_no_proof

SPECS = Path(__file__).parent / "specs" / "as_written"
TAIL = ("but the symbolic reading the proofs use drops that subterm and has a value there; derive proves claims only "
        "about the weight as written")


def _why(where: str, text: str) -> str:
    return f"the weight as written has no value where {where} ({text}), {TAIL}"


def _check(stem: str):
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    return {c.name: c for c in check_spec(load_spec(SPECS / f"{stem}.toml")).claims}


PINNED = {
    "zero_over_score": {name: ("undecided", _why("x_j = 0", "0/x_j")) for name in ("shift", "sum1", "kb", "dep")},
    "zero_log": {name: ("undecided", _why("x_j ≤ 0", "log(x_j)")) for name in ("shift", "sum1", "eq")},
    "ratio_in_sum": {name: ("undecided", _why("x_t = 0", "x_t/x_t")) for name in ("shift", "sum1")},
    # abstention is refuted where the weight has a value: p = 1 (p² softmax sums to 1 there)
    "power_of_log": {"shift": ("undecided", _why("p ≤ 0", "log(p)")),
                     "abst": ("refuted", "with p = 1, the weights of a row of 1 allowed key sum to 1 for every score "
                                         "(proved), so they cannot all tend to 0")},
    "power_of_log_positive": {"shift": ("proved", "adding one constant to every score of a row leaves its weights "
                                                  "unchanged: the difference reduces to 0")},
    "softpick_total": {"kb": ("refuted", None), "sum1": ("refuted", None),
                       "abst": ("proved", "every weight tends to 0 as all scores → −∞ together"),
                       "same": ("proved", "the scores are identical after expansion")},
    "ratio_refuted": {"shift": ("refuted", None), "sum1": ("refuted", None), "kb": ("refuted", None),
                      "dep": ("proved", None)},
}


# zero_over_score covers the rule by default; the other cases of it cost seconds each
SLOW = ("power_of_log", "zero_log", "ratio_refuted")


@pytest.mark.parametrize("stem", [pytest.param(s, marks=pytest.mark.slow) if s in SLOW else s for s in sorted(PINNED)])
def test_the_verdicts_and_reasons_are_pinned(stem):
    got = _check(stem)
    assert {k: c.verdict for k, c in got.items()} == {k: v for k, (v, _) in PINNED[stem].items()}
    for name, (_, reason) in PINNED[stem].items():
        if reason is not None:
            assert got[name].reason == reason, name


@pytest.mark.slow
def test_a_refutation_is_certified_at_a_row_where_the_weight_as_written_has_a_value():
    got = _check("ratio_refuted")
    f = compile_weight("(x_j/x_j) * exp(x_j) / (1 + sum_t(exp(x_t)))")
    for name in ("shift", "sum1"):
        ce = got[name].counterexample
        row = ce["values"]["x"][ce["indices"]["i"] - 1]
        shifts = [0, ce["values"].get("c", 0)]
        for c in shifts:
            with mpmath.workdps(30):
                assert not any(mpmath.isnan(w) for w in f.reference([v + c for v in row])), (name, row, c)
    # invariant(b_k): the scores of both sides of the counterexample are nonzero
    ce = got["kb"].counterexample
    q, k = ce["values"]["q"][0], ce["values"]["k"][0]
    for b in (ce["values"]["b_k"], ce["values"]["b_k'"]):
        assert sum(qq * (kk + bb) for qq, kk, bb in zip(q, k, b)) != 0


DROPPED = [
    ("exp(x_j) / (0/x_j + sum_t(exp(x_t)))", {}, [("0/x_j", "x_j = 0")]),
    ("exp(x_j) / sum_t(exp(x_t)) + 0*log(x_j)", {}, [("log(x_j)", "x_j ≤ 0")]),
    ("exp(x_j) / sum_t(exp(x_t) * (x_t/x_t))", {}, [("x_t/x_t", "x_t = 0")]),
    ("exp(2*log(p)) * exp(x_j) / sum_t(exp(x_t))", {"p": {}}, [("log(p)", "p ≤ 0")]),
    ("exp(x_j) / sum_t(exp(x_t)) + 0*sqrt(1 - x_j**2)", {}, [("sqrt(1 - x_j**2)", "1 - x_j**2 < 0")]),
    ("exp(x_j) / sum_t(exp(x_t)) + 0*max_t(x_t, t > j)", {},
     [("max_t(x_t, t > j)", "the reduction max_t(x_t, t > j) has no term")]),
    ("x_j**-2 * x_j**3", {}, [("x_j**-2", "x_j = 0")]),
    # the reading keeps 1/x_t only in a sum over t > j: at the last key it has a value where x_1 = 0
    # (and the sum over t > j has no term at the row's last key: e^x_j/0, whatever the scores)
    ("exp(x_j) / sum_t(exp(x_t)/x_t, t > j) + sum_t(0/x_t)", {},
     [("exp(x_j)/sum_t(exp(x_t)/x_t, t > j)",
       "the reduction sum_t(exp(x_t)/x_t, t > j) has no term (a row where no allowed key t has t > j)"),
      ("0/x_t", "x_t = 0")]),
    # kept by the reading: it has no value there either
    ("exp(2*log(p)) * exp(x_j) / sum_t(exp(x_t))", {"p": {"positive": True}}, []),
    ("exp(x_j) / (sum_t(exp(x_t)) - 1)", {}, []),
    ("exp(x_j - max_t(x_t)) / (sum_t(exp(x_t)) * exp(-max_t(x_t)))", {}, []),
    ("exp(x_j) / (sum_t(exp(x_t)) + a - abs(a))", {"a": {}}, []),
    ("relu(exp(x_j) - 1) / sum_t(abs(exp(x_t) - 1))", {}, []),
    ("1/(2*x_j)", {}, []),
    ("exp(x_j) + sum_t(x_t/x_j, t > j)", {}, []),  # both have a value at the last key, whatever x_j
    ("log(x_j) + sqrt(x_j)", {}, []),
    ("sqrt(x_j**2) - abs(x_j)", {}, []),
    ("sqrt(x_j + 2)**2 - (x_j + 2)", {}, [("sqrt(x_j + 2)", "x_j + 2 < 0")]),
    # kept by the reading, but a factor free of the row may be 0: no value on whole rows (every row
    # of one key) or at a parameter value, whatever the scores, and a proof cancels such a factor
    ("sum_t(exp(x_t), t != j) / ((n - 1) * sum_t(exp(x_t)))", {}, [("…/((n - 1)*sum_t(exp(x_t)))", "n - 1 = 0")]),
    ("(1 - exp(x_j)/sum_t(exp(x_t))) / (n - 1)", {}, [("(1 - exp(x_j)/sum_t(exp(x_t)))/(n - 1)", "n - 1 = 0")]),
    ("(n**2 - 1) / ((n - 1) * (n + 1)) * exp(x_j) / sum_t(exp(x_t))", {},
     [("(n**2 - 1)/((n - 1)*(n + 1))", "n - 1 = 0")]),
    ("exp(x_j) * (n - 1)**-2 / sum_t(exp(x_t))", {}, [("(n - 1)**-2", "n - 1 = 0")]),
    # key 1 of every row has no weight: 0/0 whatever the scores
    ("(j**2 - 1) / ((j - 1) * (j + 1)) * exp(x_j) / sum_t(exp(x_t))", {},
     [("(j**2 - 1)/((j - 1)*(j + 1))", "j - 1 = 0")]),
    ("exp(x_j) / (log(j) * sum_t(exp(x_t)))", {}, [("exp(x_j)/(log(j)*sum_t(exp(x_t)))", "log(j) = 0")]),
    ("exp(x_j / a) / sum_t(exp(x_t / a))", {"a": {}}, [("x_j/a", "a = 0"), ("x_t/a", "a = 0")]),
    ("exp(x_j) * sqrt(n - 2) / sum_t(exp(x_t))", {}, [("sqrt(n - 2)", "n - 2 < 0")]),
    # kept by the reading, but a reduction over a condition is 0 on a row where no allowed key meets
    # it (a row of one key for t != j; every row whose allowed keys all come after i for t <= i)
    ("exp(x_j) / sum_t(exp(x_t), t <= i)", {},
     [("exp(x_j)/sum_t(exp(x_t), t <= i)",
       "the reduction sum_t(exp(x_t), t <= i) has no term (a row where no allowed key t has t <= i)")]),
    ("exp(x_j) / sum_t(exp(x_t), t != j)", {},
     [("exp(x_j)/sum_t(exp(x_t), t != j)",
       "the reduction sum_t(exp(x_t), t != j) has no term (a row where no allowed key t has t != j)")]),
    # kept by the reading, but a proof cancels a factor that depends on the scores: no value at x_j = ±1
    ("exp(x_j)*(x_j**2 - 1)/((x_j - 1)*(x_j + 1))/sum_t(exp(x_t))", {},
     [("…/((x_j - 1)*(x_j + 1))", "x_j - 1 = 0, at x_j = 1; or x_j + 1 = 0, at x_j = -1")]),
    ("(exp(2*x_j) - 1) / (exp(x_j) - 1) / sum_t(exp(x_t))", {},
     [("(exp(2*x_j) - 1)/(exp(x_j) - 1)", "exp(x_j) - 1 = 0, at x_j = 0")]),
    ("x_j / x_j**2 * exp(x_j) / sum_t(exp(x_t))", {}, [("x_j/x_j**2", "x_j = 0, at x_j = 0")]),
    # … and not when the factor is certainly in its domain, or the operand as a whole has a value
    ("exp(x_j / a) / sum_t(exp(x_t / a))", {"a": {"nonzero": True}}, []),
    ("exp(x_j) * sqrt(n - 1) / (n + 1) / sum_t(exp(x_t))", {}, []),
    ("exp(x_j) / (sum_t(exp(x_t)) + (n - 1) * (n - 2))", {}, []),
    ("exp(x_j) / (exp(x_j) + n - 1)", {}, []),
    ("exp(x_j) * log(j) / (i + j) / sum_t(exp(x_t))", {}, []),
    # a factor of the scores that is never 0, or whose zeros are poles (a positive numerator), or
    # that the numerator cannot cancel (no score in common): the reading keeps its domain
    ("x_j**2 * exp(x_j) / ((1 + x_j**2) * sum_t(exp(x_t)))", {}, []),
    ("exp(x_j) / (sum_t(exp(x_t)) - 1)", {}, []),
    ("exp(x_j) / (exp(x_j) - 1)", {}, []),
    ("exp(x_j) / (exp(x_j) + sum_t(exp(x_t), t != j))", {}, []),
    ("exp(x_j) / sum_t(exp(x_t), t <= j)", {}, []),
]


@pytest.mark.parametrize("weight,scalars,expected", DROPPED)
def test_the_subterms_the_reading_drops(weight, scalars, expected):
    f = compile_weight(weight, scalars)
    assert [(d.text, d.where) for d in dropped(f)] == expected
    assert (why_no_proof(f) is None) == (not expected)


def test_no_claim_is_proved_on_a_weight_with_no_value_on_rows_of_one_key(tmp_path):
    # Σ_j (1 − p_j)/(n − 1) = (n − 1)/(n − 1) = 1 was proved, and the weight equal to softmax, but
    # every row of one key (row 1 under causal, whatever the scores) has no weights: 0/0
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    (tmp_path / "soft.toml").write_text('name = "softmax"\nscore = "dot(q, k) / sqrt(d)"\nmask = "causal"\n')
    (tmp_path / "s.toml").write_text(
        'name = "s"\nscore = "dot(q, k) / sqrt(d)"\nmask = "causal"\n[normalizer]\n'
        'weight = "(n**2 - 1) / ((n - 1) * (n + 1)) * exp(x_j) / sum_t(exp(x_t))"\n'
        '[claims]\nsum1 = "weights_sum_to_one"\nshift = "shift_invariant"\nsame = \'equivalent_to("soft.toml")\'\n'
        'q = "invariant(q)"\n')
    got = {c.name: c for c in check_spec(load_spec(tmp_path / "s.toml")).claims}
    why = ("the weight as written has no value where n - 1 = 0 ((n**2 - 1)/((n - 1)*(n + 1))), whatever the scores, "
           "but a proof that cancels that factor has one there; derive proves claims only about the weight as written")
    assert {k: (c.verdict, c.reason) for k, c in got.items() if k != "q"} == {
        k: ("undecided", why) for k in ("sum1", "shift", "same")}
    # a counterexample certified on a row with two keys still refutes
    assert got["q"].verdict == "refuted" and got["q"].counterexample["n"] >= 2


def test_the_domain_of_a_dropped_subterm_guards_the_counterexample_search():
    f = compile_weight("exp(x_j) / (0/x_j + sum_t(exp(x_t) * (x_t/x_t)))")
    assert domain(f, lambda k: X[i, k] + 1) == [("nonzero", X[i, j] + 1)]
    assert domain(compile_weight("exp(x_j) / sum_t(exp(x_t))"), lambda k: X[i, k]) == []


def test_every_registry_normalizer_drops_nothing():
    from derive.normalizers.registry import get, names

    assert [n for n in names() if get(n).definition_of is not None and dropped(get(n).definition_of)] == []


def test_a_weight_that_drops_a_subterm_is_not_the_builtin_it_reads_as():
    from derive.normalizers.registry import user_entry

    assert user_entry("plain", compile_weight("exp(x_j) / sum_t(exp(x_t))")) == "softmax"
    name = user_entry("zero_over", compile_weight("exp(x_j) / (0/x_j + sum_t(exp(x_t)))"))
    assert name != "softmax"
    from derive.normalizers.properties import decide

    for prop in ("shift_invariant", "shift_effect", "weights_sum_to_one"):
        v = decide(name, prop)
        assert (v.status, v.reason) == ("undecided", _why("x_j = 0", "0/x_j")), prop
