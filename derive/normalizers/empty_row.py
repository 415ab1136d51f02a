"""A weight formula on a row with no allowed key, symbolically: where it has a value.

With no allowed key every reduction is empty (``sum_t`` 0, ``prod_t`` 1, ``max_t``/``min_t``
nothing) and n = 0; a masked key's score is taken as 0, as the exact reference takes it; i and j are positions
(positive integers). The
formula then has a value exactly where each of its partial operations has one: a denominator
(or the base of a negative power) ≠ 0, the argument of a log > 0, of a sqrt ≥ 0. Each such
condition is decided by SymPy over the parameters' declared assumptions (their domain):

* every condition holds for every parameter value → the row has a value (:data:`ALWAYS`);
* one fails for every value (an empty ``max_t``, a denominator that is identically 0, a log of
  a number SymPy proves ≤ 0) → it has none (:data:`NEVER`);
* where SymPy cannot even form the value, nothing is decided (:data:`UNKNOWN`);
* otherwise the conditions that SymPy cannot decide are returned: the row has a value where
  they hold and none where one fails, e.g. ``a**2 + sum_t(exp(x_t))`` has one for a ≠ 0 only.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from derive.normalizers.symbolic_walk import SYMPY_FUNCTIONS
from derive.prove.memo import simplifies_to_zero
from derive.routes import NO_VALUE, sympy_gave_up
from derive.language.parser import Binary, Name, Num, Unary

__all__ = ["ALWAYS", "NEVER", "UNKNOWN", "Condition", "empty_row"]

ALWAYS, NEVER, UNKNOWN = "always", "never", "unknown"
_EMPTY = {"sum_t": sp.S.Zero, "prod_t": sp.S.One}


@dataclass(frozen=True)
class Condition:
    """A partial operation's requirement: ``expr`` ≠ 0 (``nonzero``), > 0 (``positive``) or ≥ 0
    (``nonnegative``)."""

    kind: str
    expr: sp.Expr

    def holds(self) -> bool | None:
        """True for every parameter value, False for none, None when SymPy cannot tell."""
        e = self.expr
        if self.kind == "nonzero":
            if e.is_zero or simplifies_to_zero(e):
                return False
            return True if e.is_nonzero else None
        if self.kind == "positive":
            return True if e.is_positive else False if e.is_nonpositive else None
        return True if e.is_nonnegative else False if e.is_negative else None

    def fails_where(self) -> sp.Basic:
        """Where the requirement fails, as a SymPy relation over the parameters."""
        return {"nonzero": sp.Eq, "positive": sp.Le, "nonnegative": sp.Lt}[self.kind](self.expr, 0)


class _Empty(Exception):
    """An empty max_t or min_t, a division by an exact 0: no value whatever the parameters."""


def _walk(node, params: dict, conds: list) -> sp.Expr:
    if isinstance(node, Num):
        return sp.Rational(node.text)
    if isinstance(node, Name):
        if node.id in ("x_j", "y_j", "n"):
            return sp.S.Zero
        if node.id in ("i", "j"):
            return sp.Symbol(node.id, integer=True, positive=True)
        return params[node.id]
    if isinstance(node, Unary):
        return -_walk(node.operand, params, conds)
    if isinstance(node, Binary):
        a, b = _walk(node.left, params, conds), _walk(node.right, params, conds)
        if node.op == "/":
            if b.is_zero:
                raise _Empty
            conds.append(Condition("nonzero", b))
            return a / b
        if node.op == "**":
            if b.is_negative:
                conds.append(Condition("nonzero", a))
            return a**b
        return {"+": a + b, "-": a - b, "*": a * b}[node.op]
    fn = node.func
    if fn in _EMPTY:
        return _EMPTY[fn]
    if fn in ("max_t", "min_t"):
        raise _Empty
    args = [_walk(a, params, conds) for a in node.args]
    if fn == "log":
        conds.append(Condition("positive", args[0]))
    elif fn == "sqrt":
        conds.append(Condition("nonnegative", args[0]))
    return SYMPY_FUNCTIONS[fn](*args)


def empty_row(formula, params: dict | None = None) -> tuple[str, list[Condition]]:
    """(ALWAYS, []), (NEVER, [the failing condition, or none for an empty max_t/min_t]),
    ("depends", the undecided conditions) or (UNKNOWN, []) where SymPy cannot form the value for ``formula`` on a row with no allowed key;
    ``params``: parameter → its symbol or expression over its domain (default: the formula's)."""
    values = {p: (params or {}).get(p, formula.defaults.get(p, sp.Symbol(p, real=True))) for p in formula.params}
    conds: list[Condition] = []
    try:
        _walk(formula.node, values, conds)
    except _Empty:
        return NEVER, []
    except NO_VALUE:  # no value formed: nothing decided
        return UNKNOWN, []
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise
        return UNKNOWN, []  # SymPy could not form the value: nothing decided
    open_ = []
    for c in conds:
        verdict = c.holds()
        if verdict is False:
            return NEVER, [c]
        if verdict is None:
            open_.append(c)
    return (ALWAYS, []) if not open_ else ("depends", open_)
