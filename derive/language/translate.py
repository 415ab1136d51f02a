"""From a parsed expression to engine objects, checking names and kinds on the way.

Every name resolves through a :class:`Binding` (predeclared or declared in ``[symbols]``);
every operation checks the kinds of its operands (scalar or vector). Errors carry the
column of the offending node. The translation builds SymPy objects directly from the
AST — no string is ever handed to ``sympify`` or ``eval``.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

import sympy as sp

from derive.model import attention as A
from derive.model.tables import HEAD
from derive.model.vectors import Dot, Rot, VectorBase, VectorSymbol, vector_function
from derive.language.domain import nowhere_real
from derive.language.parser import COMPARISONS, LIMITS, Binary, Call, ExprError, Name, Node, Num, Unary
from derive.routes import NO_VALUE

__all__ = [
    "BROKEN",
    "BUILTINS",
    "DECLARABLE",
    "KINDS",
    "PREDECLARED",
    "SCALAR_ASSUMPTIONS",
    "Binding",
    "bindings",
    "nearest",
    "scalar_function",
    "translate",
    "unknown_name",
]

KINDS = ("vector", "query", "key", "scalar", "function")
# A scalar may be declared with a sign; the SymPy symbol carries it, so the provers use it
# and counterexamples respect it (they read ``is_positive`` / ``is_negative`` / ``is_nonzero``).
SCALAR_ASSUMPTIONS = {
    "scalar": {},
    "scalar positive": {"positive": True},
    "scalar negative": {"negative": True},
    "scalar nonzero": {"nonzero": True},
}
# A scalar per attention head (ALiBi's slopes): the symbol NAME_h, h the predeclared head index.
PER_HEAD = {"per_head": {}, "per_head positive": {"positive": True}, "per_head negative": {"negative": True}}
DECLARABLE = KINDS[:3] + tuple(SCALAR_ASSUMPTIONS) + tuple(PER_HEAD) + KINDS[4:]
PREDECLARED = {"q": "query", "k": "key", "v": "key", "i": "position", "j": "position",
               "d": "dimension", "n": "count", "h": "head"}
BUILTINS = {"dot": 2, "sqrt": 1, "exp": 1, "log": 1, "tanh": 1, "abs": 1, "rope": 2}

SCALAR, VECTOR = "scalar", "vector"
BROKEN = "broken"  # the binding of a name whose declaration is an error (reported once)


@dataclass(frozen=True)
class Binding:
    kind: str  # one of KINDS, or a predeclared kind (position, dimension, count)
    obj: object  # VectorSymbol, VectorBase, Symbol, or the function's name


def scalar_function(name: str):
    return sp.Function(name, real=True)


def bindings(symbols: dict[str, str], rename: dict[str, str] | None = None) -> dict[str, Binding]:
    """Name → binding; ``rename`` gives some names fresh objects (``b_k`` → ``b_k'``)."""
    rename = rename or {}
    out = {
        "q": Binding("query", VectorBase(rename.get("q", "q"))),
        "k": Binding("key", VectorBase(rename.get("k", "k"))),
        "v": Binding("key", VectorBase(rename.get("v", "v"))),
        "i": Binding("position", A.i),
        "j": Binding("position", A.j),
        "d": Binding("dimension", A.d),
        "n": Binding("count", A.n),
        "h": Binding("head", HEAD),
    }
    for name, declared in symbols.items():
        if declared == BROKEN:
            out[name] = Binding(BROKEN, None)
            continue
        label = rename.get(name, name)
        kind = SCALAR if declared in SCALAR_ASSUMPTIONS or declared in PER_HEAD else declared
        out[name] = Binding(kind, _make(declared, label))
    return out


def _make(declared: str, label: str):
    """The engine object of a declared kind; a fresh copy (``b'``) keeps the assumptions."""
    if declared == "vector":
        return VectorSymbol(label)
    if declared in ("query", "key"):
        return VectorBase(label)
    if declared in SCALAR_ASSUMPTIONS:
        return sp.Symbol(label, real=True, **SCALAR_ASSUMPTIONS[declared])
    if declared in PER_HEAD:
        return sp.Symbol(label + "_h", real=True, **PER_HEAD[declared])
    return label  # a function: its class is made when it is applied


def unknown_name(name: str, binds) -> str:
    """The one message for an undeclared name; a near name is suggested only when close."""
    return f"unknown name {name!r}: declare it under [symbols]{nearest(name, binds)}"


def nearest(name: str, candidates) -> str:
    near = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f"; did you mean {near[0]!r}?" if near else ""


def translate(node: Node, binds: dict[str, Binding], key: sp.Expr = A.j,
              guards: list | None = None) -> tuple[sp.Expr, str]:
    """(expression, kind) of ``node`` for query row i and key ``key``.

    ``guards``, when given, receives the domain of the expression *as written*, before SymPy
    rewrites it (``sqrt(x)**2`` becomes ``x``, ``x / x`` becomes 1): ``("nonnegative", a)``
    for every ``sqrt(a)``, ``("positive", a)`` for every ``log(a)``, ``("nonzero", b)`` for
    every divisor and base of a negative power. A counterexample must lie inside it.
    """
    tr = _Translator(binds, key)
    expr, kind = tr.run(node)
    if guards is not None:
        guards.extend(g for g in tr.guards if g not in guards)
    if expr.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        raise ExprError("the expression divides by zero", node.col)
    return expr, kind


def _constant_zero(c: sp.Expr) -> bool:
    """Is a constant (no symbols) zero, or too close to zero for ball arithmetic to tell?
    ``log(4) - 2*log(2)`` is not 0 to SymPy's eye but is 0; dividing by it is bad input."""
    if c.free_symbols or not isinstance(c, sp.Expr):
        return False
    from derive.crosscheck.evaluate import Instance, evaluate

    try:
        ball = evaluate(c, Instance(d=1, n=1), "arb", prec=256)
    except NO_VALUE:  # a constant that cannot be enclosed is not known nonzero
        return True
    return not ball.is_finite() or ball.contains(0)


class _Translator:
    def __init__(self, binds: dict[str, Binding], key: sp.Expr):
        self.binds, self.key = binds, key
        self.guards: list[tuple[str, sp.Expr]] = []

    def guard(self, kind: str, arg: sp.Expr) -> None:
        if arg.free_symbols and (kind, arg) not in self.guards:
            self.guards.append((kind, arg))

    def run(self, node: Node) -> tuple[sp.Expr, str]:
        if isinstance(node, Num):
            return sp.Rational(node.text), SCALAR
        if isinstance(node, Name):
            return self.name(node)
        if isinstance(node, Unary):
            val, kind = self.run(node.operand)
            return -val, kind
        if isinstance(node, Binary):
            return self.binary(node)
        return self.call(node)

    def name(self, node: Name) -> tuple[sp.Expr, str]:
        b = self.binds.get(node.id)
        if b is None:
            if node.id in BUILTINS:
                raise ExprError(f"{node.id!r} is a function: call it, e.g. {node.id}(…)", node.col)
            raise ExprError(unknown_name(node.id, self.binds), node.col)
        if b.kind == BROKEN:  # its declaration is wrong and already reported
            raise ExprError(f"{node.id!r} is declared wrongly", node.col, quiet=True)
        if b.kind == "function":
            raise ExprError(f"{node.id!r} is a function: call it, e.g. {node.id}(x)", node.col)
        if b.kind == "query":
            return b.obj[A.i], VECTOR
        if b.kind == "key":
            return b.obj[self.key], VECTOR
        if b.kind == "vector":
            return b.obj, VECTOR
        if node.id == "j":
            return self.key, SCALAR
        return b.obj, SCALAR

    def binary(self, node: Binary) -> tuple[sp.Expr, str]:
        op = node.op
        if op == "**":
            return self.power(node)
        if op in COMPARISONS:
            raise ExprError(f"a comparison ({op}) is allowed only as the condition of a normalizer's "
                            "reduction, e.g. sum_t(E, t > j)", node.col)
        a, ka = self.run(node.left)
        b, kb = self.run(node.right)
        if op in "+-":
            if ka != kb:
                raise ExprError(f"cannot {'add' if op == '+' else 'subtract'} a {kb} "
                                f"{'to' if op == '+' else 'from'} a {ka}", node.col)
            return (a + b if op == "+" else a - b), ka
        if op == "*":
            if ka == kb == VECTOR:
                raise ExprError("cannot multiply two vectors: use dot(a, b)", node.col)
            return a * b, VECTOR if VECTOR in (ka, kb) else SCALAR
        if kb == VECTOR:
            raise ExprError("cannot divide by a vector", node.col)
        if b == 0 or _constant_zero(b):
            raise ExprError("division by zero", node.col)
        self.guard("nonzero", b)
        return a / b, ka

    def power(self, node: Binary) -> tuple[sp.Expr, str]:
        base, kind = self.run(node.left)
        if kind == VECTOR:
            raise ExprError("a vector cannot be raised to a power: use dot(x, x)", node.col)
        ex, sign = node.right, 1
        if isinstance(ex, Unary):
            ex, sign = ex.operand, -1
        if not isinstance(ex, Num) or not ex.text.isdigit():
            raise ExprError("the exponent must be an integer literal (use sqrt for roots)", node.right.col)
        value = sign * int(ex.text)
        if value < 0 and (base == 0 or _constant_zero(base)):
            raise ExprError("division by zero", node.col)
        if isinstance(base, sp.Rational):
            # a constant costs nothing to raise; only the size of the exact result is bounded
            digits = abs(value) * math.log10(max(abs(base.p), base.q))
            if digits > LIMITS["value_digits"]:
                raise ExprError(f"the constant is too large: it would have about {math.ceil(digits)} digits "
                                f"(limit {LIMITS['value_digits']})", node.col)
        elif abs(value) > LIMITS["exponent"]:
            raise ExprError(f"exponent {value} too large (limit ±{LIMITS['exponent']} for a base that is "
                            "not a number)", node.right.col)
        if value < 0:
            self.guard("nonzero", base)
        return base**value, SCALAR

    def call(self, node: Call) -> tuple[sp.Expr, str]:
        fn, args = node.func, node.args
        b = self.binds.get(fn)
        if b is not None and b.kind == BROKEN:
            raise ExprError(f"{fn!r} is declared wrongly", node.col, quiet=True)
        if b is not None and b.kind != "function":
            raise ExprError(f"{fn!r} is a {b.kind}, not a function", node.col)
        if b is None and fn not in BUILTINS:
            names = set(BUILTINS) | {k for k, v in self.binds.items() if v.kind == "function"}
            raise ExprError(f"unknown function {fn!r}{nearest(fn, names)}", node.col)
        want = BUILTINS.get(fn, 1) if b is None else 1
        if len(args) != want:
            raise ExprError(f"{fn}() takes {want} argument{'s' if want > 1 else ''}, got {len(args)}", node.col)
        vals = [self.run(a) for a in args]
        if b is not None:  # a declared opaque function
            (x, kind), = vals
            f = vector_function(b.obj) if kind == VECTOR else scalar_function(b.obj)
            return f(x), kind
        if fn == "dot":
            for (_, kind), a in zip(vals, args):
                if kind != VECTOR:
                    raise ExprError("dot() needs two vectors, got a scalar", a.col)
            return Dot(vals[0][0], vals[1][0]), SCALAR
        if fn == "rope":
            (x, kx), (pos, kp) = vals
            if kx != VECTOR:
                raise ExprError("rope(x, pos) needs a vector x, got a scalar", args[0].col)
            if kp != SCALAR:
                raise ExprError("rope(x, pos) needs a scalar position, got a vector", args[1].col)
            return Rot(pos, x), VECTOR
        (x, kind), = vals
        if kind != SCALAR:
            raise ExprError(f"{fn}() needs a scalar, got a vector", args[0].col)
        why = nowhere_real(fn, x) if fn in ("sqrt", "log") else None
        if why:
            raise ExprError(why, node.col)
        if fn in ("sqrt", "log"):
            self.guard("nonnegative" if fn == "sqrt" else "positive", x)
        f = {"sqrt": sp.sqrt, "exp": sp.exp, "log": sp.log, "tanh": sp.tanh, "abs": sp.Abs}[fn]
        return f(x), SCALAR
