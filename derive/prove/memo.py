"""Pure SymPy computations remembered by their arguments, within one process.

The normalizer provers ask for the same simplification, limit or proof more than once
(the table, the derivations below it and the documents that cite a cell reach the same
expressions by different routes). A memoized function computes a result once per process
and hands back the same object afterwards: the result is what the computation returns for
those arguments (SymPy compares expressions structurally; SymPy 1.12 takes Float(1.0) and
Integer(1) as equal, but they are the same number), so verdicts and documents are unchanged;
only repeated work goes. An exception
(a time bound hit, a SymPy failure) stores nothing.

    >>> import sympy as sp
    >>> x = sp.Symbol("x")
    >>> simplify(sp.sin(x) ** 2 + sp.cos(x) ** 2)
    1
    >>> simplify(sp.sin(x) ** 2 + sp.cos(x) ** 2) is simplify(sp.sin(x) ** 2 + sp.cos(x) ** 2)
    True
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import sympy as sp

from derive.routes import NO_VALUE, sympy_gave_up

__all__ = ["memoized", "simplifies_to_zero", "simplify"]

F = TypeVar("F", bound=Callable)


def memoized(f: F) -> F:
    """``f`` remembering its results by positional arguments (unhashable arguments: not remembered)."""
    cache: dict = {}

    @functools.wraps(f)
    def wrapper(*args):
        try:
            return cache[args]
        except KeyError:
            pass
        except TypeError:  # an unhashable argument
            return f(*args)
        out = cache[args] = f(*args)
        return out

    wrapper.cache = cache
    return wrapper


def simplify(expr):
    """``sympy.simplify(expr)``, once per expression. An expression already in its simplest form
    (a number, a symbol or table entry s, e^s, s^k for an integer k: ``sympy.simplify`` gives
    these back unchanged) is returned as it is, without the call (whose first use also imports
    SymPy's physical units)."""
    if _simplest(expr):
        return expr
    return _simplify(expr)


def _simplest(expr) -> bool:
    def leaf(e):
        return isinstance(e, (sp.Symbol, sp.Indexed)) and e.is_zero is not True

    return (isinstance(expr, sp.Number) or leaf(expr) or (isinstance(expr, sp.exp) and leaf(expr.args[0]))
            or (isinstance(expr, sp.Pow) and leaf(expr.base) and expr.exp.is_Integer))


@memoized
def _simplify(expr):
    return sp.simplify(expr)


def simplifies_to_zero(expr) -> bool:
    """``sympy.simplify(expr) == 0``, without the call when ``expr`` is 0 as it stands or has a
    nonzero value at a point of its symbols' domain (simplify keeps an expression's value, so it
    cannot make one that is nonzero somewhere 0; its first call also imports SymPy's units)."""
    if expr == 0:
        return True
    return not _nonzero_at_a_point(expr) and sp.simplify(expr) == 0


_POINT = (sp.Rational(3, 7), sp.Rational(5, 11), sp.Rational(7, 13), sp.Rational(11, 17), sp.Rational(13, 19))
_INTEGER_POINT = (sp.Integer(2), sp.Integer(3), sp.Integer(5), sp.Integer(7), sp.Integer(11))


def _nonzero_at_a_point(expr) -> bool:
    """Is ``expr`` certainly nonzero at one point of its free symbols' domain (each symbol given a
    distinct positive value, negated for a negative one, that satisfies every assumption on the symbol),
    its value there evaluated by SymPy to 30 digits in strict mode? False when it cannot tell."""
    from derive.crosscheck.draws import satisfies  # the searcher's own domain test (imports Hypothesis)

    free = sorted(expr.free_symbols, key=str)
    if len(free) > len(_POINT) or not all(isinstance(s, sp.Symbol) for s in free):
        return False
    values = {}
    for k, sym in enumerate(free):
        val = (_INTEGER_POINT if sym.is_integer else _POINT)[k]
        if sym.is_extended_negative or sym.is_extended_nonpositive:
            val = -val
        if not satisfies(sym, val):
            return False
        values[sym] = val
    try:
        num = sp.N(expr.xreplace(values), 30, strict=True)
    except NO_VALUE:  # no value there (or not to the digits asked): undecided here
        return False
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise
        return False
    return bool(num.is_Float and num.is_finite and num != 0)
