"""Definitions the checker trusts: the built-in normalizers' formulas and three functions.

:data:`BUILTIN` is the one place a built-in normalizer is written (the registry,
``derive.normalizers.registry``, reads its formulas from here): a certificate that unfolds a
built-in must state exactly this text. A user normalizer's formula is the one its certificate
states. :func:`unfold` reads a formula with Python's own parser (``ast``, nothing evaluated)
and writes it as a term: ``x_j`` is the score of the key, ``x_t`` of the key t bound by
``sum_t``, ``n`` the number of allowed keys Σ_r M[i, r], and the weight is M[i, key] times the
formula (a masked key has weight 0).
"""

from __future__ import annotations

import ast
from fractions import Fraction

from derive.replay.terms import Malformed, free, fresh, subst

__all__ = ["BUILTIN", "FUNCTIONS", "Outside", "unfold"]

BUILTIN = {
    "softmax": "exp(x_j) / sum_t(exp(x_t))",
    "softmax1": "exp(x_j) / (1 + sum_t(exp(x_t)))",
    "sink": "exp(x_j) / (exp(s) + sum_t(exp(x_t)))",
    "zero_token": "exp(x_j) / (exp(0) + sum_t(exp(x_t)))",
    "bias_kv": "exp(x_j) / (exp(s_star) + sum_t(exp(x_t)))",
    "sigmoid": "sigmoid(x_j + b)",
    "clipped": "min(1, max(0, (zeta - gamma) * exp(x_j) / sum_t(exp(x_t)) + gamma))",
    "softcap": "exp(c * tanh(x_j / c)) / sum_t(exp(c * tanh(x_t / c)))",
    "softpick": "relu(exp(x_j) - 1) / (sum_t(abs(exp(x_t) - 1)) + eps)",
    "ssmax": "exp(s * log(n) * x_j) / sum_t(exp(s * log(n) * x_t))",
    "sigmoid_logn": "sigmoid(x_j - log(n))",
    "stick_breaking": "sigmoid(x_j) * prod_t(1 - sigmoid(x_t), t > j)",
    "relu_n": "relu(x_j) / n",
}

ONE, MINUS = ("num", Fraction(1)), ("num", Fraction(-1))
# f(a) written with exp and log: the rule "unfold" rewrites f by its definition
FUNCTIONS = {
    "sigmoid": lambda a: ("pow", ("add", ONE, ("exp", ("mul", MINUS, a))), MINUS),
    "softplus": lambda a: ("log", ("add", ONE, ("exp", a))),
    "tanh": lambda a: ("mul", ("add", ("exp", ("mul", ("num", Fraction(2)), a)), MINUS),
                       ("pow", ("add", ("exp", ("mul", ("num", Fraction(2)), a)), ONE), MINUS)),
}


# functions the checker knows only by name (and sign): an identity through them holds argument
# by argument; relu(a) is max(0, a). The names are no identifier, so no declared function is one.
OPAQUE = {"abs": "abs()", "max": "max()", "min": "min()", "relu": "max()"}


REDUCTIONS = {"sum_t": "sum", "prod_t": "prod", "max_t": "max_t", "min_t": "min_t"}


class Outside(Malformed):
    """A formula that uses what the checker does not know (abs, relu, max, min, prod_t …)."""


def unfold(text: str, key, x, y, params: dict):
    """The weight of key ``key`` for the formula ``text``, scores ``x`` (and ``y``): ("lam", var, body)."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise Malformed(f"the formula {text!r} does not parse: {exc.msg}") from None
    taken = set(free(key)) | {"i", "n"} | set().union(*(free(v) for v in params.values()))
    for f in (x, y):
        if f is not None:
            taken |= free(f[2]) - {f[1]}
    body = _Reader(text, key, x, y, params, taken).run(tree, None)
    return ("mul", ("mask", ("sym", "i"), key), body)


class _Reader:
    def __init__(self, text, key, x, y, params, taken):
        self.text, self.key, self.x, self.y, self.params, self.taken = text, key, x, y, params, taken

    def score(self, f, at):
        if f is None:
            raise Malformed("the formula uses y, but no second score row is given")
        return subst(f[2], {f[1]: at})

    def run(self, node, t):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and \
                not isinstance(node.value, bool):
            return ("num", Fraction(ast.get_source_segment(self.text.strip(), node)))
        if isinstance(node, ast.Name):
            return self.name(node.id, t)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            a = self.run(node.operand, t)
            return ("mul", MINUS, a) if isinstance(node.op, ast.USub) else a
        if isinstance(node, ast.BinOp):
            a, b = self.run(node.left, t), self.run(node.right, t)
            op = type(node.op)
            if op is ast.Add:
                return ("add", a, b)
            if op is ast.Sub:
                return ("add", a, ("mul", MINUS, b))
            if op is ast.Mult:
                return ("mul", a, b)
            if op is ast.Div:
                return ("mul", a, ("pow", b, MINUS))
            if op is ast.Pow and b[0] == "num" and b[1].denominator == 1:
                return ("pow", a, b)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            return self.call(node.func.id, node.args, t)
        raise Outside(f"the formula {self.text!r} has a construct the checker does not read: "
                      f"{ast.get_source_segment(self.text.strip(), node)!r}")

    def name(self, name: str, t):
        if name in ("x_j", "y_j"):
            return self.score(self.x if name == "x_j" else self.y, self.key)
        if name in ("x_t", "y_t", "t"):
            if t is None:
                raise Malformed(f"{name} outside sum_t in {self.text!r}")
            return t if name == "t" else self.score(self.x if name == "x_t" else self.y, t)
        if name == "j":
            return self.key
        if name == "i":
            return ("sym", "i")
        if name == "n":  # the number of allowed keys of the row
            r = ("sym", fresh("r", self.taken))
            return ("sum", r[1], ONE, ("sym", "n"), ("mask", ("sym", "i"), r))
        if name in self.params:
            return self.params[name]
        raise Malformed(f"the formula {self.text!r} names {name!r}, which has no value")

    def call(self, fn: str, args, t):
        if fn in ("exp", "log", "sqrt", *FUNCTIONS) and len(args) == 1:
            return (fn, self.run(args[0], t))
        if fn in OPAQUE and (len(args) == 1 or fn in ("max", "min") and len(args) >= 2):
            parts = [self.run(a, t) for a in args]
            return ("fn", "max()", ("num", Fraction(0)), *parts) if fn == "relu" else ("fn", OPAQUE[fn], *parts)
        if fn not in REDUCTIONS or t is not None or len(args) not in (1, 2):
            raise Outside(f"the formula {self.text!r} uses {fn}, which the checker does not know")
        v = ("sym", fresh("t", self.taken))
        body = ("mul", ("mask", ("sym", "i"), v), self.run(args[0], v))
        lo, hi = ONE, ("sym", "n")
        if len(args) == 2:
            op, e = self.condition(args[1])
            one = lambda s: ("add", e, ("num", Fraction(s)))  # noqa: E731
            lo, hi = {">": (one(1), hi), ">=": (e, hi), "<": (lo, one(-1)), "<=": (lo, e),
                      "==": (e, e), "!=": (lo, hi)}[op]
            if op == "!=":
                body = ("mul", ("ind", ("cmp", "!=", v, e)), body)
        return (REDUCTIONS[fn], v[1], lo, hi, body)

    def condition(self, node):
        flip = {ast.Gt: "<", ast.GtE: "<=", ast.Lt: ">", ast.LtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
        mine = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in mine):
            raise Malformed(f"a condition of sum_t is one comparison with t, in {self.text!r}")
        left, right = node.left, node.comparators[0]
        is_t = lambda e: isinstance(e, ast.Name) and e.id == "t"  # noqa: E731
        if is_t(left) == is_t(right):
            raise Malformed(f"a condition of sum_t compares t with an index, in {self.text!r}")
        op = (mine if is_t(left) else flip)[type(node.ops[0])]
        return op, self.run(right if is_t(left) else left, None)
