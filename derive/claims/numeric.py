"""Numbers for claims: concrete stand-ins for opaque functions, masks, witnesses, cross-checks.

A declared function is opaque to the proofs. To evaluate, each one gets a concrete
member of a family with drawn coefficients — scalar
``f(x) = f.a0 + f.a1·x + f.a2·x² + f.a3·x³ + f.a4·exp(x)`` (a traced table of more indices,
``f(x, y1, …)``, adds ``f.b1·exp(y1) + …``), vector
``F(x) = F.a·x + ⟨x, x⟩·F.c + exp(F.e·⟨x, F.b⟩)·F.b`` — which is sound for counterexamples (a claim
"for all f" fails if it fails for one f) and fine as evidence for cross-checks.
The mask of the spec is made concrete (``none`` → all keys, ``causal`` → t ≤ i) so a
counterexample is an instance of the variant as specified.
"""

from __future__ import annotations

import math

import sympy as sp
from sympy.core.function import AppliedUndef

from derive.timeout import TimeLimit, time_limit
from derive.crosscheck.check import cross_check, same_computation
from derive.crosscheck.evaluate import evaluate
from derive.crosscheck.witness import rounded, find_witness
from derive.model.attention import M, j
from derive.model.vectors import Dot, VectorFunction, VectorSymbol
from derive.errors import Unsupported
from derive.routes import NO_VALUE
from derive.settings import Settings

__all__ = ["check_numeric", "same_sides", "concrete_mask", "find_certified", "instantiate", "interpretations", "mask_indicator",
           "row_values"]


def _scalar_fn(e: AppliedUndef) -> sp.Expr:
    name = type(e).__name__
    a0, a1, a2, a3, a4 = (sp.Symbol(f"{name}.a{k}", real=True) for k in range(5))
    x = e.args[0]
    more = [sp.Symbol(f"{name}.b{k}", real=True) * sp.exp(y) for k, y in enumerate(e.args[1:], 1)]
    return a0 + a1 * x + a2 * x**2 + a3 * x**3 + a4 * sp.exp(x) + sp.Add(*more)


def _vector_fn(e: VectorFunction) -> sp.Expr:
    name = type(e).__name__
    a, e1 = sp.Symbol(f"{name}.a", real=True), sp.Symbol(f"{name}.e", real=True)
    b, c = VectorSymbol(f"{name}.b"), VectorSymbol(f"{name}.c")
    x = e.args[0]
    return a * x + Dot(x, x) * c + sp.exp(e1 * Dot(x, b)) * b


def instantiate(expr: sp.Expr) -> sp.Expr:
    """``expr`` with every opaque function replaced by its concrete family member."""
    expr = expr.replace(lambda e: isinstance(e, VectorFunction), _vector_fn)
    return expr.replace(lambda e: isinstance(e, AppliedUndef), _scalar_fn)


def interpretations(expr: sp.Expr) -> dict[str, str]:
    out = {}
    for e in expr.atoms(VectorFunction):
        nm = type(e).__name__
        out[nm] = f"{nm}(x) = {nm}.a·x + ⟨x, x⟩·{nm}.c + exp({nm}.e·⟨x, {nm}.b⟩)·{nm}.b"
    for e in expr.atoms(AppliedUndef):
        nm = type(e).__name__
        if len(e.args) == 1:
            out[nm] = f"{nm}(x) = {nm}.a0 + {nm}.a1·x + {nm}.a2·x² + {nm}.a3·x³ + {nm}.a4·exp(x)"
            continue
        ys = [f"y{k}" for k in range(1, len(e.args))]
        out[nm] = (f"{nm}(x, {', '.join(ys)}) = {nm}.a0 + {nm}.a1·x + {nm}.a2·x² + {nm}.a3·x³ + {nm}.a4·exp(x)"
                   + "".join(f" + {nm}.b{k}·exp({y})" for k, y in enumerate(ys, 1)))
    return dict(sorted(out.items()))


def concrete_mask(expr: sp.Expr, mask: str, data: dict | None = None, head: int = 0) -> sp.Expr:
    """``expr`` with M[i, t] as the mask's indicator; captured tables on their entries (``data``,
    else the mask's own), an opaque document id table as a label vector for the searcher.

    Kept per expression and mask (without captured tables): the atlas's variants share
    their weights' parts, and the rewrite is the same whichever variant asks."""
    cond = getattr(mask, "condition", False)  # a mask as data (derive.model.masks.Mask)
    if data or getattr(mask, "data", None):
        return _concrete_mask(expr, mask, cond, data, head)
    key = (expr, str(mask), cond, head)
    if key not in _CONCRETE:
        _CONCRETE[key] = _concrete_mask(expr, mask, cond, data, head)
    return _CONCRETE[key]


_CONCRETE: dict = {}  # (expression, mask's name and condition, head) → concrete_mask's result


def _concrete_mask(expr: sp.Expr, mask: str, cond, data: dict | None, head: int) -> sp.Expr:
    def repl(e):
        row, col = e.indices
        if cond is not False:
            from derive.model.masks import concrete

            return concrete(mask, row, col, data, head)
        return sp.S.One if mask == "none" else sp.Piecewise((1, sp.Le(col, row)), (0, True))

    def only_allowed(e):  # M[i, t]·f(t) ↦ f(t) where t is allowed, else 0: f is never evaluated at a masked key
        (m,), rest = [a for a in e.args if _is_mask(a)][:1], [a for a in e.args if not _is_mask(a)]
        rest += [a for a in e.args if _is_mask(a)][1:]
        ind = repl(m)
        if ind == 1 or ind == 0:
            return ind * sp.Mul(*rest)
        return sp.Piecewise((sp.Mul(*rest), sp.Eq(ind, 1, evaluate=False)), (0, True))

    expr = expr.replace(lambda e: isinstance(e, sp.Mul) and any(_is_mask(a) for a in e.args), only_allowed)
    return expr.replace(_is_mask, repl)


def _is_mask(e) -> bool:
    return isinstance(e, sp.Indexed) and e.base == M


def mask_indicator(mask, data: dict | None = None) -> sp.Expr | None:
    """The mask's indicator at (i, j) as the searcher evaluates it; None for every key allowed."""
    from derive.model.attention import i

    if mask == "none" and getattr(mask, "condition", None) is None:
        return None
    return concrete_mask(M[i, j], mask, data)


def _prepare(expr, mask, head=0):
    return concrete_mask(instantiate(ids_as_labels(sp.sympify(expr), mask)), mask, head=head)


def ids_as_labels(expr: sp.Expr, mask) -> sp.Expr:
    """``expr`` with the document ids of a ``document(IDS)`` mask, wherever IDS(x) appears (the
    score may read them too), as the label vector the mask's indicator reads: one stand-in for
    IDS, so the mask and the score see the same ids (a claim holds for every table of ids)."""
    from derive.model.masks import labelled

    cond = getattr(mask, "condition", None)
    if not isinstance(cond, sp.Eq) or getattr(mask, "data", None):
        return expr
    names = {type(a).__name__ for a in cond.args if isinstance(a, AppliedUndef) and len(a.args) == 1}
    if not names:
        return expr
    return expr.replace(lambda e: isinstance(e, AppliedUndef) and type(e).__name__ in names,
                        lambda e: labelled(e))


def find_certified(lhs, rhs, mask: str, cfg: Settings, *, fixed: dict | None = None,
                   guards=(), head: int = 0) -> dict | None:
    """A small certified instance of the variant (its mask, its functions) with lhs ≠ rhs,
    inside the domain ``guards`` of the spec as written; or None. ``head``: the head whose real
    tables a traced mask reads (the caller puts the same head's tables into lhs and rhs)."""
    a, b = _prepare(lhs, mask, head), _prepare(rhs, mask, head)
    from derive.model.attention import LabelBase

    used = {type(e).__name__ for e in sp.Tuple(ids_as_labels(sp.sympify(lhs), mask),
                                               ids_as_labels(sp.sympify(rhs), mask)).atoms(AppliedUndef)}
    if any(x.base.name in used for x in sp.Tuple(a, b).atoms(sp.Indexed) if isinstance(x.base, LabelBase)):
        return None  # one function both as document ids and in the scores: two stand-ins would disagree
    wit = find_witness(a, b, fixed=fixed, cfg=cfg, guards=[(kind, instantiate(g)) for kind, g in guards],
                       allowed=mask_indicator(mask) if guards else None)
    if wit is not None:
        wit["_exprs"] = (a, b)
    return wit


def row_values(witness: dict, which: int, mask: str) -> list | None:
    """The weights of the witness row for every key (lhs: which=0, rhs: 1), rounded for reading."""
    expr = witness["_exprs"][which]
    if j not in expr.free_symbols:
        return None
    inst, env = witness["_instance"], dict(witness["_env"])
    out = []
    try:
        for key in range(1, inst.n + 1):
            env[j] = key
            out.append(rounded(evaluate(expr, inst, "arb", env, prec=128)))
    except NO_VALUE:  # a weight with no value here: the row is shown for reading only
        return None
    flat = [v for x in out for v in (x if isinstance(x, list) else [x])]
    return out if all(isinstance(v, float) and math.isfinite(v) for v in flat) else None


def same_sides(lhs, rhs) -> bool:
    """Whether the two sides :func:`check_numeric` would compare are one expression: a
    numeric comparison of them could not fail (see :func:`~derive.crosscheck.check.same_computation`)."""
    try:
        return same_computation(instantiate(lhs), instantiate(rhs))
    except Unsupported:  # no instance of the sides: check_numeric says so
        return False


def check_numeric(name: str, lhs, rhs, cfg: Settings) -> dict | None:
    """Cross-check figures for a proved identity (random masks, d and n up to 8); ``{"verdict":
    "not run", "reason"}`` when it cannot be evidence (both sides one expression: the comparison
    could not fail, and cross_check refuses it) or hits the time limit; None when a term has no
    numeric evaluation."""
    if same_sides(lhs, rhs):  # e.g. x_t − x_j, whose shift by c cancels as it is built
        return {"verdict": "not run", "reason": "both sides are one expression, so a numeric comparison could "
                                                "not fail"}
    small = cfg.merge(max_d=min(cfg.max_d, 8), max_n=min(cfg.max_n, 8))
    try:
        with time_limit(cfg.time_limit):
            res = cross_check(name, instantiate(lhs), instantiate(rhs), small)
    except TimeLimit:
        return {"verdict": "not run", "reason": "stopped by the time limit"}
    except Unsupported:  # a term the evaluator does not know: no numeric evaluation (the step says so)
        return None
    out = res.as_json()
    out.pop("kind", None)
    out.pop("name", None)
    return out
