"""The softmax family, recognised from a normalizer's formula.

A normalizer is of the softmax family when its weight is

    p_j = M_j e^{x_j} / (E + Σ_t M_t e^{x_t})

with E free of the scores, E = 0 or E > 0 for every value of the parameters (their declared
domain): E = 0 is softmax, E = e^σ an extra logit σ (softmax₁ and the
zero token: σ = 0; a sink: σ = s; a learned key: σ = s*). Such a normalizer has the online,
split and backward kernel forms of :mod:`derive.kernels.forms` with that σ; its extra token
takes the weight E / (E + Σ_t M_t e^{x_t}); on a row with no allowed key it is defined (every
weight 0) exactly when E > 0. For any other normalizer :func:`recognise` says why no online
form is derived. Nothing here is written per normalizer: it reads the symbolic weight.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from derive.model.attention import M, X, i, j, n, row_sum, t
from derive.model.reductions import RowExtremum
from derive.prove.sums import canon_sums

__all__ = ["Family", "KernelFacts", "extra_weight", "kernel_form", "kernel_sigma", "logit_slope", "logit_value",
           "recognise", "recognise_formula"]


@dataclass(frozen=True)
class Family:
    extra: sp.Expr  # E, in the entry's parameters (plain real symbols named as the parameters)
    logit: sp.Expr | None  # σ = log E, None when E = 0 (no extra logit)


def _row(body_of) -> sp.Expr:
    return sp.Sum(M[i, t] * body_of(t), (t, 1, n))


def recognise(entry) -> tuple[Family | None, str]:
    """(the family, "") or (None, why there is no online form) of a registry entry."""
    return _recognise((entry.name, entry.formula), entry.params, entry.symbols(), entry.weight,
                      getattr(entry, "definition_of", None))


def recognise_formula(f) -> tuple[Family | None, str]:
    """:func:`recognise` for a compiled formula (:class:`derive.normalizers.formula.Formula`), its
    parameters over their declared domain: the same recogniser, whatever holds the formula."""
    symbols = {p: f.defaults.get(p, sp.Symbol(p, real=True)) for p in f.params}
    return _recognise(("", f.text), f.params, symbols, lambda score, key, **p: f.weight(score, key, None, **p), f)


def _recognise(name: tuple, params: tuple, symbols: dict, weight, formula=None) -> tuple[Family | None, str]:
    """``weight(score, key, **params)``: the symbolic weight M_key·w of the normalizer ``name`` (its
    registry name, or "", and its formula) with ``params`` (each over its domain, ``symbols``). Its
    weight divided by M_j, r, is of the family when e^{x_j}/r = E + Σ_t M_t e^{x_t} with E free of
    the row (X, M, j, t) and E = 0 or E > 0 for every value of the domain, and its compiled
    ``formula`` (when there is one) is total (:meth:`~derive.normalizers.formula.Formula.total`):
    the symbolic weight is SymPy's reading of the formula, which can drop a subterm that has no
    value at some rows (0·log(x_j)), so without totality a member could be given a kernel form
    where its weight has no value."""
    key = (name, tuple(params), tuple(sorted(symbols.items(), key=lambda kv: kv[0])))
    if key in _SEEN:
        return _SEEN[key]
    plain = {p: sp.Symbol(p, real=True) for p in params}
    w = weight(lambda k: X[i, k], j, **plain)
    r = sp.expand(w / M[i, j], mul=False, multinomial=False, power_exp=False, log=False, deep=False)
    out: tuple[Family | None, str]
    den = sp.expand(canon_sums(sp.exp(X[i, j]) / r))
    extra = sp.expand(den - _row(lambda k: sp.exp(X[i, k])))
    if not extra.has(X, M, j, t) and extra != 0 and not _positive(params, symbols, extra):
        out = (None, _not_a_logit(extra))
    elif not extra.has(X, M, j, t) and formula is not None and not formula.total():
        out = (None, _NOT_TOTAL)
    elif not extra.has(X, M, j, t):
        logit = None if extra == 0 else sp.expand_log(sp.log(extra), force=False)
        out = (Family(extra, logit), "")
    else:
        # the reason shows the parameters as the documents write them (the soft cap as c_cap, not c)
        shown = {sp.Symbol(p, real=True): d for p, d in symbols.items() if isinstance(d, sp.Symbol)}
        out = (None, _why_not(r.xreplace(shown)))
    _SEEN[key] = out
    return out


_SEEN: dict = {}
_NOT_TOTAL = ("its weight simplifies to $e^{x_j}/(E + \\sum_t e^{x_t})$ with $E$ free of the scores, but its formula "
              "has a log, sqrt, division or max_t/min_t not certainly defined at every key, which the simplification "
              "may drop; no online, split or backward form is derived where the weight may have no value")


def _positive(params: tuple, symbols: dict, extra: sp.Expr) -> bool:
    """E > 0 for every parameter value of the domain (so σ = log E is a real logit)."""
    return sp.sympify(extra.xreplace({sp.Symbol(p, real=True): symbols[p] for p in params})).is_positive is True


def _not_a_logit(extra: sp.Expr) -> str:
    from derive.render.latex import tex

    return (f"its weight is $e^{{x_j}}/(E + \\sum_t e^{{x_t}})$ with $E = {tex(extra)}$ free of the scores, but $E$ "
            "is not positive for every value of the parameters, so it is no extra logit $\\sigma = \\log E$ (a row's "
            "running state (m, ℓ, acc) would take the log of a number ≤ 0); no online, split or backward form is "
            "derived")


def _why_not(r: sp.Expr) -> str:
    from derive.render.latex import tex

    if not r.has(sp.Sum, sp.Product, RowExtremum) and {a for a in r.atoms(sp.Indexed) if a.base == X} <= {X[i, j]}:
        return ("elementwise: each weight depends on its own score only, so there is no normalizer and no state to "
                "carry across tiles; a tile's output is the sum of its keys' weighted values, and tiles (and "
                "splits) simply add")
    num, den = sp.fraction(sp.together(r)) if not r.has(sp.Min, sp.Max) else (r, sp.S.One)
    if isinstance(num, sp.exp) and num.args[0].has(X[i, j]):
        g = num.args[0]
        rest = sp.expand(canon_sums(den) - _row(lambda k: sp.exp(g.xreplace({X[i, j]: X[i, k]}))))
        if not rest.has(X, M):
            y = sp.Symbol("x", real=True)
            return (f"softmax of modified scores $g(x) = {tex(g.xreplace({X[i, j]: y}))}$: apply $g$ to each "
                    "score as its tile is loaded and run softmax's online form (with the same extra term)")
    return ("its weight is not of the form $e^{x_j}/(E + \\sum_t e^{x_t})$ with $E$ free of the scores, so no "
            "running state (m, ℓ, acc) gives it; no online, split or backward form is derived")


def extra_weight(entry, score, **params) -> sp.Expr:
    """The weight of the family's extra token in row i: E / (E + Σ_t M_t e^{x_t})."""
    fam, why = recognise(entry)
    if fam is None or fam.extra == 0:
        raise ValueError(f"{entry.name} has no extra token: {why or 'E = 0'}")
    e = fam.extra.xreplace({sp.Symbol(p, real=True): v for p, v in params.items() if p in entry.params})
    return e / (e + row_sum(lambda k: sp.exp(score(k))))


def logit_value(entry, params: dict):
    """σ as a float for the given parameter values; None for no extra logit."""
    fam, why = recognise(entry)
    if fam is None:
        raise ValueError(why)
    if fam.logit is None:
        return None
    return float(fam.logit.xreplace({sp.Symbol(p, real=True): sp.Float(float(v), 30) for p, v in params.items()
                                     if p in entry.params}))


@dataclass(frozen=True)
class KernelFacts:
    """What the kernel-form check (``derive impl --form online|split|backward``) reads."""

    checked: bool
    logit: object = None  # None (no extra logit), a float, a parameter's name, or an expression in them
    why: str = ""  # when not checked: why (prose markup)


def kernel_form(entry) -> KernelFacts:
    fam, why = recognise(entry)
    if fam is None:
        return KernelFacts(False, why=why)
    if entry.extra_value:
        return KernelFacts(False, why=(
            "its extra token has a value of its own, $w$, which enters the output as "
            "$e^{\\sigma} w / (e^{\\sigma} + \\sum_t e^{x_t})$ ($\\sigma$ its extra logit); the kernel check passes only the normalizer's parameters "
            f"({', '.join(f'`{p}`' for p in entry.params)}), so there is no keyword to pass $w$ and no output to "
            "compare it with"))
    logit = fam.logit
    if logit is None:
        return KernelFacts(True, None)
    if logit.is_number:
        return KernelFacts(True, float(logit))
    if isinstance(logit, sp.Symbol) and logit.name in entry.params:
        return KernelFacts(True, logit.name)
    return KernelFacts(True, logit)


def kernel_sigma(entry, params: dict):
    """The extra logit σ for parameter values ``params`` (a parameter's value is passed as given:
    a float, or one per head)."""
    logit = kernel_form(entry).logit
    if isinstance(logit, str):
        return params[logit]
    if isinstance(logit, sp.Basic):
        return logit_value(entry, params)
    return logit


_SLOPES: dict = {}


def logit_slope(entry, p: str, params: dict) -> float:
    """∂σ/∂p, the derivative of the extra logit in parameter ``p``, at the parameter values
    ``params`` (floats): the gradient of p is ∂σ/∂p times that of σ (1 for a sink logit s, 1/2
    for s/2, 0 where σ does not depend on p)."""
    key = (entry.name, entry.formula, p)
    if key not in _SLOPES:
        fam, why = recognise(entry)
        if fam is None:
            raise ValueError(why)
        syms = [sp.Symbol(q, real=True) for q in entry.params]
        slope = sp.S.Zero if fam.logit is None else sp.diff(fam.logit, sp.Symbol(p, real=True))
        _SLOPES[key] = float(slope) if slope.is_number else sp.lambdify(syms, slope, "math")
    slope = _SLOPES[key]
    return slope if isinstance(slope, float) else float(slope(*(float(params[q]) for q in entry.params)))
