"""The overflow-free form of a normalizer, derived from its formula.

A weight overflows where it takes the exponential of an unbounded score. The form is derived
from the formula's tree, part by part:

* ``sigmoid(z)`` and ``softplus(z)`` of a score are written in their branch forms —
  1/(1 + e^{−z}) for z ≥ 0 and e^{z}/(1 + e^{z}) otherwise; z + log(1 + e^{−z}) for z ≥ 0 and
  log(1 + e^{z}) otherwise — so that in each branch the exponent is ≤ 0;
* a ratio N/D whose denominator holds an exponential of a score is multiplied above and
  below by e^{−m}. The factor goes into each exponential (e^{u}·e^{−m} = e^{u − m}), onto each
  term without one (k·e^{−m}: its exponent is 0), through constant factors, sums and
  reductions over the row, and — positive homogeneity, f(a)·c = f(a·c) for c > 0 — into relu,
  abs, max and min. With m the largest of those exponents no exponent is positive;
* a formula with no exponential of a score is its own overflow-free form (tanh and relu are
  computed as they are).

Anything else — an exponential of a score outside every ratio, two exponentials multiplied in
a ratio, an exponential under log, sqrt or tanh or in a product over the row — gets no form
here, and the reason says which part. Nothing derived here is assumed to equal the
definition: :func:`derive.normalizers.stable.stable_property` proves each rewritten part equal
to the part it replaces.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from derive.model.attention import M, X, i, j, n, t
from derive.model.reductions import RowMax
from derive.normalizers.formula import Y, _Symbolic
from derive.language.parser import Binary, Call, Name, Unary, walk

__all__ = ["MSHIFT", "Overflow", "derive_overflow_free"]

MSHIFT = sp.Symbol("m", real=True)
_SCORES = ("x_j", "x_t", "y_j", "y_t")
_HOMOGENEOUS = ("relu", "abs", "max", "min")  # f(a)·c = f(a·c) for every c > 0
_SHIFTED_REDUCTIONS = ("sum_t", "max_t", "min_t")


def _branch_sigmoid(z):
    return sp.Piecewise((1 / (1 + sp.exp(-z)), z >= 0), (sp.exp(z) / (1 + sp.exp(z)), True))


def _branch_softplus(z):
    return sp.Piecewise((z + sp.log(1 + sp.exp(-z)), z >= 0), (sp.log(1 + sp.exp(z)), True))


_BRANCHES = {"sigmoid": (_branch_sigmoid, r"\sigma"), "softplus": (_branch_softplus, r"\operatorname{softplus}")}


@dataclass
class Overflow:
    """The derived form. ``form`` is None when none was derived (``reason`` says why)."""

    form: sp.Expr | None
    shifts: dict = field(default_factory=dict)  # shift symbol → its value, the largest exponent it meets
    shift_text: list = field(default_factory=list)  # "$m = \max(0, \max_t x_t)$", one per shift
    branches: list = field(default_factory=list)  # the functions written in branch form, as LaTeX
    # (part of the definition, its rewriting, the shift symbol of a ratio or None): to be proved equal
    rewrites: list = field(default_factory=list)
    reason: str = ""

    @property
    def own(self) -> bool:
        """The definition is its own overflow-free form (no exponential of a score in it)."""
        return self.form is not None and not self.rewrites

    def text(self) -> str:
        """How the exponents are kept ≤ 0, for the table and the steps."""
        parts = list(self.shift_text)
        if self.branches:
            parts.append("$" + "$, $".join(self.branches) + "$ in branch form")
        return "; ".join(parts)


class _NoForm(Exception):
    """This part of the formula has no overflow-free form derived here (the message says why)."""


def _mentions(node, names) -> bool:
    return any(isinstance(nd, Name) and nd.id in names for nd in walk(node))


def _has_exp(node) -> bool:
    return any(isinstance(nd, Call) and nd.func == "exp" for nd in walk(node))


def _exp_of_score(node) -> bool:
    return any(isinstance(nd, Call) and nd.func == "exp" and _mentions(nd.args[0], _SCORES) for nd in walk(node))


class _Form(_Symbolic):
    """The symbolic weight of :class:`~derive.normalizers.formula._Symbolic`, with the rewrites above."""

    def __init__(self, score, score2, key, params):
        super().__init__(score, score2, key, params)
        self.out = Overflow(None)
        self.range = None  # (lo, hi, skip) of the reduction being scaled: the keys its exponents are of
        self.problems: list[str] = []

    def plain(self, node) -> sp.Expr:
        """The part as the definition has it."""
        p = _Symbolic(self.score, self.score2, self.key, self.params)
        p.var = self.var
        return p.run(node)

    def run(self, node) -> sp.Expr:
        if isinstance(node, Binary) and node.op == "/" and _exp_of_score(node.right):
            return self.ratio(node)
        return super().run(node)

    def call(self, node: Call) -> sp.Expr:
        fn = node.func
        if fn in _BRANCHES and _mentions(node.args[0], _SCORES):
            make, shown = _BRANCHES[fn]
            z = self.run(node.args[0])
            new = make(z)
            self.out.rewrites.append((self.plain(node), new, None))
            if shown not in self.out.branches:
                self.out.branches.append(shown)
            return new
        if fn == "exp" and _mentions(node.args[0], _SCORES):
            self.problems.append("an exponential of a score outside every ratio whose denominator has one (no "
                                 "factor e^{−m} can be taken out of it)")
        return super().call(node)

    def ratio(self, node: Binary) -> sp.Expr:
        m = MSHIFT if not self.out.shifts else sp.Symbol(f"m_{len(self.out.shifts) + 1}", real=True)
        exponents: list = []
        try:
            new = self.scaled(node.left, m, exponents) / self.scaled(node.right, m, exponents)
        except _NoForm as exc:
            self.problems.append(f"{exc}, in a ratio whose denominator has an exponential of a score")
            return super().run(node)
        self.out.shifts[m] = _largest(exponents)
        largest = _largest_tex(exponents)
        # A long maximum (an exponent with a function of the score in it) is said in words, so a
        # table cell or a line can break; the displayed form shows the exponents themselves.
        self.out.shift_text.append(f"${sp.latex(m)} = {largest}$" if len(largest) <= LONG
                                   else f"${sp.latex(m)}$ = the largest exponent of the row")
        self.out.rewrites.append((self.plain(node), new, m))
        return new

    def scaled(self, node, m, exponents: list) -> sp.Expr:
        """``node``·e^{−m}, the factor taken into every exponential; each exponent goes to ``exponents``."""
        if not _has_exp(node):  # a term without exponential: its exponent is 0
            exponents.append((sp.S.Zero, None))
            return self.run(node) * sp.exp(-m)
        if isinstance(node, Unary):
            return -self.scaled(node.operand, m, exponents)
        if isinstance(node, Binary):
            return self._scaled_binary(node, m, exponents)
        fn = node.func
        if fn == "exp":
            if _has_exp(node.args[0]):
                raise _NoForm("an exponential of an exponential")
            u = self.run(node.args[0])
            exponents.append((u, self.range if self.var is not None else None))
            return sp.exp(u - m)
        if fn in _HOMOGENEOUS:
            args = [self.scaled(a, m, exponents) for a in node.args]
            if fn == "relu":
                return sp.Max(0, args[0])
            return sp.Abs(args[0]) if fn == "abs" else (sp.Max if fn == "max" else sp.Min)(*args)
        if fn in _SHIFTED_REDUCTIONS:
            _, lo, hi, skip = self.limits(node.args)
            self.range = (lo, hi, skip)
            try:
                return self.reduction(fn, node.args, lambda body: self.scaled(body, m, exponents))
            finally:
                self.range = None
        if fn == "prod_t":
            raise _NoForm("a product over the row of terms with exponentials (the factor e^{−m} would be taken "
                          "once per key)")
        raise _NoForm(f"an exponential under {fn}")

    def _scaled_binary(self, node: Binary, m, exponents) -> sp.Expr:
        op, left, right = node.op, node.left, node.right
        if op in "+-":
            a, b = self.scaled(left, m, exponents), self.scaled(right, m, exponents)
            return a + b if op == "+" else a - b
        if op == "*":
            if _has_exp(left) and _has_exp(right):
                raise _NoForm("a product of two terms with exponentials (the factor e^{−m} would be taken twice)")
            if _has_exp(right):
                return self.run(left) * self.scaled(right, m, exponents)
            return self.scaled(left, m, exponents) * self.run(right)
        if op == "/":
            if _has_exp(right):
                raise _NoForm("a ratio of exponentials inside the ratio")
            return self.scaled(left, m, exponents) / self.run(right)
        raise _NoForm("a power of an exponential")


def _largest(exponents) -> sp.Expr:
    """m: the largest exponent, over the allowed keys of its reduction for one inside a
    reduction (the keys the reduction takes: an exponent of no key it takes cannot make the
    ratio 0/0 by underflow)."""
    items = []
    for u, inside in _distinct(exponents):
        v = RowMax(u, t, *inside) if inside else u
        if v not in items:
            items.append(v)
    return items[0] if len(items) == 1 else sp.Max(*items)


def _distinct(exponents) -> list:
    """The exponents, each once; one of key j is dropped when the same exponent of key t is in
    a reduction over the whole row (j is one of the row's allowed keys, so that maximum covers it)."""
    out = []
    row = {u for u, inside in exponents if inside == (1, n, 0)}
    for u, inside in exponents:
        if (u, inside) in out or (not inside and j in u.free_symbols and u.xreplace({j: t}) in row):
            continue
        out.append((u, inside))
    return out


LONG = 40  # characters of LaTeX beyond which the largest exponent is named in words


def _largest_tex(exponents) -> str:
    from derive.render.latex import tex

    r = sp.Symbol("r", integer=True, positive=True)
    plain = {sp.Sum(M[i, r], (r, 1, n)): sp.Symbol("N")}

    def shown(u) -> str:
        u = u.xreplace(plain)
        u = u.replace(lambda e: isinstance(e, sp.Indexed) and e.base.name in ("x", "y") and e.indices[0] == i,
                      lambda e: sp.Symbol(f"{e.base.name}_{sp.latex(e.indices[1])}"))
        return tex(u)

    items = []
    for u, inside in _distinct(exponents):
        s = shown(u)
        if inside:
            s = r"\max_t " + (s if len(s.split()) == 1 and "+" not in s else rf"\left({s}\right)")
        items.append(s)
    return items[0] if len(items) == 1 else r"\max(" + ", ".join(items) + ")"


def derive_overflow_free(entry, params: dict, score=None) -> Overflow:
    """The overflow-free form of ``entry``'s weight of key j (parameters ``params``)."""
    f = entry.definition_of
    score = score or (lambda k: X[i, k])
    values = {p: params[p] if p in params else f.defaults.get(p, sp.Symbol(p, real=True)) for p in f.params}
    walker = _Form(score, lambda k: Y[i, k], j, values)
    form = M[i, j] * walker.run(f.node)
    out = walker.out
    if walker.problems:
        return Overflow(None, reason="no overflow-free form derived: " + "; ".join(dict.fromkeys(walker.problems)))
    out.form = form
    return out

