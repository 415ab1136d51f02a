"""An entry's numpy implementation, derived from its formula: ``entry.stable``.

:class:`Stable` evaluates the overflow-free form that :mod:`derive.normalizers.overflow`
derives from the formula (and :func:`derive.normalizers.stable.stable_property` proves equal
to the definition for every real shift m) in float64, vectorised over rows: the scores are
the last axis, any leading axes are rows, a parameter is a number or one per row. Where no
overflow-free form is derived, the formula itself is evaluated the same way and
:attr:`Stable.reason` says why (overflow.py's reason).

The SymPy form is compiled once into closures over numpy arrays of shape ``(rows…, A, B)``:
axis A is the key j (length n, or 1 where a value does not depend on j), axis B the key t of
a reduction over the row (length n, or 1). A reduction (``Sum``, ``Product``,
:class:`~derive.model.reductions.RowExtremum`) reduces axis B over its range and the row's
allowed keys. A mask factor ``M[i, k]`` selects (``where``), so a masked key's score never
reaches the arithmetic, as in the exact reference (a masked score there is 0 and skipped). A
shift m, proved for every real value, is taken as 0 where its largest exponent is not finite
(a row of no allowed key). A part with no real value (0/0, log of a number ≤ 0, sqrt of a
negative number) is NaN, as in the reference; a nonzero number over 0 is ±inf, as in float
arithmetic (in float64 a 0 below a larger numerator is a weight beyond float64's range, not a
denominator that is exactly 0). On a row of no allowed key every
weight is 0 if the formula has a value with its reductions empty, NaN if not
(:meth:`~derive.normalizers.formula.Formula.defined_without_keys`, the reference's rule).
Nothing from a user is evaluated as Python: the parsed formula's SymPy tree is walked.
"""

from __future__ import annotations

from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp

from derive.errors import Unsupported
from derive.model.attention import X, i as _ROW, j as _KEY, n as _LEN
from derive.model.reductions import RowExtremum
from derive.normalizers.overflow import derive_overflow_free

__all__ = ["Stable", "compile_rows"]


class _Env:
    """The arrays one evaluation reads: scores, second scores, allowed keys, bound values."""

    def __init__(self, x, y, allowed, values):
        self.x, self.y, self.allowed, self.values = x, y, allowed, values
        size = x.shape[-1]
        self.size = size
        self.key = np.arange(1, size + 1).reshape(size, 1)
        self.other = np.arange(1, size + 1).reshape(1, size)


def compile_rows(e: sp.Basic, symbols: dict, empty=np.nan):
    """``e`` as a closure ``f(env) -> array`` (see the module's axes). ``symbols``: SymPy
    symbol → the name it is bound to in ``env.values`` (parameters and shifts); ``empty``: the
    value of a maximum over no allowed key (NaN, no value; −∞ for a shift, which then takes
    the other exponents). Raises :class:`~derive.errors.Unsupported` on a node it has no
    vectorised form for."""
    return _Compiler(symbols, empty).run(e, ())


class _Compiler:
    def __init__(self, symbols: dict, empty=np.nan):
        self.symbols = symbols
        self.empty = empty  # the value of a max_t or min_t over no allowed key

    def run(self, e, bound: tuple):  # noqa: C901 - one branch per node type
        """``bound``: the variables of the reductions ``e`` is inside, innermost last."""
        if isinstance(e, sp.Symbol):
            return self.symbol(e, bound)
        if isinstance(e, (sp.Integer, sp.Rational, sp.Float)) or e in (sp.pi, sp.E):
            value = float(e)
            return lambda env: value
        if isinstance(e, sp.Indexed):
            return self.indexed(e, bound)
        if isinstance(e, sp.Add):
            fs = self.add_terms(e, bound)

            def add(env):
                total = fs[0](env)
                for f in fs[1:]:
                    total = total + f(env)
                return total
            return add
        if isinstance(e, sp.Mul):
            return self.mul(e, bound)
        if isinstance(e, sp.Pow):
            return self.power(e, bound)
        if isinstance(e, (sp.exp, sp.tanh, sp.Abs)):
            fn = {sp.exp: np.exp, sp.tanh: np.tanh, sp.Abs: np.abs}[type(e)]
            arg = self.run(e.args[0], bound)
            return lambda env: fn(arg(env))
        if isinstance(e, sp.log):
            arg = self.run(e.args[0], bound)

            def log(env):
                a = arg(env)
                return np.where(a > 0, np.log(np.where(a > 0, a, 1.0)), np.nan)
            return log
        if isinstance(e, (sp.Max, sp.Min)):
            fs, fn = [self.run(a, bound) for a in e.args], np.maximum if isinstance(e, sp.Max) else np.minimum

            def extremum(env):
                out = fs[0](env)
                for f in fs[1:]:
                    out = fn(out, f(env))
                return out
            return extremum
        if isinstance(e, sp.Piecewise):
            pairs = [(self.run(v, bound), None if c == sp.true else self.run(c, bound)) for v, c in e.args]

            def piecewise(env):
                values = [np.asarray(v(env), dtype=np.float64) for v, _ in pairs]
                conds = [np.ones((), bool) if c is None else np.asarray(c(env), bool) for _, c in pairs]
                shape = np.broadcast_shapes(*(a.shape for a in values + conds))
                return np.select([np.broadcast_to(c, shape) for c in conds],
                                 [np.broadcast_to(v, shape) for v in values], np.nan)
            return piecewise
        if isinstance(e, sp.core.relational.Relational):
            op = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
                  "!=": np.not_equal}[e.rel_op]
            left, right = self.run(e.lhs, bound), self.run(e.rhs, bound)
            return lambda env: op(left(env), right(env))
        if isinstance(e, (sp.Sum, sp.Product)):
            return self.reduction(e, bound)
        if isinstance(e, RowExtremum):
            return self.row_extremum(e, bound)
        raise Unsupported(f"no vectorised form of {type(e).__name__}: {sp.sstr(e)}")

    def add_terms(self, e: sp.Add, bound) -> list:
        """The terms of ``e``, compiled; a sum Σ_t M[i,t]·B(t) with a term −M[i,k]·B(k) beside
        it (a reduction ``t != k`` of the formula) is compiled as one sum that skips t = k, so
        the key's own term is never added and taken away again (that loses it, and everything
        else, when it dominates)."""
        terms, out = list(e.args), []
        whole = [a for a in terms if isinstance(a, sp.Sum) and len(a.limits) == 1 and a.limits[0][1:] == (1, _LEN)]
        for s_ in whole:  # over 1..n: taking away key k's term (0 past the row's end) skips k
            var = s_.limits[0][0]
            for other in terms:
                if other is s_ or not isinstance(other, sp.Mul):
                    continue
                keys = [f.indices[1] for f in other.args if isinstance(f, sp.Indexed) and f.base.name == "M"
                        and len(f.indices) == 2 and f.indices[0] == _ROW]
                if len(keys) == 1 and var not in keys[0].free_symbols \
                        and sp.expand(-other - s_.function.xreplace({var: keys[0]})) == 0:
                    out.append(self.reduction(s_, bound, skip=keys[0]))
                    terms = [a for a in terms if a is not s_ and a is not other]
                    break
        return out + [self.run(a, bound) for a in terms]

    def symbol(self, e, bound):
        if e in self.symbols:
            name = self.symbols[e]
            return lambda env: env.values[name]
        if e == _KEY:
            return lambda env: env.key
        if bound and e == bound[-1]:
            return lambda env: env.other
        if e in (_LEN, _ROW):  # the row's length; the query position defaults to it, as in the reference
            return lambda env: float(env.size)
        raise Unsupported(f"no value for the symbol {e}")

    def indexed(self, e, bound):
        base = e.base.name
        if base not in ("x", "y", "M") or len(e.indices) != 2 or e.indices[0] != _ROW:
            raise Unsupported(f"no vectorised form of {sp.sstr(e)}")
        k = e.indices[1]
        key = self.run(k, bound)

        def indexed(env):
            kk = np.asarray(key(env))
            inside = (kk >= 1) & (kk <= env.size)
            at = np.clip(kk.astype(np.int64) - 1, 0, env.size - 1)
            if base == "M":
                return env.allowed[..., at] & inside
            row = env.x if base == "x" else env.y
            return np.where(inside, row[..., at], np.nan)  # past the end: no value
        return indexed

    def mul(self, e, bound):
        masks = [self.run(a, bound) for a in e.args if isinstance(a, sp.Indexed) and a.base.name == "M"]
        fs = [self.run(a, bound) for a in e.args if not (isinstance(a, sp.Indexed) and a.base.name == "M")]

        def mul(env):
            total = fs[0](env) if fs else 1.0
            for f in fs[1:]:
                total = total * f(env)
            if not masks:
                return total
            keep = masks[0](env)
            for m in masks[1:]:
                keep = keep & m(env)
            return np.where(keep, total, 0.0)  # a masked key's value never reaches the product
        return mul

    def power(self, e, bound):
        base = self.run(e.base, bound)
        if e.exp == sp.Rational(1, 2) or e.exp == -sp.Rational(1, 2):
            sign = 1 if e.exp > 0 else -1

            def sqrt(env):
                b = base(env)
                r = np.where(b >= 0, np.sqrt(np.where(b >= 0, b, 0.0)), np.nan)
                return r if sign > 0 else _divide(1.0, r)
            return sqrt
        if isinstance(e.exp, sp.Integer):
            k = int(e.exp)
            if k < 0:
                return lambda env: _divide(1.0, base(env) ** -k)
            return lambda env: base(env) ** k
        ex = self.run(e.exp, bound)
        return lambda env: np.power(base(env), ex(env))

    def limits(self, var, lo, hi, bound):
        if any(b in e.free_symbols for e in (lo, hi) for b in bound):
            raise Unsupported("a reduction whose range depends on an outer reduction's variable")
        inner = bound + (var,)
        return self.run(lo, inner), self.run(hi, inner), inner

    def reduction(self, e, bound, skip=None):
        if len(e.limits) != 1:
            raise Unsupported("a reduction over more than one variable")
        (var, lo, hi), = e.limits
        if any(b in e.function.free_symbols for b in bound):
            raise Unsupported("a reduction whose body depends on an outer reduction's variable")
        lo_f, hi_f, inner = self.limits(var, lo, hi, bound)
        body = self.run(e.function, inner)
        is_sum = isinstance(e, sp.Sum)
        run = _running(lo, hi, is_sum) if skip is None else None
        skip_f = None if skip is None else self.run(skip, bound)

        def reduce(env):
            b = body(env)
            if run is not None and (np.ndim(b) < 2 or np.shape(b)[-2] == 1):  # the body is the same for every j
                return run(b, env)
            inside = (env.other >= lo_f(env)) & (env.other <= hi_f(env))
            if skip_f is not None:
                inside = inside & (env.other != skip_f(env))
            if is_sum:
                return np.where(inside, b, 0.0).sum(axis=-1, keepdims=True)
            return np.where(inside, b, 1.0).prod(axis=-1, keepdims=True)
        return reduce

    def row_extremum(self, e: RowExtremum, bound):
        body_e, var, lo, hi, skip = e.args
        if any(b in body_e.free_symbols for b in bound):
            raise Unsupported("a reduction whose body depends on an outer reduction's variable")
        lo_f, hi_f, inner = self.limits(var, lo, hi, bound)
        skip_f = self.run(skip, bound)
        body = self.run(body_e, inner)
        largest, empty = e.largest, self.empty

        def extremum(env):
            keep = (env.other >= lo_f(env)) & (env.other <= hi_f(env)) & (env.other != skip_f(env))
            keep = keep & env.allowed[..., None, :]
            b = body(env)
            shape = np.broadcast_shapes(np.shape(b), keep.shape)
            keep = np.broadcast_to(keep, shape)
            fill = -np.inf if largest else np.inf
            out = np.where(keep, b, fill)
            out = out.max(axis=-1, keepdims=True) if largest else out.min(axis=-1, keepdims=True)
            return np.where(keep.any(axis=-1, keepdims=True), out, empty)
        return extremum


def _running(lo, hi, is_sum):
    """A reduction over the keys after j (lo = j + c, hi = n) or up to j (lo = 1, hi = j + c),
    for a body that turns out the same for every j: one running sum or product over the row
    (O(n), not an n × n table), read at j + c; None for any other range."""
    c_lo, c_hi = sp.expand(lo - _KEY), sp.expand(hi - _KEY)
    if hi == _LEN and c_lo.is_Integer:
        offset, suffix = int(c_lo), True
    elif lo == 1 and c_hi.is_Integer:
        offset, suffix = int(c_hi), False
    else:
        return None
    unit = 0.0 if is_sum else 1.0
    acc = np.cumsum if is_sum else np.cumprod

    def run(b, env):
        b = np.broadcast_to(b, np.broadcast_shapes(np.shape(b), env.other.shape))[..., -1:, :]
        pad = np.full(b.shape[:-1] + (1,), unit)
        if suffix:  # R[k] = reduction over t ≥ k (k = 1..n + 1)
            table = np.concatenate([np.flip(acc(np.flip(b, -1), axis=-1), -1), pad], axis=-1)
            at = np.clip(env.key + offset, 1, env.size + 1) - 1
        else:  # R[k] = reduction over t ≤ k (k = 0..n)
            table = np.concatenate([pad, acc(b, axis=-1)], axis=-1)
            at = np.clip(env.key + offset, 0, env.size)
        return table[..., 0, :][..., at]
    return run


def _divide(a, b):
    """IEEE: 0/0 is NaN (no value, as in the reference); a/0 is ±inf, as the float value of a
    weight too large for float64 (a denominator that underflowed to 0 below a larger numerator)."""
    return np.true_divide(a, b)


class Stable:
    """``stable(x, mask=None, y=None, **params)`` of a registry entry, derived from its formula
    on first use. :attr:`reason`: why the formula is evaluated as written ("" when the
    overflow-free form is)."""

    def __init__(self, formula, params: tuple[str, ...], defaults: dict):
        self.formula, self.params, self.defaults = formula, tuple(params), dict(defaults)
        self._made = None

    @property
    def reason(self) -> str:
        return self._make()[2]

    def _make(self):
        if self._made is None:
            self._made = _derive(self.formula, self.params)
        return self._made

    def __call__(self, x, mask=None, y=None, **params):
        expr_f, shifts, _ = self._make()
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 0:
            x = x.reshape(1)
        allowed = np.ones(x.shape, bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), x.shape)
        vals = {**self.defaults, **{k: v for k, v in params.items() if k in self.params}}
        missing = [p for p in self.params if p not in vals]
        if missing:
            raise TypeError(f"stable() needs the parameter(s) {', '.join(missing)}")
        rows = x.shape[:-1]
        per_row = {p: np.broadcast_to(np.asarray(vals[p], dtype=np.float64), rows) for p in self.params}
        xs = np.where(allowed, x, 0.0)  # a masked score is never read (the reference takes it as 0)
        ys = xs if y is None else np.where(allowed, np.asarray(y, dtype=np.float64), 0.0)
        env = _Env(xs, ys, allowed, {p: v[..., None, None] for p, v in per_row.items()})
        with np.errstate(all="ignore"):
            for name, f in shifts:
                m = np.asarray(f(env), dtype=np.float64)
                env.values[name] = np.where(np.isfinite(m), m, 0.0)  # any real shift is proved: 0 for none
            out = np.asarray(expr_f(env), dtype=np.float64)
        out = np.broadcast_to(out, rows + (x.shape[-1], 1))[..., 0]
        out = np.where(allowed, out, 0.0)
        empty = ~allowed.any(axis=-1)
        for r in map(tuple, np.argwhere(empty)):  # a row of no allowed key: the reference's rule
            ok = _defined_without_keys(self.formula, tuple((p, float(per_row[p][r])) for p in self.params))
            out[r] = 0.0 if ok else np.nan
        return out


@lru_cache(maxsize=256)
def _defined_without_keys(formula, params: tuple) -> bool:
    return formula.defined_without_keys(**{p: mpmath.mpf(v) for p, v in params})


def _derive(formula, params: tuple):
    """(the compiled form, its shifts [(name, compiled value)], the reason it is not the
    overflow-free form or "")."""
    symbols = {p: sp.Dummy(p, real=True) for p in params}
    names = {s: p for p, s in symbols.items()}
    form = derive_overflow_free(_Entry(formula), symbols)
    weight = formula.weight(lambda k: X[_ROW, k], _KEY, **symbols)
    if form.form is not None:
        try:
            shifted = {**names, **{m: f"shift {m}" for m in form.shifts}}
            shifts = [(f"shift {m}", compile_rows(value, names, -np.inf)) for m, value in form.shifts.items()]
            return compile_rows(form.form, shifted), shifts, ""
        except Unsupported as exc:
            form.reason = f"the overflow-free form has no vectorised evaluation here: {exc}"
    return compile_rows(weight, names), [], form.reason


class _Entry:
    """What :func:`derive_overflow_free` reads of an entry: its compiled formula."""

    def __init__(self, formula):
        self.definition_of = formula
