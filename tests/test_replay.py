"""The checker of proof certificates (derive.replay), tested as an adversary would.

Each rule is accepted where it applies and rejected where it does not; tampered certificates (a
step changed, a side condition dropped, a rule applied where its premise fails, a factor that
depends on the key taken out of a sum, a divisor that is 0 on some allowed row, a log of a
possibly negative argument) are rejected with the step or the condition named; exact identities
that need large coefficients replay. The certificates here are built with the engine's search
(derive.certify.chain, which imports no SymPy), then edited by hand. Nothing here imports SymPy:
the mutation benchmark (benchmarks/bench_replay_mutants.py) runs this file against every mutant.
"""

from __future__ import annotations

import copy
import json
import sys
from fractions import Fraction

import pytest

from derive.certify.seal import certificate
from derive.replay import FORMAT, RULES, Malformed, Rejected, conditions, replay, replay_text
from derive.replay.definitions import BUILTIN, unfold
from derive.replay.terms import read, show, write

I, J, N, T, U = (("sym", s) for s in "ijntu")
ONE, ZERO, MINUS = ("num", Fraction(1)), ("num", Fraction(0)), ("num", Fraction(-1))
TYPES = {"i": "position", "j": "position", "n": "count", "d": "count", "c": "real", "a": "real",
         "p": "positive", "tau": "real", "s": "real"}
CAUSAL = {"key": "j", "condition": ["cmp", "<=", ["sym", "j"], ["sym", "i"]]}


def num(q) -> tuple:
    return ("num", Fraction(q))


def x(k) -> tuple:
    return ("at", "x", I, k)


def neg(a) -> tuple:
    return ("mul", MINUS, a)


def div(a, b) -> tuple:
    return ("mul", a, ("pow", b, MINUS))


def apply(name: str, score=x, key=J, params=None) -> tuple:
    return ("apply", name, key, ("lam", "t", score(T)), None,
            tuple(("param", k, v) for k, v in sorted((params or {}).items())))


def total(name: str = "softmax", **kw) -> tuple:
    """Σ_u p_u over the keys of the row."""
    return ("sum", "u", ONE, N, apply(name, key=U, **kw))


def make(lhs, rhs, kind="identity", defs=None, types=None, mask=None, rows="nonempty", allowed=(), **extra):
    names = {n for n in _names(lhs) | _names(rhs)}
    defs = {n: BUILTIN[n] for n in names if n in BUILTIN} | (defs or {})
    return certificate(kind, "test", lhs, rhs, {**TYPES, **(types or {})}, mask=mask, rows=rows,
                       definitions=defs, allowed=allowed, extra=extra or None)


def _names(t) -> set:
    if not isinstance(t, tuple):
        return set()
    out = {t[1]} if t and t[0] == "apply" else set()
    for a in t:
        out |= _names(a)
    return out


def rejected(cert, *words) -> str:
    with pytest.raises(Rejected) as exc:
        replay(json.loads(json.dumps(cert)))
    message = str(exc.value)
    for w in words:
        assert w in message, message
    return message


def ok(cert) -> dict:
    return replay(json.loads(json.dumps(cert)))


def step_of(cert, rule: str) -> dict:
    return next(s for s in cert["steps"] if s["rule"] == rule)


# ---- whole claims --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["softmax", "sink", "zero_token"])
def test_shift_claims_of_the_softmax_family(name):
    params = {"s": ("sym", "s")} if name == "sink" else {}
    shifted = apply(name, lambda k: ("add", x(k), ("sym", "c")), params=params)
    plain = apply(name, params=params)
    if name == "softmax":
        assert ok(make(shifted, plain))["conditions"] >= 2
    else:  # a sink logit is not shifted with the scores: false, and the checker says so
        rejected(make(shifted, plain), "do not reduce to one normal form")


def test_weights_sum_to_one_needs_a_nonempty_row():
    assert ok(make(total(), ONE))
    rejected(make(total(), ONE, rows="any"), "side condition", "≠ 0")  # a row with no key sums to 0
    assert ok(make(total(), ONE, rows="any", mask=CAUSAL))  # causal: key i is allowed in row i


def test_the_removable_singularities_never_replay():
    """(x_j² − 1)/((x_j − 1)(x_j + 1)), the same in j and in n, and a sum over t ≠ j divided by:
    each cancels as a rational function, and each has no value on some allowed row."""
    factors = {
        "xj": "(x_j**2 - 1)/((x_j - 1)*(x_j + 1))",
        "key": "(j**2 - 1)/((j - 1)*(j + 1))",
        "count": "(n**2 - 1)/((n - 1)*(n + 1))",
    }
    for name, f in factors.items():
        defs = {name: f"{f} * exp(x_j) / sum_t(exp(x_t))"}
        for mask in (None, CAUSAL):
            cert = make(apply(name, lambda k: ("add", x(k), ("sym", "c"))), apply(name), defs=defs, mask=mask)
            msg = rejected(cert, "side condition", "≠ 0")
            assert {"xj": "x[i,j]", "key": "(j + (-1·1))", "count": "Σ_{r=1}^{n} M[i,r]"}[name] in msg
    loo = {"loo": "exp(x_j) / sum_t(exp(x_t), t != j)"}
    for mask in (None, CAUSAL):
        rejected(make(apply("loo", lambda k: ("add", x(k), ("sym", "c"))), apply("loo"), defs=loo, mask=mask),
                 "[t != j]", "≠ 0")


def test_a_sum_from_the_key_on_is_not_empty_and_one_before_it_may_be():
    after = {"after": "exp(x_j) / sum_t(exp(x_t), t >= j)"}
    assert ok(make(apply("after", lambda k: ("add", x(k), ("sym", "c"))), apply("after"), defs=after))
    before = {"before": "exp(x_j) / (1 + sum_t(exp(x_t), t < j))"}  # 1 + an empty sum: still defined
    assert ok(make(apply("before", lambda k: ("add", x(k), x(ONE))), apply("before", lambda k: ("add", x(ONE), x(k))),
                   defs=before))
    strictly = {"strict": "exp(x_j) / sum_t(exp(x_t), t < j)"}  # empty for j = 1
    rejected(make(apply("strict", lambda k: ("add", x(k), ("sym", "c"))), apply("strict"), defs=strictly), "≠ 0")


def test_k_bias_cancels_by_bilinearity_and_the_factor_out_of_the_sum():
    root = ("pow", ("sqrt", ("sym", "d")), MINUS)
    q, b = ("vec", "q", I), ("vec", "b_K")
    biased = apply("softmax", lambda k: ("mul", ("dot", q, ("add", ("vec", "k", k), b)), root))
    plain = apply("softmax", lambda k: ("mul", ("dot", q, ("vec", "k", k)), root))
    cert = make(biased, plain)
    rules = [s["rule"] for s in cert["steps"]]
    assert {"unfold", "bilinear", "exp_add", "sum_factor"} <= set(rules)
    assert ok(cert)
    # and the same with softmax₁, where it is false: the factor does not cancel against the 1
    rejected(make(apply("softmax1", lambda k: ("mul", ("dot", q, ("add", ("vec", "k", k), b)), root)),
                  apply("softmax1", lambda k: ("mul", ("dot", q, ("vec", "k", k)), root))), "normal form")


def test_exact_identities_with_large_coefficients():
    big = num(2 ** 400)
    y, z = ("sym", "c"), ("sym", "a")
    lhs = ("add", ("mul", ("add", big, y), z), neg(("mul", big, z)))
    assert ok(make(lhs, ("mul", y, z)))
    almost = ("add", ("mul", ("add", big, y), z), neg(("mul", num(2 ** 400 - 1), z)))
    rejected(make(almost, ("mul", y, z)), "normal form")
    tiny = ("mul", num(Fraction(1, 3 ** 200)), ("exp", ("mul", num(3 ** 200), y)))
    assert ok(make(("pow", tiny, num(2)), ("mul", num(Fraction(1, 9 ** 200)), ("pow", ("exp", y), num(2 * 3 ** 200)))))


# ---- tampering ---------------------------------------------------------------------------


def _k_bias():
    root = ("pow", ("sqrt", ("sym", "d")), MINUS)
    q, b = ("vec", "q", I), ("vec", "b_K")
    return make(apply("softmax", lambda k: ("mul", ("dot", q, ("add", ("vec", "k", k), b)), root)),
                apply("softmax", lambda k: ("mul", ("dot", q, ("vec", "k", k)), root)))


def test_a_changed_step_is_rejected_and_named():
    cert = _k_bias()
    k = next(n for n, s in enumerate(cert["steps"]) if s["rule"] == "bilinear")
    bad = copy.deepcopy(cert)
    bad["steps"][k]["result"] = write(("dot", ("vec", "q", I), ("vec", "k", J)))  # drops ⟨q_i, b_K⟩
    rejected(bad, f"step {k + 1} (bilinear", "is not what the rule gives")
    renamed = copy.deepcopy(cert)
    renamed["steps"][k]["rule"] = "exp_add"  # the right result, claimed by the wrong rule
    rejected(renamed, f"step {k + 1} (exp_add", "is not exp")
    moved = copy.deepcopy(cert)
    moved["steps"][k]["at"] = moved["steps"][k]["at"][:-1]  # the right rule at the wrong place
    rejected(moved, f"step {k + 1}")
    unknown = copy.deepcopy(cert)
    unknown["steps"][k]["rule"] = "magic"
    rejected(unknown, "unknown rule 'magic'")


def test_a_dropped_step_leaves_the_sides_apart():
    cert = _k_bias()
    for k in range(1, len(cert["steps"])):
        if cert["steps"][k]["rule"] in ("bilinear", "sum_factor"):
            bad = copy.deepcopy(cert)
            del bad["steps"][k]
            with pytest.raises(Rejected):
                replay(bad)


def test_a_key_dependent_factor_taken_out_of_a_sum_is_rejected():
    cert = make(total(), ONE)
    k = next(n for n, s in enumerate(cert["steps"]) if s["rule"] == "sum_factor")
    s = cert["steps"][k]
    # Σ_u M[i,u] e^{x_u} / Z  →  e^{x_u} · Σ_u M[i,u] / Z: the factor e^{x_u} names the index u
    body = read(["sum", "u", ["num", "1"], ["sym", "n"], ["mul", ["mask", ["sym", "i"], ["sym", "u"]],
                 ["pow", ["sum", "t", ["num", "1"], ["sym", "n"],
                          ["mul", ["mask", ["sym", "i"], ["sym", "t"]], ["exp", ["at", "x", ["sym", "i"], ["sym", "t"]]]]],
                  ["num", "-1"]]]])
    s["result"] = write(("mul", ("exp", x(U)), body))
    rejected(cert, f"step {k + 1} (sum_factor", "names u", "depends on a sum's index")


def test_a_rule_applied_where_its_premise_fails():
    cert = make(("exp", ("log", ("sym", "c"))), ("sym", "c"))  # log(c) for a c that may be ≤ 0
    rejected(cert, "side condition", "c > 0")
    ok(make(("exp", ("log", ("sym", "p"))), ("sym", "p")))  # p declared positive
    # abs(a) = a claimed for a real a of no known sign
    bad = make(("fn", "abs()", ("sym", "p")), ("sym", "p"))
    bad["claim"]["lhs"] = write(("fn", "abs()", ("sym", "a")))
    bad["steps"][0]["at"], bad["steps"][0]["result"] = [], write(("sym", "a"))
    bad["claim"]["rhs"] = write(("sym", "a"))
    rejected(bad, "step 1 (sign", "sign that decides")
    # the mask entry of a key not known to be allowed set to 1
    masked = make(("mask", I, J), ONE, allowed=(J,))
    ok(masked)
    masked["allowed"] = []
    rejected(masked, "step 1 (allowed", "not the mask entry of a key known to be allowed")


def test_a_dropped_side_condition_is_rejected():
    cert = make(total(), ONE)
    for k in range(len(cert["conditions"])):
        bad = copy.deepcopy(cert)
        dropped = bad["conditions"].pop(k)
        rejected(bad, "does not list the side condition", show(read(dropped["term"]), 20)[:10])


def test_a_sum_inside_a_sum_of_the_same_index_knows_nothing_of_the_outer_one():
    """Σ_t M[i,t]·(… M[i,t] / Σ_t M[i,t] e^{x_t} …): inside the inner sum, its t is not the outer
    one, so the outer factor M[i,t] does not make the inner M[i,t] equal to 1. (From outside, the
    inner sum is not empty: it has the outer t among its keys.)"""
    from derive.replay.signs import NONNEG, POS, Scope

    inner = ("sum", "t", ONE, N, ("mul", ("mask", I, T), ("exp", x(T))))
    other = ("sum", "u", ONE, N, ("mul", ("mask", I, U), ("exp", x(U))))
    here = Scope(TYPES, None, False).inside([("t", ONE, N)], [("mask", I, T)])
    assert here.sign(other) & POS and here.sign(inner) & POS  # the outer t is one of their keys
    assert Scope(TYPES, None, False).sign(inner) & (POS | NONNEG) == NONNEG  # any row: maybe empty
    outer = ("sum", "t", ONE, N, ("mul", ("mask", I, T), div(("mask", I, T), inner)))
    bad = make(outer, outer)
    bad["steps"] = [{"side": "lhs", "at": [4, 2, 2, 1, 4, 1], "rule": "allowed", "result": write(ONE)}]
    rejected(bad, "step 1 (allowed", "not the mask entry of a key known to be allowed")


def test_a_listed_condition_must_hold():
    cert = make(("mul", ("sym", "c"), ("pow", ("sym", "c"), MINUS)), ONE)  # c/c = 1 needs c ≠ 0
    rejected(cert, "side condition 1", "c ≠ 0")
    ok(make(("mul", ("sym", "p"), ("pow", ("sym", "p"), MINUS)), ONE))
    ok(make(("mul", ("sym", "c"), ("pow", ("sym", "c"), MINUS)), ONE, types={"c": "nonzero"}))


def test_a_log_of_a_possibly_negative_argument_is_rejected():
    assert ok(make(("log", ("exp", ("sym", "c"))), ("sym", "c")))  # exp(c) > 0
    rejected(make(("log", ("add", ("sym", "p"), neg(ONE))), ("log", ("add", neg(ONE), ("sym", "p")))),
             "side condition", "> 0")
    assert ok(make(("log", ("add", ("sym", "p"), ONE)), ("log", ("add", ONE, ("sym", "p")))))
    rejected(make(("sqrt", ("sym", "c")), ("sqrt", ("sym", "c"))), "≥ 0")
    assert ok(make(("sqrt", ("mul", ("sym", "c"), ("sym", "c"))), ("sqrt", ("pow", ("sym", "c"), num(2)))))


def test_a_definition_that_is_not_the_builtin_is_rejected():
    cert = make(apply("softmax", lambda k: ("add", x(k), ("sym", "c"))), apply("softmax"))
    cert["definitions"]["softmax"] = "exp(x_j) / (1 + sum_t(exp(x_t)))"
    rejected(cert, "is not its definition")
    del cert["definitions"]["softmax"]
    rejected(cert, "states no definition of 'softmax'")


def test_a_side_never_unfolded_is_rejected():
    cert = make(apply("softmax"), apply("softmax"))
    assert ok(cert)
    cert["steps"] = []
    cert["conditions"] = []
    rejected(cert, "never unfolded")


# ---- rules one by one ------------------------------------------------------------------------


def test_every_rule_is_listed_with_its_statement():
    assert set(RULES) == {"unfold", "bilinear", "exp_add", "log_exp", "exp_log", "pow_exp", "sum_linear",
                          "sum_factor", "sum_empty", "sum_split", "cases_same", "sign", "homogeneous", "sqrt_square",
                          "allowed"}
    assert all(isinstance(text, str) and len(text) > 10 for text, _ in RULES.values())


def _one_step(sub, to, rule, types=None, **kw):
    """A certificate of sub = to whose one step rewrites the lhs by ``rule``."""
    cert = make(sub, to, types=types, **kw)
    cert["steps"] = [{"side": "lhs", "at": [], "rule": rule, "result": write(to)}]
    try:
        cert["conditions"] = conditions(cert)
    except Rejected:  # a step meant to be rejected: the conditions stay those of a valid chain
        pass
    return cert


@pytest.mark.parametrize("rule,sub,to", [
    ("unfold", ("sigmoid", ("sym", "c")), div(ONE, ("add", ONE, ("exp", neg(("sym", "c")))))),
    ("unfold", ("softplus", ("sym", "c")), ("log", ("add", ONE, ("exp", ("sym", "c"))))),
    ("unfold", ("tanh", ("sym", "c")),
     div(("add", ("exp", ("mul", num(2), ("sym", "c"))), MINUS), ("add", ("exp", ("mul", num(2), ("sym", "c"))), ONE))),
    ("bilinear", ("dot", ("add", ("vec", "a"), ("mul", num(3), ("vec", "b"))), ("vec", "e")),
     ("add", ("dot", ("vec", "e"), ("vec", "a")), ("mul", num(3), ("dot", ("vec", "b"), ("vec", "e"))))),
    ("exp_add", ("exp", ("add", ("sym", "a"), ("mul", num(2), ("sym", "c")))),
     ("mul", ("exp", ("sym", "a")), ("pow", ("exp", ("sym", "c")), num(2)))),
    ("exp_add", ("exp", ("mul", num(Fraction(1, 2)), ("sym", "c"))), ("exp", ("mul", num(Fraction(1, 2)), ("sym", "c")))),
    ("log_exp", ("log", ("exp", ("add", ("sym", "a"), ONE))), ("add", ONE, ("sym", "a"))),
    ("exp_log", ("exp", ("mul", num(-2), ("log", ("sym", "p")))), ("pow", ("sym", "p"), num(-2))),
    ("pow_exp", ("pow", ("sym", "p"), ("sym", "c")), ("exp", ("mul", ("sym", "c"), ("log", ("sym", "p"))))),
    ("sum_linear", ("sum", "t", ONE, N, ("add", x(T), ("sym", "c"))),
     ("add", ("sum", "t", ONE, N, x(T)), ("sum", "t", ONE, N, ("sym", "c")))),
    ("sum_factor", ("sum", "t", ONE, N, ("mul", ("sym", "c"), x(T))), ("mul", ("sym", "c"), ("sum", "u", ONE, N, x(U)))),
    ("sum_empty", ("sum", "t", ("add", J, ONE), J, x(T)), ZERO),
    ("sum_split", ("sum", "t", ONE, N, x(T)), ("add", ("sum", "t", ONE, J, x(T)), ("sum", "u", ("add", J, ONE), N, x(U)))),
    ("sum_split", ("add", ("sum", "t", ONE, J, x(T)), ("sum", "u", ("add", J, ONE), N, x(U))), ("sum", "t", ONE, N, x(T))),
    ("cases_same", ("cases", (("exp", ("sym", "c")), ("cmp", ">=", ("sym", "c"), ZERO)),
                    (div(("mul", ("exp", ("sym", "c")), ("sym", "p")), ("sym", "p")), ("true",))), ("exp", ("sym", "c"))),
    ("sign", ("fn", "abs()", ("sym", "p")), ("sym", "p")),
    ("sign", ("fn", "max()", ZERO, ("exp", ("sym", "c"))), ("exp", ("sym", "c"))),
    ("sign", ("fn", "min()", ZERO, ("exp", ("sym", "c"))), ZERO),
    ("sqrt_square", ("sqrt", ("mul", num(4), ("pow", ("sym", "a"), num(2)))), ("mul", num(2), ("fn", "abs()", ("sym", "a")))),
    ("homogeneous", ("fn", "max()", ZERO, ("mul", ("exp", ("sym", "c")), ("sym", "a"))),
     ("mul", ("exp", ("sym", "c")), ("fn", "max()", ZERO, ("sym", "a")))),
])
def test_each_rule_accepted_where_it_applies(rule, sub, to):
    ok(_one_step(sub, to, rule))


@pytest.mark.parametrize("rule,sub,to,why", [
    ("unfold", ("exp", ("sym", "c")), ("exp", ("sym", "c")), "not a normalizer applied"),
    ("unfold", ("sigmoid", ("sym", "c")), div(ONE, ("add", ONE, ("exp", ("sym", "c")))), "not what the rule gives"),
    ("bilinear", ("exp", ("sym", "c")), ("exp", ("sym", "c")), "not an inner product"),
    ("bilinear", ("dot", ("add", ("vec", "a"), ("vec", "b")), ("vec", "e")), ("dot", ("vec", "a"), ("vec", "e")),
     "not what the rule gives"),
    ("exp_add", ("exp", ("add", ("sym", "a"), ("sym", "c"))), ("add", ("exp", ("sym", "a")), ("exp", ("sym", "c"))),
     "not what the rule gives"),
    ("exp_add", ("log", ("sym", "p")), ("log", ("sym", "p")), "is not exp"),
    ("log_exp", ("log", ("sym", "p")), ("sym", "p"), "is not log(exp"),
    ("exp_log", ("exp", ("mul", num(Fraction(1, 2)), ("log", ("sym", "p")))), ("sqrt", ("sym", "p")), "integer k"),
    ("exp_log", ("exp", ("sym", "p")), ("sym", "p"), "integer k"),
    ("pow_exp", ("exp", ("sym", "p")), ("exp", ("sym", "p")), "is not a power"),
    ("sum_linear", ("exp", ("sym", "p")), ("exp", ("sym", "p")), "is not a sum"),
    ("sum_factor", ("sum", "t", ONE, N, ("add", x(T), ("sym", "c"))), ("sum", "t", ONE, N, ("add", x(T), ("sym", "c"))),
     "not one term"),
    ("sum_empty", ("sum", "t", J, J, x(T)), ZERO, "not empty"),
    ("sum_split", ("sum", "t", ONE, N, x(T)), ("add", ("sum", "t", ONE, J, x(T)), ("sum", "u", J, N, x(U))),
     "do not split"),
    ("sum_split", ("sum", "t", ONE, N, x(T)), ("sum", "t", ONE, N, x(T)), "relates one sum"),
    ("cases_same", ("cases", (("sym", "c"), ("cmp", ">=", ("sym", "c"), ZERO)), (neg(("sym", "c")), ("true",))),
     ("sym", "c"), "one normal form"),
    ("sign", ("fn", "abs()", ("sym", "a")), ("sym", "a"), "sign that decides"),
    ("sign", ("fn", "max()", ("sym", "a"), ("sym", "c")), ("sym", "a"), "sign that decides"),
    ("sign", ("exp", ("sym", "a")), ("exp", ("sym", "a")), "not abs, max or min"),
    ("homogeneous", ("fn", "max()", ZERO, ("mul", ("sym", "c"), ("sym", "a"))),
     ("mul", ("sym", "c"), ("fn", "max()", ZERO, ("sym", "a"))), "no common positive factor"),
    ("allowed", ("exp", ("sym", "a")), ONE, "not the mask entry"),
    ("sqrt_square", ("sqrt", ("add", ("sym", "a"), ONE)), ("sqrt", ("add", ("sym", "a"), ONE)), "not the square root"),
])
def test_each_rule_rejected_where_it_does_not_apply(rule, sub, to, why):
    rejected(_one_step(sub, to, rule), "step 1", why)


def test_a_sum_split_may_name_the_point_it_splits_at():
    ok(_one_step(("sum", "t", ONE, N, x(T)), ("add", ("sum", "t", ONE, ("sym", "m"), x(T)),
                                              ("sum", "t", ("add", ("sym", "m"), ONE), N, x(T))), "sum_split",
                 types={"m": "integer"}))


def test_alpha_equivalent_sums_are_one_atom_and_different_ranges_are_not():
    assert ok(make(("sum", "t", ONE, N, x(T)), ("sum", "u", ONE, N, x(U))))
    rejected(make(("sum", "t", ONE, N, x(T)), ("sum", "u", num(2), N, x(U))), "normal form")
    rejected(make(("sum", "t", ONE, N, x(T)), ("sum", "u", ONE, N, ("at", "x", U, I))), "normal form")


# ---- limits, instances, masks ----------------------------------------------------------------


def _uniform(name: str, value, **kw):
    tau = ("sym", "tau")
    return make(apply(name, lambda k: neg(tau)), value, kind="limit", allowed=(J,), var="tau", **kw)


def test_abstention_and_the_uniform_limit():
    count = ("sum", "r", ONE, N, ("mask", I, ("sym", "r")))
    assert ok(_uniform("softmax1", ZERO))
    assert ok(_uniform("softmax", div(ONE, count)))
    rejected(_uniform("softmax", ZERO), "the limit is")
    grow = make(("exp", ("sym", "tau")), ZERO, kind="limit", var="tau")
    rejected(grow, "grows without bound")
    wobble = make(("tanh", ("exp", ("sym", "tau"))), ONE, kind="limit", var="tau")
    rejected(wobble, "otherwise than through exp")
    linear = make(("mul", ("sym", "tau"), ("exp", neg(("sym", "tau")))), ZERO, kind="limit", var="tau")
    assert ok(linear)  # τ·e^{−τ} → 0: the exponential wins


def test_a_limit_condition_may_hold_only_for_large_values():
    defs = {"less": "exp(x_j) / (sum_t(exp(x_t)) - 1)"}  # 0 where Σ e^{x_t} = 1, so not for all τ
    assert ok(_uniform("less", ZERO, defs=defs))
    tau1 = ("add", ("sym", "tau"), MINUS)
    rejected(make(div(tau1, tau1), ONE), "≠ 0")  # an identity is for every τ, and τ = 1 is one


def _instance(bq2):
    root = ("pow", ("sqrt", ("sym", "d")), MINUS)
    score = lambda b: lambda k: ("mul", ("dot", ("add", ("vec", "q", I), ("vec", b)), ("vec", "k", k)), root)  # noqa: E731
    inst = {"n": 2, "d": 1, "values": {"i": "2", "j": "1"}, "tables": {}, "functions": {},
            "vectors": {"q": [["0"], ["0"]], "k": [["0"], ["1"]], "b_q": ["0"], "b_q'": [bq2]}, "mask": [[1, 0], [1, 1]]}
    return make(apply("softmax", score("b_q")), apply("softmax", score("b_q'")), kind="instance", instance=inst,
                mask=CAUSAL)


def test_an_instance_is_evaluated_in_ball_arithmetic():
    cert = _instance("1")
    cert["steps"], cert["conditions"] = [], []
    assert ok(cert)["bits"] == 64
    same = _instance("0")  # b_q' = b_q: the weights are equal
    same["steps"], same["conditions"] = [], []
    rejected(same, "not certainly different")
    missing = copy.deepcopy(cert)
    del missing["claim"]["instance"]["vectors"]["k"]
    with pytest.raises(Malformed, match="does not give what its terms use"):
        replay(missing)


def test_masks_that_allow_the_same_keys():
    def keys(a, b):
        return make(ZERO, ZERO, kind="same_keys", same_keys={"key": "j", "lhs": a, "rhs": b})

    causal = ["cmp", "<=", ["sym", "j"], ["sym", "i"]]
    assert ok(keys(causal, ["cmp", ">=", ["sym", "i"], ["sym", "j"]]))
    assert ok(keys(causal, ["or", ["cmp", "<=", ["sym", "j"], ["num", "1"]], causal]))  # prefix_lm(1) is causal
    window = ["cmp", "<", ["fn", "abs()", ["add", ["sym", "i"], ["mul", ["num", "-1"], ["sym", "j"]]]], ["num", "3"]]
    assert ok(keys(window, ["and", ["cmp", "<", ["add", ["sym", "i"], ["mul", ["num", "-1"], ["sym", "j"]]], ["num", "3"]],
                            ["cmp", ">", ["add", ["sym", "i"], ["mul", ["num", "-1"], ["sym", "j"]]], ["num", "-3"]]]))
    rejected(keys(causal, ["true"]), "holds where")
    rejected(keys(causal, ["or", ["cmp", "<=", ["sym", "j"], ["num", "2"]], causal]), "holds where")


# ---- reading -------------------------------------------------------------------------------


@pytest.mark.parametrize("edit,why", [
    (lambda c: c.update(format="derive-certificate/0"), "unknown certificate format"),
    (lambda c: c["claim"].update(kind="theorem"), "unknown claim kind"),
    (lambda c: c["claim"].update(lhs=["frobnicate", 1]), "unknown term head"),
    (lambda c: c["claim"].update(lhs=["num", "one"]), "bad 'num' term"),
    (lambda c: c["claim"].update(lhs=["sym", "#0"]), "expected a name"),
    (lambda c: c["symbols"].update(c="complex"), "symbol type"),
    (lambda c: c["steps"][0].update(side="middle"), "side must be lhs or rhs"),
    (lambda c: c["steps"][0].update(at=[9, 9]), "does not lead to a subterm"),
    (lambda c: c["conditions"].append({"kind": "odd", "term": ["num", "1"], "binders": [], "guards": []}),
     "unknown kind"),
    (lambda c: c.pop("steps"), "needs 'steps'"),
])
def test_a_malformed_certificate_is_not_a_rejection(edit, why):
    cert = make(total(), ONE)
    edit(cert)
    with pytest.raises(Malformed) as exc:
        replay(cert)
    assert why in str(exc.value)


def test_free_names_and_substitution_respect_binders():
    from derive.replay.terms import free, subst

    body = ("sum", "t", ONE, N, ("mul", x(T), ("sym", "c")))
    assert free(body) == {"i", "n", "c"}
    assert free(apply("softmax")) == {"i", "j"} and free(apply("softmax", params={"s": ("sym", "s")})) >= {"s"}
    renamed = subst(body, {"c": T})  # t must not be captured by the sum
    assert renamed[1] != "t" and free(renamed) == {"i", "n", "t"}
    assert subst(body, {"t": ONE}) == body  # a bound name is not replaced


def test_json_text_and_round_trips():
    cert = _k_bias()
    assert replay_text(json.dumps(cert))["steps"] == len(cert["steps"])
    with pytest.raises(Malformed, match="not JSON"):
        replay_text("{")
    for s in cert["steps"]:
        assert write(read(s["result"])) == s["result"]
    assert cert["format"] == FORMAT


def test_the_checker_reads_every_builtin_as_derive_reads_it():
    """Each built-in's formula unfolds without error or is outside the checker's language by
    name (max, abs and relu are known by name only; products and maxima over keys are atoms)."""
    for name, text in BUILTIN.items():
        t = unfold(text, J, ("lam", "t", x(T)), ("lam", "t", ("at", "y", I, T)), {p: ("sym", p) for p in
                   ("s", "s_star", "b", "zeta", "gamma", "c", "eps")})
        assert t[0] == "mul" and t[1] == ("mask", I, J), name


def _value(t, env) -> Fraction:
    h = t[0]
    if h == "num":
        return t[1]
    if h == "sym":
        return env[t[1]]
    if h == "pow":
        return _value(t[1], env) ** int(t[2][1])
    out = Fraction(0 if h == "add" else 1)
    for a in t[1:]:
        out = out + _value(a, env) if h == "add" else out * _value(a, env)
    return out


def test_normal_forms_agree_with_exact_arithmetic():
    """Random rational expressions (+, ·, integer powers, inverses): the normal form evaluated at a
    rational point is the expression's value there, computed with Fraction."""
    import random

    from flint import fmpq

    from derive.replay.algebra import Ring, fraction

    rng = random.Random(33)
    names = ("a", "c", "s")

    def gen(depth):
        if depth == 0 or rng.random() < 0.25:
            return ("sym", rng.choice(names)) if rng.random() < 0.7 else num(Fraction(rng.randint(-3, 3), rng.randint(1, 3)))
        if rng.random() < 0.3:
            return ("pow", gen(depth - 1), num(rng.choice([-2, -1, 2, 3])))
        return (rng.choice(["add", "mul"]), *(gen(depth - 1) for _ in range(rng.randint(2, 3))))

    checked = 0
    for _ in range(200):
        t, ring = gen(4), Ring()
        env = {n: Fraction(rng.randint(-9, 9), rng.randint(1, 5)) for n in names}
        try:
            expected = _value(t, env)
        except ZeroDivisionError:
            continue
        value = ring.nf(t)._up()  # a divisor whose normal form is 0 would be 0 at every point
        point = [fmpq(*(lambda q: (q.numerator, q.denominator))(env[ring.terms[k][1]])) if k < len(ring.terms) else fmpq(0)
                 for k in range(ring.ctx.nvars())]
        den = value.den(*point)
        assert den != 0, show(t)  # the reduced denominator divides the written one
        assert fraction(value.num(*point) / den) == expected, show(t)
        checked += 1
    assert checked >= 150


def test_log_of_one_and_exp_of_zero_are_the_facts_about_functions():
    assert ok(make(("log", ONE), ZERO)) and ok(make(("exp", ZERO), ONE))
    rejected(make(("log", ONE), ONE), "do not reduce to one normal form")
    rejected(make(("exp", ZERO), ZERO), "do not reduce to one normal form")
    rejected(make(("log", ("sym", "p")), ZERO), "do not reduce to one normal form")


def test_a_comparison_is_read_as_the_difference_of_its_sides():
    assert ok(make(("ind", ("cmp", "<=", J, I)), ("ind", ("cmp", ">=", I, J))))
    rejected(make(("ind", ("cmp", "<=", J, I)), ("ind", ("cmp", "<=", J, N))), "do not reduce to one normal form")
    rejected(make(("ind", ("cmp", "<=", J, I)), ("ind", ("cmp", "<", J, I))), "do not reduce to one normal form")


def test_a_max_over_keys_needs_a_nonempty_range():
    for hi, fine in ((J, True), (("add", J, MINUS), False), (N, True)):
        m = ("max_t", "t", ONE, hi, x(T))
        if fine:
            assert ok(make(m, m))
        else:
            rejected(make(m, m), "side condition", "nonempty set of keys")


def test_a_sum_of_zeros_is_zero():
    zeros = ("sum", "t", ONE, N, ("add", x(T), neg(x(T))))
    for rhs, fine in ((ZERO, True), (ONE, False)):
        cert = make(zeros, rhs)
        cert["steps"], cert["conditions"] = [], []  # no rule: the normal form alone
        if fine:
            assert ok(cert)
        else:
            rejected(cert, "do not reduce to one normal form")


def test_a_limit_is_free_of_its_variable_and_its_divisors_nonzero_for_large_values():
    tau = ("sym", "tau")
    rejected(make(("exp", neg(tau)), tau, kind="limit", var="tau"), "free of its variable")
    ce = ("mul", ("sym", "c"), ("exp", tau))  # 0 for every τ when c = 0
    rejected(make(div(ce, ce), ONE, kind="limit", var="tau"), "side condition", "≠ 0")
    pe = ("mul", ("sym", "p"), ("exp", tau))
    assert ok(make(div(pe, pe), ONE, kind="limit", var="tau"))


def test_a_step_inside_a_normalizer_application_is_rejected():
    cert = make(apply("softmax"), apply("softmax"))
    inside = {"side": "lhs", "at": [3, 2], "rule": "sum_linear", "result": write(x(T))}
    cert["steps"] = [inside, *cert["steps"]]
    rejected(cert, "step 1", "inside a normalizer application")


def test_a_condition_inside_a_sum_holds_over_its_whole_range():
    t1 = ("add", T, MINUS)  # 0 at t = 1, nonzero at t = n + 1
    s = ("sum", "t", ONE, ("add", N, ONE), ("pow", t1, MINUS))
    rejected(make(s, s), "side condition", "≠ 0")
    s2 = ("sum", "t", num(2), ("add", N, ONE), ("pow", t1, MINUS))
    assert ok(make(s2, s2))


def _exact(t, env, inst) -> Fraction:
    """A reference evaluator of rational terms with indices (for the ball evaluator's test)."""
    h = t[0]
    if h == "num":
        return t[1]
    if h == "sym":
        return Fraction(env[t[1]] if t[1] in env else inst["values"].get(t[1], inst.get(t[1])))
    if h == "at":
        return Fraction(inst["tables"][t[1]][int(_exact(t[2], env, inst)) - 1][int(_exact(t[3], env, inst)) - 1])
    if h == "mask":
        return Fraction(inst["mask"][int(_exact(t[1], env, inst)) - 1][int(_exact(t[2], env, inst)) - 1])
    if h == "ind":
        c = t[1]
        if c[0] == "not":
            return 1 - _exact(("ind", c[1]), env, inst)
        a, b = _exact(c[2], env, inst), _exact(c[3], env, inst)
        return Fraction({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[c[1]])
    if h == "sum":
        lo, hi = int(_exact(t[2], env, inst)), int(_exact(t[3], env, inst))
        if hi < lo - 1:  # Karr's convention, SymPy's: the sum from b + 1 to a − 1, negated
            return -_exact(("sum", t[1], num(hi + 1), num(lo - 1), t[4]), env, inst)
        return sum((_exact(t[4], {**env, t[1]: k}, inst) for k in range(lo, hi + 1)), Fraction(0))
    return _arith(t, env, inst)


def _arith(t, env, inst) -> Fraction:
    if t[0] == "pow":
        return _exact(t[1], env, inst) ** int(t[2][1])
    out = Fraction(0 if t[0] == "add" else 1)
    for a in t[1:]:
        out = out + _exact(a, env, inst) if t[0] == "add" else out * _exact(a, env, inst)
    return out


def test_the_instance_evaluator_agrees_with_exact_arithmetic():
    """Random terms of tables, the mask, indices, comparisons and sums over index ranges (from 1,
    or from a key on): each ball the checker computes contains the exact value and is narrow."""
    import random

    from derive.replay.evaluate import _Eval

    rng = random.Random(7)
    n = 4
    inst = {"n": n, "d": 1, "values": {"i": "3", "j": "2", "c": "-5/3"}, "functions": {}, "vectors": {},
            "tables": {"x": [[str(Fraction(rng.randint(-9, 9), rng.randint(1, 4))) for _ in range(n)] for _ in range(n)]},
            "mask": [[int(c <= r) for c in range(n)] for r in range(n)]}
    ops = ("<", "<=", ">", ">=", "==", "!=")

    def gen(depth, keys):
        if depth == 0 or rng.random() < 0.2:
            k = rng.choice(keys)
            return rng.choice([x(k), ("mask", I, k), ("sym", "c"), ("sym", "n"), k,
                               num(Fraction(rng.randint(-3, 3), rng.randint(1, 3)))])
        r = rng.random()
        if r < 0.2:
            v = f"t{depth}"
            return ("sum", v, rng.choice([ONE, J, ("add", J, ONE)]), rng.choice([N, I, ("add", I, MINUS), ONE]),
                    gen(depth - 1, keys + [("sym", v)]))
        if r < 0.35:
            c = ("cmp", rng.choice(ops), rng.choice(keys), rng.choice(keys))
            return ("mul", ("ind", c if rng.random() < 0.7 else ("not", c)), gen(depth - 1, keys))
        if r < 0.45:
            return ("pow", gen(depth - 1, keys), num(rng.choice([2, 3])))
        return (rng.choice(["add", "mul"]), *(gen(depth - 1, keys) for _ in range(rng.randint(2, 3))))

    for _ in range(120):
        t = gen(4, [I, J])
        expected = _exact(t, {}, inst)
        ball = _Eval(inst, {}).run(t, {})
        assert (ball - _ball(expected)).contains(0) and ball.rad() < 1e-9 * (1 + abs(expected)), (show(t), ball)


def _ball(q: Fraction):
    from flint import arb

    return arb(q.numerator) / arb(q.denominator)


def test_the_instance_evaluator_rejects_what_it_cannot_decide():
    from derive.replay.evaluate import _Eval

    inst = {"n": 2, "d": 1, "values": {"i": "1", "c": "0"}, "tables": {"x": [["1", "2"], ["3", "4"]]}, "vectors": {}, "functions": {}, "mask": [[1, 0], [1, 1]]}
    ev = _Eval(inst, {})
    for t, why in ((("pow", ("sym", "c"), MINUS), "may be 0"), (("log", ("sym", "c")), "not certainly in its domain"),
                   (("sqrt", ("add", ("sym", "c"), MINUS)), "not certainly in its domain"),
                   (("pow", ONE, num("1/2")), "not an integer"), (("sym", "zz"), "no value of zz"),
                   (("at", "x", ("mul", I, num("1/2")), ONE), "not an integer"),
                   (("at", "x", I, ZERO), "no entry 0"), (("mask", I, ("add", N, ONE)), "no entry 3"), (("cases", (ONE, ("true",))), "does not evaluate")):
        with pytest.raises(Rejected) as exc:
            ev.run(t, {})
        assert why in str(exc.value), (t, str(exc.value))
    assert float(ev.run(("exp", ZERO), {}).mid()) == 1.0 and ev.run(("sqrt", num(4)), {}).contains(2)
    assert float(ev.run(("log", ("exp", num(3))), {}).mid()) == pytest.approx(3.0)


def test_a_sum_whose_range_may_run_backwards_gives_no_facts_about_its_index():
    """By Karr's convention (SymPy's) Σ_{t=5}^{1} f(t) = −Σ_{t=2}^{4} f(t): its index is not between
    its written ends, so a divisor t − 3 is not shown nonzero by 5 ≤ t ≤ 1."""
    t3 = ("add", T, num(-3))
    for lo, hi in ((num(5), ONE), (("add", J, num(2)), I)):
        rejected(make(("sum", "t", lo, hi, div(t3, t3)), ("sum", "t", lo, hi, ONE)), "side condition", "(t + -3) ≠ 0")
    four = ("add", T, num(-4))
    assert ok(make(("sum", "t", num(5), ("add", N, num(4)), div(four, four)), ("sum", "t", num(5), ("add", N, num(4)), ONE)))


def test_an_allowed_key_is_not_the_index_of_a_sum_of_the_same_name():
    assert ok(make(("mask", I, T), ONE, mask=CAUSAL, allowed=[T]))
    rejected(make(("sum", "t", ONE, N, ("mask", I, T)), ("sum", "t", ONE, N, ONE), mask=CAUSAL, allowed=[T]),
             "do not reduce to one normal form")


def test_sign_rules_of_log_squares_inner_products_and_products():
    p, c, q, k = ("sym", "p"), ("sym", "c"), ("vec", "q", I), ("vec", "k", J)
    same = lambda t: make(t, t)  # noqa: E731 - only the side conditions can fail
    rejected(same(("log", ("log", p))), "side condition", "log(p) > 0")  # log p < 0 for p < 1
    assert ok(same(("sqrt", ("dot", q, q))))
    rejected(same(("sqrt", ("dot", q, k))), "side condition", "≥ 0")
    rejected(same(("pow", ("mul", p, neg(("pow", c, num(2)))), MINUS)), "side condition", "≠ 0")  # 0 at c = 0
    assert ok(same(("pow", ("mul", p, neg(("exp", c))), MINUS)))
