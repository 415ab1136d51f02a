"""An independent evaluator of engine expressions, for the tests: a node-by-node interpreter.

derive evaluates an expression through closures compiled once (:mod:`derive.crosscheck.compiled`:
cached sums, symbols looked up once, float fast paths). This interpreter dispatches on every
node, every time, with no cache; only the backend's numbers (the float or arb value of an entry,
the elementary functions, a ball comparison) are shared with derive's evaluator. The tests
compare the two on every node type and on the weights of normalizer formulas chosen to be
awkward (extreme scores, products over part of the row, masked keys, nested max and min).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from flint import arb

from derive.crosscheck.evaluate import Instance, _Eval
from derive.crosscheck.instance import rope_matrix
from derive.errors import Unsupported
from derive.model.attention import M, i
from derive.model.reductions import RowExtremum
from derive.model.vectors import Dot, Rot, VectorBase

__all__ = ["oracle"]


def oracle(expr: sp.Basic, inst: Instance, mode: str = "float", env: dict | None = None, prec: int = 64):
    """``expr`` on ``inst`` by :class:`Oracle` (the arguments of :func:`derive.crosscheck.evaluate.evaluate`)."""
    import flint

    old = flint.ctx.prec
    flint.ctx.prec = prec
    try:
        with np.errstate(all="ignore"):
            return Oracle(inst, mode).run(expr, dict(env or {}))
    finally:
        flint.ctx.prec = old


class Oracle(_Eval):
    """The backend of :class:`derive.crosscheck.evaluate._Eval`, with its own node-by-node ``run``."""

    def exact(self, x):
        if isinstance(x, sp.Basic) and x.is_number and not isinstance(x, arb):
            return self.run(x, {})
        return super().exact(x)

    def run(self, e: sp.Basic, env: dict):  # noqa: C901 - one branch per node type
        """The value of node ``e``, its children evaluated by this method too (never compiled)."""
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
        if isinstance(e, sp.Sum):  # the last range is the outermost: Σ_t Σ_{u ≤ t} is Sum(f, (u, 1, t), (t, 1, n))
            (body, *limits) = e.args
            return self._sum(body, limits[::-1], env)
        if isinstance(e, sp.Product):
            (body, (var, lo, hi)) = e.args
            total = self.num(1)
            for k in range(self.index(self.run(lo, env)), self.index(self.run(hi, env)) + 1):
                total = total * self.run(body, {**env, var: k})
            return total
        if isinstance(e, RowExtremum):
            return self._extremum(e, env)
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
            if mode == "float":
                return float("nan")
            raise Unsupported("a table read past its end")
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




    def _extremum(self, e, env):
        body, var, lo, hi, skip = e.args
        skip_v = self.index(self.run(skip, env))
        vals = []
        for k in range(self.index(self.run(lo, env)), self.index(self.run(hi, env)) + 1):
            inner = {**env, var: k}
            if k != skip_v and self.truth("==", self.run(M[i, var], inner), 1):
                vals.append(self.exact(self.run(body, inner)) if self.mode == "arb" else self.run(body, inner))
        if not vals:
            raise Unsupported(f"the {e.word} over no allowed key has no value")
        out = vals[0]
        for v in vals[1:]:
            if self.mode == "arb":
                out = out.max(v) if e.largest else out.min(v)
            else:
                out = max(out, v) if e.largest else min(out, v)
        return out
