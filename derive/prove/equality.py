"""Prove or refute ``lhs = rhs`` for symbolic d, n and masks.

A proof is a chain of SymPy rewrites that brings ``lhs − rhs`` to 0: expanding every
⟨·,·⟩ by bilinearity, exp(a + b) = exp(a)·exp(b), taking a positive factor out of max, min and
abs, merging sums over the same range,
writing hyperbolic functions with exponentials and cancelling, writing every sum over one
index (a bound index renamed, its constant factors taken out: Σ_u p_u v_u and Σ_t p_t v_t are one
sum), and finally ``simplify``
(only on expressions of at most ``SIMPLIFY_OPS`` operations: work is bounded by size, so
the verdict does not depend on the machine; the time bound is a last guard). If none
reaches 0, a certified numeric counterexample refutes the claim; with neither, the verdict
is *undecided*. A numeric agreement never yields *proved*.
"""

from __future__ import annotations

import sympy as sp

from derive.crosscheck.witness import find_witness
from derive.model.reductions import RowExtremum
from derive.model.vectors import Dot, expand_dot
from derive.prove.memo import memoized
from derive.prove.sums import canon_sums
from derive.timeout import TimeLimit, time_limit
from derive.prove.sum_merge import merge_sums
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED, Verdict
from derive.routes import sympy_gave_up
from derive.settings import DEFAULT, Settings

__all__ = ["normal_form", "prove_equal", "prove_zero"]


@memoized
def _expand(e: sp.Expr) -> sp.Expr:
    """⟨·,·⟩ expanded by bilinearity, then products, powers and exp(a + b). Remembered (by the exact
    tree): the same summands recur in the sums of a document's proofs."""
    return sp.expand(expand_dot(e), power_exp=True)


def _sums(e: sp.Expr) -> sp.Expr:
    e = e.replace(lambda x: isinstance(x, sp.Sum), lambda x: sp.Sum(_expand(x.function), *x.limits))
    return merge_sums(sp.expand(e, power_exp=True))


def _exponentials(e: sp.Expr) -> sp.Expr:
    """tanh, sinh, cosh written with exp; every exp argument, then the whole, cancelled as a
    rational function (of exponentials, sums and ⟨·,·⟩ as opaque generators)."""
    e = e.rewrite(sp.tanh, sp.exp).rewrite(sp.sinh, sp.exp).rewrite(sp.cosh, sp.exp)
    e = sp.powsimp(e, combine="exp")
    e = e.replace(lambda a: isinstance(a, sp.exp), lambda a: sp.exp(_exponent(a.args[0])))
    return sp.cancel(sp.expand(e, power_exp=True))


@memoized
def _exponent(a: sp.Expr) -> sp.Expr:
    """An exponent expanded and cancelled; the same exponents recur across a document's proofs."""
    return sp.cancel(sp.expand(a, power_exp=True))


def _one_index(e: sp.Expr) -> sp.Expr:
    """Every Σ over the index t, its factors free of t taken out (:func:`~derive.prove.sums.canon_sums`),
    then expanded and merged as in :func:`_sums`; ``e`` itself when there was nothing to rewrite."""
    out = canon_sums(e)
    return e if out == e else _sums(out)


def _homogeneous(e: sp.Expr) -> sp.Expr:
    """A positive factor common to the arguments of max, min or abs taken out of it
    (positive homogeneity: f(c·a, c·b) = c·f(a, b) for c > 0), and out of a row's max_t or min_t
    with a term free of t (max_t(x_t + c) = c + max_t(x_t)), then expanded again."""

    def out(f):
        args = [sp.factor_terms(a) for a in f.args]
        common = None
        for a in args:
            if a != 0:
                mine = {x for x in sp.Mul.make_args(a) if x.is_positive}
                common = mine if common is None else common & mine
        if not common:
            return f
        c = sp.Mul(*common)
        return c * f.func(*[a / c for a in args])

    def row(r):  # max_t / min_t of a row: a term free of t added, a positive factor free of t taken out
        body, var = sp.expand(r.body), r.var
        add = sp.Add(*[a for a in sp.Add.make_args(body) if var not in a.free_symbols])
        if add != 0:
            return add + r.func(body - add, *r.args[1:])
        c = sp.Mul(*[f for f in sp.Mul.make_args(sp.factor_terms(body)) if var not in f.free_symbols and f.is_positive])
        return c * r.func(sp.factor_terms(body) / c, *r.args[1:]) if c != 1 else r

    if not e.has(sp.Max, sp.Min, sp.Abs, RowExtremum):
        return e
    pulled = e.replace(lambda z: isinstance(z, (sp.Max, sp.Min, sp.Abs)), out)
    pulled = pulled.replace(lambda z: isinstance(z, RowExtremum), row)
    return e if pulled == e else _expand(pulled)


def _simplify(e: sp.Expr) -> sp.Expr:
    """``sympy.simplify(e)``, unless cancelling common factors (which simplify does too, among its
    rewrites; the pass is named after it) already gives 0: then 0, without the other rewrites.
    ``cancel`` treats every non-rational part (exp, Sum, ⟨·,·⟩) as an independent symbol, so its 0
    is a proof."""
    try:
        if sp.cancel(e) == 0:
            return sp.S.Zero
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise  # (cancel cannot take every expression: simplify decides)
    return sp.simplify(e)


def _peeled(e: sp.Expr) -> sp.Expr:
    """A key's mask factor put to 1 in what it multiplies (M·R(M) = M·R(1) and M² = M, M being 0 or 1:
    e^{x_j}/(e^{x_j}(1 − M_j) + Σ_t M_t e^{x_t}) is softmax where key j is allowed), a sum over
    1..b with one over 1..b − k of the same terms written as the shorter plus its last k terms
    (Σ_{t≤j} − Σ_{t<j} = the term at j), every sum over one index, then simplified. Each step is an
    equality. Where there is nothing to put to 1 or peel, ``e`` itself: it is the simplified form
    of the pass before, and a second ``simplify`` of it would only spend the time limit."""
    from derive.model.attention import M

    def put_one(x, masks, bound):
        """``x`` with each of ``masks`` put to 1, except inside a sum or product that binds its index."""
        if isinstance(x, (sp.Sum, sp.Product)) and {v for v, *_ in x.limits} & bound:
            return x
        if x in masks:
            return sp.S.One
        if not x.args:
            return x
        args = [put_one(a, masks, bound) for a in x.args]
        return x.func(*args) if any(a is not b for a, b in zip(args, x.args)) else x

    def one(m: sp.Mul):
        masks = {f for f in m.args if isinstance(f, sp.Indexed) and f.base == M}
        if not masks:
            return m
        bound = {s for f in masks for s in f.free_symbols}
        rest = put_one(sp.Mul(*[f for f in m.args if f not in masks]), masks, bound)
        return sp.Mul(*masks) * rest

    start = e
    e = e.replace(lambda z: isinstance(z, sp.Mul), one)
    sums = [x for x in e.atoms(sp.Sum) if len(x.limits) == 1]
    put = {}
    for a in sums:
        for b in sums:
            (ta, la, ha), (tb, lb, hb) = a.limits[0], b.limits[0]
            k = sp.simplify(ha - hb)
            if a is b or ta != tb or la != lb or a.function != b.function or not (k.is_Integer and 0 < k <= 3):
                continue
            put[a] = b + sp.Add(*[a.function.xreplace({ta: ha - m}) for m in range(int(k))])
    squared = lambda z: (z.is_Pow and isinstance(z.base, sp.Indexed) and z.base.base == M  # noqa: E731
                         and z.exp.is_Integer and z.exp > 0)
    if e == start and not put and not e.find(squared):
        return start  # nothing put to 1 or peeled: simplify has had this form already
    e = sp.expand(e.xreplace(put))
    e = e.replace(squared, lambda z: z.base)  # M² = M
    return _simplify(canon_sums(e))


_EXPANDING = r"expanding $\langle \cdot, \cdot \rangle$ by bilinearity and $\exp(a + b) = \exp(a) \exp(b)$"
_PASSES = (
    (_EXPANDING, _expand),
    ("positive factors taken out of max, min and abs", _homogeneous),
    ("merging sums over the same range", _sums),
    ("exponentials expanded (tanh, sinh, cosh written with exp) and cancelled", _exponentials),
    ("sums written over one index (a bound index renamed, factors free of it taken out)", _one_index),
    ("simplification (common factors cancelled)", _simplify),
    ("the allowed key's mask factor put to 1, sums one term apart peeled, simplified", _peeled),
)


# Side passes start from the expression itself and pass nothing on (their cancelled form is
# a worse start for simplify than the chain's).
_SIDE = (_exponentials, _one_index)
SIMPLIFY_OPS = 600  # a deterministic bound: larger expressions are not handed to sp.simplify


def _label(how: str, expr: sp.Expr) -> str:
    """The pass's label as it applies to ``expr``: a rule is named only when ``expr`` has what it
    rewrites (tanh, ⟨·,·⟩, exp)."""
    if how.startswith("exponentials expanded") and not expr.has(sp.exp, sp.tanh, sp.sinh, sp.cosh):
        return "cancelled over a common denominator"
    if how.startswith("exponentials expanded") and not expr.has(sp.tanh, sp.sinh, sp.cosh):
        return "exponentials expanded and cancelled"
    if how == _EXPANDING:
        dots, exps = expr.has(Dot), expr.has(sp.exp)
        if dots and not exps:
            return r"expanding $\langle \cdot, \cdot \rangle$ by bilinearity"
        if exps and not dots:
            return r"expanding $\exp(a + b) = \exp(a) \exp(b)$"
        if not dots and not exps:
            return "expanding products and powers"
    return how


@memoized
def _evaluated(expr: sp.Basic) -> sp.Basic:
    """``expr`` rebuilt with SymPy's automatic evaluation (x·x⁻¹ = 1, like terms collected), no rewriting
    (remembered per subtree: the two sides of a chain's links share theirs)."""
    if not expr.args or isinstance(expr, (sp.Indexed, sp.Symbol)):
        return expr
    return expr.func(*[_evaluated(a) for a in expr.args])


_FORMS: dict = {}


def normal_form(expr: sp.Expr, cfg: Settings = DEFAULT) -> tuple[sp.Expr, str]:
    """``expr`` rewritten by the passes above, stopping at 0; returns (form, last pass).

    Remembered per expression: a repeated proof is not redone, whatever the settings of the
    caller (the passes read only the time limit, and a time limit hit raises and stores
    nothing, so a stored form is the one the passes give whenever they finish)."""
    try:
        return _FORMS[expr]
    except KeyError:
        pass
    except TypeError:  # an unhashable expression
        return _normal_form(expr, cfg)
    out = _FORMS[expr] = _normal_form(expr, cfg)
    return out


def _normal_form(expr: sp.Expr, cfg: Settings) -> tuple[sp.Expr, str]:
    if expr == 0:
        return expr, "identical once notation is unfolded"
    try:
        evaluated = _evaluated(expr)
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise
        evaluated = expr  # a class that cannot be rebuilt from its args: the passes decide
    if evaluated == 0:  # a step written unevaluated, e.g. e^{c} X / (e^{c} Y) for X / Y
        return evaluated, "common factors cancelled"
    form = expr
    with time_limit(cfg.time_limit):
        for how, rewrite in _PASSES:
            if rewrite in (_simplify, _peeled) and sp.count_ops(form) > SIMPLIFY_OPS:
                return form, f"beyond the simplification budget ({SIMPLIFY_OPS} operations)"
            try:
                out = rewrite(expr if rewrite in _SIDE else form)
            except TimeLimit:
                raise
            except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
                if not sympy_gave_up(exc):
                    raise
                continue  # a pass SymPy cannot take proves nothing; try the next
            if out == 0:
                return out, _label(how, expr)
            if rewrite not in _SIDE:
                form = out
    return form, "no rewrite reached 0"


def prove_zero(expr: sp.Expr, cfg: Settings = DEFAULT) -> tuple[bool, str, sp.Expr | None]:
    """(True, method, 0) when ``expr`` is identically 0; (False, why, residue) otherwise."""
    try:
        form, how = normal_form(expr, cfg)
    except TimeLimit as exc:
        return False, str(exc), None
    return (form == 0), how, form


def prove_equal(lhs: sp.Expr, rhs: sp.Expr, *, cfg: Settings = DEFAULT, fixed: dict | None = None,
                search: bool = True) -> Verdict:
    """Verdict on ``lhs = rhs`` for all values of every symbol in them."""
    ok, how, residue = prove_zero(lhs - rhs, cfg)
    if ok:
        return Verdict(PROVED, "the difference reduces to 0", method=how)
    witness = find_witness(lhs, rhs, fixed=fixed, cfg=cfg) if search else None
    if witness is not None:
        shown = sp.sstr(residue) if residue is not None else "not reduced"
        return Verdict(REFUTED, f"the difference does not vanish: {shown}", method="counterexample",
                       witness=witness)
    why = how if residue is None else (
        f"the difference did not reduce to 0 ({sp.sstr(residue)}) and no counterexample was found")
    return Verdict(UNDECIDED, why)
