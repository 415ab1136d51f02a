"""Rational arithmetic: a term's normal form, a fraction of polynomials over Q in its atoms.

An atom is what is not +, ·, a number or an integer power: a symbol, a table entry, M[i, t],
exp(a), ⟨a, b⟩, a sum over keys, [C] … Two atoms are one when their arguments have one normal
form (a sum's index renamed by de Bruijn's rule, so Σ_u and Σ_t of one body are one atom). Nothing
else is known of an atom: exp(a + b) and exp(a)·exp(b) stay two atoms until a rule says otherwise;
exp(0) = 1 and log(1) = 0 are the only facts about functions. A vector is a variable too (q_i, b,
R_p a), and a vector expression a fraction linear in them. The polynomials are python-flint's exact
``fmpq_mpoly``, one variable per atom; a fraction is kept reduced (gcd cancelled, the leading
coefficient of its denominator 1), so equal fractions have equal keys.
"""

from __future__ import annotations

from fractions import Fraction

from flint import fmpq, fmpq_mpoly_ctx

from derive.replay.terms import BINDERS, VECTOR_HEADS, free, subst

__all__ = ["RF", "Rejected", "Ring"]


class Rejected(Exception):
    """The certificate does not replay; the message names the step or the condition."""


def _context(size: int):
    names = tuple(f"a{k}" for k in range(size))
    get = getattr(fmpq_mpoly_ctx, "get", None)  # python-flint ≥ 0.8; before: get_context
    return get(names, "lex") if get is not None else fmpq_mpoly_ctx.get_context(size, names="a")


def fraction(c) -> Fraction:
    return Fraction(int(c.p), int(c.q))


class RF:
    """A reduced fraction num/den of polynomials in the atoms of ``ring``."""

    __slots__ = ("ring", "num", "den", "_key")

    def __init__(self, ring, num, den=None, reduce=True):
        self.ring, self._key = ring, None
        num, den = ring.lift(num), ring.lift(den if den is not None else ring.ctx.constant(1))
        if reduce and not den.is_one():
            g = num.gcd(den) if not num.is_zero() else den
            num, den = num / g, den / g
            lc = den.leading_coefficient()
            num, den = num / lc, den / lc
        self.num, self.den = num, den

    def _up(self):
        return self if self.num.context() is self.ring.ctx and self.den.context() is self.ring.ctx else \
            RF(self.ring, self.num, self.den, reduce=False)

    def __add__(self, o):
        a, b = self._up(), o._up()
        if a.den == b.den:
            return RF(a.ring, a.num + b.num, a.den)
        return RF(a.ring, a.num * b.den + b.num * a.den, a.den * b.den)

    def __neg__(self):
        return RF(self.ring, -self.num, self.den, reduce=False)

    def __sub__(self, o):
        return self + (-o)

    def __mul__(self, o):
        a, b = self._up(), o._up()
        return RF(a.ring, a.num * b.num, a.den * b.den)

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
            return fraction(self.num.leading_coefficient()) if not self.num.is_zero() else Fraction(0)
        return None

    def terms(self):
        """(coefficient, exponents) of each term of the numerator."""
        return [(fraction(c), tuple(int(e) for e in exps)) for exps, c in self.num.to_dict().items()]

    @property
    def key(self) -> str:
        if self._key is None:
            self._key = f"{_poly_key(self.num)}/{_poly_key(self.den)}"
        return self._key


def _poly_key(p) -> str:
    return repr(sorted((tuple((v, e) for v, e in enumerate(exps) if e), str(c)) for exps, c in p.to_dict().items()))


class Ring:
    """The atoms met so far, one polynomial variable each (the context grows as atoms come)."""

    def __init__(self):
        self.index: dict[str, int] = {}  # atom key → variable
        self.terms: list = []  # a term of each atom
        self.frees: list[frozenset] = []  # the free names of each atom's normal form
        self.vectors: set[int] = set()  # the atoms that are vectors
        self.ctx = _context(16)
        self.memo: dict = {}

    def lift(self, p):
        if p.context() is self.ctx:
            return p
        n = self.ctx.nvars()
        return self.ctx.from_dict({tuple(e) + (0,) * (n - len(e)): c for e, c in p.to_dict().items()})

    def const(self, c) -> RF:
        c = Fraction(c)
        return RF(self, self.ctx.constant(fmpq(c.numerator, c.denominator)), reduce=False)

    def gen(self, k: int) -> RF:
        return RF(self, self.ctx.gen(k), reduce=False)

    def var(self, key: str, term, parts=(), binds: bool = False, vector: bool = False) -> RF:
        """The atom ``key`` (``term`` one of its forms); its free names are those of its parts'
        normal forms, not of ``term`` (whose other names may cancel), an index it binds not among them."""
        k = self.index.get(key)
        if k is None:
            k = self.index[key] = len(self.terms)
            self.terms.append(term)
            names = free(term) if term[0] == "sym" else frozenset().union(*map(self.names, parts))
            if binds:  # the de Bruijn index #0 is bound here; those further out move in by one
                names = frozenset(f"#{int(x[1:]) - 1}" if _bruijn(x) else x for x in names if x != "#0")
            self.frees.append(names)
            if vector:
                self.vectors.add(k)
            if k >= self.ctx.nvars():
                self.ctx = _context(2 * self.ctx.nvars())
        return self.gen(k)

    def atoms(self, value: RF) -> set[int]:
        return {v for p in (value.num, value.den) for v, e in enumerate(p.degrees()) if e > 0}

    def names(self, value: RF) -> frozenset:
        """The free names of a normal form: those of its atoms."""
        return frozenset().union(*(self.frees[v] for v in self.atoms(value)))

    def is_vector(self, value: RF) -> bool:
        return bool(self.atoms(value) & self.vectors)

    def nf(self, t) -> RF:
        """The normal form of ``t``."""
        out = self.memo.get(t)
        if out is None:
            out = self.memo[t] = self._nf(t)
        return out

    def _nf(self, t) -> RF:
        h = t[0]
        if h == "num":
            return self.const(t[1])
        if h in ("add", "mul"):
            out = self.nf(t[1])
            for a in t[2:]:
                out = out + self.nf(a) if h == "add" else out * self.nf(a)
            return out
        if h == "sym":
            return self.var(repr(t), t)
        parts = [self.nf(a) for a in _parts(t)]
        if h == "pow":
            e = parts[1].constant()
            if e is not None and e.denominator == 1:
                return parts[0] ** int(e)
        if h == "exp" and parts[0].is_zero():
            return self.const(1)
        if h == "log" and parts[0].constant() == 1:
            return self.const(0)
        keys = [p.key for p in parts]
        if h == "dot" or h == "fn" and t[1] in ("max()", "min()"):  # ⟨a, b⟩ = ⟨b, a⟩; max and min of a set
            keys = sorted(keys)
        if h in BINDERS:
            if h == "sum" and parts[-1].is_zero():
                return self.const(0)
            return self.var(repr((h, *keys)), t, parts, binds=True, vector=self.is_vector(parts[-1]))
        if h == "dot" and (parts[0].is_zero() or parts[1].is_zero()):
            return self.const(0)
        if h in ("ind", "cases"):  # a condition's comparisons are parts of the atom too
            compared: list = []
            keys = [repr(_condition(self, c, compared)) for c in _conditions(t)] + keys
            parts += compared
        vector = h in VECTOR_HEADS or h == "cases" and self.is_vector(parts[0])
        name = t[1] if h in ("at", "vec", "fn", "vfn") else (t[1], t[4] is None, *(p for _, p, _ in t[5])) \
            if h == "apply" else ""
        return self.var(repr((h, name, *keys)), t, parts, vector=vector)

    def linear(self, value: RF) -> dict[int, RF]:
        """A vector as {vector atom: scalar coefficient}; rejected unless it is linear in them."""
        value = value._up()
        out: dict[int, RF] = {}
        for c, exps in value.terms():
            vs = [v for v, e in enumerate(exps) if e and v in self.vectors]
            if len(vs) != 1 or exps[vs[0]] != 1 or self.is_vector(RF(self, value.den, reduce=False)):
                raise Rejected("an expression that is not linear in its vectors")
            mono = self.ctx.from_dict({tuple(0 if v == vs[0] else e for v, e in enumerate(exps)): fmpq(c.numerator,
                                                                                                      c.denominator)})
            out[vs[0]] = out.get(vs[0], self.const(0)) + RF(self, mono, value.den)
        return out


def _parts(t) -> list:
    """The terms an atom's key is made of (a sum's body with its index bound, de Bruijn's way)."""
    h = t[0]
    if h in BINDERS:
        return [t[2], t[3], _bind(t[4], t[1])]
    if h in ("at", "vec", "fn", "vfn"):
        return list(t[2:])
    if h == "apply":
        return [t[2], *(_bind(f[2], f[1]) for f in t[3:5] if f is not None), *(v for _, _, v in t[5])]
    if h == "cases":
        return [v for v, _ in t[1:]]
    if h == "ind":
        return []
    return list(t[1:])  # pow, exp, log, sqrt, sigmoid, softplus, tanh, dot, rot, mask


def _conditions(t) -> list:
    return [t[1]] if t[0] == "ind" else [c for _, c in t[1:]]


def _condition(ring: Ring, c, compared: list):
    """A condition's key: each comparison as the normal form of the difference of its sides."""
    h = c[0]
    if h in ("true", "false"):
        return h
    if h != "cmp":
        parts = [_condition(ring, x, compared) for x in c[1:]]
        return (h, *(sorted(parts, key=repr) if h in ("and", "or") else parts))
    op, a, b = c[1:]
    if op in (">", ">="):
        op, a, b = {">": "<", ">=": "<="}[op], b, a
    d = ring.nf(b) - ring.nf(a)
    if op in ("==", "!=") and not d.is_zero() and d.num.leading_coefficient() < 0:
        d = -d
    compared.append(d)
    return op, d.key


def _bruijn(name: str) -> bool:
    """A de Bruijn index #0, #1, … (a side condition's binders are named #b0, #b1, …: not indices)."""
    return name[:1] == "#" and name[1:].isdigit()


def _bind(body, v: str):
    """``body`` with the bound index ``v`` named #0 and the indices bound further out shifted."""
    m = {n: ("sym", f"#{int(n[1:]) + 1}") for n in free(body) if _bruijn(n)}
    m[v] = ("sym", "#0")
    return subst(body, m)
