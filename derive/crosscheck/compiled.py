"""Engine expressions compiled into closures, for :mod:`derive.crosscheck.evaluate`.

An expression is turned once into a tree of closures ``f(ev, env)`` over a whitelist of node
types (anything else raises :class:`~derive.errors.Unsupported` when evaluated); ``ev`` is the
evaluator of one backend (its numbers, comparisons and elementary functions), ``env`` binds
loop variables to integers. Evaluating on many instances (a cross-check evaluates each side on
120 of them, a sum's body once per index) then skips any dispatch on node types. Sums and dot
products are cached per evaluation by the values of the loop variables they use, so a double
sum (an output mixing weights whose denominator is itself a sum) costs O(n), not O(n²). An
independent node-by-node interpreter, kept in the tests, checks this one. The float backend
evaluates a repeated expression through :mod:`derive.crosscheck.generated` instead, which the
tests hold to these closures' values bit for bit.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np
import sympy as sp
from flint import arb

from derive.crosscheck.instance import rope_matrix
from derive.errors import Unsupported
from derive.model.attention import LabelBase, M as _MASK, i as _ROW
from derive.model.reductions import RowExtremum
from derive.model.vectors import Dot, Rot, VectorBase

__all__ = ["canon", "compiled", "free_symbols"]


@lru_cache(maxsize=4096)
def free_symbols(expr: sp.Basic) -> frozenset:
    return frozenset(expr.free_symbols)


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


def canon(s):
    """The key of a symbol in ``env``: one small integer per symbol (SymPy-equal symbols, e.g.
    one rebuilt by a substitution, share it), so the closures' lookups hash an int rather than
    call SymPy's ``__hash__``. Anything else is its own key."""
    if not isinstance(s, sp.Symbol):
        return s
    k = _SYMBOLS.get(s)
    if k is None:
        k = _SYMBOLS[s] = len(_SYMBOLS)
    return k


@lru_cache(maxsize=1024)
def compiled(e: sp.Basic):
    """:func:`_compile` once per expression: a cross-check evaluates the same two sides on
    every instance. The closure keeps the tree it was compiled from (``tree``), from which
    :mod:`derive.crosscheck.generated` writes the float backend's function."""
    f = _compile(e)
    f.tree, f.runs, f.generated = e, 0, None
    return f


def _entry(table, idx: tuple, name: str, is_label: bool):
    """``table[idx]``. A label vector (document ids, one per position of the drawn sequence)
    has no entry past the sequence's ends: a position there is no value of this instance (numpy
    would raise, or wrap a negative index around), so the instance certifies nothing."""
    if is_label and not all(0 <= int(k) < size for k, size in zip(idx, table.shape)):
        raise Unsupported(f"the document ids {name} have no entry at position {idx} of this instance")
    return table[idx]


def _compile(e: sp.Basic):
    f = _compile_node(e)
    if isinstance(e, (sp.Sum, Dot)):
        # A sum or dot product is cached per evaluation, keyed by the loop variables it uses
        # (their values; _UNBOUND for one no loop binds) and by a number for the node.
        bound = tuple(canon(s) for s in sorted(free_symbols(e), key=lambda s: s.name))
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


def _compile_node(e: sp.Basic):  # noqa: C901 - one branch per node type
    if isinstance(e, sp.Symbol):
        key = canon(e)

        def symbol(ev, env):
            value = env.get(key, _UNBOUND)
            if value is _UNBOUND:  # d, n, a scalar or vector of the instance: looked up once
                value = ev.values.get(key, _UNBOUND)
                if value is _UNBOUND:
                    value = ev.values[key] = ev.symbol(e)
            return value
        return symbol
    if isinstance(e, sp.Integer):
        k = int(e)

        def integer(ev, env):
            return float(k) if ev.mode == "float" else arb(k)
        return integer
    if isinstance(e, sp.Rational):
        p, q = int(e.p), int(e.q)

        def rational(ev, env):
            return p / q if ev.mode == "float" else arb(p) / q
        return rational
    if isinstance(e, sp.Float):
        as_float, as_text = float(e), str(e)
        return lambda ev, env: as_float if ev.mode == "float" else arb(as_text)
    if e is sp.pi:
        return lambda ev, env: math.pi if ev.mode == "float" else arb.pi()
    if e is sp.E:
        return lambda ev, env: math.e if ev.mode == "float" else arb.const_e()
    if isinstance(e, sp.Indexed):
        index_fs = tuple(_compile(a) for a in e.indices)
        base = e.base
        is_vector = isinstance(base, VectorBase)
        is_label = isinstance(base, LabelBase)
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
                return float(_entry(ev.inst.tables[name], (k,), name, is_label))
        elif len(index_fs) == 2:
            first_f, second_f = index_fs

            def indexed_float(ev, env):
                if ev.mode != "float":
                    return indexed(ev, env)
                k = (int(first_f(ev, env)), int(second_f(ev, env)))
                if is_vector:
                    return np.asarray(ev.inst.families[name][k[0]], dtype=float)
                return float(_entry(ev.inst.tables[name], k, name, is_label))
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
            entry = _entry(ev.inst.tables[name], idx, name, is_label)
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
        # SymPy's first range is the innermost (it flattens Σ_t Σ_{u ≤ t} into Sum(f, (u, 1, t), (t, 1, n)))
        body, *limits = e.args
        return _compile_sum(_compile(body), [(v, _compile(lo), _compile(hi)) for v, lo, hi in reversed(limits)])
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
    if isinstance(e, (sp.And, sp.Or)):  # conditions of masks as data (derive.model.masks)
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
    """Σ over ``limits`` [(var, lo, hi), …] (outermost first); an empty sum is 0."""
    (var, lo_f, hi_f), inner_limits = limits[0], limits[1:]
    var = canon(var)
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
    var, lo_f, hi_f = canon(var), _compile(lo), _compile(hi)

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
    lo_f, hi_f, skip_f, var = _compile(lo), _compile(hi), _compile(skip), canon(var)

    def extremum(ev, env):
        if _MASK.name not in ev.inst.tables:
            # the row's mask is implicit in the extremum (M[i, t], not one of its arguments): an
            # expression whose mask was made concrete has no table M, and the extremum cannot know
            # which keys that mask allows, so it has no value here (never a random table's keys)
            raise Unsupported(f"the {e.word} over the allowed keys of a mask made concrete: its keys are not known")
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
