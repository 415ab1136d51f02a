"""Numeric evaluation of engine expressions on a concrete instance.

Two backends: ``float`` (numpy float64) and ``arb`` (python-flint's ball arithmetic at a
chosen precision in bits, vectors as object arrays of balls: every value is an interval
certain to contain the exact one, which is what certifies a counterexample). Instance
entries may be exact numbers (integers, ``sympy.Rational``, ``sqrt(2)``); the ``arb``
backend encloses them exactly, ``float`` rounds them. The evaluator is an interpreter over a whitelist of node
types; anything else raises :class:`~derive.errors.Unsupported`. Sub-expressions that do
not depend on a loop variable are cached, so a double sum (an output mixing weights whose
denominator is itself a sum) costs O(n), not O(n²).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from functools import lru_cache

import flint
import numpy as np
import sympy as sp
from flint import arb

from derive.errors import Unsupported
from derive.model.attention import M as _MASK, i as _ROW
from derive.model.reductions import RowExtremum
from derive.model.vectors import Dot, Rot, VectorBase, VectorSymbol

__all__ = ["Instance", "Uncertain", "evaluate", "rope_matrix"]


@dataclass
class Instance:
    """Concrete values: ``d``, ``n``, scalars/indices by symbol, tables by base name.

    Tables are indexed 1-based like the model: a vector family has shape (n + 1, d), a
    scalar table (n + 1, n + 1), a label vector (n + 1,); row/column 0 is unused.
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
            if tab.ndim == 1:  # a label vector (document ids), position 1..n
                out[name] = [_plain(x) for x in tab[1:]]
                continue
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
    one, zero, b = arb(1), arb(0), arb(int(base))
    r = np.array([[one if a == c else zero for c in range(dim)] for a in range(dim)], dtype=object)
    for k in range(dim // 2):
        th = pos * b ** (arb(-2 * k) / dim)
        c, s = th.cos(), th.sin()
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
        if name == "exp":
            return math.exp(x) if x < 709.0 else math.inf
        if name == "log":
            return math.log(x) if x > 0 else -math.inf
        return getattr(math, name)(x)

    def sqrt(self, x):
        return self.exact(x).sqrt() if self.mode == "arb" else math.sqrt(x)

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
        return _compiled(e)(self, env)

    def symbol(self, e: sp.Symbol):
        """The value of a symbol that no loop binds: d, n, a scalar or a vector of the instance."""
        if isinstance(e, VectorSymbol):
            return self.arr(self.inst.vectors[e])
        if e.name == "d":
            return self.num(self.inst.d)
        if e.name == "n":
            return self.num(self.inst.n)
        if e in self.inst.scalars:
            return self.num(self.inst.scalars[e])
        raise Unsupported(f"no value for symbol {e}")

    def _node(self, e: sp.Basic, env: dict):
        """The value of one node (its children through :meth:`run`); the reference semantics.

        :func:`_compile` turns an expression into closures that do exactly what this does, in
        the same order (so the same floats), without re-dispatching on the node type for every
        instance and every index of a sum.
        """
        mode = self.mode
        if isinstance(e, sp.Symbol):
            if e in env:
                return env[e]
            return self.symbol(e)
        if isinstance(e, sp.Integer):
            return arb(int(e)) if mode == "arb" else float(int(e))
        if isinstance(e, sp.Rational):
            if mode == "float":
                return int(e.p) / int(e.q)
            return arb(int(e.p)) / int(e.q)
        if isinstance(e, sp.Float):
            return arb(str(e)) if mode == "arb" else float(e)
        if e is sp.pi:
            return arb.pi() if mode == "arb" else math.pi
        if e is sp.E:
            return arb.const_e() if mode == "arb" else math.e
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
            return b**x
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
            return sum(a * b, arb(0))
        if isinstance(e, Rot):
            pos = self.run(e.args[0], env)
            vec = self.run(e.args[1], env)
            if mode == "arb":
                pos = self.exact(pos)
            return rope_matrix(pos, self.inst.d, mode).dot(vec)
        if isinstance(e, sp.Sum):
            (body, *limits) = e.args
            return self._sum(body, list(limits), env)
        if isinstance(e, (sp.Product, RowExtremum)):
            return _compile(e)(self, env)
        if isinstance(e, sp.Piecewise):
            for val, cond in e.args:
                if cond == sp.true or self.run(cond, env):
                    return self.run(val, env)
            raise Unsupported("Piecewise without a true branch")
        if isinstance(e, sp.core.relational.Relational):
            return self.truth(e.rel_op, self.run(e.lhs, env), self.run(e.rhs, env))
        if isinstance(e, (sp.And, sp.Or)):  # conditions of masks as data (derive.model.masks)
            test = all if isinstance(e, sp.And) else any
            return test(self.run(a, env) for a in e.args)
        if isinstance(e, sp.Not):
            return not self.run(e.args[0], env)
        if isinstance(e, sp.ITE):
            c, a, b = e.args
            return self.run(a if self.run(c, env) else b, env)
        if e in (sp.true, sp.false):
            return bool(e)
        if getattr(e, "past_the_end", False):  # a table read past its end (derive.model.tables.PastTheEnd)
            return _past_the_end(mode)
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


# ---- compiled evaluation ---------------------------------------------------------------------
# An expression is turned once into a tree of closures ``f(ev, env)``; evaluating it on many
# instances (a cross-check evaluates each side on 120 of them, and a sum's body once per index)
# then skips the isinstance dispatch of :meth:`_Eval._node`. Each closure performs the same
# operations in the same order as ``_node``, so results are identical to the last bit.


@lru_cache(maxsize=8192)
def _past_the_end(mode: str):
    """A table read past its end: no instance of the model. NaN for a float cross-check (it
    agrees with nothing); no value at all for a certificate, which then certifies nothing."""
    if mode == "float":
        return float("nan")
    raise Unsupported("a table read past its end")


_SYMBOLS: dict = {}
_UNBOUND = object()  # no value: a symbol no loop binds, a node not yet in the cache
_TOKENS = itertools.count()  # a number for each cached node of a compiled expression


def _canon(s):
    """One object per symbol: the symbols the compiled closures look up in ``env`` and the
    keys they bind there are the same objects, so a lookup never falls back on SymPy's slow
    structural ``==`` (an equal symbol rebuilt by a substitution is another object)."""
    return _SYMBOLS.setdefault(s, s) if isinstance(s, sp.Symbol) else s


@lru_cache(maxsize=1024)
def _compiled(e: sp.Basic):
    """:func:`_compile` once per expression: a cross-check evaluates the same two sides on
    every instance."""
    return _compile(e)


def _compile(e: sp.Basic):
    f = _compile_node(e)
    if isinstance(e, (sp.Sum, Dot)):
        # A sum or dot product is cached per evaluation, keyed by the loop variables it uses
        # (their values; _UNBOUND for one no loop binds) and by a number for the node.
        bound = tuple(sorted((_canon(s) for s in _free(e)), key=lambda s: s.name))
        token = next(_TOKENS)

        def cached(ev, env, _f=f, _token=token, _bound=bound):
            key = (_token, *[env.get(s, _UNBOUND) for s in _bound])
            cache = ev.cache
            val = cache.get(key, _UNBOUND)
            if val is _UNBOUND:
                val = cache[key] = _f(ev, env)
            return val
        return cached
    return f


def _compile_node(e: sp.Basic):  # noqa: C901 - one branch per node type, as in _Eval._node
    if isinstance(e, sp.Symbol):
        e = _canon(e)

        def symbol(ev, env):
            value = env.get(e, _UNBOUND)
            return ev.symbol(e) if value is _UNBOUND else value
        return symbol
    if isinstance(e, sp.Integer):
        k = int(e)

        def integer(ev, env):
            return float(k) if ev.mode == "float" else ev._node(e, env)
        return integer
    if isinstance(e, sp.Rational):
        p, q = int(e.p), int(e.q)

        def rational(ev, env):
            return p / q if ev.mode == "float" else ev._node(e, env)
        return rational
    if isinstance(e, sp.Float) or e is sp.pi or e is sp.E:
        return lambda ev, env: ev._node(e, env)
    if isinstance(e, sp.Indexed):
        index_fs = tuple(_compile(a) for a in e.indices)
        base = e.base
        is_vector = isinstance(base, VectorBase)
        name = base.name

        if len(index_fs) == 1:
            (first_f,) = index_fs

            def indexed_float(ev, env):
                # float mode, one index: what the general path below does (an index is a
                # Python int or float there, never a ball), without its dispatch
                if ev.mode != "float":
                    return indexed(ev, env)
                k = int(first_f(ev, env))
                if is_vector:
                    return np.asarray(ev.inst.families[name][k], dtype=float)
                return float(ev.inst.tables[name][k])
        elif len(index_fs) == 2:
            first_f, second_f = index_fs

            def indexed_float(ev, env):
                if ev.mode != "float":
                    return indexed(ev, env)
                k = (int(first_f(ev, env)), int(second_f(ev, env)))
                if is_vector:
                    return np.asarray(ev.inst.families[name][k[0]], dtype=float)
                return float(ev.inst.tables[name][k])
        else:
            indexed_float = None

        def indexed(ev, env):
            index = ev.index
            if len(index_fs) == 1:
                idx = (index(index_fs[0](ev, env)),)
            elif len(index_fs) == 2:
                idx = (index(index_fs[0](ev, env)), index(index_fs[1](ev, env)))
            else:
                idx = tuple(index(g(ev, env)) for g in index_fs)
            if is_vector:
                return ev.arr(ev.inst.families[name][idx[0]])
            entry = ev.inst.tables[name][idx]
            return ev.num(entry if ev.mode == "arb" else float(entry))
        return indexed_float or indexed
    if isinstance(e, sp.Add):
        first, *rest = (_compile(a) for a in e.args)

        def add(ev, env):
            vals = [first(ev, env)] + [g(ev, env) for g in rest]
            total = vals[0]
            for v in vals[1:]:
                total = total + v
            return total
        return add
    if isinstance(e, sp.Mul):
        first, *rest = (_compile(a) for a in e.args)

        def mul(ev, env):
            total = first(ev, env)
            for g in rest:
                total = total * g(ev, env)
            return total
        return mul
    if isinstance(e, sp.Pow):
        base_f, ex = _compile(e.base), e.exp
        if ex == sp.Rational(1, 2):
            return lambda ev, env: ev.sqrt(base_f(ev, env))
        if ex == -sp.Rational(1, 2):
            return lambda ev, env: 1 / ev.sqrt(base_f(ev, env))
        integer_ex = int(ex) if isinstance(ex, sp.Integer) else None
        ex_f = None if integer_ex is not None else _compile(ex)

        def power(ev, env):
            b = base_f(ev, env)
            mode = ev.mode
            if mode == "arb" and not isinstance(b, np.ndarray):
                b = ev.exact(b)  # an integer index to a negative power must not become a float
            if integer_ex is not None:
                return b ** integer_ex
            x = ex_f(ev, env)
            if mode == "arb":
                return ev.exact(b) ** ev.exact(x)
            return b**x
        return power
    if isinstance(e, (sp.exp, sp.log, sp.tanh, sp.sin, sp.cos)):
        name, arg_f = type(e).__name__, _compile(e.args[0])
        return lambda ev, env: ev.unary(name, arg_f(ev, env))
    if isinstance(e, sp.Abs):
        arg_f = _compile(e.args[0])
        return lambda ev, env: abs(arg_f(ev, env))
    if isinstance(e, (sp.Max, sp.Min)):
        fs, is_max = tuple(_compile(a) for a in e.args), isinstance(e, sp.Max)

        def extremum(ev, env):
            vals = [g(ev, env) for g in fs]
            if ev.mode == "arb":
                out = ev.exact(vals[0])
                for v in vals[1:]:
                    out = out.max(ev.exact(v)) if is_max else out.min(ev.exact(v))
                return out
            return max(vals) if is_max else min(vals)
        return extremum
    if isinstance(e, Dot):
        fa, fb = (_compile(x) for x in e.args)

        def dot(ev, env):
            a, b = fa(ev, env), fb(ev, env)
            mode = ev.mode
            if mode == "float":
                return float(np.dot(a, b))
            return sum(a * b, arb(0))
        return dot
    if isinstance(e, Rot):
        fpos, fvec = _compile(e.args[0]), _compile(e.args[1])

        def rot(ev, env):
            pos = fpos(ev, env)
            vec = fvec(ev, env)
            if ev.mode == "arb":
                pos = ev.exact(pos)
            return rope_matrix(pos, ev.inst.d, ev.mode).dot(vec)
        return rot
    if isinstance(e, sp.Sum):
        body, *limits = e.args
        return _compile_sum(_compile(body), [(v, _compile(lo), _compile(hi)) for v, lo, hi in limits])
    if isinstance(e, sp.Product):
        return _compile_product(_compile(e.function), e.limits)
    if isinstance(e, RowExtremum):
        return _compile_extremum(e)
    if isinstance(e, sp.Piecewise):
        branches = tuple((cond == sp.true, _compile(val), None if cond == sp.true else _compile(cond))
                         for val, cond in e.args)

        def piecewise(ev, env):
            for always, val_f, cond_f in branches:
                if always or cond_f(ev, env):
                    return val_f(ev, env)
            raise Unsupported("Piecewise without a true branch")
        return piecewise
    if isinstance(e, sp.core.relational.Relational):
        op, fl, fr = e.rel_op, _compile(e.lhs), _compile(e.rhs)
        return lambda ev, env: ev.truth(op, fl(ev, env), fr(ev, env))
    if isinstance(e, (sp.And, sp.Or)):  # conditions of masks as data (derive.model.masks), as _Eval._node
        test, fs = (all if isinstance(e, sp.And) else any), tuple(_compile(a) for a in e.args)
        return lambda ev, env: test(f(ev, env) for f in fs)
    if isinstance(e, sp.Not):
        f_not = _compile(e.args[0])
        return lambda ev, env: not f_not(ev, env)
    if isinstance(e, sp.ITE):
        fc, fa, fb = (_compile(a) for a in e.args)
        return lambda ev, env: fa(ev, env) if fc(ev, env) else fb(ev, env)
    if e in (sp.true, sp.false):
        value = bool(e)
        return lambda ev, env: value
    if getattr(e, "past_the_end", False):
        return lambda ev, env: _past_the_end(ev.mode)

    def unsupported(ev, env):
        raise Unsupported(f"cannot evaluate {type(e).__name__}: {sp.sstr(e)}")
    return unsupported


def _compile_sum(body_f, limits):
    """Σ over ``limits`` [(var, lo, hi), …] (outermost first), as :meth:`_Eval._sum`."""
    (var, lo_f, hi_f), inner_limits = limits[0], limits[1:]
    var = _canon(var)
    inner_f = _compile_sum(body_f, inner_limits) if inner_limits else body_f

    def total_of(ev, env):
        lo_v, hi_v = ev.index(lo_f(ev, env)), ev.index(hi_f(ev, env))
        total = None
        inner = dict(env)  # one copy for the whole loop: no closure keeps an environment
        for k in range(lo_v, hi_v + 1):
            inner[var] = k
            v = inner_f(ev, inner)
            total = v if total is None else total + v
        if total is None:
            return ev.num(0)
        return total
    return total_of


def _compile_product(body_f, limits):
    """Π over one range (var, lo, hi), as the products of a normalizer's formula; empty: 1."""
    (var, lo, hi), = limits
    var, lo_f, hi_f = _canon(var), _compile(lo), _compile(hi)

    def product_of(ev, env):
        total = ev.num(1)
        for k in range(ev.index(lo_f(ev, env)), ev.index(hi_f(ev, env)) + 1):
            inner = dict(env)
            inner[var] = k
            total = total * body_f(ev, inner)
        return total
    return product_of


def _compile_extremum(e: RowExtremum):
    """The max (min) of the body over the allowed keys of :class:`RowExtremum`; none: no value."""
    body, var, lo, hi, skip = e.args
    body_f, mask_f = _compile(body), _compile(_MASK[_ROW, var])
    lo_f, hi_f, skip_f, var = _compile(lo), _compile(hi), _compile(skip), _canon(var)

    def extremum(ev, env):
        skip_v = ev.index(skip_f(ev, env))
        out = None
        for k in range(ev.index(lo_f(ev, env)), ev.index(hi_f(ev, env)) + 1):
            inner = dict(env)
            inner[var] = k
            if k == skip_v or not ev.truth("==", mask_f(ev, inner), 1):
                continue
            v = body_f(ev, inner)
            if out is None:
                out = ev.exact(v) if ev.mode == "arb" else v
            elif ev.mode == "arb":
                out = out.max(ev.exact(v)) if e.largest else out.min(ev.exact(v))
            else:
                out = max(out, v) if e.largest else min(out, v)
        if out is None:
            raise Unsupported(f"the {e.word} over no allowed key has no value")
        return out
    return extremum


def evaluate(expr: sp.Basic, inst: Instance, mode: str = "float", env: dict | None = None, prec: int = 64):
    """Evaluate ``expr`` on ``inst``; ``env`` binds index symbols (i, j, …) to integers.

    ``mode`` is ``"float"`` or ``"arb"``; ``prec`` is the arb precision in bits.
    """
    if mode == "arb":
        old = flint.ctx.prec
        flint.ctx.prec = prec
        try:
            return _Eval(inst, mode).run(expr, _env(env))
        finally:
            flint.ctx.prec = old
    if mode != "float":
        raise ValueError(f"unknown evaluation mode {mode!r}; expected 'float' or 'arb'")
    with np.errstate(all="ignore"):  # inf and nan are results here; callers check finiteness
        return _Eval(inst, mode).run(expr, _env(env))


def _env(env: dict | None) -> dict:
    """A copy of ``env`` keyed by the symbols' canonical objects (see :func:`_canon`)."""
    return {_canon(k): v for k, v in (env or {}).items()}
