"""Side conditions discharged by small sign rules, and the integer facts of positions and masks.

A side condition says that a term is nonzero, positive or nonnegative wherever it occurs: for
every value of the symbols in their declared types, every value of the indices of the sums
around it, and where the mask entries and brackets [C] that multiply it are 1. The rules:

* a number has its sign; a symbol has its declared one (positive, negative, nonnegative,
  nonzero); a position (i, j) is 1 ≤ p ≤ n, a count (n, d) is ≥ 1, a natural number ≥ 0;
* an integer expression of positions (j − 1, i − t + 1) is decided from those bounds, a sum's
  range lo ≤ t ≤ hi and the mask's condition, as difference constraints x − y ≤ c
  (shortest paths), else from the bounds of each term;
* exp, sigmoid and softplus are positive, sqrt is nonnegative, log(a) ≥ 0 when a ≥ 1, a
  square (even power, ⟨a, a⟩) is nonnegative, tanh has its argument's sign;
* sums and products of signed terms have the sign those give;
* M[i, t] and [C] are nonnegative, positive where known to be 1;
* Σ_{t=lo}^{hi} f(t) is nonnegative when f is on its range (and hi ≥ lo − 1), positive when f
  is and some t of the range has every mask entry and bracket of f equal to 1: a candidate
  t ∈ {lo, hi, i, j, the enclosing indices} whose membership is decided, or, for a mask that
  may be any set of keys of non-empty rows, the whole row 1..n.
"""

from __future__ import annotations

import math
from fractions import Fraction

from derive.replay.terms import free, subst

__all__ = ["NONNEG", "NONZERO", "POS", "Scope"]

POS, NONNEG, NONZERO, NEG, NONPOS = 1, 2, 4, 8, 16
INDEX = ("position", "count", "natural", "integer")
_BIG = 10**9


def _norm(f: int) -> int:
    if f & POS:
        f |= NONNEG | NONZERO
    if f & NEG:
        f |= NONPOS | NONZERO
    if f & NONNEG and f & NONZERO:
        f |= POS
    if f & NONPOS and f & NONZERO:
        f |= NEG
    return f


class Scope:
    """The facts where a term occurs: symbol types, the mask, the enclosing sums and guards."""

    def __init__(self, types: dict, mask, rows_nonempty: bool, binders=(), guards=(), allowed=()):
        self.types, self.mask, self.rows_nonempty = types, mask, rows_nonempty
        self.binders, self.guards, self.keys = tuple(binders), tuple(guards), tuple(allowed)
        self._dist = None

    def inside(self, binders=(), guards=()):
        """The facts inside sums over ``binders`` (outermost first), times ``guards``."""
        outer, known, keys = self.binders, self.guards, self.keys
        for b in binders:
            here = Scope(self.types, self.mask, self.rows_nonempty, outer, known, keys)
            if not here.le(b[1], ("add", b[2], ("num", Fraction(1)))):
                # a range that may run backwards: by Karr's convention the sum is then over
                # hi + 1 .. lo − 1, so lo ≤ t ≤ hi is no fact (the index is an integer, no more)
                b = (b[0], ("sym", b[0]), ("sym", b[0]))
            outer, known = enter(outer, known, b)
            keys = tuple(k for k in keys if b[0] not in free(k))
        return Scope(self.types, self.mask, self.rows_nonempty, outer, known + tuple(guards), keys)

    # -- integers ---------------------------------------------------------------------------
    def _integer(self, name: str) -> bool:
        return self.types.get(name) in INDEX or any(b[0] == name for b in self.binders)

    def lin(self, t):
        """``t`` as ({name: integer coefficient}, integer constant), or None."""
        h = t[0]
        if h == "num":
            return {}, t[1]
        if h == "sym":
            return ({t[1]: 1}, 0) if self._integer(t[1]) else None
        if h == "add":
            out, k = {}, 0
            for a in t[1:]:
                p = self.lin(a)
                if p is None:
                    return None
                for v, c in p[0].items():
                    out[v] = out.get(v, 0) + c
                k += p[1]
            return {v: c for v, c in out.items() if c}, k
        if h == "mul":
            parts = [self.lin(a) for a in t[1:]]
            if any(p is None for p in parts) or sum(1 for p in parts if p[0]) > 1:
                return None
            scale = 1
            for p in parts:
                if not p[0]:
                    scale *= p[1]
            lone = next((p for p in parts if p[0]), ({}, 1))
            out = {v: c * scale for v, c in lone[0].items() if c * scale}
            return (out, lone[1] * scale) if all(c.denominator == 1 for c in map(Fraction, out.values())) else None
        return None

    def _facts(self) -> list:
        """Difference constraints (u, v, c): u − v ≤ c; "0" is the number 0."""
        out = []
        for name, ty in self.types.items():
            if ty in ("position", "count"):
                out.append(("0", name, -1))
            if ty == "natural":
                out.append(("0", name, 0))
            if ty == "position" and "n" in self.types:
                out.append((name, "n", 0))
        for v, lo, hi in self.binders:
            out += self._constraint(lo, ("sym", v), 0) + self._constraint(("sym", v), hi, 0)
        for g in self.guards:
            for c in self._conjuncts(g):
                out += self._comparison(c)
        return out

    def _conjuncts(self, g) -> list:
        if g[0] == "ind":
            cond = g[1]
        elif g[0] == "mask" and self.mask is not None:
            cond = subst(self.mask[1], {self.mask[0]: g[2], "i": g[1]})
        else:
            return []
        return list(cond[1:]) if cond[0] == "and" else [cond]

    def _comparison(self, c) -> list:
        if c[0] != "cmp":
            return []
        op, a, b = c[1], c[2], c[3]
        if op in (">", ">="):
            op, a, b = {">": "<", ">=": "<="}[op], b, a
        if op == "<=":
            return self._constraint(a, b, 0)
        if op == "<":
            return self._constraint(a, b, -1)
        if op == "==":
            return self._constraint(a, b, 0) + self._constraint(b, a, 0)
        return []

    def _constraint(self, a, b, c) -> list:
        """a − b ≤ c as difference constraints, when a − b has that shape."""
        p = self.lin(("add", a, ("mul", ("num", Fraction(-1)), b)))
        if p is None:
            return []
        terms, k = p
        pos = [v for v, x in terms.items() if x == 1]
        neg = [v for v, x in terms.items() if x == -1]
        if len(terms) > 2 or len(pos) + len(neg) != len(terms) or len(pos) > 1 or len(neg) > 1:
            return []
        return [(pos[0] if pos else "0", neg[0] if neg else "0", math.floor(c - k))]  # integers: ⌊c − k⌋

    def _paths(self) -> dict:
        if self._dist is None:
            facts = self._facts()
            nodes = sorted({"0"} | {u for u, _, _ in facts} | {v for _, v, _ in facts})
            dist = {(a, b): (0 if a == b else _BIG) for a in nodes for b in nodes}
            for u, v, c in facts:  # u − v ≤ c: the path v → u has length c
                dist[v, u] = min(dist[v, u], c)
            for k in nodes:
                for a in nodes:
                    for b in nodes:
                        if dist[a, k] + dist[k, b] < dist[a, b]:
                            dist[a, b] = dist[a, k] + dist[k, b]
            self.void = any(dist[a, a] < 0 for a in nodes)  # contradictory facts: nothing to check here
            self._dist = dist
        return self._dist

    def infeasible(self) -> bool:
        """Do the facts here contradict each other (no integers satisfy them)?"""
        self._paths()
        return self.void

    def least(self, t):
        """A lower bound of the integer term ``t`` (None: not known)."""
        p = self.lin(t)
        if p is None:
            return None
        terms, k = p
        dist = self._paths()
        if self.void:
            return _BIG
        out = None
        if len(terms) == 2 and sorted(terms.values()) == [-1, 1]:
            (u, _), (v, _) = sorted(terms.items(), key=lambda kv: -kv[1])
            if dist.get((u, v), _BIG) < _BIG:
                out = k - dist[u, v]
        low = k
        for v, c in terms.items():
            bound = -dist.get((v, "0"), _BIG) if c > 0 else dist.get(("0", v), _BIG)
            if abs(bound) >= _BIG:
                return out
            low += c * bound
        return low if out is None else max(out, low)

    def le(self, a, b) -> bool:
        low = self.least(("add", b, ("mul", ("num", Fraction(-1)), a)))
        return low is not None and low >= 0

    # -- conditions and masks ---------------------------------------------------------------
    def holds(self, c) -> bool:
        h = c[0]
        if h in ("true", "false"):
            return h == "true"
        if h == "and":
            return all(self.holds(x) for x in c[1:])
        if h == "or":
            return any(self.holds(x) for x in c[1:])
        if h == "not":
            x = c[1]
            neg = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
            return x[0] == "cmp" and self.holds(("cmp", neg[x[1]], x[2], x[3]))
        op, a, b = c[1], c[2], c[3]
        if a == b and op in ("<=", ">=", "=="):
            return True
        lt = lambda x, y: self.le(("add", x, ("num", Fraction(1))), y)  # noqa: E731
        return {"<": lambda: lt(a, b), "<=": lambda: self.le(a, b), ">": lambda: lt(b, a),
                ">=": lambda: self.le(b, a), "==": lambda: self.le(a, b) and self.le(b, a),
                "!=": lambda: lt(a, b) or lt(b, a)}[op]()

    def allowed(self, row, col) -> bool:
        """Is M[row, col] = 1 known here?"""
        if any(g[0] == "mask" and self.holds(("cmp", "==", g[1], row)) and self.holds(("cmp", "==", g[2], col))
               for g in self.guards):
            return True
        if row == ("sym", "i") and any(self.holds(("cmp", "==", k, col)) for k in self.keys):
            return True
        if self.mask is None:
            return False
        inside = self.le(("num", Fraction(1)), col) and ("n" not in self.types or self.le(col, ("sym", "n")))
        return inside and self.holds(subst(self.mask[1], {self.mask[0]: col, "i": row}))

    def nonempty(self, v: str, lo, hi, guards) -> bool:
        """Does some t in lo..hi make every guard (with v = t) equal to 1?"""
        if self.mask is None and self.rows_nonempty and [g[0] for g in guards] == ["mask"] and \
                guards[0][1] == ("sym", "i") and guards[0][2] == ("sym", v) and \
                self.le(lo, ("num", Fraction(1))) and self.le(("sym", "n"), hi):
            return True
        candidates = [lo, hi] + [("sym", b[0]) for b in self.binders] + \
            [("sym", s) for s in ("i", "j") if self.types.get(s) == "position"]
        for c in candidates:
            if not (self.le(lo, c) and self.le(c, hi)):
                continue
            ok = True
            for g in guards:
                g = subst(g, {v: c})
                if not (self.allowed(g[1], g[2]) if g[0] == "mask" else self.holds(g[1])):
                    ok = False
                    break
            if ok:
                return True
        return False

    # -- signs ------------------------------------------------------------------------------
    def sign(self, t) -> int:
        return _norm(self._sign(t))

    def _sign(self, t) -> int:
        h = t[0]
        c = _constant(t)
        if c is not None:
            return POS if c > 0 else NEG if c < 0 else NONNEG | NONPOS
        p = self.lin(t) if h in ("sym", "add", "mul") else None
        if p is not None and p[0]:
            low = self.least(t)
            high = self.least(("mul", ("num", Fraction(-1)), t))
            f = (POS if low is not None and low >= 1 else NONNEG if low is not None and low >= 0 else 0)
            return f | (NEG if high is not None and high >= 1 else NONPOS if high is not None and high >= 0 else 0)
        if h == "sym":
            return {"positive": POS, "negative": NEG, "nonnegative": NONNEG, "nonzero": NONZERO}.get(
                self.types.get(t[1]), 0)
        if h in ("exp", "sigmoid", "softplus"):
            return POS
        if h == "sqrt":
            return NONNEG | (self.sign(t[1]) & POS)
        if h == "tanh":
            return self.sign(t[1]) & (POS | NONNEG | NEG | NONPOS)
        if h == "log":
            above = self.sign(("add", t[1], ("num", Fraction(-1))))
            return above & (POS | NONNEG)
        if h == "mask":
            return POS if self.allowed(t[1], t[2]) else NONNEG
        if h == "ind":
            return POS if self.holds(t[1]) else NONNEG
        if h == "dot":
            return NONNEG if t[1] == t[2] else 0
        if h == "fn" and t[1] in ("abs()", "max()", "min()"):
            fs = [self.sign(a) for a in t[2:]]
            if t[1] == "abs()":
                return NONNEG | (POS if fs[0] & NONZERO else 0)
            pick = any if t[1] == "max()" else all
            return (POS if pick(f & POS for f in fs) else 0) | (NONNEG if pick(f & NONNEG for f in fs) else 0)
        if h == "add":
            fs = [self.sign(a) for a in t[1:]]
            if all(f & NONNEG for f in fs):
                return NONNEG | (POS if any(f & POS for f in fs) else 0)
            if all(f & NONPOS for f in fs):
                return NONPOS | (NEG if any(f & NEG for f in fs) else 0)
            return 0
        if h == "mul":
            return _product([self.sign(a) for a in t[1:]])
        if h == "pow":
            return self._power(t)
        if h == "sum":
            return self._sum(t)
        if h in ("prod", "max_t", "min_t"):  # a product of positive factors (1 if none), a max or min
            v, lo, hi, body = t[1:]
            factors = _flatten(body)
            inner = self.inside([(v, lo, hi)], [f for f in factors if f[0] in ("mask", "ind")])
            f = _product([inner.sign(x) for x in factors if x[0] not in ("mask", "ind")])
            return f & POS if h == "prod" else f
        if h == "cases":
            out = -1
            for v, _ in t[1:]:
                out &= self.sign(v)
            return out
        return 0

    def _power(self, t) -> int:
        base, e = self.sign(t[1]), t[2]
        if e[0] != "num" or e[1].denominator != 1:
            return POS if base & POS else 0
        k = int(e[1])
        if k < 0 and not base & NONZERO:
            return 0
        if k % 2 == 0:
            return NONNEG | (POS if base & NONZERO else 0)
        return base

    def _sum(self, t) -> int:
        v, lo, hi, body = t[1:]
        factors = _flatten(body)
        guards = [f for f in factors if f[0] in ("mask", "ind")]
        rest = [f for f in factors if f[0] not in ("mask", "ind")]
        inner = self.inside([(v, lo, hi)], guards)
        f = _product([inner.sign(x) for x in rest]) if rest else POS
        if not self.le(lo, ("add", hi, ("num", Fraction(1)))):
            return 0
        out = f & (NONNEG | NONPOS)
        if f & (POS | NEG) and self.nonempty(v, lo, hi, guards):
            out |= f & (POS | NEG)
        return out


def enter(binders: tuple, guards: tuple, binder) -> tuple[tuple, tuple]:
    """(binders, guards) inside a sum over ``binder``: a fact about an outer index of the same
    name no longer speaks of the index here, so it is dropped (dropping a fact is always safe)."""
    v = binder[0]
    binders = tuple(b for b in binders if b[0] != v and v not in free(b[1]) | free(b[2])) + (binder,)
    return binders, tuple(g for g in guards if v not in free(g))


def _constant(t):
    """The value of a term of numbers, +, · and integer powers; None for any other term."""
    h = t[0]
    if h == "num":
        return t[1]
    if h in ("add", "mul"):
        parts = [_constant(a) for a in t[1:]]
        if None in parts:
            return None
        out = Fraction(h == "mul")
        for x in parts:
            out = out + x if h == "add" else out * x
        return out
    if h == "pow":
        base, e = _constant(t[1]), _constant(t[2])
        if base is None or e is None or e.denominator != 1 or (base == 0 and e < 0) or abs(e) > 64:
            return None
        return base ** int(e)
    return None


def _flatten(t) -> list:
    return [x for a in t[1:] for x in _flatten(a)] if t[0] == "mul" else [t]


def _product(fs) -> int:
    fs = [_norm(f) for f in fs]
    nonzero = all(f & NONZERO for f in fs)
    strict, negative = True, False
    for f in fs:
        if f & NONNEG:
            strict &= bool(f & POS)
        elif f & NONPOS:
            negative = not negative
            strict &= bool(f & NEG)
        else:
            return NONZERO if nonzero else 0
    out = (NEG if strict else NONPOS) if negative else (POS if strict else NONNEG)
    return _norm(out | (NONZERO if nonzero else 0))
