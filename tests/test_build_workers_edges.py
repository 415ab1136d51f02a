"""Edge cases met by the parallel document build: results that travel between processes
pickled (shared between documents), the fast path of path limits, and counterexample values
(each of these once failed)."""

from __future__ import annotations

import pytest
import sympy as sp


def test_path_limits_are_taken_at_n_equal_2():
    """path_limit's fast path expands Σ_{t=1}^{n} to two terms but leaves n elsewhere symbolic;
    _certainly_differ then evaluates it at n = 1: two equal limits certified different."""
    from derive.model.attention import M, i, n, t
    from derive.normalizers import limits
    from derive.normalizers.algebra import X
    from derive.normalizers.registry import get

    def W(entry, params, key=None, **_):
        soft = M[i, key] * sp.exp(X[i, key]) / sp.Sum(M[i, t] * sp.exp(X[i, t]), (t, 1, n))
        return soft * (n - 2) + (3 - n) / sp.Integer(2)  # 1/2 for every key when n = 2

    old = limits.weight
    limits.weight = W
    try:
        A, B = (-limits.TAU, -2 * limits.TAU), (-2 * limits.TAU, -limits.TAU)
        la, lb = limits.path_limit(get("softmax"), {}, A), limits.path_limit(get("softmax"), {}, B)
    finally:
        limits.weight = old
    assert la == lb == [sp.Rational(1, 2)] * 2
    assert not limits._certainly_differ(la, lb)


def test_a_counterexample_value_must_meet_every_assumption_of_its_symbol():
    """Parity and the like count too: 1 is no value for an even symbol."""
    import sympy as sp

    from derive.crosscheck.witness import satisfies

    assert not satisfies(sp.Symbol("k", even=True), 1) and satisfies(sp.Symbol("k", even=True), 2)
    assert not satisfies(sp.Symbol("p", prime=True), 1) and satisfies(sp.Symbol("p", prime=True), 3)
    assert satisfies(sp.Symbol("x", real=True), sp.sqrt(2)) and not satisfies(sp.Symbol("x", positive=True), 0)
    assert not satisfies(sp.Symbol("n", integer=True), sp.Rational(1, 2))


@pytest.mark.slow
def test_a_table_cell_shows_the_same_whether_computed_here_or_read_back_from_another_process():
    """Documents built in parallel share table cells pickled (derive.shared), and unpickling
    rebuilds SymPy objects (an unevaluated product comes back evaluated); which document computes
    a cell depends on timing, so every cell and token-equivalence verdict must show the same after
    the round trip."""
    import pickle

    from derive.normalizers import equivalences
    from derive.normalizers.properties import PROPERTIES, derive_property
    from derive.normalizers.registry import names
    from derive.render.latex import tex

    def shown(der):
        v = der.verdict
        eq = tuple(tex(e) for e in der.equality) if der.equality is not None else None
        return (v.status, v.reason, v.method, repr(v.witness), der.value_text(), tuple(der.latex_steps()), eq,
                der.claim)

    for name in names():
        for prop in PROPERTIES:
            der = derive_property(name, prop)
            assert shown(pickle.loads(pickle.dumps(der, protocol=pickle.HIGHEST_PROTOCOL))) == shown(der), (name, prop)
    for k in range(len(equivalences.EQUIVALENCES)):
        v = equivalences.decide(k)
        assert repr(pickle.loads(pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL))) == repr(v)
