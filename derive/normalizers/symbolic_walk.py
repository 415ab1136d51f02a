"""The one translation of a weight formula's tree into SymPy: numbers, signs, arithmetic and the
functions of the language. What a name and a reduction become is the subclass's: the symbolic
weight over the mask (:class:`derive.normalizers.formula._Symbolic`) or the free symbols of an
identity check (:mod:`derive.normalizers.exact_zero`)."""

from __future__ import annotations

import sympy as sp

from derive.language.parser import Binary, Call, Name, Num, Unary

__all__ = ["SYMPY_FUNCTIONS", "SymbolicWalk"]

REDUCTIONS = ("sum_t", "max_t", "min_t", "prod_t")
SYMPY_FUNCTIONS = {"exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt, "abs": sp.Abs, "tanh": sp.tanh,
             "relu": lambda z: sp.Max(0, z), "sigmoid": lambda z: 1 / (1 + sp.exp(-z)),
             "softplus": lambda z: sp.log(1 + sp.exp(z)), "max": sp.Max, "min": sp.Min}


class SymbolicWalk:
    """``run(node)``: the node as a SymPy expression; subclasses give ``name`` and ``reduction``."""

    def run(self, node) -> sp.Expr:
        if isinstance(node, Num):
            return sp.Rational(node.text)
        if isinstance(node, Name):
            return self.name(node.id)
        if isinstance(node, Unary):
            return -self.run(node.operand)
        if isinstance(node, Binary):
            a, b = self.run(node.left), self.run(node.right)
            return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
                    "**": lambda: a**b}[node.op]()
        return self.call(node)

    def call(self, node: Call) -> sp.Expr:
        if node.func in REDUCTIONS:
            return self.reduction(node.func, node.args)
        return SYMPY_FUNCTIONS[node.func](*[self.run(a) for a in node.args])

    def name(self, name: str) -> sp.Expr:
        raise NotImplementedError

    def reduction(self, fn: str, args) -> sp.Expr:
        raise NotImplementedError
