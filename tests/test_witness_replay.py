"""The searcher replays the draws of an earlier search of the same shape: the instances it
judges, and their order, are those a fresh derandomized Hypothesis search judges."""

from __future__ import annotations

from ast import literal_eval
from copy import deepcopy

import pytest
import sympy as sp

import derive.crosscheck.draws as D
import derive.crosscheck.witness as W
from derive.crosscheck.instances import signature
from derive.model.attention import i, j
from derive.model.vectors import Dot, VectorSymbol
from derive.settings import DEFAULT

q, k = VectorSymbol("q"), VectorSymbol("k")
a, b = VectorSymbol("a"), VectorSymbol("b")
s = sp.Symbol("s", positive=True)
SIG = signature(Dot(q, k) * s + i - j)
RENAMED = signature(Dot(a, b) * sp.Symbol("r", positive=True) + i - j)  # the same shape, other names
SIZE, EXAMPLES = (3, 3), 30


@pytest.fixture(autouse=True)
def _fresh():
    saved = dict(D._DRAWN), dict(W._FOUND)
    D._DRAWN.clear()
    W._FOUND.clear()
    yield
    for kept, was in zip((D._DRAWN, W._FOUND), saved):
        kept.clear()
        kept.update(was)


def _judged(sig, accept_at: int | None, examples: int = EXAMPLES):
    """(the instances judged, as text, in order; the one accepted) when the judge says yes to
    the ``accept_at``-th distinct instance (never for None)."""
    order: list = []

    def judge(inst, env) -> bool:
        key = repr((inst.describe(), sorted((x.name, v) for x, v in env.items())))
        if key not in order:
            order.append(key)
        return accept_at is not None and order.index(key) + 1 == accept_at

    found = D.generate(sig, {}, SIZE, examples, judge)
    return order, found and found[0].describe()


def test_a_longer_search_after_a_shorter_one_judges_what_a_fresh_one_judges():
    short, found = _judged(SIG, 4)
    assert len(short) == 4 and found is not None
    longer, _ = _judged(SIG, 9)  # four replayed, the rest from Hypothesis
    D._DRAWN.clear()
    fresh, fresh_found = _judged(SIG, 9)
    assert longer == fresh and short == fresh[:4] and len(fresh) == 9
    again, again_found = _judged(SIG, 9)  # all nine replayed
    assert again == fresh and again_found == fresh_found


def test_a_search_that_finds_nothing_is_replayed_without_hypothesis(monkeypatch):
    first, found = _judged(SIG, None, examples=12)
    assert found is None and len(first) >= 12

    def no_engine(*args, **kwargs):
        raise AssertionError("Hypothesis ran again")

    monkeypatch.setattr(D, "find", no_engine)
    again, found = _judged(SIG, None, examples=12)
    assert again == first and found is None


def test_a_signature_of_the_same_shape_gets_the_same_draws_under_its_names():
    named, _ = _judged(SIG, 7)
    renamed, _ = _judged(RENAMED, 7)  # replayed from SIG's draws
    D._DRAWN.clear()
    fresh, _ = _judged(RENAMED, 7)
    assert renamed == fresh
    names = {"a": "k", "b": "q", "r": "s"}  # a and b drawn where k and q were (their names sorted)
    as_named = [({names.get(key, key): v for key, v in inst.items()}, env) for inst, env in map(literal_eval, renamed)]
    assert as_named == [literal_eval(t) for t in named]


def test_shapes_apart_by_budget_sizes_or_fixed_indices():
    shapes = {D.shape(SIG, {}, 3, 3, 30), D.shape(SIG, {}, 3, 3, 31), D.shape(SIG, {}, 2, 3, 30),
              D.shape(SIG, {j: 2}, 3, 3, 30), D.shape(SIG, {i: 1}, 3, 3, 30),
              D.shape(signature(Dot(q, k) * sp.Symbol("s", real=True) + i - j), {}, 3, 3, 30)}
    assert len(shapes) == 6


def test_find_witness_is_the_same_with_and_without_recorded_draws():
    lhs, rhs = Dot(q, k) * s, Dot(k, q) * s + sp.Rational(1, 10**30) * Dot(q, q) * s
    cfg = DEFAULT.merge(witness_examples=90)
    first = W.find_witness(lhs, rhs, cfg=cfg)
    W._FOUND.clear()
    again = W.find_witness(lhs, rhs, cfg=cfg)  # from the recorded draws
    D._DRAWN.clear()
    W._FOUND.clear()
    fresh = W.find_witness(lhs, rhs, cfg=cfg)
    public = lambda w: {key: v for key, v in w.items() if not key.startswith("_")}
    assert first is not None and public(first) == public(again) == public(fresh)


def test_a_kept_counterexample_is_handed_out_as_a_copy():
    lhs, rhs = Dot(q, k) * s + i, Dot(k, q) * s + j + sp.Rational(1, 10**30) * Dot(q, q) * s
    cfg = DEFAULT.merge(witness_examples=60)
    first = W.find_witness(lhs, rhs, cfg=cfg)
    shown = deepcopy({key: v for key, v in first.items() if not key.startswith("_")})
    first["instance"]["q"][0] = 99
    first["indices"].clear()
    first["_instance"].vectors[q][0] = sp.Integer(99)
    first["_env"].clear()
    again = W.find_witness(lhs, rhs, cfg=cfg)  # kept: no search
    assert {key: v for key, v in again.items() if not key.startswith("_")} == shown
    assert again["_instance"].describe() == shown["instance"]
    assert {x.name: v for x, v in again["_env"].items()} == shown["indices"]
    assert W.certify(lhs, rhs, again["_instance"], again["_env"]) is not None
