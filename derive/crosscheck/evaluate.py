"""Numeric evaluation of engine expressions on a concrete instance.

Three backends: ``float`` (numpy float64), ``mp`` (mpmath at a chosen precision, vectors
as object arrays of ``mpf``) and ``arb`` (python-flint's ball arithmetic at a chosen
precision in bits: every value is an interval certain to contain the exact one, which is
what certifies a counterexample). Instance entries may be exact numbers (integers,
``sympy.Rational``, ``sqrt(2)``); the ``arb`` backend encloses them exactly, the others round
them. The evaluator is an interpreter over a whitelist of node
types; anything else raises :class:`~derive.errors.Unsupported`. Sub-expressions that do
not depend on a loop variable are cached, so a double sum (an output mixing weights whose
denominator is itself a sum) costs O(n), not O(n²).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import flint
import mpmath
import numpy as np
import sympy as sp
from flint import arb

from derive.errors import Unsupported
from derive.model.vectors import Dot, Rot, VectorBase, VectorSymbol

__all__ = ["Instance", "Uncertain", "evaluate", "rope_matrix"]


@dataclass
class Instance:
    """Concrete values: ``d``, ``n``, scalars/indices by symbol, tables by base name.

    Tables are indexed 1-based like the model: a vector family has shape (n + 1, d), a
    scalar table (n + 1, n + 1); row/column 0 is unused.
    """

    d: int
    n: int
    scalars: dict[sp.Symbol, float] = field(default_factory=dict)
    vectors: dict[sp.Symbol, np.ndarray] = field(default_factory=dict)
    families: dict[str, np.ndarray] = field(default_factory=dict)
    tables: dict[str, np.ndarray] = field(default_factory=dict)

    def describe(self) -> dict:
        """A JSON-ready description (used for counterexamples), 1-based rows dropped of row 0."""
        out: dict = {"d": self.d, "n": self.n}
        for s, v in sorted(self.scalars.items(), key=lambda kv: kv[0].name):
            out[s.name] = _plain(v)
        for s, v in sorted(self.vectors.items(), key=lambda kv: kv[0].name):
            out[s.name] = [_plain(x) for x in v]
        for name, fam in sorted(self.families.items()):
            out[name] = [[_plain(x) for x in row] for row in fam[1:]]
        for name, tab in sorted(self.tables.items()):
            out[name] = [[_plain(x) for x in row[1:]] for row in tab[1:]]
        return out


def _plain(x):
    if isinstance(x, (np.bool_, bool)):
        return int(x)
    if isinstance(x, sp.Basic) and not (x.is_Rational and x.q in (1, 2, 4, 8)):
        return sp.sstr(x)  # an exact irrational entry, written so that it can be replayed
    f = float(x)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


class Uncertain(Unsupported):
    """A ball comparison could not decide a branch (the intervals overlap)."""


def rope_matrix(pos, dim: int, mode: str = "float", base: float = 10000.0):
    """R(pos) of rotary position embedding: pairs (2k, 2k+1) rotate by pos·base^(−2k/dim).

    R(a)ᵀR(b) = R(b − a) holds for every a, b; an odd last component is left unrotated.
    """
    if mode == "float":
        r = np.eye(dim)
        for k in range(dim // 2):
            th = pos * base ** (-2.0 * k / dim)
            c, s = math.cos(th), math.sin(th)
            r[2 * k, 2 * k], r[2 * k, 2 * k + 1], r[2 * k + 1, 2 * k], r[2 * k + 1, 2 * k + 1] = c, -s, s, c
        return r
    if mode == "arb":
        one, zero, b = arb(1), arb(0), arb(int(base))
        r = np.array([[one if a == c else zero for c in range(dim)] for a in range(dim)], dtype=object)
        for k in range(dim // 2):
            th = pos * b ** (arb(-2 * k) / dim)
            c, s = th.cos(), th.sin()
            r[2 * k, 2 * k], r[2 * k, 2 * k + 1], r[2 * k + 1, 2 * k], r[2 * k + 1, 2 * k + 1] = c, -s, s, c
        return r
    r = np.array([[mpmath.mpf(int(a == b)) for b in range(dim)] for a in range(dim)], dtype=object)
    for k in range(dim // 2):
        th = pos * mpmath.mpf(base) ** (mpmath.mpf(-2 * k) / dim)
        c, s = mpmath.cos(th), mpmath.sin(th)
        r[2 * k, 2 * k], r[2 * k, 2 * k + 1], r[2 * k + 1, 2 * k], r[2 * k + 1, 2 * k + 1] = c, -s, s, c
    return r


@lru_cache(maxsize=4096)
def _free(expr: sp.Basic) -> frozenset:
    return frozenset(expr.free_symbols)


_UNARY = ("exp", "log", "tanh", "sin", "cos")
_COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


class _Eval:
    def __init__(self, inst: Instance, mode: str):
        self.inst, self.mode = inst, mode
        self.cache: dict = {}

    # ---- numbers of the backend -------------------------------------------------------

    def num(self, x):
        if self.mode == "float":
            return float(x)
        if self.mode == "mp":
            return x if isinstance(x, mpmath.mpf) else mpmath.mpf(float(x))
        return self.exact(x)

    def exact(self, x):
        """An arb ball containing the exact value of an entry (int, float, Rational, sqrt(2), …)."""
        if isinstance(x, arb):
            return x
        if isinstance(x, (bool, np.bool_)):
            return arb(int(x))
        if isinstance(x, (int, np.integer)):
            return arb(int(x))
        if isinstance(x, (float, np.floating)):
            return arb(float(x))  # a float is a dyadic rational: enclosed exactly
        if isinstance(x, sp.Basic) and x.is_number:
            return self._node(x, {})
        raise Unsupported(f"no exact value for {x!r}")

    def arr(self, a):
        if self.mode == "float":
            return np.asarray(a, dtype=float)
        return np.array([self.num(x) for x in a], dtype=object)

    def index(self, v) -> int:
        if isinstance(v, arb):
            z = v.unique_fmpz()
            if z is None:
                raise Uncertain("an index is not a unique integer")
            return int(z)
        return int(v)

    def unary(self, name: str, x):
        if self.mode == "arb":
            return getattr(self.exact(x), name)()
        if self.mode == "mp":
            return getattr(mpmath, name)(x)
        if name == "exp":
            return math.exp(x) if x < 709.0 else math.inf
        if name == "log":
            return math.log(x) if x > 0 else -math.inf
        return getattr(math, name)(x)

    def sqrt(self, x):
        return self.exact(x).sqrt() if self.mode == "arb" else mpmath.sqrt(x) if self.mode == "mp" else math.sqrt(x)

    def truth(self, op: str, a, b) -> bool:
        """A comparison; with balls, only a certain answer counts."""
        if self.mode != "arb" or not (isinstance(a, arb) or isinstance(b, arb)):
            return bool(_COMPARE[op](a, b))
        a, b = self.exact(a), self.exact(b)
        if _COMPARE[op](a, b):
            return True
        if _COMPARE[_NEGATE[op]](a, b):
            return False
        raise Uncertain(f"cannot decide {op} between overlapping balls")

    # ---- the interpreter ----------------------------------------------------------------

    def run(self, e: sp.Basic, env: dict):
        if isinstance(e, sp.Sum) or isinstance(e, Dot):
            key = (e, tuple(sorted((s.name, env[s]) for s in _free(e) if s in env)))
            if key in self.cache:
                return self.cache[key]
            val = self._node(e, env)
            self.cache[key] = val
            return val
        return self._node(e, env)

    def _node(self, e: sp.Basic, env: dict):
        mode = self.mode
        if isinstance(e, sp.Symbol):
            if e in env:
                return env[e]
            if isinstance(e, VectorSymbol):
                return self.arr(self.inst.vectors[e])
            if e.name == "d":
                return self.num(self.inst.d)
            if e.name == "n":
                return self.num(self.inst.n)
            if e in self.inst.scalars:
                return self.num(self.inst.scalars[e])
            raise Unsupported(f"no value for symbol {e}")
        if isinstance(e, sp.Integer):
            return {"mp": mpmath.mpf, "arb": arb}.get(mode, float)(int(e))
        if isinstance(e, sp.Rational):
            if mode == "float":
                return int(e.p) / int(e.q)
            return (mpmath.mpf(int(e.p)) if mode == "mp" else arb(int(e.p))) / int(e.q)
        if isinstance(e, sp.Float):
            return mpmath.mpf(str(e)) if mode == "mp" else arb(str(e)) if mode == "arb" else float(e)
        if e is sp.pi:
            return mpmath.pi if mode == "mp" else arb.pi() if mode == "arb" else math.pi
        if e is sp.E:
            return mpmath.e if mode == "mp" else arb.const_e() if mode == "arb" else math.e
        if isinstance(e, sp.Indexed):
            idx = tuple(self.index(self.run(a, env)) for a in e.indices)
            if isinstance(e.base, VectorBase):
                return self.arr(self.inst.families[e.base.name][idx[0]])
            entry = self.inst.tables[e.base.name][idx]
            return self.num(entry if mode == "arb" else float(entry))
        if isinstance(e, sp.Add):
            vals = [self.run(a, env) for a in e.args]
            total = vals[0]
            for v in vals[1:]:
                total = total + v
            return total
        if isinstance(e, sp.Mul):
            total = None
            for a in e.args:
                v = self.run(a, env)
                total = v if total is None else total * v
            return total
        if isinstance(e, sp.Pow):
            b = self.run(e.base, env)
            ex = e.exp
            if ex == sp.Rational(1, 2):
                return self.sqrt(b)
            if ex == -sp.Rational(1, 2):
                return 1 / self.sqrt(b)
            if mode == "arb" and not isinstance(b, np.ndarray):
                b = self.exact(b)  # an integer index to a negative power must not become a float
            if isinstance(ex, sp.Integer):
                return b ** int(ex)
            x = self.run(ex, env)
            if mode == "arb":
                return self.exact(b) ** self.exact(x)
            return mpmath.power(b, x) if mode == "mp" else b**x
        if isinstance(e, (sp.exp, sp.log, sp.tanh, sp.sin, sp.cos)):
            return self.unary(type(e).__name__, self.run(e.args[0], env))
        if isinstance(e, sp.Abs):
            return abs(self.run(e.args[0], env))
        if isinstance(e, (sp.Max, sp.Min)):
            vals = [self.run(a, env) for a in e.args]
            if mode == "arb":
                out = self.exact(vals[0])
                for v in vals[1:]:
                    out = out.max(self.exact(v)) if isinstance(e, sp.Max) else out.min(self.exact(v))
                return out
            return max(vals) if isinstance(e, sp.Max) else min(vals)
        if isinstance(e, Dot):
            a, b = (self.run(x, env) for x in e.args)
            if mode == "float":
                return float(np.dot(a, b))
            return mpmath.fsum(a * b) if mode == "mp" else sum(a * b, arb(0))
        if isinstance(e, Rot):
            pos = self.run(e.args[0], env)
            vec = self.run(e.args[1], env)
            if mode == "arb":
                pos = self.exact(pos)
            return rope_matrix(pos, self.inst.d, mode).dot(vec)
        if isinstance(e, sp.Sum):
            (body, *limits) = e.args
            return self._sum(body, list(limits), env)
        if isinstance(e, sp.Piecewise):
            for val, cond in e.args:
                if cond == sp.true or self.run(cond, env):
                    return self.run(val, env)
            raise Unsupported("Piecewise without a true branch")
        if isinstance(e, sp.core.relational.Relational):
            return self.truth(e.rel_op, self.run(e.lhs, env), self.run(e.rhs, env))
        if isinstance(e, (sp.And, sp.Or)):  # conditions of masks as data (derive.flex.masks)
            test = all if isinstance(e, sp.And) else any
            return test(self.run(a, env) for a in e.args)
        if isinstance(e, sp.Not):
            return not self.run(e.args[0], env)
        if isinstance(e, sp.ITE):
            c, a, b = e.args
            return self.run(a if self.run(c, env) else b, env)
        if e in (sp.true, sp.false):
            return bool(e)
        raise Unsupported(f"cannot evaluate {type(e).__name__}: {sp.sstr(e)}")

    def _sum(self, body, limits, env):
        (var, lo, hi) = limits[0]
        lo_v, hi_v = self.index(self.run(lo, env)), self.index(self.run(hi, env))
        total = None
        for k in range(lo_v, hi_v + 1):
            inner = dict(env)
            inner[var] = k
            v = self._sum(body, limits[1:], inner) if len(limits) > 1 else self.run(body, inner)
            total = v if total is None else total + v
        if total is None:
            return self.num(0)
        return total


def evaluate(expr: sp.Basic, inst: Instance, mode: str = "float", env: dict | None = None, dps: int = 60,
             prec: int = 64):
    """Evaluate ``expr`` on ``inst``; ``env`` binds index symbols (i, j, …) to integers.

    ``dps`` is the mpmath precision in digits, ``prec`` the arb precision in bits.
    """
    if mode == "arb":
        old = flint.ctx.prec
        flint.ctx.prec = prec
        try:
            return _Eval(inst, mode).run(expr, dict(env or {}))
        finally:
            flint.ctx.prec = old
    if mode == "mp":
        with mpmath.workdps(dps):
            return _Eval(inst, mode).run(expr, dict(env or {}))
    with np.errstate(all="ignore"):  # inf and nan are results here; callers check finiteness
        return _Eval(inst, mode).run(expr, dict(env or {}))
