"""Numeric evaluation of engine expressions on a concrete instance.

Two backends: ``float`` (numpy float64) and ``mp`` (mpmath at a chosen precision, vectors
as object arrays of ``mpf``). The evaluator is an interpreter over a whitelist of node
types; anything else raises :class:`~derive.errors.Unsupported`. Sub-expressions that do
not depend on a loop variable are cached, so a double sum (an output mixing weights whose
denominator is itself a sum) costs O(n), not O(n²).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp

from derive.errors import Unsupported
from derive.model.vectors import Dot, Rot, VectorBase, VectorSymbol

__all__ = ["Instance", "evaluate", "rope_matrix"]


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
    f = float(x)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


def rope_matrix(pos: float, dim: int, mode: str = "float", base: float = 10000.0):
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
    r = np.array([[mpmath.mpf(int(a == b)) for b in range(dim)] for a in range(dim)], dtype=object)
    for k in range(dim // 2):
        th = pos * mpmath.mpf(base) ** (mpmath.mpf(-2 * k) / dim)
        c, s = mpmath.cos(th), mpmath.sin(th)
        r[2 * k, 2 * k], r[2 * k, 2 * k + 1], r[2 * k + 1, 2 * k], r[2 * k + 1, 2 * k + 1] = c, -s, s, c
    return r


@lru_cache(maxsize=4096)
def _free(expr: sp.Basic) -> frozenset:
    return frozenset(expr.free_symbols)


class _Eval:
    def __init__(self, inst: Instance, mode: str):
        self.inst, self.mode = inst, mode
        self.m = mpmath if mode == "mp" else None
        self.cache: dict = {}

    def num(self, x):
        if self.mode == "mp":
            return mpmath.mpf(x) if not isinstance(x, mpmath.mpf) else x
        return float(x)

    def arr(self, a):
        if self.mode == "mp":
            return np.array([mpmath.mpf(float(x)) if not isinstance(x, mpmath.mpf) else x for x in a], dtype=object)
        return np.asarray(a, dtype=float)

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
        mp = self.mode == "mp"
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
            return mpmath.mpf(int(e)) if mp else float(int(e))
        if isinstance(e, sp.Rational):
            return mpmath.mpf(int(e.p)) / int(e.q) if mp else int(e.p) / int(e.q)
        if isinstance(e, sp.Float):
            return mpmath.mpf(str(e)) if mp else float(e)
        if e is sp.pi:
            return mpmath.pi if mp else math.pi
        if e is sp.E:
            return mpmath.e if mp else math.e
        if isinstance(e, sp.Indexed):
            idx = tuple(int(self.run(a, env)) for a in e.indices)
            if isinstance(e.base, VectorBase):
                return self.arr(self.inst.families[e.base.name][idx[0]])
            return self.num(float(self.inst.tables[e.base.name][idx]))
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
                return mpmath.sqrt(b) if mp else math.sqrt(b)
            if ex == -sp.Rational(1, 2):
                return 1 / (mpmath.sqrt(b) if mp else math.sqrt(b))
            x = self.run(ex, env)
            if isinstance(ex, sp.Integer):
                return b ** int(ex)
            return mpmath.power(b, x) if mp else b**x
        if isinstance(e, sp.exp):
            x = self.run(e.args[0], env)
            if mp:
                return mpmath.exp(x)
            return math.exp(x) if x < 709.0 else math.inf
        if isinstance(e, sp.log):
            x = self.run(e.args[0], env)
            return mpmath.log(x) if mp else (math.log(x) if x > 0 else -math.inf)
        if isinstance(e, (sp.tanh, sp.sin, sp.cos)):
            x = self.run(e.args[0], env)
            name = type(e).__name__
            return getattr(mpmath, name)(x) if mp else getattr(math, name)(x)
        if isinstance(e, sp.Abs):
            return abs(self.run(e.args[0], env))
        if isinstance(e, (sp.Max, sp.Min)):
            vals = [self.run(a, env) for a in e.args]
            return max(vals) if isinstance(e, sp.Max) else min(vals)
        if isinstance(e, Dot):
            a, b = (self.run(x, env) for x in e.args)
            return mpmath.fsum(a * b) if mp else float(np.dot(a, b))
        if isinstance(e, Rot):
            pos = self.run(e.args[0], env)
            vec = self.run(e.args[1], env)
            return rope_matrix(pos, self.inst.d, self.mode).dot(vec)
        if isinstance(e, sp.Sum):
            (body, *limits) = e.args
            return self._sum(body, list(limits), env)
        if isinstance(e, sp.Piecewise):
            for val, cond in e.args:
                if cond == sp.true or bool(self.run(cond, env)):
                    return self.run(val, env)
            raise Unsupported("Piecewise without a true branch")
        if isinstance(e, sp.core.relational.Relational):
            a, b = self.run(e.lhs, env), self.run(e.rhs, env)
            return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[e.rel_op]
        raise Unsupported(f"cannot evaluate {type(e).__name__}: {sp.sstr(e)}")

    def _sum(self, body, limits, env):
        (var, lo, hi) = limits[0]
        lo_v, hi_v = int(self.run(lo, env)), int(self.run(hi, env))
        total = None
        for k in range(lo_v, hi_v + 1):
            inner = dict(env)
            inner[var] = k
            v = self._sum(body, limits[1:], inner) if len(limits) > 1 else self.run(body, inner)
            total = v if total is None else total + v
        if total is None:
            return self.num(0)
        return total


def evaluate(expr: sp.Basic, inst: Instance, mode: str = "float", env: dict | None = None, dps: int = 60):
    """Evaluate ``expr`` on ``inst``; ``env`` binds index symbols (i, j, …) to integers."""
    if mode == "mp":
        with mpmath.workdps(dps):
            return _Eval(inst, mode).run(expr, dict(env or {}))
    with np.errstate(all="ignore"):  # inf and nan are results here; callers check finiteness
        return _Eval(inst, mode).run(expr, dict(env or {}))
