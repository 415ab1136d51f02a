"""Exact zeros that are not the same tree: ``log(exp(x_j)) - x_j``, ``sqrt(x_j**2) - abs(x_j)``.

Ball arithmetic cannot tell the sign of an exact 0 written as a difference of two different
expressions: the ball of log(e^x) − x contains 0 at every precision, so a formula with
``relu(log(exp(x_j)) - x_j)`` in it would stay undecided. Where the ball of a sum or difference
contains 0 (and is not an exact 0) the evaluator asks :func:`proved_zero`: the node is turned
into SymPy over

* the scores (x_j, x_t, y_j, y_t) as arbitrary real symbols, i, j, t as positive and n as
  non-negative integers, every reduction inside the node as an arbitrary real symbol (one per
  distinct reduction), and
* each parameter as a symbol with the sign of its *actual value* (positive, negative; an exact
  0 is put in as 0), so an assumption holds for the row at hand even where the value lies
  outside the declared domain,

and it is 0 only if ``sympy.simplify`` reduces it to the integer 0: an identity for every
value of the symbols, so for this row. SymPy's simplification is the proof; no number is
compared. Anything else (SymPy returns another expression, the node is larger than
:data:`MAX_NODES`, SymPy raises) is *not proved*: the ball stays as it is and the precision
rises until the cap, where the row is undecided as before. The answers are cached per node
and parameter signs (a pure function of both: deterministic).
"""

from __future__ import annotations

import sympy as sp

from derive.normalizers.symbolic_walk import SymbolicWalk
from derive.routes import NO_VALUE, sympy_gave_up
from derive.language.parser import Binary, Name, Num, Unary, walk

__all__ = ["MAX_NODES", "proved_zero", "unproved"]

MAX_NODES = 48  # the largest node (in tree nodes) handed to SymPy: a deterministic budget
_CACHE: dict = {}
_UNPROVED: list = []  # the nodes asked about and not proved 0 since the last reset (for the undecided reason)

_INDEX = {"i": sp.Symbol("i", integer=True, positive=True), "j": sp.Symbol("j", integer=True, positive=True),
          "t": sp.Symbol("t", integer=True, positive=True), "n": sp.Symbol("n", integer=True, nonnegative=True)}
_SCORES = {name: sp.Symbol(name, real=True) for name in ("x_j", "x_t", "y_j", "y_t")}


def _key(node) -> str:
    """The node's structure as text (columns aside): equal for the same expression."""
    if isinstance(node, Num):
        return node.text
    if isinstance(node, Name):
        return node.id
    if isinstance(node, Unary):
        return f"(-{_key(node.operand)})"
    if isinstance(node, Binary):
        return f"({_key(node.left)}{node.op}{_key(node.right)})"
    return f"{node.func}({','.join(_key(a) for a in node.args)})"


class _Convert(SymbolicWalk):
    """A node in SymPy with the scores and indices as free symbols and every reduction an
    arbitrary real number (the same one for the same reduction)."""

    def __init__(self, params: dict):
        self.params, self.opaque = params, {}

    def name(self, name: str) -> sp.Expr:
        if name in _SCORES:
            return _SCORES[name]
        if name in _INDEX:
            return _INDEX[name]
        return self.params[name]

    def reduction(self, fn: str, args) -> sp.Expr:
        k = f"{fn}({','.join(_key(a) for a in args)})"
        if k not in self.opaque:
            self.opaque[k] = sp.Symbol(f"reduction {len(self.opaque)}", real=True)  # no formula name has a space
        return self.opaque[k]


def _symbols(signs: tuple) -> dict:
    out = {}
    for name, s in signs:
        out[name] = sp.S.Zero if s == 0 else sp.Symbol(name, positive=True) if s > 0 else sp.Symbol(name, negative=True)
    return out


def proved_zero(node, signs: tuple) -> bool:
    """Is ``node`` (a parsed formula node) identically 0, for every score and every parameter
    value of the signs ``signs`` ((name, −1 / 0 / 1 / None for unknown) per parameter)? Proved
    by SymPy, or False."""
    key = (_key(node), signs)
    if key not in _CACHE:
        _CACHE[key] = _decide(node, signs)
    if not _CACHE[key] and len(_UNPROVED) < 8 and key[0] not in _UNPROVED:
        _UNPROVED.append(key[0])
    return _CACHE[key]


def _decide(node, signs: tuple) -> bool:
    if sum(1 for _ in walk(node)) > MAX_NODES:
        return False
    params = _symbols(tuple((n, s) for n, s in signs if s is not None))
    params.update({n: sp.Symbol(n, real=True) for n, s in signs if s is None})
    try:
        expr = _Convert(params).run(node)
        return expr == 0 or sp.simplify(expr) == 0
    except NO_VALUE:  # no value here: not proved
        return False
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise
        return False  # SymPy cannot form or simplify it here: not proved


def unproved(reset: bool = False) -> list[str]:
    """The nodes (as text) asked about and not proved 0 since the last reset."""
    out = list(_UNPROVED)
    if reset:
        _UNPROVED.clear()
    return out
