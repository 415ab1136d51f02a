"""LaTeX for engine expressions: SymPy's printer with derive's notation.

⟨a, b⟩ for the bilinear form, R_p x for rotations, subscripts for token families
(``k^0[j]`` → ``k^{0}_{j}``), and ``\\exp`` kept as ``e^{…}`` like SymPy does.
"""

from __future__ import annotations

import sympy as sp
from sympy.printing.latex import LatexPrinter

from derive.prove.memo import memoized
from derive.render.notation import SYMBOLS

__all__ = ["SYMBOLS", "DeriveLatexPrinter", "tex"]

# SYMBOLS: a symbol's name in the engine → how every document writes it, read off the notation
# sheet (derive.render.notation). The soft cap is c_cap (upright "cap"), never c: c is a common
# shift of the scores.


class DeriveLatexPrinter(LatexPrinter):
    def _print_Symbol(self, expr, style="plain"):
        shown = SYMBOLS.get(expr.name)
        return shown if shown is not None else super()._print_Symbol(expr, style=style)

    def _print_ExpBase(self, expr, exp=None):
        # An exponent that holds a fraction is set as exp(…) on the line, ⟨q, k⟩/√d at full size:
        # as a superscript it would sit two levels deep at 6 pt. Short fractions inside it are
        # written a/b (the folding printer).
        arg = expr.args[0]
        num, den = sp.fraction(arg) if arg.is_Mul else (arg, sp.S.One)
        inner = _FOLDING if self is not _FOLDING else self
        if den == 1 and not _holds_fraction(arg):
            return self._do_exponent(f"e^{{{inner._print(arg)}}}", exp)
        if den.is_Number and not num.is_Add and not _holds_fraction(num):  # e^{x/2}: short, one level up
            return self._do_exponent(f"e^{{{inner._print(num)}/{inner._print(den)}}}", exp)
        if den == 1:
            body = inner._print(arg)
        else:
            top = rf"\left({inner._print(num)}\right)" if num.is_Add else inner._print(num)
            bottom = rf"\left({inner._print(den)}\right)" if den.is_Add or den.is_Mul else inner._print(den)
            body = f"{top}/{bottom}"
        out = rf"\exp\left({body}\right)"
        return out if exp is None else rf"{out}^{{{exp}}}"

    def _print_Heaviside(self, expr, exp=None):
        # the unit step is H (θ would clash with a parameter vector elsewhere)
        out = rf"H\left({self._print(expr.args[0])}\right)"
        return out if exp is None else f"{out}^{{{exp}}}"

    def _print_log(self, expr, exp=None):
        # a constant such as ln 2 is written as prose writes it; log(x) of an expression stays \log
        arg = expr.args[0]
        if not (arg.is_Integer and arg.is_positive):
            return super()._print_log(expr, exp)
        return rf"\ln^{{{exp}}} {self._print(arg)}" if exp is not None else rf"\ln {self._print(arg)}"

    def _print_tuple(self, expr):
        # a one-element tuple is its element in parentheses, (x_j), not Python's (x_j,)
        if len(expr) == 1:
            return rf"\left( {self._print(expr[0])} \right)"
        return super()._print_tuple(expr)

    def _print_Tuple(self, expr):
        return self._print_tuple(expr)

    # ⟨a, b⟩ is bracketed already: never wrapped in parentheses. (SymPy's table gives a class named
    # Dot, its vector dot product a·b, a precedence below Mul, which would print (⟨g, v⟩) e^{x}.)
    def _needs_mul_brackets(self, expr, first=False, last=False) -> bool:
        return False if _is_dot(expr) else super()._needs_mul_brackets(expr, first=first, last=last)

    def parenthesize(self, item, level, is_neg=False, strict=False):
        return self._print(item) if _is_dot(item) else super().parenthesize(item, level, is_neg, strict)

    def _print_Dot(self, expr, exp=None):
        # Display order only (the engine's canonical order serves cancellation): the query
        # side first, as in q·k.
        a, b = sorted(expr.args, key=_display_rank)
        out = rf"\langle {self._print(a)}, {self._print(b)} \rangle"
        return out if exp is None else f"{out}^{{{exp}}}"

    def _print_Indexed(self, expr):
        base = self._print(expr.base.label)
        idx = ",".join(self._print(x) for x in expr.indices) if len(expr.indices) > 1 else self._print(expr.indices[0])
        if "^" in base:
            head, sup = base.split("^", 1)
            return f"{head}^{sup}_{{{idx}}}"
        return f"{base}_{{{idx}}}"

    def _print_Sum(self, expr):
        body, *limits = expr.args
        out = ""
        for var, lo, hi in limits:
            out += rf"\sum_{{{self._print(var)}={self._print(lo)}}}^{{{self._print(hi)}}} "
        return out + self.parenthesize(body, 45)


def _holds_fraction(arg) -> bool:
    """Does an exponent hold a fraction (a power −1 of something other than a number), e.g.
    tanh(x/c) or x/√d inside a sum?"""
    return any(p.exp.is_negative and not p.base.is_Number for p in arg.atoms(sp.Pow))


def _is_dot(expr) -> bool:
    return type(expr).__name__ == "Dot" and type(expr).__module__.startswith("derive.")


def _display_rank(arg) -> tuple:
    names = sorted(str(getattr(x, "base", x)) for x in arg.atoms(sp.Symbol, sp.Indexed))
    query_side = any(nm.startswith(("q", "b_Q")) for nm in names)
    return (0 if query_side else 1, sp.default_sort_key(arg))


_PRINTER = DeriveLatexPrinter({"mul_symbol": None, "order": "none"})
_FOLDING = DeriveLatexPrinter({"mul_symbol": None, "order": "none", "fold_short_frac": True})  # exponents


def tex(expr) -> str:
    """LaTeX of a SymPy expression (or a string passed through unchanged)."""
    if isinstance(expr, str):
        return expr
    return _tex(sp.sympify(expr) if not isinstance(expr, sp.Basic) else expr)


@memoized
def _tex(expr: sp.Basic) -> str:  # documents print the same expression many times
    return _PRINTER.doprint(expr)
