"""Properties of row normalizers, derived for every registry entry by generic provers.

:data:`PROPERTIES` maps a property name to a :class:`Property` (title, prover, guarded); a prover takes a registry
entry and its parameters (symbolic by default) and returns a :class:`Derivation` whose
verdict is *proved* (a symbolic derivation went through), *refuted* (a certified
counterexample, or a proved identity that contradicts the claim) or *undecided* (with
the reason). Nothing here is written per normalizer: the provers read the symbolic
definitions. The public entry point is :func:`decide`.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import NamedTuple

import sympy as sp

from derive.errors import InputError
from derive.model.attention import M, d, i, j, n, u
from derive.model.reductions import RowExtremum
from derive.model.vectors import Dot, VectorBase, expand_dot, vector
from derive.normalizers import calculus, limits, stable
from derive.normalizers.algebra import (
    Derivation, _plain_weight, X, Z, SIDES, depends_on_score, elementwise, mass, proved_equal, row_form, settle,
    shown, sign_of, tidy, weight)
from derive.normalizers.bounds import bounded_limit, limit_any_path, ratio_mass_range
from derive.normalizers.continuity import limit_at_infinity
from derive.normalizers.overflow import MSHIFT
from derive.normalizers.registry import get
from derive.prove.memo import memoized, simplify
from derive.prove.sums import canon_sums
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED, Verdict
from derive.render.latex import tex
from derive.shared import once

__all__ = ["PROPERTIES", "Property", "decide", "derive_property", "params_for"]

C = sp.Symbol("c", real=True)  # a common shift of the row's scores

Q, K = VectorBase("q"), VectorBase("k")
B_K = vector("b_K")


def params_for(entry, given: dict | None = None) -> dict:
    """Symbolic parameters over the entry's domain, overridden by concrete ``given`` ones."""
    out = entry.symbols()
    for k, v in (given or {}).items():
        if k not in entry.params:
            raise InputError(f"{entry.name} has no parameter {k!r}; expected one of {entry.params or '()'}")
        value = sp.nsimplify(v)
        _check_domain(entry, k, out[k], value)
        out[k] = value
    return out


def _check_domain(entry, name: str, expr: sp.Expr, value: sp.Expr) -> None:
    """A concrete parameter must lie in the entry's domain (e.g. c > 0, ζ ≥ 1). A declared
    symbol (a spec's ``clipped(z, g)``) ranges over its own declared domain, as every declared
    scalar does: the claims are about the formula for every value of it."""
    if value.free_symbols:
        return
    if not value.is_real:
        raise InputError(f"{entry.name}: parameter {name} must be a real number, got {value}")
    for sym in expr.free_symbols:
        free = sp.Dummy("v")  # solve without the symbol's assumptions, then test them
        sol = sp.solve(sp.Eq(expr.subs(sym, free), value), free)
        if not sol:
            continue
        v = sol[0]
        if (sym.is_positive and not v > 0) or (sym.is_nonnegative and not v >= 0):
            raise InputError(f"{entry.name}: parameter {name} = {value} is outside its domain ({entry.domain_text})")


# ---- 1. shift invariance and the effect of a shift -------------------------------------


def _shifted(k):
    """The score of key k after a common shift c."""
    return X[i, k] + C


def _shifted_weight(entry, params) -> sp.Expr:
    """The weight with every score shifted by c: built once per entry and parameters (both
    shift properties state it)."""
    return _shifted_built(entry.name, entry.weight, tuple(sorted(params.items())))


@memoized
def _shifted_built(name: str, make, params: tuple) -> sp.Expr:
    return make(_shifted, key=j, **dict(params))  # weight(entry, params, _shifted)


def shift_invariant(entry, params) -> Derivation:
    der = Derivation(
        entry.name, "shift_invariant", "$p(x + c\\,\\mathbf{1}) = p(x)$ for every row x and every real c", None
    )
    shifted = _shifted_weight(entry, params)
    plain = weight(entry, params)
    der.verdict = settle(plain, shifted, entry, params, sides=SIDES["shift_invariant"],
                         guards=_as_written(entry, params) + _as_written(entry, params, _shifted))
    der.equality = (shifted, plain)
    der.step("weight after a common shift $c$", shifted, setup=True)
    der.value = {"proved": "yes", "refuted": "no"}.get(der.verdict.status, "?")
    return der


def shift_effect(entry, params) -> Derivation:
    der = Derivation(entry.name, "shift_effect", "the exact effect of a common shift c of the scores", None)
    shifted = _shifted_weight(entry, params)
    if entry.shift_effect is None:
        inv = derive_property(entry.name, "shift_invariant")
        if inv.verdict.proved:
            der.verdict, der.value = Verdict(PROVED, "a shift changes nothing", method=inv.verdict.method), "none"
        else:
            der.verdict = Verdict(
                UNDECIDED, "not shift-invariant, and the registry states no closed form for the shifted normalizer"
            )
            der.value = "no closed form"
        return der
    other, new = entry.shift_effect(C, params)
    target = get(other)
    rhs = weight(target, new)
    der.verdict = settle(shifted, rhs, entry, params, sides=SIDES["shift_effect"])
    der.equality = (shifted, rhs)
    pretty = _assign(other, new, entry.name)
    der.value = f"= {pretty}"
    der.step(f"shifting every score by $c$ gives {pretty}", (shifted, rhs))  # an Eq would unpickle as True
    return der


# ---- 2. the total mass of a row -----------------------------------------------------


def weights_sum_to_one(entry, params) -> Derivation:
    der = Derivation(
        entry.name, "weights_sum_to_one", "$\\sum_j p_j = 1$ for every row with a non-empty allowed set", None
    )
    T = mass(entry, params)
    der.verdict = settle(T, sp.S.One, entry, params, sides=SIDES["weights_sum_to_one"],
                         guards=_as_written(entry, params))
    der.equality = (T, sp.S.One)
    # Shown with its own outer index u: the weights' inner sums run over t (canon_sums
    # renames every dummy to t, which reads as if the outer index were captured).
    shown_sum = sp.Sum(weight(entry, params, key=u), (u, 1, n))
    der.step("total mass of the row", shown_sum if T.has(sp.Sum) else sp.Eq(shown_sum, T, evaluate=False), setup=True)
    der.value = {"proved": "yes", "refuted": "no"}.get(der.verdict.status, "?")
    return der


def mass_range(entry, params) -> Derivation:
    """The exact set of values Σ_j p_j takes over all rows (non-empty allowed set)."""
    der = _mass_range(entry, params)
    if der.verdict.status != UNDECIDED:
        return der
    # No form of the weights gave the range; the mass may still be a constant: a proof that the
    # weights of every row with an allowed key sum to 1 gives the range {1} whatever their shape.
    total = weights_sum_to_one(entry, params)
    if total.verdict.status == PROVED:
        der.step("the weights of every row with an allowed key sum to 1 (proved)", total.equality)
        der.verdict = Verdict(PROVED, "the mass is 1 for every row with an allowed key",
                              method=f"sum of the weights = 1 ({total.verdict.method})")
        der.value = "{1}"
        return der
    ratio_mass_range(entry, der)
    return der


def _mass_range(entry, params) -> Derivation:
    der = Derivation(entry.name, "mass_range", "the exact range of $\\sum_j p_j$ over all score rows", None)
    W = weight(entry, params)
    form = row_form(W)
    if form is not None:
        der.step(
            "row form: $p_j = M_j F(x_j) R(Z)$, $Z = \\sum_t M_t F(x_t)$, so $\\sum_j p_j = Z R(Z)$",
            sp.Eq(shown("f(Z)"), form.f, evaluate=False),
        )
        if Z not in form.f.free_symbols:
            der.verdict = Verdict(PROVED, "the mass is a constant", method="row form")
            der.value = f"{{{sp.sstr(form.f)}}}"
            return der
        if not form.identity_scores:
            der.verdict = Verdict(UNDECIDED, "Z does not range over all of (0, ∞) and the mass depends on Z")
            der.value = "?"
            return der
        df = simplify(sp.diff(form.f, Z))
        sgn = sign_of(df)
        der.step("derivative in $Z$ ($Z$ ranges over $(0, \\infty)$ as the scores vary)", sp.Eq(shown("f'(Z)"), df, evaluate=False))
        if sgn in ("+", "-"):
            lo, hi = limits.limit_of(form.f, Z, 0, "+"), limits.limit_of(form.f, Z, sp.oo)
        if sgn in ("+", "-") and lo is not None and hi is not None:
            lo, hi = (lo, hi) if sgn == "+" else (hi, lo)
            der.step("strictly monotone; limits at $Z \\to 0^{+}$ and $Z \\to \\infty$", sp.Tuple(lo, hi))
            der.verdict = Verdict(
                PROVED,
                "strictly monotone in Z over (0, ∞): open interval of the limits",
                method="row form, sign of f'(Z), limits",
            )
            der.value = f"({sp.sstr(lo)}, {sp.sstr(hi)})"
            return der
    g = elementwise(W)
    if g is not None:
        y = g.variables[0]
        dg = simplify(sp.diff(g.expr, y))
        sgn = sign_of(dg)
        der.step(
            "elementwise: $p_j = M_j g(x_j)$, $\\sum_j p_j = \\sum_{\\text{allowed}} g(x_j)$",
            sp.Eq(shown("g(y)"), g.expr, evaluate=False),
        )
        if sgn in ("+", "-"):
            lo, hi = _limit(g.expr, y, -sp.oo), _limit(g.expr, y, sp.oo)
        if sgn in ("+", "-") and lo is not None and hi is not None:
            lo, hi = (lo, hi) if sgn == "+" else (hi, lo)
            der.step("g is strictly monotone with these limits, each score free", sp.Tuple(lo, hi))
            der.verdict = Verdict(
                PROVED, "a sum of N_i independent open ranges", method="elementwise, sign of g', limits"
            )
            der.value = f"({sp.sstr(lo * sp.Symbol('N'))}, {sp.sstr(hi * sp.Symbol('N'))}), N = allowed keys"
            return der
    der.verdict = Verdict(UNDECIDED, "neither row form nor elementwise form; no range rule applies")
    der.value = "?"
    return der


def can_abstain(entry, params) -> Derivation:
    """For every non-empty allowed set, scores exist making every weight arbitrarily close to 0."""
    der = Derivation(
        entry.name,
        "can_abstain",
        "in every row (any non-empty allowed set) the scores can make every weight tend to 0",
        None,
    )
    W = weight(entry, params)
    form = row_form(W)
    inf = None  # the mass's limit as Z → 0⁺, for every value of the parameters
    if form is not None and (form.identity_scores or Z not in form.f.free_symbols):
        inf = limits.limit_of(form.f, Z, 0, "+") if Z in form.f.free_symbols else form.f
    if inf is not None:
        der.step(
            "row form: each weight is at most the mass $f(Z) = Z R(Z)$; its limit as $Z \\to 0^{+}$",
            sp.Eq(shown("f(0^+)"), inf, evaluate=False),
        )
        if inf == 0:
            der.verdict = Verdict(
                PROVED,
                "the mass tends to 0 as all scores → −∞, and every weight is at most the mass",
                method="row form, limit",
            )
            der.value = "yes"
            return der
        if Z not in form.f.free_symbols and simplify(form.f).is_positive:
            der.verdict = Verdict(
                REFUTED,
                f"the weights of every row with an allowed key sum to {sp.sstr(form.f)} (proved), so they cannot "
                "all tend to 0",
                method="proved identity",
                witness=_one_key_witness(entry, params, form.f),
            )
            der.value = "no"
            return der
    g = elementwise(W)
    if g is not None:
        y = g.variables[0]
        lim = _limit(g.expr, y, -sp.oo)
    if g is not None and lim is not None:
        der.step(
            "elementwise: each weight depends on its own score only; its limit at $-\\infty$",
            sp.Eq(shown("g(-\\infty)"), lim, evaluate=False),
        )
        if lim == 0:
            der.verdict = Verdict(
                PROVED, "each weight → 0 independently as its score → −∞", method="elementwise, limit"
            )
            der.value = "yes"
            return der
    # A row with a single allowed key: the weight is a function of one score.
    # With one allowed key the weight is a function of x_1; certified to vary with it, no form
    # of it is free of x_1 and this rule cannot apply (simplifying it would change nothing).
    one = None if depends_on_score(_single_key_raw(entry, params), 1) else single_key_weight(entry, params)
    der.step("a row with one allowed key (n = 1, M = 1)",
             lambda: sp.Eq(shown("p_1"), single_key_weight(entry, params), evaluate=False), setup=True)
    if one is not None and not one.has(X) and simplify(one).is_positive:
        der.verdict = Verdict(
            REFUTED,
            f"with one allowed key the weight is {sp.sstr(one)} for every score",
            method="proved identity",
            witness=_one_key_witness(entry, params, one),
        )
        der.value = "no"
        return der
    uni = _limit_uniform(entry, params)
    if uni.verdict.status == PROVED and uni.value == 0 and not weight(entry, params).has(sp.Product, RowExtremum):
        der.step("along the path $x = -\\tau\\mathbf{1}$ (every allowed score $-\\tau$, any allowed set of $N_i$ "
                 "keys), every allowed weight tends to 0 as $\\tau \\to \\infty$",
                 sp.Eq(shown("L"), sp.S.Zero, evaluate=False))
        der.verdict = Verdict(PROVED, "every weight tends to 0 as all scores → −∞ together",
                              method="uniform path, limit")
        der.value = "yes"
        return der
    from derive.normalizers.instances import abstention_rules

    if abstention_rules(entry, params, der):
        return der
    der.verdict = Verdict(UNDECIDED, "no rule for the infimum of the mass applies")
    der.value = "?"
    return der


_UNIFORM: dict = {}


def _limit_uniform(entry, params) -> Derivation:
    """:func:`limits.limit_uniform`, computed once per entry and parameters (abstention reads it,
    and it is a property of its own); each caller gets its own copy, which it may change."""
    key = (entry.name, entry.weight, tuple(sorted(params.items())))
    if key not in _UNIFORM:
        _UNIFORM[key] = bounded_limit(limits.limit_uniform(entry, params), entry, params, sp.S.Zero)
    out = copy.copy(_UNIFORM[key])
    out.steps = list(out.steps)
    return out


def _limit(expr, var, point):
    """``sympy.limit`` at ±∞, found first by the limit laws when they give a rational number:
    the limit is that number, which has one form whichever way it is found."""
    direct = limit_at_infinity(expr, var, point)
    return direct if direct is not None and direct.is_Rational else limits.limit_of(expr, var, point)


def single_key_weight(entry, params) -> sp.Expr:
    return simplify(_single_key_raw(entry, params))


def _single_key_raw(entry, params) -> sp.Expr:
    """The weight of a row with one allowed key (n = 1, M = 1), as built (once per entry and
    parameters: abstention reads it, and its display shows it simplified)."""
    return _one_key(entry.name, entry.weight, tuple(sorted(params.items())))


@memoized
def _one_key(name: str, make, params: tuple) -> sp.Expr:
    W = _plain_weight(name, make, 1, params).subs(M[i, 1], 1)  # weight(entry, params, key=1)
    return W.replace(lambda e: isinstance(e, sp.Sum), lambda s: s.subs(s.limits[0][2], 1).doit()).subs(M[i, 1], 1)


def _one_key_witness(entry, params, value) -> dict:
    from derive.normalizers.algebra import sample_parameters

    return {
        "instance": {"d": 1, "n": 1, "M": [[1]], "x": [[0]]},
        "indices": {"i": 1},
        # the row's index is the instance's, i = 1 (a weight may read it: 1/i)
        "lhs": float(sp.N(value.subs(entry_sample(entry, params)).subs(i, 1) if isinstance(value, sp.Basic)
                          else value)),
        "rhs": 0.0,
        "compared": list(SIDES["can_abstain"]),
        "note": "not every weight can tend to 0: the row's mass is bounded below by this value",
    } | ({"parameters": sample_parameters(entry, params)} if sample_parameters(entry, params) else {})


def entry_sample(entry, params):
    from derive.normalizers.algebra import entry_sample_subs

    return entry_sample_subs(entry, params)


# ---- 5. ratio identity, 7. K bias ---------------------------------------------------


def ratio_identity(entry, params) -> Derivation:
    der = Derivation(entry.name, "ratio_identity", "$p_1 / p_2 = e^{x_1 - x_2}$ for two allowed keys", None)
    allowed = {M[i, 1]: sp.S.One, M[i, 2]: sp.S.One}
    lhs = (weight(entry, params, key=1) / weight(entry, params, key=2)).xreplace(allowed)
    rhs = sp.exp(X[i, 1] - X[i, 2])
    der.verdict = settle(canon_sums(lhs), rhs, entry, params, sides=SIDES["ratio_identity"])
    der.equality = (lhs, rhs)
    der.step("ratio of the weights of keys 1 and 2 (both allowed)", lambda: tidy(canon_sums(lhs)), setup=True)
    der.value = {"proved": "yes", "refuted": "no"}.get(der.verdict.status, "?")
    return der


def k_bias_cancels(entry, params) -> Derivation:
    der = Derivation(
        entry.name,
        "k_bias_cancels",
        (
            "a common key bias $b_K$ leaves the weights unchanged: "
            "$p(\\langle q_i, k_t + b_K\\rangle/\\sqrt{d}) = p(\\langle q_i, k_t\\rangle/\\sqrt{d})$"
        ),
        None,
    )
    with_bias = weight(entry, params, lambda k: Dot(Q[i], K[k] + B_K) / sp.sqrt(d))
    without = weight(entry, params, lambda k: Dot(Q[i], K[k]) / sp.sqrt(d))
    der.verdict = settle(with_bias, without, entry, params, sides=SIDES["k_bias_cancels"])
    der.equality = (with_bias, without)
    der.value = {"proved": "yes", "refuted": "no"}.get(der.verdict.status, "?")
    if der.verdict.proved and params == params_for(entry):
        _by_shift_invariance(der, entry, with_bias, without)
    if der.verdict.status != PROVED and entry.shift_effect is not None:
        c = Dot(Q[i], B_K) / sp.sqrt(d)
        other, new = entry.shift_effect(c, params)
        rhs = weight(get(other), new, lambda k: Dot(Q[i], K[k]) / sp.sqrt(d))
        if proved_equal(with_bias, rhs, entry, params):
            pretty = _assign(other, new, entry.name)
            der.step(
                f"the K bias shifts row $i$ by $\\langle q_i, b_K \\rangle / \\sqrt{{d}}$, so it becomes {pretty}",
                sp.Eq(with_bias, rhs, evaluate=False),
                restates=("shift_effect", f"x_{{i,t}} = \\langle q_i, k_t \\rangle / \\sqrt{{d}},\\ c = {tex(c)}", False),
            )
            der.value = f"no: becomes {pretty}"
    return der


def _by_shift_invariance(der, entry, with_bias, without) -> None:
    """A step saying that the proved K-bias equation is row-shift invariance under x_t = ⟨q_i, k_t⟩/√d
    and c = ⟨q_i, b_K⟩/√d, when it is: the invariance equation under that substitution is,
    after ⟨·,·⟩ is expanded by bilinearity and the sides by ``expand`` (:func:`_same_expanded`),
    the same expression."""
    inv = derive_property(entry.name, "shift_invariant")
    if not inv.verdict.proved or inv.equality is None:
        return
    c = Dot(Q[i], B_K) / sp.sqrt(d)

    def put(e):
        scores = {a: Dot(Q[i], K[a.indices[1]]) / sp.sqrt(d) for a in e.atoms(sp.Indexed) if a.base == X}
        return e.xreplace({C: c} | scores)

    lhs, rhs = (put(e) for e in inv.equality)
    if rhs == without and _same_expanded(lhs, with_bias):
        der.step("the K bias shifts row $i$ by $\\langle q_i, b_K \\rangle / \\sqrt{d}$ (bilinearity)", with_bias,
                 restates=("shift_invariant",
                           f"x_{{i,t}} = \\langle q_i, k_t \\rangle / \\sqrt{{d}},\\ c = {tex(c)}", False))


def _same_expanded(a, b) -> bool:
    """Are ``a`` and ``b`` one expression once ⟨·,·⟩ is expanded by bilinearity and then each
    exponential's argument by ``expand`` (the scores ⟨q, k + b⟩/√d and ⟨q, k⟩/√d + ⟨q, b⟩/√d
    differ only there), or else once both are expanded whole? Either is a rewriting that keeps
    the value; the first is tried first since expanding a whole min or max compares its
    arguments under the assumptions at length."""
    def args_expanded(e):
        return expand_dot(e).replace(lambda x: isinstance(x, sp.exp), lambda x: sp.exp(sp.expand(x.args[0])))

    return args_expanded(a) == args_expanded(b) or sp.expand(expand_dot(a)) == sp.expand(expand_dot(b))


def _param_tex(name: str, param: str) -> str:
    """A parameter as the entry shows it: its domain symbol (s^*_i for bias_kv's s_star), else its name."""
    sym = get(name).symbols().get(param)
    return tex(sym if isinstance(sym, sp.Symbol) else sp.Symbol(param))



def _assign(other: str, new: dict, own: str) -> str:
    """``sink`` with s = −c, or ``sink`` with s ↦ s − c when the entry keeps its own parameter."""
    arrow = "\\mapsto" if other == own else "="
    # the row's allowed keys shown as N_i, as the limits show them (sigmoid −log N: b = c − log N_i)
    t = sp.Symbol("t", integer=True, positive=True)
    short = {k: canon_sums(sp.sympify(v)).subs(sp.Sum(M[i, t], (t, 1, n)), sp.Symbol("N_i", integer=True, positive=True))
             for k, v in new.items()}
    return f"`{other}` with " + ", ".join(f"${_param_tex(other, k)} {arrow} {tex(v)}$" for k, v in short.items())


def stable_form(entry, params) -> Derivation:
    """:func:`stable.stable_property`, its form step referred to the shift equation it restates
    (:func:`_shift_instance`) where it is one."""
    der = stable.stable_property(entry, params)
    if der.verdict.proved and der.value != "the definition":
        found = _shift_instance(entry, params, der.steps[-1][1])
        if found:
            der.restates = (*der.restates, (len(der.steps) - 1, *found))
    return der


def _shift_instance(entry, params, form: sp.Expr) -> tuple[str, str, bool] | None:
    """(property, substitution, read from right to left) when ``form = definition`` is, expression for expression, the
    proved equation of row-shift invariance or of the effect of a shift of the same normalizer
    under a substitution: c = ±m, every score shifted by −m or not, each real parameter free of
    bounds shifted by ±m or not (all in the domain those equations are proved for); None
    otherwise. Only for the entry's symbolic parameters (those of the table's derivations)."""
    if params != params_for(entry):
        return None
    plain = weight(entry, params)
    free = [(k, v) for k, v in sorted(params.items()) if isinstance(v, sp.Symbol) and v.is_real
            and v.is_positive is None and v.is_nonnegative is None and v.is_negative is None]
    moves = list(itertools.product((sp.S.Zero, -MSHIFT, MSHIFT), repeat=len(free)))
    for prop in ("shift_invariant", "shift_effect"):
        der = derive_property(entry.name, prop)
        if not der.verdict.proved or der.equality is None:
            continue
        for c, shift, move in itertools.product((-MSHIFT, MSHIFT), (sp.S.Zero, -MSHIFT), moves):
            sub = {C: c} | {v: v + dv for (_, v), dv in zip(free, move) if dv != 0}

            def put(e, _sub=sub, _shift=shift):
                scores = {a: a + _shift for a in e.atoms(sp.Indexed) if a.base == X} if _shift != 0 else {}
                return e.xreplace(_sub | scores)  # one simultaneous substitution

            lhs, rhs = (put(e) for e in der.equality)
            if (lhs, rhs) in ((form, plain), (plain, form)):
                parts = ([f"x_{{i,t}} \\mapsto x_{{i,t}} {tex(shift)}"] if shift != 0 else []) + [f"c = {tex(c)}"]
                parts += [f"{tex(v)} \\mapsto {tex(v + dv)}" for (_, v), dv in zip(free, move) if dv != 0]
                return prop, ",\\ ".join(parts), lhs != form
    return None


class Property(NamedTuple):
    """Its title in the tables, its prover (entry, parameters) → :class:`Derivation`, and whether
    its counterexamples keep to the domain of the weight as written (see :func:`_defined_rows`)."""

    title: str
    prover: Callable
    guarded: bool = False


PROPERTIES: dict[str, Property] = {
    "shift_invariant": Property("row-shift invariance", shift_invariant, guarded=True),
    "shift_effect": Property("effect of a shift c", shift_effect),
    "weights_sum_to_one": Property("weights sum to 1", weights_sum_to_one, guarded=True),
    "mass_range": Property("range of $\\sum_j p_j$", mass_range),
    "can_abstain": Property("abstention", can_abstain),
    "limit_uniform": Property("limit, uniform path", _limit_uniform),
    "limit_iterated": Property("iterated limit", limits.limit_iterated),
    "limit_any_path": Property("limit, any path", limit_any_path),
    "ratio_identity": Property("ratio identity", ratio_identity),
    "jacobian_diagonal": Property("$\\partial p_j / \\partial x_j > 0$", calculus.jacobian_diagonal),
    "jacobian_offdiagonal": Property("$\\partial p_j / \\partial x_k < 0$", calculus.jacobian_offdiagonal),
    "gradient_nonvanishing": Property("no zero-gradient region", calculus.gradient_nonvanishing),
    "k_bias_cancels": Property("K bias cancels", k_bias_cancels),
    "stable_form": Property("overflow-free form = definition", stable_form),
}


_CACHE: dict = {}


def derive_property(name: str, prop: str, **params) -> Derivation:
    """The derivation of ``prop`` for normalizer ``name`` (parameters symbolic unless given)."""
    entry = get(name)
    if prop not in PROPERTIES:
        raise InputError(f"unknown property {prop!r}: expected one of {', '.join(PROPERTIES)}")
    key = (name, prop, tuple(sorted((k, str(v)) for k, v in params.items())))
    if key not in _CACHE:  # and once per build across the documents' processes
        _CACHE[key] = once(f"derive_property {key!r}", lambda: _computed(entry, prop, params))
    return _CACHE[key]


def _computed(entry, prop: str, given: dict) -> Derivation:
    """The derivation, its verdict about the weight as written, and a proof's certificate replayed
    (:mod:`derive.normalizers.certify`): a proof that does not replay is undecided."""
    from dataclasses import replace

    from derive.certify.seal import REJECTED
    from derive.normalizers.certify import certify_property

    values = params_for(entry, given)
    der = _defined_rows(entry, prop, PROPERTIES[prop].prover(entry, values), given)
    if der.verdict is not None and der.verdict.proved:
        s = certify_property(entry, prop, values, der)
        if s.status == REJECTED:
            der.verdict, der.value = Verdict(UNDECIDED, f"the proof did not replay: {s.reason}"), "?"
        else:
            der.verdict = replace(der.verdict, seal=s)
    return der


def _as_written(entry, params: dict, sc=None) -> list:
    """The guards that keep a counterexample where the weight as written has a value (scores
    ``sc``, default x[i, k]), when its symbolic reading has a wider domain (see
    :mod:`derive.normalizers.partial`)."""
    from derive.normalizers.partial import domain, over

    return domain(over(entry.definition_of, params), sc or (lambda k: X[i, k]), params=params)


def _defined_rows(entry, prop: str, der: Derivation, params: dict) -> Derivation:
    """A verdict about the weight as written: where its symbolic reading dropped a subterm that
    may have no value, no proof (the reading has a value where the formula has none), and a
    refutation only by a counterexample certified inside the formula's domain; any other
    verdict is undecided for that reason (a reason read off the reading, such as "not
    shift-invariant" for the effect of a shift, would not be about the weight as written)."""
    from derive.normalizers.instances import instance_defined
    from derive.normalizers.partial import over, why_no_proof

    why = why_no_proof(over(entry.definition_of, params))
    v = der.verdict
    if why is None or v is None:
        return der
    if v.status == REFUTED and PROPERTIES[prop].guarded and v.method == "counterexample":
        return der
    if v.status == REFUTED and getattr(der, "instance", None) and instance_defined(entry, params, *der.instance):
        return der  # refuted by an identity on a row where the weight as written has a value
    der.verdict, der.value = Verdict(UNDECIDED, why), "?"
    return der


def decide(name: str, prop: str, **params) -> Verdict:
    """Verdict on property ``prop`` of normalizer ``name`` (see :data:`PROPERTIES`)."""
    return derive_property(name, prop, **params).verdict
