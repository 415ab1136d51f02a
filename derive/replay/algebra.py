"""Rational arithmetic: a term's normal form, a fraction of polynomials over Q in its atoms.

An atom is everything that is not +, ·, a number or an integer power: a symbol, a table entry,
M[i, t], exp(A), log(A), ⟨a, b⟩, a sum, [C] … Two atoms are one when their arguments have one
normal form (a sum's bound index renamed by its depth, de Bruijn's way, so Σ_u and Σ_t of the same
body are one atom). Nothing else is known of an atom: exp(a + b) and exp(a)·exp(b) are two atoms
until the rule exp_add says they are equal. exp(0) = 1 and log(1) = 0 are the only facts of
arithmetic about functions. A vector's normal form is a sum of vector atoms with rational
coefficients. The polynomials are python-flint's exact ``fmpq_mpoly`` (one variable per atom);
a fraction is kept reduced (gcd cancelled, its denominator's leading coefficient 1), so equal
functions have equal keys.
"""

from __future__ import annotations

from fractions import Fraction

from flint import fmpq, fmpq_mpoly_ctx

from derive.replay.terms import BINDERS, free, kind, subst

__all__ = ["RF", "Ring", "Rejected"]


class Rejected(Exception):
    """The certificate does not replay; the message names the step or the condition."""


def _context(size: int):
    names = tuple(f"a{k}" for k in range(size))
    get = getattr(fmpq_mpoly_ctx, "get", None)
    return get(names, "lex") if get is not None else fmpq_mpoly_ctx.get_context(size, names="a")


class RF:
    """A reduced fraction num/den of polynomials in the atoms of ``ring``."""

    __slots__ = ("ring", "num", "den", "_key")

    def __init__(self, ring, num, den=None, reduce=True):
        self.ring, self._key = ring, None
        num, den = ring.lift(num), ring.lift(den if den is not None else ring.ctx.constant(1))
        if reduce and not den.is_one():
            if num.is_zero():
                den = ring.ctx.constant(1)
            else:
                g = num.gcd(den)
                if not g.is_one():
                    num, den = num / g, den / g
                lc = den.leading_coefficient()
                num, den = num / lc, den / lc
        self.num, self.den = num, den

    def _up(self):
        ctx = self.ring.ctx
        if self.num.context() is ctx and self.den.context() is ctx:
            return self
        return RF(self.ring, self.num, self.den, reduce=False)

    def __add__(self, o):
        self, o = self._up(), o._up()
        if self.den == o.den:
            return RF(self.ring, self.num + o.num, self.den)
        return RF(self.ring, self.num * o.den + o.num * self.den, self.den * o.den)

    def __neg__(self):
        return RF(self.ring, -self.num, self.den, reduce=False)

    def __sub__(self, o):
        return self + (-o)

    def __mul__(self, o):
        self, o = self._up(), o._up()
        return RF(self.ring, self.num * o.num, self.den * o.den)

    def inverse(self):
        if self.num.is_zero():
            raise Rejected("a division by an expression whose normal form is 0")
        return RF(self.ring, self.den, self.num)

    def __pow__(self, k: int):
        base = self if k >= 0 else self.inverse()
        return RF(self.ring, base.num ** abs(k), base.den ** abs(k), reduce=False)

    def is_zero(self) -> bool:
        return self.num.is_zero()

    def constant(self) -> Fraction | None:
        if self.den.is_one() and self.num.is_constant():
            c = self.num.leading_coefficient() if not self.num.is_zero() else fmpq(0)
            return Fraction(int(c.p), int(c.q))
        return None

    @property
    def key(self) -> str:
        if self._key is None:
            self._key = f"{_poly_key(self.num)}/{_poly_key(self.den)}"
        return self._key

    def __eq__(self, o):
        return isinstance(o, RF) and self.key == o.key

    def __hash__(self):
        return hash(self.key)


def _poly_key(p) -> str:
    terms = sorted((tuple((v, e) for v, e in enumerate(exps) if e), str(c)) for exps, c in p.to_dict().items())
    return repr(terms)


class Vec(dict):
    """A vector's normal form: vector atom index → coefficient (an RF, never 0)."""

    @property
    def key(self) -> str:
        return repr(sorted((self.ring.keys_of[k], c.key) for k, c in self.items()))


class Ring:
    """The atoms met so far, one polynomial variable each (the context grows as atoms come)."""

    def __init__(self):
        self.index: dict[str, int] = {}  # atom key → variable
        self.keys_of: list[str] = []
        self.terms: list = []  # a term of each atom (its bound indices named #0, #1 …: de Bruijn)
        self.frees: list[frozenset] = []
        self.ctx = _context(16)
        self.memo: dict = {}

    # -- polynomials --------------------------------------------------------------------------
    def lift(self, p):
        if p.context() is self.ctx:
            return p
        n = self.ctx.nvars()
        return self.ctx.from_dict({tuple(e) + (0,) * (n - len(e)): c for e, c in p.to_dict().items()})

    def const(self, c) -> RF:
        c = Fraction(c)
        return RF(self, self.ctx.constant(fmpq(c.numerator, c.denominator)), reduce=False)

    def atom(self, key: str, term, parts=(), binds: bool = False) -> int:
        """The variable of an atom; its free names are those of its parts' normal forms (not of
        ``term``, one of its forms, whose other names may cancel), a bound index not among them."""
        k = self.index.get(key)
        if k is None:
            k = self.index[key] = len(self.keys_of)
            self.keys_of.append(key)
            self.terms.append(term)
            names = free(term) if term[0] == "sym" else frozenset().union(*map(self.names, parts))
            if binds:  # the de Bruijn index #0 is bound here; those further out move in by one
                names = frozenset(x if not x.startswith("#") else f"#{int(x[1:]) - 1}" for x in names if x != "#0")
            self.frees.append(names)
            if k >= self.ctx.nvars():
                self.ctx = _context(2 * self.ctx.nvars())
        return k

    def names(self, value) -> frozenset:
        """The free names of a normal form: those of the atoms it has."""
        if isinstance(value, Vec):
            return frozenset().union(*(self.frees[k] | self.names(c) for k, c in value.items()))
        out = set()
        for p in (value.num, value.den):
            for exps in p.to_dict():
                out.update(x for v, e in enumerate(exps) if e for x in self.frees[v])
        return frozenset(out)

    def var(self, key: str, term, parts=()) -> RF:
        k = self.atom(key, term, parts)
        return RF(self, self.ctx.gen(k), reduce=False)

    # -- normal forms -------------------------------------------------------------------------
    def nf(self, t):
        """The normal form of ``t``: an RF (a scalar) or a Vec (a vector)."""
        out = self.memo.get(t)
        if out is None:
            out = self.memo[t] = self._nf(t)
        return out

    def _nf(self, t):
        h = t[0]
        if h == "num":
            return self.const(t[1])
        if h in ("add", "mul"):
            parts = [self.nf(a) for a in t[1:]]
            return _sum(self, parts) if h == "add" else _product(self, parts)
        if h == "pow":
            base, e = self.nf(t[1]), self.nf(t[2]).constant() if kind(t[2]) == "scalar" else None
            if isinstance(base, Vec):
                raise Rejected("a vector raised to a power")
            if e is not None and e.denominator == 1:
                return base ** int(e)
            ex = self.scalar(t[2])
            return self.var(repr(("pow", base.key, ex.key)), t, (base, ex))
        if h == "exp" and self.scalar(t[1]).is_zero():
            return self.const(1)
        if h == "log" and self.scalar(t[1]).constant() == 1:
            return self.const(0)
        if h in BINDERS:
            inner = self.nf(_bind(t[4], t[1]))
            if h == "sum" and (inner.is_zero() if isinstance(inner, RF) else not inner):
                return self.const(0) if isinstance(inner, RF) else self.vector(("num", Fraction(0)))
            lo, hi = self.scalar(t[2]), self.scalar(t[3])
            key = repr((h, lo.key, hi.key, _key(inner)))
            k = self.atom(key, t, (inner,), binds=True)
            self.frees[k] = self.frees[k] | self.names(lo) | self.names(hi)
            return self._value(k, kind(t[4]))
        if h == "dot":
            a, b = self.vector(t[1]), self.vector(t[2])
            if not a or not b:
                return self.const(0)
            return self.var(repr(("dot", *sorted((a.key, b.key)))), t, (a, b))
        if h in ("vec", "vfn", "at", "fn"):
            parts = [self.nf(a) for a in t[2:]]
            args = [_key(p) for p in parts]
            if t[1] in ("max()", "min()"):  # max and min do not depend on the order of their arguments
                args = sorted(args)
            return self._value(self.atom(repr((h, t[1], *args)), t, parts), kind(t))
        if h == "rot":
            parts = (self.scalar(t[1]), self.vector(t[2]))
            return self._value(self.atom(repr(("rot", parts[0].key, parts[1].key)), t, parts), "vector")
        if h == "ind":
            parts = []
            return self.var(repr(("ind", self.condition(t[1], parts))), t, parts)
        if h == "cases":
            parts = [self.nf(v) for v, _ in t[1:]]
            key = repr(("cases", *((_key(p), self.condition(c, parts)) for p, (_, c) in zip(list(parts), t[1:]))))
            return self._value(self.atom(key, t, parts), kind(t))
        if h == "apply":  # an application not unfolded: an atom (the final identity refuses one)
            parts = [self.nf(t[2])] + [self.nf(v) for _, _, v in t[5]]
            key = repr(("apply", t[1], parts[0].key, *map(self._lam, t[3:5]), *((p, _key(self.nf(v))) for _, p, v in t[5])))
            k = self.atom(key, t, parts)
            self.frees[k] = self.frees[k] | free(t)  # the scores' names too (a form never simplified)
            return RF(self, self.ctx.gen(k), reduce=False)
        if h == "sym":
            return self.var(repr(t), t)
        if h == "mask":
            parts = (self.scalar(t[1]), self.scalar(t[2]))
            return self.var(repr(("mask", parts[0].key, parts[1].key)), t, parts)
        arg = self.scalar(t[1])
        return self.var(repr((h, arg.key)), t, (arg,))  # exp, log, sqrt, sigmoid, softplus, tanh

    def _lam(self, f):
        return None if f is None else _key(self.nf(_bind(f[2], f[1])))

    def _value(self, k: int, kind_: str):
        if kind_ == "vector":
            v = Vec()
            v.ring = self
            v[k] = self.const(1)
            return v
        return RF(self, self.ctx.gen(k), reduce=False)

    def scalar(self, t) -> RF:
        out = self.nf(t)
        if not isinstance(out, RF):
            raise Rejected("a vector where a scalar is needed")
        return out

    def vector(self, t) -> Vec:
        out = self.nf(t)
        if isinstance(out, RF):
            if out.is_zero():
                v = Vec()
                v.ring = self
                return v
            raise Rejected("a scalar where a vector is needed")
        return out

    def condition(self, c, parts: list) -> str:
        """A condition's key; the normal forms it compares go to ``parts``."""
        h = c[0]
        if h in ("true", "false"):
            return h
        if h == "cmp":
            op, a, b = c[1], c[2], c[3]
            if op in (">", ">="):
                op, a, b = {">": "<", ">=": "<="}[op], b, a
            d = self.scalar(b) - self.scalar(a)
            if op in ("==", "!=") and d.num.leading_coefficient() < 0:
                d = -d
            parts.append(d)
            return repr((op, d.key))
        keys = [self.condition(x, parts) for x in c[1:]]
        return repr((h, *(sorted(keys) if h in ("and", "or") else keys)))

    def depends(self, value, name: str) -> bool:
        """Does a normal form mention an atom in which ``name`` is free?"""
        return name in self.names(value)


def _key(value) -> str:
    return value.key


def _bind(body, v: str):
    """``body`` with the bound index ``v`` named #0 and the indices bound further out shifted."""
    names = {n for n in free(body) if n.startswith("#")}
    m = {n: ("sym", f"#{int(n[1:]) + 1}") for n in names}
    m[v] = ("sym", "#0")
    return subst(body, m)


def _sum(ring: Ring, parts):
    vecs = [p for p in parts if isinstance(p, Vec)]
    if vecs and len(vecs) != len(parts):
        zero = all(p.is_zero() for p in parts if isinstance(p, RF))
        if not zero:
            raise Rejected("a scalar added to a vector")
    if not vecs:
        out = parts[0]
        for p in parts[1:]:
            out = out + p
        return out
    out = Vec()
    out.ring = ring
    for v in vecs:
        for k, c in v.items():
            s = out[k] + c if k in out else c
            if s.is_zero():
                out.pop(k, None)
            else:
                out[k] = s
    return out


def _product(ring: Ring, parts):
    vecs = [p for p in parts if isinstance(p, Vec)]
    if len(vecs) > 1:
        raise Rejected("a product of two vectors (use ⟨a, b⟩)")
    scale = ring.const(1)
    for p in parts:
        if isinstance(p, RF):
            scale = scale * p
    if not vecs:
        return scale
    out = Vec()
    out.ring = ring
    if not scale.is_zero():
        for k, c in vecs[0].items():
            out[k] = c * scale
    return out
