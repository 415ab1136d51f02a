"""SymPy expressions written as the certificates' terms (:mod:`derive.replay.terms`).

The engine's objects map one to one: numbers, symbols (their SymPy assumptions become the
symbol's type), table entries x[i, t], the mask M[i, t], vectors q_i and b, ⟨a, b⟩, R_p a, Σ,
Piecewise, exp, log, square roots and integer powers, opaque functions. An expression with
anything else (max, min, abs, a product over a range, a limit, a derivative, a float,
infinity) is :class:`Outside` the checker's language: its proof is labelled "proved (not
replayed)". A row maximum (the overflow-free forms' m) is an opaque real: the identities about
it hold for every real m.
"""

from __future__ import annotations

import hashlib
from fractions import Fraction

import sympy as sp
from sympy.core.function import AppliedUndef

from derive.certify import Outside
from derive.model.attention import MaskBase
from derive.model.reductions import RowExtremum
from derive.model.vectors import Dot, Rot, VectorBase, VectorFunction, VectorSymbol

__all__ = ["Outside", "Terms", "condition_term"]

_RELATIONS = {sp.StrictLessThan: "<", sp.LessThan: "<=", sp.StrictGreaterThan: ">", sp.GreaterThan: ">=",
              sp.Equality: "==", sp.Unequality: "!="}
POSITIONS = ("i", "j")


def _num(q) -> tuple:
    return ("num", Fraction(int(q.p), int(q.q)))


class Terms:
    """A translator that records the symbols it meets and their types (for the certificate)."""

    def __init__(self):
        self.types: dict[str, str] = {}
        self._seen: dict[str, sp.Symbol] = {}

    def symbol(self, s: sp.Symbol, bound=()) -> tuple:
        name = s.name if not isinstance(s, sp.Dummy) else f"{s.name}_{s.dummy_index}"
        if s in bound:
            return ("sym", name)
        if not name or name.startswith("#"):
            raise Outside(f"a symbol named {name!r}")
        other = self._seen.setdefault(name, s)
        if other != s:
            raise Outside(f"two different symbols are named {name}")
        self.types[name] = _type(s)
        return ("sym", name)

    def term(self, e, bound=frozenset()) -> tuple:
        if isinstance(e, sp.Rational):
            return _num(e)
        if e is sp.E:
            return ("exp", ("num", Fraction(1)))
        if isinstance(e, VectorSymbol):
            return ("vec", e.name)
        if isinstance(e, sp.Symbol):
            return self.symbol(e, bound)
        if isinstance(e, sp.Add):
            return ("add", *(self.term(a, bound) for a in e.args))
        if isinstance(e, sp.Mul):
            return ("mul", *(self.term(a, bound) for a in e.args))
        if isinstance(e, sp.Pow):
            return self._power(e, bound)
        if isinstance(e, sp.exp):
            return ("exp", self.term(e.args[0], bound))
        if isinstance(e, sp.log) and len(e.args) == 1:
            return ("log", self.term(e.args[0], bound))
        if isinstance(e, sp.tanh):
            return ("tanh", self.term(e.args[0], bound))
        if isinstance(e, sp.Indexed):
            return self._indexed(e, bound)
        if isinstance(e, Dot):
            return ("dot", self.term(e.args[0], bound), self.term(e.args[1], bound))
        if isinstance(e, Rot):
            return ("rot", self.term(e.args[0], bound), self.term(e.args[1], bound))
        if isinstance(e, VectorFunction):
            return ("vfn", type(e).__name__, *(self.term(a, bound) for a in e.args))
        if isinstance(e, sp.Sum):
            return self._sum(e.function, list(e.limits), bound)
        if isinstance(e, sp.Piecewise):
            return ("cases", *((self.term(v, bound), condition_term(self, c, bound)) for v, c in e.args))
        if isinstance(e, (sp.Max, sp.Min, sp.Abs)):  # known to the checker by name and sign only
            name = {sp.Max: "max()", sp.Min: "min()", sp.Abs: "abs()"}[type(e)]
            return ("fn", name, *(self.term(a, bound) for a in e.args))
        if isinstance(e, RowExtremum):  # an opaque real, named by what it is
            digest = hashlib.sha256(sp.srepr(e).encode()).hexdigest()[:8]
            name = f"{e.word}_{digest}"
            self.types[name] = "real"
            return ("sym", name)
        if isinstance(e, AppliedUndef) and not isinstance(e, VectorFunction):
            return ("fn", type(e).__name__, *(self.term(a, bound) for a in e.args))
        raise Outside(f"{type(e).__name__} is not in the checker's language")

    def _power(self, e: sp.Pow, bound) -> tuple:
        base, ex = e.args
        if base is sp.E:
            return ("exp", self.term(ex, bound))
        if isinstance(ex, sp.Integer):
            return ("pow", self.term(base, bound), _num(ex))
        if isinstance(ex, sp.Rational) and ex.q == 2:
            root = ("sqrt", self.term(base, bound))
            return root if ex.p == 1 else ("pow", root, _num(sp.Integer(ex.p)))
        return ("pow", self.term(base, bound), self.term(ex, bound))

    def _indexed(self, e: sp.Indexed, bound) -> tuple:
        idx = [self.term(k, bound) for k in e.indices]
        if isinstance(e.base, MaskBase):
            if len(idx) != 2:
                raise Outside("a mask entry with other than two indices")
            return ("mask", *idx)
        head = "vec" if isinstance(e.base, VectorBase) else "at"
        return (head, str(e.base.label), *idx)

    def _sum(self, body, limits, bound) -> tuple:
        (v, lo, hi), rest = limits[0], limits[1:]
        inner = self._sum(body, rest, bound | {v}) if rest else self.term(body, bound | {v})
        name = self.symbol(v, bound | {v})[1]
        return ("sum", name, self.term(lo, bound), self.term(hi, bound), inner)


def condition_term(tr: Terms, c, bound=frozenset()) -> tuple:
    if c is sp.true:
        return ("true",)
    if c is sp.false:
        return ("false",)
    if isinstance(c, (sp.And, sp.Or)):
        return ("and" if isinstance(c, sp.And) else "or", *(condition_term(tr, a, bound) for a in c.args))
    if isinstance(c, sp.Not):
        return ("not", condition_term(tr, c.args[0], bound))
    op = _RELATIONS.get(type(c))
    if op is None:
        raise Outside(f"the condition {c} is not a comparison")
    return ("cmp", op, tr.term(c.lhs, bound), tr.term(c.rhs, bound))


def _type(s: sp.Symbol) -> str:
    if s.is_integer:
        if s.name in POSITIONS or s.name.startswith("j_"):
            return "position"
        return "count" if s.is_positive else "natural" if s.is_nonnegative else "integer"
    for word in ("positive", "negative", "nonnegative", "nonzero"):
        if getattr(s, f"is_{word}"):
            return word
    return "real"
