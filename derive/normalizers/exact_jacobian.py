"""The Jacobian ∂p_j/∂x_k of a weight formula on a concrete row, in arb balls: forward-mode
differentiation of the same tree walk as :mod:`derive.normalizers.exact`.

Every node of the formula is a :class:`Dual`: its value (a ball) and its partial derivatives by
the row's scores x_1 … x_n (balls; an exact 0 where the node does not depend on a score). The
rules are the chain rule of each operation; the second score row of the row form is the first
(y = x, as in :meth:`~derive.normalizers.formula.Formula.reference`). A masked key has no score:
its column and its row are exact zeros.

The precision schedule is the value's: from twice the caller's, doubled up to
:data:`~derive.normalizers.exact.CAP` bits while a derivative is not tight (relative radius
above 2^−``mp.prec``, an exact 0 being exact) or a branch cannot be decided; at the cap
the Jacobian is :class:`~derive.normalizers.exact.Undecided`. A point where the weights are not
differentiable (relu, abs, max or min at its kink, moved by a score; sqrt at 0) raises
:class:`NotDifferentiable`: its derivative is one-sided and nothing is judged there. A kink no
score moves (relu of a parameter at 0) is no obstacle: its derivative is 0. A sum or difference
that SymPy proves identically 0 (:mod:`derive.normalizers.exact_zero`) has the derivative 0.
Softpick at scores ~1e−300 has e^x − 1 to every digit and ∂p_j/∂x_k ~ 1e300 exactly enclosed,
where a fixed 40-digit evaluation of a symbolic derivative makes e^x − 1 zero and the
derivative of relu there Heaviside(0).
"""

from __future__ import annotations

import mpmath
from flint import arb

from derive.normalizers.exact import (REDUCTIONS, Ball, Undefined, _Imprecise, _rational, adaptive, same, sign, tight,
                                      to_mpf)
from derive.language.parser import Binary, Call, Name, Num, Unary

__all__ = ["Dual", "NotDifferentiable", "jacobian"]

_ZERO = arb(0)


class NotDifferentiable(Exception):
    """The weights have no derivative at this row (a kink a score moves, sqrt at 0)."""


class Dual:
    """A value and its partial derivatives by the scores (a tuple of balls, one per key)."""

    __slots__ = ("v", "d")

    def __init__(self, v: arb, d: tuple):
        self.v, self.d = v, d

    def scale(self, f: arb) -> tuple:
        """The derivatives times ``f`` (an exact 0 stays an exact 0)."""
        return tuple(_ZERO if g.is_zero() else g * f for g in self.d)

    def still(self) -> bool:
        """Does no score move this node (every derivative an exact 0)?"""
        return all(g.is_zero() for g in self.d)


def _add(a: tuple, b: tuple, sub: bool = False) -> tuple:
    return tuple(x - y if sub else x + y for x, y in zip(a, b))


class Forward(Ball):
    """:class:`~derive.normalizers.exact.Ball` with every node a :class:`Dual`."""

    def __init__(self, xs, ys, allowed, key, row, params, shared):
        super().__init__(xs, ys, allowed, key, row, params, shared)
        size = len(xs)
        self.zeros = (_ZERO,) * size
        self.units = [tuple(arb(1) if q == k and allowed[k] else _ZERO for q in range(size)) for k in range(size)]

    def const(self, v: arb) -> Dual:
        return Dual(v, self.zeros)

    def run(self, node) -> Dual:
        if isinstance(node, Num):
            return self.const(_rational(node.text))
        if isinstance(node, Name):
            return self.name(node.id)
        if isinstance(node, Unary):
            a = self.run(node.operand)
            return Dual(-a.v, tuple(-g for g in a.d))
        if isinstance(node, Binary):
            if node.op == "-" and same(node.left, node.right):
                return self.const(_ZERO)  # the same expression at the same point: exactly 0, and so its derivative
            return self.binary(node.op, self.run(node.left), self.run(node.right), node)
        return self.call(node)

    def binary(self, op: str, a: Dual, b: Dual, node) -> Dual:
        if op in "+-":
            v = a.v + b.v if op == "+" else a.v - b.v
            if self.cancels(v, node):  # identically 0 (SymPy's proof): so is its derivative
                return self.const(_ZERO)
            return Dual(v, _add(a.d, b.d, op == "-"))
        if op == "*":
            return Dual(a.v * b.v, _add(a.scale(b.v), b.scale(a.v)))
        if op == "/":
            if sign(b.v) == 0:
                raise Undefined
            v = a.v / b.v
            return Dual(v, tuple(x / b.v for x in _add(a.d, b.scale(v), True)))  # (a' − (a/b)·b') / b
        e = int(b.v.unique_fmpz())  # "**": an integer exponent (checked by the formula's compiler)
        if e < 0 and sign(a.v) == 0:
            raise Undefined
        if e == 0:
            return self.const(arb(1))
        return Dual(a.v**e, a.scale(e * a.v ** (e - 1)))

    def name(self, name: str) -> Dual:
        if name in ("x_j", "y_j", "x_t", "y_t"):
            k = (self.key if name.endswith("_j") else self.var) - 1
            return Dual(self.xs[k] if name[0] == "x" else self.ys[k], self.units[k])
        return self.const(super().name(name))

    def call(self, node: Call) -> Dual:
        fn = node.func
        if fn in REDUCTIONS:
            return self.reduction(fn, node.args)
        args = [self.run(a) for a in node.args]
        if fn in ("max", "min"):
            return _extreme(args, fn == "max")
        (a,) = args
        x = a.v
        if fn == "exp":
            v = x.exp()
            return Dual(v, a.scale(v))
        if fn == "log":
            if sign(x) <= 0:
                raise Undefined
            return Dual(x.log(), a.scale(1 / x))
        if fn == "sqrt":
            s = sign(x)
            if s < 0:
                raise Undefined
            if s == 0:
                if not a.still():
                    raise NotDifferentiable("sqrt at 0")
                return self.const(_ZERO)
            v = x.sqrt()
            return Dual(v, a.scale(1 / (2 * v)))
        if fn in ("relu", "abs"):
            if a.still():  # no score moves it: its derivative is 0 whatever its sign
                return self.const(x.max(_ZERO) if fn == "relu" else abs(x))
            s = sign(x)
            if s == 0:
                raise NotDifferentiable(f"{fn} at its kink")
            if fn == "relu":
                return a if s > 0 else self.const(_ZERO)
            return a if s > 0 else Dual(-x, tuple(-g for g in a.d))
        if fn == "sigmoid":
            v = 1 / (1 + (-x).exp())
            return Dual(v, a.scale(v * (1 - v)))
        if fn == "softplus":
            return Dual(x.exp().log1p(), a.scale(1 / (1 + (-x).exp())))
        # tanh
        return Dual(x.tanh(), a.scale(x.sech() ** 2))

    def indices(self, args) -> list[int]:
        """The keys a reduction runs over: its condition's bound is an index expression, a plain ball."""
        plain = Ball(self.xs, self.ys, self.allowed, self.key, self.row, self.params, {})
        plain.var = self.var
        return plain.indices(args)

    def _reduction(self, fn: str, args) -> Dual:
        vals = self.terms(args)
        if fn == "sum_t":
            out = self.const(_ZERO)
            for v in vals:
                out = Dual(out.v + v.v, _add(out.d, v.d))
            return out
        if fn == "prod_t":
            out = self.const(arb(1))
            for v in vals:
                out = Dual(out.v * v.v, _add(out.scale(v.v), v.scale(out.v)))
            return out
        if not vals:
            raise Undefined
        return _extreme(vals, fn == "max_t")


def _order(a: arb, b: arb) -> int | None:
    """1 if a > b, −1 if a < b, 0 if they are exactly equal, None if the balls do not say."""
    if a > b:
        return 1
    if a < b:
        return -1
    return 0 if (a - b).is_zero() else None


def _extreme(args: list, is_max: bool) -> Dual:
    """The max (or min) of duals: the derivative of the argument that is it; where several are
    it (exactly equal), they must have the same derivatives, else the point is a kink."""
    s = 1 if is_max else -1
    for a in args:
        order = [None if b is a else _order(a.v, b.v) for b in args]
        if all(b is a or (o is not None and s * o >= 0) for b, o in zip(args, order)):
            ties = [b for b, o in zip(args, order) if b is not a and o == 0]
            if any(not all(g.is_exact() and h.is_exact() and g == h for g, h in zip(a.d, b.d)) for b in ties):
                raise NotDifferentiable(f"{'max' if is_max else 'min'} at a tie its scores move apart")
            return a
    raise _Imprecise  # no argument is known to be the extreme at this precision


def jacobian(formula, x, mask=None, row=None, **params) -> list[list]:
    """J[j][k] = ∂p_j/∂x_k (mpmath numbers correct to the current precision) of ``formula``'s
    weights on a concrete row (``mask``: True = allowed; masked keys: rows and columns of exact
    zeros). Raises :class:`~derive.normalizers.exact.Undecided` at the precision cap,
    :class:`NotDifferentiable` at a kink, ``Undefined`` where a weight has no value."""
    size = len(x)
    xs, ys, allowed, i_pos, vals = formula._row(x, mask, None, row, params)
    bits = mpmath.mp.prec

    def evaluate():
        out, shared = [], {}
        for k in range(size):
            if not allowed[k]:
                out.append((_ZERO,) * size)
                continue
            d = Forward(xs, ys, allowed, k + 1, i_pos, vals, shared).run(formula.node)
            if not all(tight(g, bits) for g in d.d):
                raise _Imprecise
            out.append(d.d)
        return out

    balls = adaptive(evaluate)
    return [[to_mpf(g) for g in r] for r in balls]
