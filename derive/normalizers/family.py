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

The softmax family is one case of a wider one, read off the same weight by :func:`row_ratio`: a
*ratio of row sums*

    p_j = M_j φ(x_j) / (E + Σ_t M_t ψ(x_t))

with per-key terms φ and ψ of the key's own score (and of row constants: the parameters, the
number N of allowed keys) and E free of the scores. Its running state (m, ℓ, acc) keeps
ℓ = e^{−m}(E + Σ_{seen} M_t ψ(x_t)) and acc = e^{−m} Σ_{seen} M_t φ(x_t) v_t for any real shift m
(softpick: φ = relu(e^x − 1), ψ = |e^x − 1|, E = ε); with ψ = 0 the weights are elementwise
(sigmoid with bias −log N, ReLU/N: tiles add); with φ = ψ = e^{g(x)} it is softmax of modified
scores (the soft cap, SSMax's s·log(N)·x). The softmax family is φ = ψ = e^{x}, E = e^{σ}.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from derive.model.attention import M, X, i, j, n, row_sum, t
from derive.model.reductions import RowExtremum
from derive.prove.sums import canon_sums

__all__ = ["Family", "KernelFacts", "RowRatio", "YS", "extra_weight", "kernel_form", "kernel_sigma", "logit_slope",
           "logit_value", "recognise", "recognise_formula", "row_ratio"]


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
    return ("its weight is not of the form $e^{x_j}/(E + \\sum_t e^{x_t})$ with $E$ free of the scores: it is not of "
            "the softmax family")


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
    """What the kernel-form check (``derive impl --form online|split|backward``) reads: ``checked``,
    a member of the softmax family (every form); else ``ratio``, a ratio of row sums
    (:func:`row_ratio`: the online and split forms, ``out`` compared)."""

    checked: bool
    logit: object = None  # None (no extra logit), a float, a parameter's name, or an expression in them
    why: str = ""  # when not checked: why (prose markup)
    ratio: RowRatio | None = None  # not of the family, but a ratio of row sums: its online and split forms

    @property
    def forms(self) -> tuple[str, ...]:
        """The forms of ``derive impl --form`` that check it."""
        return ("online", "split", "backward") if self.checked else ("online", "split") if self.ratio else ()


def kernel_form(entry) -> KernelFacts:
    fam, why = recognise(entry)
    if fam is None:
        ratio, rwhy = row_ratio(entry)
        return KernelFacts(False, why=why if ratio is None else rwhy, ratio=ratio)
    if entry.extra_value:
        return KernelFacts(False, why=(
            "its extra token has a value of its own, $v^{*}$, which enters the output as "
            "$e^{x^{*}} v^{*} / (e^{x^{*}} + \\sum_t e^{x_t})$ ($x^{*}$ its extra logit); the kernel check passes only the "
            f"normalizer's parameters ({', '.join(f'`{p}`' for p in entry.params)}), so there is no keyword to pass $v^{{*}}$ and no output to "
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


# ---- ratios of row sums: the wider case ---------------------------------------------------

YS = sp.Symbol("y", real=True)  # the score a per-key term φ(y), ψ(y) is written in


@dataclass(frozen=True)
class RowRatio:
    """``p_j = M_j φ(x_j) / (E + Σ_t M_t ψ(x_t))``: ``a`` = φ(y), ``b`` = ψ(y) (0: elementwise),
    ``extra`` = E, each in the entry's parameters (plain real symbols named as the parameters)
    and the number of allowed keys N (``Σ_r M[i, r]``), never in another key's score."""

    a: sp.Expr
    b: sp.Expr
    extra: sp.Expr

    @property
    def kind(self) -> str:
        """``family`` (φ = ψ = e^y), ``scores`` (φ = ψ = e^{g(y)}: softmax of modified scores),
        ``elementwise`` (ψ = 0) or ``ratio``."""
        if self.b == 0:
            return "elementwise"
        if self.a == self.b and isinstance(self.a, sp.exp):
            return "family" if self.a.args[0] == YS else "scores"
        return "ratio"


_RATIOS: dict = {}


def row_ratio(entry) -> tuple[RowRatio | None, str]:
    """(the ratio of row sums, how it reads) or (None, why not) of a registry entry: its weight
    divided by M_j is φ(x_j)/(E + Σ_t M_t ψ(x_t)) (elementwise: φ(x_j)/E, no other key's score),
    read off the symbolic weight; the formula must be total (:meth:`~derive.normalizers.formula.
    Formula.total`), as for the family, and E = 0 or E > 0 for every parameter value."""
    key = (entry.name, entry.formula, tuple(entry.params))
    if key not in _RATIOS:
        _RATIOS[key] = _row_ratio(entry)
    return _RATIOS[key]


def _own(expr, k) -> bool:
    """Does ``expr`` read the scores of key ``k`` only (no other score, no reduction over scores)?"""
    if any(a.base == X and a != X[i, k] for a in expr.atoms(sp.Indexed)):
        return False
    return not any(r.has(X) for r in expr.atoms(sp.Sum, sp.Product, RowExtremum))


def _row_ratio(entry) -> tuple[RowRatio | None, str]:
    formula = getattr(entry, "definition_of", None)
    if formula is not None and not formula.total():
        return None, _NOT_TOTAL
    plain = {p: sp.Symbol(p, real=True) for p in entry.params}
    r = sp.expand(entry.weight(lambda k: X[i, k], j, **plain) / M[i, j], mul=False, multinomial=False,
                  power_exp=False, log=False, deep=False)
    if r.has(M[i, j]) or r.has(j) and not r.has(X[i, j]):
        return None, _NOT_A_RATIO
    if _own(r, j):
        return RowRatio(r.xreplace({X[i, j]: YS}), sp.S.Zero, sp.S.One), _ELEMENTWISE
    num, den = sp.fraction(sp.together(r))
    if not _own(num, j):
        return None, _NOT_A_RATIO
    extra, b = sp.S.Zero, None
    for term in sp.Add.make_args(sp.expand(den, mul=False, multinomial=False, power_exp=False, log=False,
                                           deep=False)):
        if not term.has(X):
            extra += term
            continue
        if not (isinstance(term, sp.Sum) and len(term.limits) == 1 and tuple(term.limits[0][1:]) == (1, n)):
            return None, _NOT_A_RATIO
        k = term.limits[0][0]
        body = sp.expand(term.function / M[i, k], mul=False, multinomial=False, power_exp=False, log=False,
                         deep=False)
        if b is not None or body.has(M[i, k]) or not _own(body, k):
            return None, _NOT_A_RATIO
        b = body.xreplace({X[i, k]: YS})
    if b is None or extra.has(X, j) or (extra != 0 and not _positive(entry.params, entry.symbols(), extra)):
        return None, _NOT_A_RATIO
    a = num.xreplace({X[i, j]: YS})
    out = RowRatio(a, b, extra)
    return out, _READS[out.kind]


_NOT_A_RATIO = ("its weight is not a ratio $\\varphi(x_j)/(E + \\sum_t \\psi(x_t))$ of terms of one key's own score "
                "with $E$ free of the scores, so derive derives no running state (m, ℓ, acc) for it")
_ELEMENTWISE = ("elementwise: each weight depends on its own score (and on the row's number N of allowed keys) only, "
                "so there is no normalizer sum and no state to carry across tiles; a tile's output is the sum of its "
                "keys' weighted values, and tiles (and splits) simply add")
_READS = {
    "family": "a member of the softmax family",
    "scores": "softmax of modified scores $g(x)$: the online form of softmax on $g(x_t)$, each score mapped as its "
              "tile is loaded",
    "ratio": "a ratio of row sums $\\varphi(x_j)/(E + \\sum_t \\psi(x_t))$: a running state (m, ℓ, acc) of the "
             "sums of $e^{-m} \\varphi$ and $e^{-m} \\psi$",
}
