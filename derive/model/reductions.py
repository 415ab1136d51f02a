"""The maximum and minimum of a row: max/min over the allowed keys t = lo..hi of row i.

SymPy has Σ and Π over a symbolic range but no max or min over one. :class:`RowMax` and
:class:`RowMin` are that: ``RowMax(body, t, lo, hi, skip)`` is the largest ``body`` over the
keys t in lo..hi with M[i, t] = 1 and t ≠ skip (``skip`` 0: none, keys start at 1). The
index t is bound: it is not a free symbol. Over no key the maximum has no value (the
evaluator of :mod:`derive.crosscheck.evaluate` reports it unsupported there).
"""

from __future__ import annotations

import sympy as sp


__all__ = ["RowExtremum", "RowMax", "RowMin"]


class RowExtremum(sp.Expr):
    is_real = True
    largest = True
    word = "max"

    def __new__(cls, body, var, lo, hi, skip=sp.S.Zero):
        return sp.Expr.__new__(cls, sp.sympify(body), var, sp.sympify(lo), sp.sympify(hi), sp.sympify(skip))

    @property
    def body(self):
        return self.args[0]

    @property
    def var(self):
        return self.args[1]

    @property
    def free_symbols(self):
        body, var, lo, hi, skip = self.args
        return (body.free_symbols - {var}) | lo.free_symbols | hi.free_symbols | skip.free_symbols

    def keys(self, env_index) -> list:
        """The keys the extremum runs over, given the integer value of an index expression."""
        _, _, lo, hi, skip = self.args
        lo_v, hi_v, skip_v = env_index(lo), env_index(hi), env_index(skip)
        return [k for k in range(lo_v, hi_v + 1) if k != skip_v]

    def _latex(self, printer):
        _, var, lo, hi, skip = self.args
        where = f"{printer._print(lo)} \\le {printer._print(var)} \\le {printer._print(hi)}"
        if skip != 0:
            where += f", {printer._print(var)} \\ne {printer._print(skip)}"
        return f"\\{self.word}_{{{where}}} {printer._print(self.body)}"

    def _sympystr(self, printer):
        _, var, lo, hi, skip = self.args
        cond = "" if skip == 0 else f", {printer._print(var)} != {printer._print(skip)}"
        return f"{self.word}_{printer._print(var)}({printer._print(self.body)}, {printer._print(lo)}..{printer._print(hi)}{cond})"


class RowMax(RowExtremum):
    largest, word = True, "max"


class RowMin(RowExtremum):
    largest, word = False, "min"
