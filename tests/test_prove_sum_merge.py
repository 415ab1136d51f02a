"""merge_sums merges sums as sympy's sum_simplify does (the same expression, byte for byte, where the
summands are in SymPy's simplest form) with fewer simplify calls, and never simplifies a summand."""

import pytest
import sympy as sp
from sympy.simplify.simplify import sum_simplify

import derive.prove.sum_merge as sums
from derive.prove.sum_merge import merge_sums

t, u, n, m, k = sp.symbols("t u n m k", integer=True, positive=True)
a, c = sp.symbols("a c", real=True)
f, g = sp.Function("f"), sp.Function("g")
S = sp.Sum

CASES = [
    S(f(t), (t, 1, n)) + S(f(t), (t, n + 1, m)),  # adjacent ranges, one summand: one sum
    S(f(t), (t, n + 1, m)) + S(f(t), (t, 1, n)),  # … in the other order
    S(f(t), (t, 1, n)) + S(g(t), (t, n + 1, m)),  # adjacent, different summands: two sums
    S(f(t), (t, 1, n)) + S(g(t), (t, 1, n)),  # the same limits: one sum of f + g
    S(f(t), (t, 1, n)) + S(f(u), (u, n + 1, m)),  # adjacent, but another index
    2 * S(f(t), (t, 1, n)) + 3 * S(f(t), (t, 1, n)) + S(f(t), (t, 1, n)),  # collected by Add
    a * S(f(t), (t, 1, n)) - a * S(f(t), (t, 1, n)) + c,  # cancels to c
    a * S(f(t), (t, 1, n)) * S(g(u), (u, 1, m)) + S(f(t), (t, n + 1, k)),  # a product of two sums
    S(f(t) * g(u), (t, 1, n), (u, 1, m)) + S(f(t), (t, 1, n)),  # two limits
    sp.exp(S(f(t), (t, 1, n)) + S(f(t), (t, n + 1, m))),  # sums inside a function
    (S(sp.exp(a * t), (t, 1, n)) + S(sp.exp(a * t), (t, n + 1, m)) + S(t, (t, 1, n))) / (1 + S(g(t), (t, 1, m))),
    S(2 * f(t) - f(t), (t, 1, n)) + S(f(t), (t, n + 1, m)) + S(g(t), (t, m + 1, k)) + S(g(t), (t, 1, m)),
    a + c,  # no sum at all
]


@pytest.mark.parametrize("expr", CASES, ids=range(len(CASES)))
def test_merge_sums_is_sum_simplify(expr):
    assert sp.srepr(merge_sums(expr)) == sp.srepr(sum_simplify(expr))


def test_a_summand_is_not_simplified_but_the_proof_still_closes():
    """Σ(sin² t + cos² t) − n: Sum._eval_simplify would make the summand 1; merge_sums leaves it (no
    simplify in the pass) and the proof's last pass, simplify of the whole, reaches 0."""
    e = S(sp.sin(t) ** 2 + sp.cos(t) ** 2, (t, 1, n)) - n
    assert S(sp.sin(t) ** 2 + sp.cos(t) ** 2, (t, 1, n))._eval_simplify() == S(1, (t, 1, n))
    merged = merge_sums(e)
    assert merged != 0 and merged.has(sp.sin)
    assert equality.normal_form(e)[0] == 0


@pytest.mark.parametrize("expr", CASES[:4] + CASES[5:8] + CASES[10:12], ids=range(9))
def test_merged_equals_the_input_at_concrete_ranges(expr):
    """Every step is an equality: at n, m, k = 3, 5, 7 and f, g concrete, both sides have one value."""
    at = {n: 3, m: 5, k: 7, a: sp.Rational(1, 3), c: 2}
    concrete = {f: sp.Lambda(t, t ** 2 + 1), g: sp.Lambda(t, 3 * t - 2)}

    def value(e):
        return sp.nsimplify(e.subs(at).replace(f, concrete[f]).replace(g, concrete[g]).doit())

    merged = merge_sums(expr)
    assert sp.simplify(value(merged) - value(expr)) == 0


def test_adjacent_ranges_merge_and_others_do_not():
    assert merge_sums(CASES[0]) == S(f(t), (t, 1, m))
    assert len(merge_sums(CASES[2]).atoms(sp.Sum)) == 2


def test_summands_are_compared_only_for_adjacent_ranges(monkeypatch):
    """sum_add's second method (a simplify of the summands' difference) runs only for pairs whose
    ranges touch: here one ordered pair of the four sums' twelve."""
    calls = []
    real = sums.sum_add

    def spy(x, y, method):
        calls.append(method)
        return real(x, y, method)

    monkeypatch.setattr(sums, "sum_add", spy)
    e = S(f(t), (t, 1, n)) + S(g(t), (t, n + 1, m)) + S(t * f(t), (t, 1, k)) + S(f(u) ** 2, (u, 2, m))
    assert sp.srepr(merge_sums(e)) == sp.srepr(sum_simplify(e))
    assert calls.count(1) == 2  # (Σ_1^n f, Σ_{n+1}^m g) and the reverse
    assert calls.count(0) == 12


# -- the last pass of a proof: cancel first, simplify when cancelling does not give 0 ------------

from derive.prove import equality  # noqa: E402

x, y = sp.symbols("x y", positive=True)


def test_the_last_pass_takes_a_cancelled_zero_without_simplify(monkeypatch):
    def no_simplify(e):
        raise AssertionError("simplify called although cancel gives 0")

    monkeypatch.setattr(equality.sp, "simplify", no_simplify)
    e = S(f(t), (t, 1, n)) / (x * S(f(t), (t, 1, n)) + S(f(t), (t, 1, n))) - 1 / (x + 1)
    assert equality._simplify(e) == 0


def test_the_last_pass_still_simplifies_what_cancel_leaves():
    assert sp.cancel(sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1) != 0
    assert equality._simplify(sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1) == 0
    assert equality._simplify(sp.exp(x) - y) == sp.exp(x) - y  # not 0: simplify's form, unchanged


def test_a_false_identity_is_not_zeroed():
    """Softmax's weight against its complement: cancel leaves a difference, and so does simplify."""
    e = sp.exp(x) / (sp.exp(x) + 1) - 1 / (1 + sp.exp(x))
    assert sp.cancel(e) == (sp.exp(x) - 1) / (sp.exp(x) + 1)
    assert equality._simplify(e) == sp.tanh(x / 2)  # simplify's form, as before
