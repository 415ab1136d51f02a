"""A normalizer written as a formula: the weight of key j in a row of scores.

The language (the ``weight`` of a spec's ``[normalizer]`` table and of every registry entry)::

    relu(exp(x_j) - 1) / (sum_t(abs(exp(x_t) - 1)) + eps)
    sigmoid(x_j) * prod_t(1 - sigmoid(x_t), t > j)

``x_j`` is the score of key j of query row i; ``x_t`` is bound by a reduction over the row's
allowed keys — ``sum_t(E)``, ``max_t(E)``, ``min_t(E)``, ``prod_t(E)``, each with an optional
condition on t (``t > j``, ``t >= j``, ``t < j``, ``t <= j``, ``t != j``, ``t == j``; the other
side an index expression in i, j, n and integers); ``n`` is the number of allowed keys of the
row; ``i`` and ``j`` are the query and key positions; the functions are exp, log, sqrt, abs,
relu, sigmoid, tanh, softplus, max and min; every other name is a declared scalar (a
parameter). With a second score row, ``y_j`` and ``y_t`` are its scores.

:func:`compile_weight` checks a formula (errors carry the column) and gives a
:class:`Formula`, from which the rest is derived: the symbolic weight (SymPy, over the mask M
and symbolic n, for the provers and claims) and the exact weights of a concrete row (arb balls
at an adaptive precision, :mod:`derive.normalizers.exact`, for ``derive impl`` and
cross-checks). Nothing is ever evaluated as Python: the parsed tree
is walked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mpmath
import sympy as sp
from flint import arb

from derive.model.attention import M, ScalarBase, i, j, n, t
from derive.model.reductions import RowMax, RowMin
from derive.normalizers.exact import (REDUCTIONS, Ball, Undecided, Undefined, adaptive, condition, keyless, require,
                                      sign, to_arb, to_mpf)
from derive.normalizers.exact_softmax import softmax_extra, softmax_row
from derive.normalizers.symbolic_walk import SymbolicWalk
from derive.language.parser import COMPARISONS, LIMITS, Binary, Call, ExprError, Name, Node, Num, Unary, parse, walk
from derive.language.translate import nearest

__all__ = ["FUNCTIONS", "REDUCTIONS", "Formula", "compile_weight"]

_Undefined, _condition, _keyless = Undefined, condition, keyless  # the names the rest of the package uses
_ZERO = arb(0)

# name → number of arguments (None: two or more)
FUNCTIONS = {"exp": 1, "log": 1, "sqrt": 1, "abs": 1, "relu": 1, "sigmoid": 1, "tanh": 1, "softplus": 1,
             "max": None, "min": None}
Y = ScalarBase("y")  # the second score row, when a property is stated for the normalizer alone
_R = sp.Symbol("r", integer=True, positive=True)  # the index of n = Σ_r M[i, r]


@dataclass(frozen=True)
class Formula:
    text: str
    node: Node = field(repr=False)
    params: tuple[str, ...]  # the scalars it uses, in order of first appearance
    score2: bool  # uses y_j / y_t
    defaults: dict = field(default_factory=dict, compare=False, repr=False)  # param → symbol

    # ---- the symbolic weight --------------------------------------------------------------

    def weight(self, score, key=j, score2=None, **params) -> sp.Expr:
        """M[i, key]·w(key) with scores ``score(k)`` (and ``score2(k)`` for y)."""
        values = {p: params[p] if p in params else self.defaults.get(p, sp.Symbol(p, real=True))
                  for p in self.params}
        y = score2 if score2 is not None else (lambda k: Y[i, k])
        return M[i, key] * _Symbolic(score, y, key, values).run(self.node)

    # ---- the exact weights of one row -----------------------------------------------------

    def reference(self, x, mask=None, y=None, row=None, balls=False, **params) -> list:
        """The weights of a concrete row, correct to mpmath's current precision (arb balls at
        an adaptive precision, :mod:`derive.normalizers.exact`): 0 on a masked key, NaN where
        the formula has no real value. ``row`` is the query position i (default: the row
        length, the last row of a causal layout). On a row with no allowed key every weight is
        0 if the formula has a value for a key with every reduction empty (an extra term in the
        denominator), NaN if not (0/0). Raises :class:`~derive.normalizers.exact.Undecided`
        when a weight cannot be enclosed tightly at the last precision. With ``balls``, the weights
        are the arb balls themselves (tight to mpmath's precision), None where one has no value."""
        size = len(x)
        xs, ys, allowed, i_pos, vals = self._row(x, mask, y, row, params)
        if not any(allowed):
            ok = self._defined_at(xs or [arb(0)], ys or [arb(0)], [False] * max(size, 1), i_pos, vals)
            if balls:
                return [_ZERO if ok else None for _ in range(size)]
            return [mpmath.mpf(0) if ok else mpmath.nan for _ in range(size)]

        matched, extra = softmax_extra(self)
        if matched:
            return self._softmax(xs, ys, allowed, i_pos, vals, extra, balls)

        def evaluate():
            out, shared = [], {}  # the reductions that do not depend on the key, computed once per row
            for k in range(size):
                if not allowed[k]:
                    out.append(_ZERO)
                    continue
                try:
                    out.append(require(Ball(xs, ys, allowed, k + 1, i_pos, vals, shared).run(self.node)))
                except Undefined:
                    out.append(None)
            return out

        if balls:
            return adaptive(evaluate)
        return [mpmath.nan if b is None else to_mpf(b) for b in adaptive(evaluate)]

    def _softmax(self, xs, ys, allowed, i_pos, vals, extra_node, balls=False) -> list:
        """The weights of exp(x_j) / (E + sum_t(exp(x_t))), from the softmax-family row
        (:mod:`derive.normalizers.exact_softmax`): NaN on every allowed key where E has no value
        or the denominator is 0."""
        first = allowed.index(True) + 1

        def evaluate():
            try:
                extra = _ZERO if extra_node is None else Ball(xs, ys, allowed, first, i_pos, vals, {}).run(extra_node)
                row = softmax_row([x if ok else None for x, ok in zip(xs, allowed)], extra)
                if sign(row.den) == 0:
                    raise Undefined
            except Undefined:
                return None
            return [require(w) if ok else _ZERO for w, ok in zip(row.weights(), allowed)]

        out = adaptive(evaluate)
        if out is None:
            return [None if ok else _ZERO for ok in allowed] if balls else [mpmath.nan if ok else mpmath.mpf(0)
                                                                           for ok in allowed]
        return out if balls else [to_mpf(b) for b in out]

    def _row(self, x, mask, y, row, params) -> tuple:
        """(scores, second scores, allowed, query position, parameters) of a concrete row, as exact balls."""
        allowed = [mask is None or bool(mask[k]) for k in range(len(x))]
        xs = [_ZERO if not ok or x[k] is None else to_arb(x[k]) for k, ok in enumerate(allowed)]
        ys = xs if y is None else [_ZERO if not ok else to_arb(y[k]) for k, ok in enumerate(allowed)]
        vals = {p: to_arb(params[p]) for p in self.params}
        return xs, ys, allowed, len(x) if row is None else row, vals

    def evaluators(self, x, mask=None, y=None, row=None, keys=None, **params) -> dict:
        """Allowed key (1-based; those of ``keys`` only, if given) → an evaluator of the
        formula's nodes at that key of a concrete row (``.run(node)``, an mpmath number correct
        to the current precision; it raises ``Undefined`` on a node with no real value and
        ``Undecided`` on one it cannot enclose), sharing the reductions that do not depend on
        the key."""
        xs, ys, allowed, i_pos, vals = self._row(x, mask, y, row, params)
        shared: dict = {}
        return {k: _Exact(Ball(xs, ys, allowed, k, i_pos, vals, shared)) for k in range(1, len(xs) + 1)
                if allowed[k - 1] and (keys is None or k in keys)}

    def _defined_at(self, xs, ys, allowed, row, vals) -> bool:
        """Has the formula a value at the first key of this row (its value is not needed)?"""
        def evaluate():
            try:
                Ball(xs, ys, allowed, 1, row, vals, {}).run(self.node)
                return True
            except Undefined:
                return False

        return adaptive(evaluate)

    def total(self) -> bool:
        """Is the tree certainly defined at every allowed key of every row, for every parameter value
        of the declared domain (a sufficient rule, read off the tree)? The symbolic weight is SymPy's
        reading of the tree, which drops what it simplifies away (0·log(x_j) is 0, exp(2·log(s)) is
        s², 0/x_j is 0); where the tree is total, the two have a value at the same rows.

        Every log, sqrt, division and negative power has an operand positive (nonnegative under a
        sqrt) by construction — exp, sigmoid and softplus are positive, a sum over the row's keys
        of positive terms is positive, since it has key j — or, free of the row, proved so by SymPy
        over the domain; a max_t or min_t (empty for some key) makes it not total."""
        return all(_safe(nd, self) for nd in walk(self.node))

    def defined_without_keys(self, **params) -> bool:
        """Does the formula have a value on a row with no allowed key (its reductions empty)?"""
        with mpmath.workdps(30):
            vals = {p: to_arb(params.get(p, mpmath.mpf(1) / 2)) for p in self.params}
            return self._defined_at([_ZERO], [_ZERO], [False], 1, vals)


class _Exact:
    """The nodes of a formula at one key of a concrete row, each correct to mpmath's current
    precision (``var``: the bound index t while inside a reduction)."""

    def __init__(self, ball: Ball):
        self.ball, self.var = ball, None

    def run(self, node):
        def evaluate():
            self.ball.var = self.var
            return require(self.ball.run(node))

        return to_mpf(adaptive(evaluate))

    def indices(self, args) -> list[int]:
        return self.ball.indices(args)


# ---- checking ---------------------------------------------------------------------------


def compile_weight(text: str, scalars: dict | None = None, score2: bool = False,
                   defaults: dict | None = None) -> Formula:
    """Check ``text`` and return its :class:`Formula`. ``scalars``: the declared scalar names
    (name → SymPy assumptions); ``score2``: whether y_j / y_t (a second score row) exist.
    Raises :class:`~derive.language.parser.ExprError` with the column of the first error."""
    node = parse(text)
    scalars = dict(scalars or {})
    used: list[str] = []
    uses_y = _check(node, scalars, score2, None, used)
    defaults = {p: (defaults or {}).get(p, sp.Symbol(p, real=True, **scalars.get(p, {}))) for p in used}
    f = Formula(text, node, tuple(used), uses_y, defaults)
    _check_somewhere_defined(f, scalars)
    return f


def _mentions(node, names) -> bool:
    from derive.language.parser import walk

    return any(isinstance(nd, Name) and nd.id in names for nd in walk(node))


def _known_names(scalars, score2, bound) -> list[str]:
    out = ["x_j", "n", "i", "j", *scalars]
    if score2:
        out.append("y_j")
    if bound:
        out += ["x_t", "t"] + (["y_t"] if score2 else [])
    return out


def _check(node, scalars, score2, bound, used) -> bool:
    """Walk ``node``; ``bound`` is the reduction it is inside (None: outside any)."""
    if isinstance(node, Num):
        return False
    if isinstance(node, Name):
        name = node.id
        if name in ("x_t", "y_t", "t") and bound is None:
            raise ExprError(f"{name} is bound by a reduction: use it inside sum_t(…), max_t(…), min_t(…) or "
                            "prod_t(…)", node.col)
        if name in ("y_j", "y_t") and not score2:
            raise ExprError(f"{name} is a score of the second row: give score2 = \"…\" in the spec", node.col)
        if name in ("x_j", "x_t", "n", "i", "j", "t", "y_j", "y_t"):
            return name.startswith("y")
        if name in scalars:
            if name not in used:
                used.append(name)
            return False
        if name in FUNCTIONS or name in REDUCTIONS:
            raise ExprError(f"{name!r} is a function: call it, e.g. {name}(…)", node.col)
        known = _known_names(scalars, score2, bound)
        raise ExprError(f"unknown name {name!r}{nearest(name, known)} (the weight may use "
                        f"{', '.join(known)}; declare a parameter under [symbols] as a scalar)", node.col)
    if isinstance(node, Unary):
        return _check(node.operand, scalars, score2, bound, used)
    if isinstance(node, Binary):
        if node.op in COMPARISONS:
            raise ExprError(f"a comparison ({node.op}) is allowed only as the condition of a reduction, e.g. "
                            "sum_t(E, t > j)", node.col)
        if node.op == "**":
            _check_exponent(node)
        a = _check(node.left, scalars, score2, bound, used)
        return _check(node.right, scalars, score2, bound, used) or a
    fn, args = node.func, node.args
    if fn in REDUCTIONS:
        if bound is not None:
            raise ExprError(f"{fn} inside {bound}: a reduction inside a reduction is not supported", node.col)
        if len(args) not in (1, 2):
            raise ExprError(f"{fn}(E) or {fn}(E, CONDITION) takes 1 or 2 arguments, got {len(args)}", node.col)
        if len(args) == 2:
            _condition(args[1])
        return _check(args[0], scalars, score2, fn, used)
    if fn not in FUNCTIONS:
        raise ExprError(f"unknown function {fn!r}{nearest(fn, list(FUNCTIONS) + list(REDUCTIONS))} (expected one "
                        f"of {', '.join(list(FUNCTIONS) + list(REDUCTIONS))})", node.col)
    want = FUNCTIONS[fn]
    if (want is None and len(args) < 2) or (want is not None and len(args) != want):
        shown = "2 or more arguments" if want is None else f"{want} argument"
        raise ExprError(f"{fn}() takes {shown}, got {len(args)}", node.col)
    out = False
    for a in args:
        out = _check(a, scalars, score2, bound, used) or out
    return out


def _check_exponent(node: Binary) -> None:
    ex = node.right.operand if isinstance(node.right, Unary) else node.right
    if not isinstance(ex, Num) or not ex.text.isdigit():
        raise ExprError("the exponent must be an integer literal (use sqrt for roots)", node.right.col)
    if int(ex.text) > LIMITS["exponent"]:
        if isinstance(node.left, Num) and sp.Rational(node.left.text) != 0:
            # a number raised to an integer is an exact constant, as in the spec's expressions
            # (10**-300): only the size of the exact result is bounded
            base = sp.Rational(node.left.text)
            digits = int(ex.text) * math.log10(max(abs(base.p), base.q))
            if digits <= LIMITS["value_digits"]:
                return
            raise ExprError(f"the constant is too large: it would have about {math.ceil(digits)} digits "
                            f"(limit {LIMITS['value_digits']})", node.col)
        raise ExprError(f"exponent {ex.text} too large (limit ±{LIMITS['exponent']} for a base that is not a "
                        "number)", node.right.col)


def _check_somewhere_defined(f: Formula, scalars: dict) -> None:
    """A weight with no real value on every sample row is an error (``1/(x_j - x_j)``, ``log(-exp(x_j))``)."""
    rows = ([0.0], [0.0, 1.0], [1.5, -1.0, 0.25], [-2.0, 0.5, 3.0, 1.0])
    tried = 0
    with mpmath.workdps(30):
        for sign in (1, -1):
            vals = {p: mpmath.mpf(_sample(scalars.get(p, {}), sign)) for p in f.params}
            for row in rows:
                tried += 1
                try:
                    w = f.reference(row, y=[v / 2 - 1 for v in row] if f.score2 else None, **vals)
                except Undecided:  # not known to have no value
                    return
                if any(not mpmath.isnan(v) for v in w):
                    return
    raise ExprError(f"the weight has no real value on any of {tried} sample rows (a division by zero, or a log "
                    "or sqrt of a negative number, whatever the scores)", 1)


def _sample(assumptions: dict, sign: int) -> float:
    if assumptions.get("positive"):
        return 0.5 if sign > 0 else 2.0
    if assumptions.get("negative"):
        return -0.5 if sign > 0 else -2.0
    return 0.5 * sign


# ---- where the tree is certainly defined ---------------------------------------------------

_POS, _NONNEG = 2, 1  # the sign classes of _sign (0: not known)
_ROW = ("x_j", "x_t", "y_j", "y_t", "j", "t")


def _safe(node, f: Formula) -> bool:
    """Is the partial operation at ``node`` (if it is one) certainly defined? (see :meth:`Formula.total`)"""
    if isinstance(node, Call) and node.func in ("max_t", "min_t"):
        return False
    if isinstance(node, Call) and node.func in ("log", "sqrt"):
        return _sign(node.args[0], f) >= (_POS if node.func == "log" else _NONNEG)
    if isinstance(node, Binary) and node.op == "/":
        return _sign(node.right, f) == _POS or _row_free(node.right) and _free(node.right, f).is_nonzero is True
    if isinstance(node, Binary) and node.op == "**" and isinstance(node.right, Unary):  # a negative power
        return _sign(node.left, f) == _POS or _row_free(node.left) and _free(node.left, f).is_nonzero is True
    return True


def _sign(node, f: Formula) -> int:
    """_POS, _NONNEG or 0 (not known) for the value of ``node`` at an allowed key, where it is defined."""
    if _row_free(node):
        v = _free(node, f)
        return _POS if v.is_positive else _NONNEG if v.is_nonnegative else 0
    if isinstance(node, Call):
        args = [_sign(a, f) for a in node.args]
        if node.func in ("exp", "sigmoid", "softplus"):
            return _POS
        if node.func in ("abs", "relu"):
            return _NONNEG
        if node.func == "sum_t":  # over the row's allowed keys, key j among them unless a condition drops it
            return min(args[0], _NONNEG if len(node.args) > 1 else _POS)
        if node.func == "prod_t":  # the empty product is 1
            return args[0]
        if node.func in ("max", "min"):
            return max(args) if node.func == "max" and min(args) >= _NONNEG else min(args)
        return 0
    if isinstance(node, Binary) and node.op == "+":
        a, b = _sign(node.left, f), _sign(node.right, f)
        return max(a, b) if min(a, b) >= _NONNEG else 0
    if isinstance(node, Binary) and node.op in ("*", "/"):
        return min(_sign(node.left, f), _sign(node.right, f))
    if isinstance(node, Binary) and node.op == "**":
        if isinstance(node.right, Num) and node.right.text.isdigit() and int(node.right.text) % 2 == 0:
            return max(_sign(node.left, f), _NONNEG)  # an even power of a real value
        return _sign(node.left, f)
    return 0


def _row_free(node) -> bool:
    return not any(isinstance(nd, Name) and nd.id in _ROW or isinstance(nd, Call) and nd.func in REDUCTIONS
                   for nd in walk(node))


def _free(node, f: Formula) -> sp.Expr:
    """A node free of the row as SymPy reads it: the parameters over their domain, n and i positive integers."""
    return _Free(None, None, None, dict(f.defaults)).run(node)


# ---- the symbolic weight ------------------------------------------------------------------


class _Symbolic(SymbolicWalk):
    def __init__(self, score, score2, key, params):
        self.score, self.score2, self.key, self.params = score, score2, key, params
        self.var = None  # the bound index inside a reduction

    def name(self, name: str) -> sp.Expr:
        if name == "x_j":
            return self.score(self.key)
        if name == "y_j":
            return self.score2(self.key)
        if name == "x_t":
            return self.score(self.var)
        if name == "y_t":
            return self.score2(self.var)
        if name == "t":
            return self.var
        if name == "j":
            return self.key
        if name == "i":
            return i
        if name == "n":
            return sp.Sum(M[i, _R], (_R, 1, n))
        return self.params[name]

    def limits(self, args) -> tuple:
        """(op, lo, hi, skip) of a reduction with arguments ``args``: t runs over lo..hi but
        skip (0: none), op the condition's comparison ("" without one)."""
        op, e = ("", None) if len(args) == 1 else _condition(args[1])
        e = None if e is None else self.run(e)
        lo, hi, skip = sp.S.One, n, sp.S.Zero
        if op == ">":
            lo = e + 1
        elif op == ">=":
            lo = e
        elif op == "<":
            hi = e - 1
        elif op == "<=":
            hi = e
        elif op == "==":
            lo = hi = e
        elif op == "!=":
            skip = e
        # t runs over the row's keys 1..n: a bound the condition puts past either end (t > i - 3
        # at row 1, t < n + 3) is clamped there, never a key 0, -1 or n + 1 of no row
        if op in ("==", ">", ">="):
            lo = lo if _at_least_one(lo) else sp.Max(1, lo)
        if op in ("==", "<", "<="):
            hi = hi if _at_most_n(hi) else sp.Min(n, hi)
        return op, lo, hi, skip

    def reduction(self, fn: str, args, build=None) -> sp.Expr:
        """The reduction ``fn`` over the row; ``build`` turns its body into SymPy (default: as is)."""
        self.var = t
        try:
            body = (build or self.run)(args[0])
        finally:
            self.var = None
        op, lo, hi, skip = self.limits(args)
        at = lambda k: body.xreplace({t: k})  # noqa: E731
        inside = op != "!=" or _at_least_one(skip) and _at_most_n(skip)  # the key skipped is a key of the row
        if fn == "sum_t":
            total = sp.Sum(M[i, t] * body, (t, lo, hi))
            if op != "!=":
                return total
            if inside:
                return total - M[i, skip] * at(skip)
            return total - sp.Piecewise((M[i, skip] * at(skip), sp.And(skip >= 1, skip <= n)), (0, True))
        if fn == "prod_t":
            factor = 1 + M[i, t] * (body - 1)
            if op == "!=":
                if inside:
                    return sp.Product(factor, (t, 1, skip - 1)) * sp.Product(factor, (t, skip + 1, n))
                return (sp.Product(factor, (t, 1, sp.Min(n, skip - 1)))
                        * sp.Product(factor, (t, sp.Max(1, skip + 1), n)))
            return sp.Product(factor, (t, lo, hi))
        return (RowMax if fn == "max_t" else RowMin)(body, t, lo, hi, skip)


def _index_atoms(e: sp.Expr, at: sp.Expr, count: sp.Expr) -> sp.Expr:
    """``e`` with each index it reads (i, the key) replaced by ``at(fresh)`` and each count of allowed
    keys (a sum, 0..n) by ``count(fresh)``, fresh a nonnegative integer: the ranges written through
    variables SymPy knows the sign of."""
    fresh = lambda: sp.Dummy(integer=True, nonnegative=True)  # noqa: E731
    e = sp.Integer(e) if isinstance(e, int) else e  # a concrete key
    held = {c: sp.Dummy() for c in e.atoms(sp.Sum)}
    e = e.xreplace(held)
    swap = {s: at(fresh()) for s in e.free_symbols if s != n and s not in held.values()}
    swap.update({d: count(fresh()) for d in held.values()})
    return e.xreplace(swap)


def _at_least_one(e: sp.Expr) -> bool:
    """Is the index expression ``e`` (linear in i, j, n and the row's count) >= 1 at every key of every row?"""
    return bool((_index_atoms(e, lambda a: 1 + a, lambda a: a) - 1).is_nonnegative)


def _at_most_n(e: sp.Expr) -> bool:
    """Is the index expression ``e`` <= n at every key of every row (every index at most n)?"""
    return bool((n - _index_atoms(e, lambda a: n - a, lambda a: n - a)).is_nonnegative)


class _Free(_Symbolic):
    """:class:`_Symbolic` for a node free of the row: n and i (and the key j, for a node free of the
    scores and of t) are positive integers."""

    def name(self, name: str) -> sp.Expr:
        if name in ("n", "i", "j"):
            return sp.Symbol(name, integer=True, positive=True)
        return super().name(name)
