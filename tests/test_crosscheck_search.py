"""The search phase of a cross-check compares exactly the instances Hypothesis draws."""

from __future__ import annotations

import sympy as sp

from derive.crosscheck.check import _hypothesis_search, cross_check, searched_draws
from derive.settings import DEFAULT

X = sp.Symbol("x", real=True)
D, N = sp.symbols("d n", integer=True, positive=True)


def test_the_draws_compared_are_hypothesis_draws_whatever_the_test_does():
    seen: list = []

    def slow_body(*draw):  # a test that passes after some work: Hypothesis draws the same
        seen.append(draw)
        sum(range(20000))

    _hypothesis_search(20, 64, 64, slow_body)
    assert tuple(seen) == searched_draws(20, 64, 64)
    assert len(set(seen)) == 20  # 20 distinct instances, as the documents count them
    assert searched_draws(20, 8, 64) != searched_draws(20, 64, 64)


def test_a_disagreement_only_the_search_meets_is_found_and_shrunk():
    # 1 at d = n = 1 only: the fixed instances (random sizes up to 64) miss it, Hypothesis's
    # draws start at the smallest sizes.
    bump = sp.Pow(0, (D - 1) ** 2 + (N - 1) ** 2, evaluate=False)
    res = cross_check("bump", X + bump, X, DEFAULT.merge(examples=5))
    assert not res.passed and res.examples == 5
    assert res.witness["instance"]["d"] == 1 and res.witness["instance"]["n"] == 1
    assert res.witness["lhs"][0] == res.witness["rhs"][0] + 1


def test_a_passing_check_counts_the_searched_instances():
    res = cross_check("square", (X + 1) ** 2, X**2 + 2 * X + 1, DEFAULT.merge(examples=7))
    assert res.passed and res.searched == len(searched_draws(7, 64, 64)) == 7
