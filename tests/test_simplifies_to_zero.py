"""``simplifies_to_zero``: ``sympy.simplify(e) == 0``, with the call skipped only where the answer is sure."""

import sympy as sp

from derive.prove.memo import _nonzero_at_a_point, simplifies_to_zero

a, b = sp.Symbol("a", real=True), sp.Symbol("b", real=True)
K = sp.Symbol("K", integer=True, positive=True)
c = sp.Symbol("c", positive=True)
neg = sp.Symbol("q", negative=True)


def test_zero_in_disguise_is_zero():
    for e in (sp.S.Zero, a - a, sp.sin(a) ** 2 + sp.cos(a) ** 2 - 1, sp.log(sp.exp(a)) - a, sp.sqrt(c ** 2) - c,
              sp.exp(a + b) - sp.exp(a) * sp.exp(b), sp.Abs(neg) + neg):
        assert simplifies_to_zero(e) is True, e
        assert not _nonzero_at_a_point(e), e


def test_nonzero_somewhere_is_not_zero_and_agrees_with_simplify():
    for e in (K - 1, sp.exp(a) - 1, 1 - sp.exp(a - b), K * sp.exp(a) - sp.exp(a), a ** 2, c - 1, sp.Abs(a) - a,
              sp.sqrt(a ** 2) - a):
        assert simplifies_to_zero(e) is False, e
        assert simplifies_to_zero(e) == (sp.simplify(e) == 0), e


def test_a_point_outside_the_domain_is_never_used():
    # a negative symbol gets a negative value: |q| + q is 0 there (a positive value would make it 2q ≠ 0)
    assert not _nonzero_at_a_point(sp.Abs(neg) + neg)
    # an assumption the chosen value lacks (odd; the first integer value is 2): no point, simplify decides
    odd = sp.Symbol("o", odd=True)
    assert not _nonzero_at_a_point(odd - 2)
    assert simplifies_to_zero(odd - 2) is False
    even = sp.Symbol("e", even=True)  # 2 is even: the point is in the domain
    assert _nonzero_at_a_point(even - 1)
