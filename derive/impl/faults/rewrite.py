"""Rewriting a normalizer's weight formula: the pieces the fault models are made of.

A fault model (:mod:`derive.impl.faults.row`) is a transformation of a weight formula (the tree of
:mod:`derive.language.parser` that :mod:`derive.normalizers.formula` compiles): the scores shifted
by a stand-in ``m`` that the terms free of the scores do not get, an exponential's argument
multiplied by a unit factor, a clip or a cap dropped. This module finds those parts in a tree
(:func:`extra_terms`, :func:`exp_calls`), rebuilds a tree with some replaced (:func:`replace`),
prints a tree in the formula language (:func:`show`), makes a :class:`~derive.normalizers.formula.Formula`
of it (:func:`formula_of`) — whose exact reference and symbolic weight are then those of the
faulty code — and evaluates it directly in a floating-point format (:func:`in_dtype`), for the
faults that are numerical only.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import sympy as sp

from derive.language.parser import Binary, Call, Name, Num, Unary, walk

__all__ = ["SCORES", "exp_calls", "extra_terms", "formula_of", "has_score", "in_dtype", "replace", "show"]

SCORES = ("x_j", "x_t", "y_j", "y_t")
_EXPLIKE = ("exp", "sigmoid", "softplus")  # the functions that exponentiate their argument
_PREC = {"+": 10, "-": 10, "*": 20, "/": 20, "**": 40}


def has_score(node) -> bool:
    return any(isinstance(nd, Name) and nd.id in SCORES for nd in walk(node))


def _exp_of_scores(node) -> bool:
    """``exp(…x…)``, or a sum over the keys of terms with one, or a number times either."""
    if isinstance(node, Unary):
        return _exp_of_scores(node.operand)
    if isinstance(node, Binary) and node.op == "*":
        return any(isinstance(a, Num) and _exp_of_scores(b) for a, b in ((node.left, node.right),
                                                                        (node.right, node.left)))
    if isinstance(node, Call) and node.func == "exp":
        return has_score(node)
    return isinstance(node, Call) and node.func == "sum_t" and any(
        isinstance(nd, Call) and nd.func == "exp" and has_score(nd) for nd in walk(node.args[0]))


def exp_calls(node, of_scores: bool) -> list:
    """The calls that exponentiate (exp, sigmoid, softplus) an argument with a score
    (``of_scores``) or one free of the scores that is not a number (an extra logit)."""
    out = []
    for nd in walk(node):
        if isinstance(nd, Call) and nd.func in _EXPLIKE:
            if has_score(nd) == of_scores and (of_scores or not isinstance(nd.args[0], Num)):
                out.append(nd)
    return out


def extra_terms(node) -> list:
    """The terms free of the scores added to (or subtracted from) an exponential of the scores:
    the 1 of ``1 + sum_t(exp(x_t))``, the ``exp(s)`` of a sink, the 1 and ε of softpick."""
    out = []
    for nd in walk(node):
        if isinstance(nd, Binary) and nd.op in "+-":
            for side, other in ((nd.left, nd.right), (nd.right, nd.left)):
                if not has_score(side) and _exp_of_scores(other) and side not in out:
                    out.append(side)
    return out


def replace(node, fn: Callable):
    """The tree with each node for which ``fn`` returns a node replaced by it (outermost first)."""
    new = fn(node)
    if new is not None:
        return new
    if isinstance(node, Unary):
        return Unary(node.op, replace(node.operand, fn), node.col)
    if isinstance(node, Binary):
        return Binary(node.op, replace(node.left, fn), replace(node.right, fn), node.col)
    if isinstance(node, Call):
        return Call(node.func, tuple(replace(a, fn) for a in node.args), node.col)
    return node


def show(node, outer: int = 0, right: bool = False) -> str:
    """The tree in the formula language, with the parentheses it needs."""
    if isinstance(node, Num):
        return node.text
    if isinstance(node, Name):
        return node.id
    if isinstance(node, Unary):
        text = "-" + show(node.operand, 30)
        return f"({text})" if outer > 10 else text
    if isinstance(node, Binary):
        p = _PREC.get(node.op, 5)
        text = f"{show(node.left, p)} {node.op} {show(node.right, p, True)}"
        tight = p < outer or (right and p == outer and node.op in "-/")
        return f"({text})" if tight else text
    return f"{node.func}({', '.join(show(a) for a in node.args)})"


def formula_of(node, base, extra: tuple[str, ...] = ()):
    """A Formula for ``node``: the parameters of ``base`` (a compiled formula) and ``extra`` ones."""
    from derive.normalizers.formula import Formula

    defaults = dict(base.defaults)
    for p in extra:
        defaults.setdefault(p, sp.Symbol(p, real=True))
    return Formula(show(node), node, tuple(base.params) + tuple(p for p in extra if p not in base.params),
                   base.score2, defaults)


# ---- the formula evaluated directly in a floating-point format --------------------------------


def _bf16(a):
    from derive.normalizers.stable import bf16

    return bf16(a)


class _Dtype:
    """Each operation of the tree in one format (bfloat16: float32 rounded after every operation)."""

    def __init__(self, dtype: str, xs, allowed, params, key):
        self.emulate = dtype == "bfloat16"
        self.dt = np.float32 if self.emulate else np.dtype(dtype).type
        self.xs, self.allowed, self.params, self.key = xs, allowed, params, key
        self.var = None

    def r(self, v):
        a = np.asarray(v, dtype=self.dt)
        return self.dt(_bf16(a)) if self.emulate else self.dt(a)

    def run(self, node):
        if isinstance(node, Num):
            q = sp.Rational(node.text)
            return self.r(float(q))
        if isinstance(node, Name):
            return self.name(node.id)
        if isinstance(node, Unary):
            return self.r(-self.run(node.operand))
        if isinstance(node, Binary):
            a, b = self.run(node.left), self.run(node.right)
            if node.op == "**":
                return self.r(a ** int(b))
            return self.r({"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[node.op](a, b))
        return self.call(node)

    def name(self, name: str):
        if name in ("x_j", "y_j"):
            return self.xs[self.key]
        if name in ("x_t", "y_t"):
            return self.xs[self.var]
        if name == "t":
            return self.r(self.var + 1)
        if name in ("j", "i"):
            return self.r((self.key + 1) if name == "j" else len(self.xs))
        if name == "n":
            return self.r(sum(self.allowed))
        return self.r(self.params[name])

    def call(self, node):
        fn = node.func
        if fn in ("sum_t", "prod_t", "max_t", "min_t"):
            return self.reduction(fn, node.args)
        args = [self.run(a) for a in node.args]
        if fn in ("max", "min"):
            return self.r((np.max if fn == "max" else np.min)(args))
        (z,) = args
        one = self.dt(1)
        f = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "abs": np.abs, "tanh": np.tanh,
             "relu": lambda v: np.maximum(self.dt(0), v),
             "sigmoid": lambda v: one / self.r(one + self.r(np.exp(-v))),
             "softplus": lambda v: np.log(self.r(one + self.r(np.exp(v))))}[fn]
        return self.r(f(z))

    def reduction(self, fn, args):
        from derive.normalizers.formula import _condition

        keep = None
        if len(args) == 2:
            op, e = _condition(args[1])
            bound = int(self.run(e))
            keep = {"<": bound.__gt__, "<=": bound.__ge__, ">": bound.__lt__, ">=": bound.__le__,
                    "==": bound.__eq__, "!=": bound.__ne__}[op]
        vals = []
        for k, ok in enumerate(self.allowed):
            if ok and (keep is None or keep(k + 1)):
                self.var = k
                vals.append(self.run(args[0]))
                self.var = None
        if fn == "sum_t":
            return self.r(np.sum(np.array(vals, dtype=self.dt), dtype=self.dt)) if vals else self.dt(0)
        if fn == "prod_t":
            return self.r(np.prod(np.array(vals, dtype=self.dt), dtype=self.dt)) if vals else self.dt(1)
        return (max if fn == "max_t" else min)(vals) if vals else self.dt(math.nan)


def in_dtype(node, row, params: dict, dtype: str) -> list[float]:
    """The weights of ``row`` (−∞ = masked: weight 0, left out of every reduction) with every
    operation of the tree ``node`` done in ``dtype``, as the formula written straight into code
    computes them: exp overflows, 0/0 is NaN."""
    allowed = [v != -math.inf for v in row]
    with np.errstate(all="ignore"):
        probe = _Dtype(dtype, [], allowed, params, 0)
        xs = [probe.r(v if ok else 0.0) for v, ok in zip(row, allowed)]
        out = []
        for k, ok in enumerate(allowed):
            out.append(float(_Dtype(dtype, xs, allowed, params, k).run(node)) if ok else 0.0)
    return out
