"""The certificates of the normalizer properties' proofs (the table of docs/normalizers.md,
``derive normalizer`` and the claims on a spec's normalizer).

Each identity property is stated with the normalizer applied by name to a row of scores
x[i, t] (the checker unfolds the registry's formula itself), for any non-empty set of allowed
keys: row-shift invariance p(x + c) = p(x), the effect of a shift, Σ_u p_u = 1, the ratio
p_1/p_2 = exp(x_1 − x_2) of two allowed keys, the K bias, and the overflow-free form equal to
the definition. Abstention and the limit along the uniform path are limits as τ → ∞ of the
weight of an allowed key on the row x = −τ·1. The other properties (ranges, signs of
derivatives, limits along every path) are outside the checker's language: "proved (not
replayed)".
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from derive.certify.seal import certificate, outside, seal
from derive.certify.sympy_terms import Outside, Terms

__all__ = ["certify_property"]

ONE = ("num", Fraction(1))
I_, J_, N_, T_ = ("sym", "i"), ("sym", "j"), ("sym", "n"), ("sym", "t")
TYPES = {"i": "position", "j": "position", "n": "count", "d": "count"}


def _x(k):
    return ("at", "x", I_, k)


def certify_property(entry, prop: str, params: dict, der):
    """The seal of a proved property ``prop`` of ``entry`` with ``params`` (SymPy values)."""
    build = _BUILD.get(prop)
    if build is None:
        return outside(f"{prop.replace('_', ' ')} is not stated in the checker's language "
                       "(a range, a sign or a limit along every path)")
    tr = Terms()
    try:
        return build(entry, params, der, tr)
    except Outside as exc:
        return outside(str(exc))


def _apply(tr, entry, params, score=_x, key=J_, name=None):
    from derive.normalizers.registry import get

    e = get(name) if name else entry
    args = tuple(("param", p, tr.term(v)) for p, v in sorted(params.items()))
    second = ("lam", "t", ("at", "y", I_, T_)) if e.definition_of.score2 else None
    return ("apply", e.name, key, ("lam", "t", score(T_)), second, args)


def _seal(entry, tr, kind, text, lhs, rhs, others=(), allowed=(), extra=None):
    from derive.normalizers.registry import get

    types = {**TYPES, **tr.types}
    defs = {e: get(e).formula for e in (entry.name, *others)}
    cert = certificate(kind, text, lhs, rhs, types, rows="nonempty", definitions=defs, extra=extra, allowed=allowed)
    return seal(cert)


def _w(t):
    from derive.replay.terms import write

    return write(t)


def _shift(entry, params, der, tr):
    c = ("sym", "c")
    tr.types["c"] = "real"
    lhs = _apply(tr, entry, params, lambda k: ("add", _x(k), c))
    return _seal(entry, tr, "identity", f"{entry.name}: p(x + c) = p(x)", lhs, _apply(tr, entry, params))


def _shift_effect(entry, params, der, tr):
    if entry.shift_effect is None:  # proved as "a shift changes nothing"
        return _shift(entry, params, der, tr)
    c = sp.Symbol("c", real=True)
    other, new = entry.shift_effect(c, params)
    lhs = _apply(tr, entry, params, lambda k: ("add", _x(k), tr.term(c)))
    rhs = _apply(tr, entry, new, name=other)
    return _seal(entry, tr, "identity", f"{entry.name}: a shift by c is {other}", lhs, rhs, others=(other,))


def _sum_to_one(entry, params, der, tr):
    lhs = ("sum", "u", ONE, N_, _apply(tr, entry, params, key=("sym", "u")))
    return _seal(entry, tr, "identity", f"{entry.name}: Σ_u p_u = 1", lhs, ONE)


def _ratio(entry, params, der, tr):
    one, two = ("num", Fraction(1)), ("num", Fraction(2))
    lhs = ("mul", _apply(tr, entry, params, key=one), ("pow", _apply(tr, entry, params, key=two), ("num", Fraction(-1))))
    rhs = ("exp", ("add", _x(one), ("mul", ("num", Fraction(-1)), _x(two))))
    return _seal(entry, tr, "identity", f"{entry.name}: p_1/p_2 = exp(x_1 − x_2)", lhs, rhs, allowed=(one, two))


def _k_bias(entry, params, der, tr):
    q, k, b = (lambda t: ("vec", "q", I_)), (lambda t: ("vec", "k", t)), ("vec", "b_K")
    root = ("pow", ("sqrt", ("sym", "d")), ("num", Fraction(-1)))
    lhs = _apply(tr, entry, params, lambda t: ("mul", ("dot", q(t), ("add", k(t), b)), root))
    rhs = _apply(tr, entry, params, lambda t: ("mul", ("dot", q(t), k(t)), root))
    return _seal(entry, tr, "identity", f"{entry.name}: a key bias b_K cancels", lhs, rhs)


def _stable(entry, params, der, tr):
    from derive.normalizers.overflow import derive_overflow_free

    form = derive_overflow_free(entry, params)
    if form.own or form.form is None:
        raise Outside("the definition is its own overflow-free form: nothing to replay")
    return _seal(entry, tr, "identity", f"{entry.name}: the overflow-free form is the definition",
                 tr.term(form.form), _apply(tr, entry, params))


def _uniform(entry, params, der, tr, value=None):
    tau = ("sym", "tau")
    tr.types["tau"] = "real"
    lhs = _apply(tr, entry, params, lambda k: ("mul", ("num", Fraction(-1)), tau))
    if value is None:
        limit = der.value
        if not isinstance(limit, sp.Basic):
            raise Outside("the limit is not an expression")
        count = ("sum", "r", ONE, N_, ("mask", I_, ("sym", "r")))
        n_i = sp.Symbol("N_i", integer=True, positive=True)
        value = tr.term(limit.xreplace({n_i: sp.Symbol("N#", integer=True, positive=True)}))
        value = _put(value, ("sym", "N#"), count)
        tr.types.pop("N#", None)
    return _seal(entry, tr, "limit", f"{entry.name}: the weight of an allowed key on x = −τ·1 as τ → ∞",
                 lhs, value, allowed=(J_,), extra={"var": "tau"})


def _put(t, old, new):
    if t == old:
        return new
    return tuple(_put(a, old, new) if isinstance(a, tuple) else a for a in t)


def _abstain(entry, params, der, tr):
    return _uniform(entry, params, der, tr, value=("num", Fraction(0)))


_BUILD = {"shift_invariant": _shift, "shift_effect": _shift_effect, "weights_sum_to_one": _sum_to_one,
          "ratio_identity": _ratio, "k_bias_cancels": _k_bias, "stable_form": _stable,
          "limit_uniform": _uniform, "can_abstain": _abstain}
