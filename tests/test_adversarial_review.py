"""Adversarial review of issue 8: claims with hand-derived truth that try to fool derive.

A false claim must never be proved, a true one never refuted (undecided is always allowed).
Truth is taken on the domain the spec language documents (docs/spec.md, "Domains"): an
argument that is only sometimes out of the domain is accepted and "counterexamples are then
drawn where it is defined".
"""

from __future__ import annotations

import pytest

from derive.claims.run import DEFAULT_CHECK, check_spec
from derive.spec import parse_spec

def _verdicts(score, symbols, claims, norm="softmax", mask="none", value="v"):
    lines = ['name = "adversarial"', f'score = "{score}"', f'normalizer = "{norm}"', f'mask = "{mask}"',
             f'value = "{value}"', "[symbols]"]
    lines += [f'{k} = "{v}"' for k, v in symbols.items()]
    lines += ["[claims]"] + [f"c{n} = '{c}'" for n, c in enumerate(claims)]
    res = check_spec(parse_spec("\n".join(lines) + "\n", "adversarial.toml"), DEFAULT_CHECK)
    return [c.verdict for c in res.claims]


def _ok(verdict, truth):
    return verdict == "undecided" or verdict == ("proved" if truth else "refuted")


# (score, symbols, claim, truth on the documented domain)
DOMAIN_CASES = [
    # x >= 0 wherever sqrt(x) is real, so sqrt(x)**2 = x = |x| there.
    ("dot(q, k) * sqrt(x)**2", {"x": "scalar"}, 'equivalent("dot(q, k) * abs(x)")', True),
    ("dot(q, k) * sqrt(x) * sqrt(x)", {"x": "scalar"}, 'equivalent("dot(q, k) * abs(x)")', True),
    # x > 0 wherever log(x) is real, so exp(log(x)) = x = |x| there.
    ("dot(q, k) * exp(log(x))", {"x": "scalar"}, 'equivalent("dot(q, k) * abs(x)")', True),
    # On x >= 0 the score is dot(q, k): x does not matter, so depends(x) is false.
    ("dot(q, k) * (1 + sqrt(x)**2 - abs(x))", {"x": "scalar"}, "depends(x)", False),
    ("dot(q, k) * (1 + sqrt(x)**2 - abs(x))", {"x": "scalar"}, "invariant(x)", True),
]


@pytest.mark.slow
@pytest.mark.parametrize("score,symbols,claim,truth", DOMAIN_CASES)
def test_domain_of_auto_evaluated_roots_and_logs(score, symbols, claim, truth):
    # SymPy rewrites sqrt(x)**2, sqrt(x)*sqrt(x) and exp(log(x)) to x; the domain is taken
    # from the spec as written, so no counterexample uses x < 0 (or x = 0 under log).
    [v] = _verdicts(score, symbols, [claim])
    assert _ok(v, truth), (claim, v)


def test_the_domain_is_read_before_sympy_rewrites_it():
    from derive.language.parser import parse
    from derive.language.translate import bindings, translate
    import sympy as sp

    binds = bindings({"x": "scalar", "y": "scalar"})
    x, y = binds["x"].obj, binds["y"].obj
    guards = []
    expr, _ = translate(parse("sqrt(x)**2 + log(y) * x / x + y**-2"), binds, guards=guards)
    assert expr == x + sp.log(y) + y**-2
    assert guards == [("nonnegative", x), ("positive", y), ("nonzero", x), ("nonzero", y)]


def test_a_claim_false_only_outside_the_domain_is_not_refuted():
    # x / x is 1 wherever it is defined: the weights never depend on x.
    assert _verdicts("dot(q, k) + j * x / x", {"x": "scalar"}, ["invariant(x)"]) in (["proved"], ["undecided"])


def test_a_constant_divisor_equal_to_zero_is_bad_input():
    from derive.errors import InputError

    src = 'name = "z"\nscore = "dot(q, k) + j / (log(4) - 2*log(2))"\n'
    with pytest.raises(InputError) as err:
        parse_spec(src, "z.toml")
    assert str(err.value) == "z.toml: key 'score', column 15: division by zero"
