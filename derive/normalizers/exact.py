"""The exact value of a weight formula on a concrete row: python-flint ``arb`` balls with an
adaptive precision.

A formula is walked as a tree (:mod:`derive.normalizers.formula` checks it first) with every
quantity an ``arb`` ball: a rigorous enclosure of the exact value. The inputs (floats, mpmath
numbers) are dyadic and enter as exact balls. Starting from twice the caller's precision
(mpmath's ``mp.prec``, at least 128 bits) the evaluation is repeated at twice the precision,
up to :data:`CAP` bits, whenever

* a result is not tight: its relative radius is above 2^−``mp.prec`` (an exactly zero ball is
  exact: e^0 − 1 is 0), or
* a decision the formula needs cannot be made on a ball: a division by a ball that contains 0
  but is not 0, a log or sqrt of a ball that touches 0 or the negatives, a reduction bound.

The schedule depends on the caller's precision and the input alone, never on time. A
difference of the same expression with itself (``S − S``, columns aside) is an exact 0, as
arithmetic on two equal but wide balls could not say; so is a sum or difference whose ball
contains 0 and which SymPy proves identically 0 (``log(exp(x_j)) - x_j``,
:mod:`derive.normalizers.exact_zero`). At the cap the value is :class:`Undecided`: the
caller reports the row as not evaluated, never as agreeing or disagreeing. A formula with no
real value at the row (a division by an exact 0, the log of a certainly negative number, the
max of nothing) raises :class:`Undefined`. e^x − 1 at x = 1e−300 is therefore 1e−300 to every
digit asked for, where a fixed 30-digit evaluation gives 0.

The min and max of balls (max, min, relu, abs, max_t, min_t) are enclosures that need no
decision; if an argument's sign is not known, the result is not tight and the precision rises.
"""

from __future__ import annotations

import mpmath
import sympy as sp
from flint import arb, ctx

from derive.normalizers.exact_zero import proved_zero, unproved
from derive.language.parser import Binary, Call, ExprError, Name, Num, Unary, walk

__all__ = ["CAP", "REDUCTIONS", "Ball", "Undecided", "Undefined", "adaptive", "condition", "keyless", "require", "sign",
           "to_arb", "to_mpf"]

REDUCTIONS = ("sum_t", "max_t", "min_t", "prod_t")
CAP = 2**14  # bits: the last precision tried
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_ZERO = arb(0)


class Undefined(Exception):
    """The formula has no real value here (0 in a denominator, log of a non-positive number …)."""


class Undecided(Exception):
    """The value could not be enclosed tightly enough at :data:`CAP` bits of precision."""


class _Imprecise(Exception):
    """A ball is too wide for a decision or a result at this precision: raise it."""


def condition(node) -> tuple[str, object]:
    """(op, other side) of a reduction's condition ``t OP e`` (or ``e OP t``, flipped); e free of t."""
    if not isinstance(node, Binary) or node.op not in _FLIP:
        raise ExprError("the condition of a reduction is a comparison of t, e.g. t > j or t != j",
                        getattr(node, "col", 1))
    left_t = isinstance(node.left, Name) and node.left.id == "t"
    right_t = isinstance(node.right, Name) and node.right.id == "t"
    if left_t == right_t:
        raise ExprError("the condition compares t with an index expression (i, j, n, integers), e.g. t > j",
                        node.col)
    other = node.right if left_t else node.left
    _index_expr(other)
    return (node.op if left_t else _FLIP[node.op]), other


def _index_expr(node) -> None:
    if isinstance(node, Num):
        if not node.text.isdigit():
            raise ExprError("an index is an integer", node.col)
        return
    if isinstance(node, Name):
        if node.id not in ("i", "j", "n"):
            raise ExprError(f"{node.id!r} in a condition: compare t with i, j, n and integers only", node.col)
        return
    if isinstance(node, Unary):
        return _index_expr(node.operand)
    if isinstance(node, Binary) and node.op in "+-":
        _index_expr(node.left)
        _index_expr(node.right)
        return
    raise ExprError("a condition's index expression uses only i, j, n, integers, + and -", node.col)


def keyless(node) -> bool:
    """Does a reduction's value not depend on the key j (so one row computes it once)?"""
    return not any(isinstance(nd, Name) and nd.id in ("j", "x_j", "y_j") for nd in walk(node))


def _scanned(fn: str, args) -> bool:
    """Is the reduction a sum or product over ``t OP j`` (OP one of < <= > >=) of a body free of the key,
    which :meth:`Ball.scan` computes for every key in one pass?"""
    if fn not in ("sum_t", "prod_t") or len(args) != 2 or not keyless(args[0]):
        return False
    op, other = condition(args[1])
    return op in ("<", "<=", ">", ">=") and isinstance(other, Name) and other.id == "j"


def to_arb(v) -> arb:
    """The exact ball of a float, an int or an mpmath number (every one is dyadic; ±∞ and NaN
    are arb's own)."""
    if isinstance(v, arb):
        return v
    if isinstance(v, (int, float)):
        return arb(v)
    v = mpmath.mpf(v)
    if not mpmath.isfinite(v):
        return arb(float(v))
    sign, man, exp, _ = v._mpf_
    man = -int(man) if sign else int(man)
    saved = ctx.prec
    ctx.prec = max(saved, int(man).bit_length() + 2)  # the product below is then exact
    try:
        return arb(int(man)) * arb(2) ** int(exp)
    finally:
        ctx.prec = saved


def to_mpf(b: arb):
    """The ball's midpoint as an mpmath number at the current precision."""
    if b.is_zero():
        return mpmath.mpf(0)
    if not b.is_finite():  # an exact ±∞ or NaN
        return mpmath.mpf(float(b.mid()))
    man, exp = b.mid().man_exp()
    return mpmath.mpf((int(man), int(exp)))


def same(a, b) -> bool:
    """Are two nodes the same expression (their columns aside)? Then they have one value at one point."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Num):
        return a.text == b.text
    if isinstance(a, Name):
        return a.id == b.id
    if isinstance(a, Unary):
        return a.op == b.op and same(a.operand, b.operand)
    if isinstance(a, Binary):
        return a.op == b.op and same(a.left, b.left) and same(a.right, b.right)
    return a.func == b.func and len(a.args) == len(b.args) and all(same(x, y) for x, y in zip(a.args, b.args))


def sign(b: arb) -> int:
    if b.is_zero():
        return 0
    if b > 0:
        return 1
    if b < 0:
        return -1
    raise _Imprecise


def _rational(text: str) -> arb:
    r = sp.Rational(text)
    return arb(int(r.p)) / arb(int(r.q))


def _min(a: arb, b: arb) -> arb:
    return -((-a).max(-b))


class Ball:
    """One key of a concrete row: ``run(node)`` is the node's ball at ``ctx.prec`` (raises
    :class:`Undefined` where it has no real value, ``_Imprecise`` where a decision needs more
    precision). ``shared`` holds the reductions that do not depend on the key, per precision."""

    def __init__(self, xs, ys, allowed, key, row, params, shared):
        self.xs, self.ys, self.allowed, self.key, self.row, self.params = xs, ys, allowed, key, row, params
        self.var = None
        self.shared = shared

    def run(self, node) -> arb:
        if isinstance(node, Num):
            return _rational(node.text)
        if isinstance(node, Name):
            return self.name(node.id)
        if isinstance(node, Unary):
            return -self.run(node.operand)
        if isinstance(node, Binary):
            a, b = self.run(node.left), self.run(node.right)
            if node.op == "/":
                if sign(b) == 0:
                    raise Undefined
                return a / b
            if node.op == "**":
                e = int(b.unique_fmpz())
                if e < 0 and sign(a) == 0:
                    raise Undefined
                return a**e
            if node.op == "-" and same(node.left, node.right):
                return _ZERO  # the same expression at the same point: exactly 0, whatever the balls' radii
            out = {"+": a.__add__, "-": a.__sub__, "*": a.__mul__}[node.op](b)
            return _ZERO if node.op != "*" and self.cancels(out, node) else out
        return self.call(node)

    def cancels(self, value: arb, node) -> bool:
        """Is ``value``, a ball around 0 of the sum or difference ``node``, an exact 0 that
        SymPy proves (:func:`derive.normalizers.exact_zero.proved_zero`)?"""
        if value.is_exact() or not value.contains(0):
            return False
        signs = tuple(sorted((p, 0 if v.is_zero() else 1 if v > 0 else -1 if v < 0 else None)
                             for p, v in self.params.items()))
        return proved_zero(node, signs)

    def name(self, name: str) -> arb:
        if name in ("x_j", "y_j"):
            return (self.xs if name == "x_j" else self.ys)[self.key - 1]
        if name in ("x_t", "y_t"):
            return (self.xs if name == "x_t" else self.ys)[self.var - 1]
        if name == "t":
            return arb(self.var)
        if name == "j":
            return arb(self.key)
        if name == "i":
            return arb(self.row)
        if name == "n":
            return arb(sum(self.allowed))
        return self.params[name]

    def call(self, node: Call) -> arb:
        fn = node.func
        if fn in REDUCTIONS:
            return self.reduction(fn, node.args)
        args = [self.run(a) for a in node.args]
        if fn in ("max", "min"):
            out = args[0]
            for a in args[1:]:
                out = out.max(a) if fn == "max" else _min(out, a)
            return out
        (x,) = args
        if fn == "log":
            if sign(x) <= 0:
                raise Undefined
            return x.log()
        if fn == "sqrt":
            s = sign(x)
            if s < 0:
                raise Undefined
            return x.sqrt() if s else _ZERO
        if fn == "relu":
            return x.max(_ZERO)
        if fn == "sigmoid":
            return 1 / (1 + (-x).exp())
        if fn == "softplus":
            return x.exp().log1p()
        return {"exp": arb.exp, "abs": abs, "tanh": arb.tanh}[fn](x)

    def reduction(self, fn: str, args) -> arb:
        if type(self)._reduction is Ball._reduction and _scanned(fn, args):  # balls, not a subclass's numbers
            return self.scan(fn, args)
        key = (ctx.prec, id(args))
        if key in self.shared:
            value = self.shared[key]
            if value is None:
                raise Undefined
            return value
        try:
            value = self._reduction(fn, args)
        except Undefined:
            value = None
        if all(keyless(a) for a in args):
            self.shared[key] = value
        if value is None:
            raise Undefined
        return value

    def scan(self, fn: str, args) -> arb:
        """A sum or product over the keys before or after the key (``t > j``, ``t <= j``, ...) of a body
        free of the key: every key's value from one pass over the row (a running sum or product, from
        the end for ``>``/``>=``), kept per row and precision, so a row costs n terms, not n² (stick-
        breaking). A body with no value at some t leaves no value to every key whose range holds t."""
        key = ("scan", ctx.prec, id(args))
        if key not in self.shared:
            op = condition(args[1])[0]
            n = len(self.xs)
            order = range(n, 0, -1) if op in (">", ">=") else range(1, n + 1)
            table, acc, outer = {}, (_ZERO if fn == "sum_t" else arb(1)), self.var
            keys = [k for k in range(1, n + 1) if self.allowed[k - 1]]
            lo, hi = (keys[0], keys[-1]) if keys else (n + 1, 0)
            # the term at t is evaluated only where an allowed key's range holds it, as term by term
            used = {">": lambda t: lo < t, ">=": lambda t: lo <= t, "<": lambda t: hi > t, "<=": lambda t: hi >= t}[op]
            for k in order:
                if op in (">", "<"):
                    table[k] = acc  # the keys strictly after (before) k
                if self.allowed[k - 1] and acc is not None and used(k):
                    self.var = k
                    try:
                        term = self.run(args[0])
                        acc = acc + term if fn == "sum_t" else acc * term
                    except Undefined:
                        acc = None
                    finally:
                        self.var = outer
                if op in (">=", "<="):
                    table[k] = acc
            self.shared[key] = table
        value = self.shared[key][self.key]
        if value is None:
            raise Undefined
        return value

    def indices(self, args) -> list[int]:
        """The keys t (1-based) a reduction with arguments ``args`` runs over: allowed, and
        meeting its condition."""
        keep = None
        if len(args) == 2:
            op, e = condition(args[1])
            bound = int(self.run(e).unique_fmpz())  # i, j, n, integers, + and −: exact
            keep = {"<": lambda k: k < bound, "<=": lambda k: k <= bound, ">": lambda k: k > bound,
                    ">=": lambda k: k >= bound, "==": lambda k: k == bound, "!=": lambda k: k != bound}[op]
        return [k for k in range(1, len(self.xs) + 1) if self.allowed[k - 1] and (keep is None or keep(k))]

    def terms(self, args) -> list:
        """The body of a reduction with arguments ``args`` at each key t it runs over."""
        vals = []
        outer = self.var
        for k in self.indices(args):
            self.var = k
            try:
                vals.append(self.run(args[0]))
            finally:
                self.var = outer
        return vals

    def _reduction(self, fn: str, args) -> arb:
        vals = self.terms(args)
        if fn == "sum_t":
            return sum(vals, _ZERO)
        if fn == "prod_t":
            out = arb(1)
            for v in vals:
                out *= v
            return out
        if not vals:
            raise Undefined
        out = vals[0]
        for v in vals[1:]:
            out = out.max(v) if fn == "max_t" else _min(out, v)
        return out


def tight(b: arb, bits: int) -> bool:
    """Is the ball exact, or finite with a relative radius at most 2^−bits?"""
    if b.is_exact():
        return True
    return b.is_finite() and not b.contains(0) and b.rel_accuracy_bits() >= bits


def _schedule():
    """The precisions tried (bits): twice the caller's (at least 128), doubling up to CAP."""
    prec = max(128, 2 * mpmath.mp.prec)
    while prec < CAP:
        yield prec
        prec *= 2
    yield CAP


def adaptive(evaluate):
    """``evaluate()`` (balls, or anything built from them) at the precisions of the schedule
    until it raises no ``_Imprecise``; it checks its own results with :func:`tight` against
    ``mp.prec``. Raises :class:`Undecided` at the cap."""
    saved = ctx.prec
    unproved(reset=True)
    try:
        for prec in _schedule():
            ctx.prec = prec
            try:
                return evaluate()
            except _Imprecise:
                continue
    finally:
        ctx.prec = saved
    why = "".join(f"; SymPy does not prove {text} identically 0" for text in unproved(reset=True)[:2])
    raise Undecided(f"no ball up to {CAP} bits of precision encloses the exact value tightly (a difference "
                    f"that cancels to every digit, or a kink's sign that no precision decides){why}")


def require(b: arb) -> arb:
    """``b`` if it is tight to ``mp.prec`` bits, else raise ``_Imprecise``."""
    if not tight(b, mpmath.mp.prec):
        raise _Imprecise
    return b
