"""Bounds on a weight by a term of its own score: 0 ≤ p_j ≤ g(x_j) with g(−∞) = 0 gives abstention
whatever the other scores do (stick-breaking: p_j ≤ σ(x_j))."""

from __future__ import annotations

import sympy as sp

from derive.model.attention import M, X, i, j
from derive.normalizers import limits
from derive.normalizers.algebra import Derivation, shown, weight
from derive.normalizers.continuity import limit_at_infinity
from derive.prove.memo import simplify
from derive.prove.verdict import PROVED, UNDECIDED, Verdict

__all__ = ["bounded_limit", "limit_any_path", "own_score_bound", "ratio_mass_below_one", "ratio_mass_range"]


def own_score_bound(W) -> sp.Expr | None:
    """g when the weight is M_j·g(x_j)·∏ f_t with g ≥ 0, g(−∞) = 0 and every factor f_t in [0, 1]
    for M_t ∈ {0, 1} and every real score (stick-breaking: g = σ, f_t = 1 − M_t σ(x_t)): then
    0 ≤ p_j ≤ g(x_j), and every weight tends to 0 as its own score does, whatever the others do.
    None when the weight has another shape or a condition is not proved."""
    products = [f for f in sp.Mul.make_args(W) if isinstance(f, sp.Product)]
    if not products:
        return None
    y = sp.Symbol("y", real=True)
    for prod in products:
        t = prod.limits[0][0]
        f = prod.function.xreplace({X[i, t]: y})
        for m in (0, 1):
            fm = simplify(f.subs(M[i, t], m))
            if fm.free_symbols - {y} or fm.is_nonnegative is not True or simplify(1 - fm).is_nonnegative is not True:
                return None
    rest = sp.Mul(*[f for f in sp.Mul.make_args(W) if not isinstance(f, sp.Product)])
    g = rest.subs(M[i, j], 1).xreplace({X[i, j]: y})
    if rest != M[i, j] * rest.subs(M[i, j], 1) or g.free_symbols - {y} or simplify(g).is_nonnegative is not True:
        return None
    return g if _limit_is_zero(g, y) else None


def _limit_is_zero(g: sp.Expr, y: sp.Symbol) -> bool:
    direct = limit_at_infinity(g, y, -sp.oo)
    return (direct if direct is not None and direct.is_Rational else limits.limit_of(g, y, -sp.oo)) == 0


def limit_any_path(entry, params) -> Derivation:
    """:func:`limits.limit_any_path`, or the own-score bound where it decides nothing."""
    return bounded_limit(limits.limit_any_path(entry, params), entry, params, "0")


def bounded_limit(der: Derivation, entry, params, zero) -> Derivation:
    """An undecided limit as all scores → −∞ decided by :func:`own_score_bound`: 0 ≤ p_j ≤ g(x_j) → 0,
    along any path, so along the uniform one too."""
    g = None if der.verdict.status != UNDECIDED else own_score_bound(weight(entry, params))
    if g is None:
        return der
    der.step("each weight is its own score's term times a product of factors in $[0, 1]$, so "
             "$0 \\le p_j \\le g(x_j)$, whatever the other scores do, and $g(y) \\to 0$ as $y \\to -\\infty$",
             sp.Eq(shown("g(y)"), g, evaluate=False))
    der.verdict = Verdict(PROVED, "every weight is at most a term of its own score, which → 0",
                          method="bound by an own-score term, limit")
    der.value = zero
    return der


_CONTINUOUS = (sp.Add, sp.Mul, sp.exp, sp.Max, sp.Min, sp.Abs, sp.tanh)


def ratio_mass_below_one(entry) -> tuple[sp.Expr, sp.Expr, sp.Expr] | None:
    """(φ, ψ, E) when the weights are a ratio of row sums p_j = M_j φ(x_j)/(E + Σ_t M_t ψ(x_t)) with
    0 ≤ φ ≤ ψ for every real score, E > 0 over the parameters' domain, φ(y₀) = 0 at some y₀ ∈ {0, −1, 1},
    φ/(E + ψ) → 1 as y → ∞, and φ, ψ built of continuous pieces only. Then every row's mass lies
    in [0, 1) (Σφ ≤ Σψ < E + Σψ), a row of scores y₀ has mass 0, and a row of one allowed key takes
    every value of [0, 1) (continuity from y₀ to ∞): the range is exactly [0, 1) (softpick).
    The inequalities are proved case by case on the sign of every argument of a |·| or max(0, ·),
    that argument replaced by a symbol of that sign (a proof for all values of it, a superset)."""
    from derive.normalizers.family import YS, row_ratio

    r, _ = row_ratio(entry)
    if r is None or r.kind != "ratio":
        return None
    dom = {sp.Symbol(p, real=True): s for p, s in entry.symbols().items() if isinstance(s, sp.Symbol)}
    phi, psi, E = (e.xreplace(dom) for e in (r.a, r.b, r.extra))
    if E.is_positive is not True or not all(_continuous(e) for e in (phi, psi)):
        return None
    kinks = sorted({a.args[0] for a in (phi + psi).atoms(sp.Abs)}
                   | {u for m in (phi + psi).atoms(sp.Max) if len(m.args) == 2 and 0 in m.args
                      for u in m.args if u != 0}, key=sp.default_sort_key)
    if not all(_nonnegative_by_cases(e, kinks) for e in (phi, psi - phi)):
        return None
    if not any(simplify(phi.subs(YS, y0)) == 0 for y0 in (0, -1, 1)):
        return None
    return (phi, psi, E) if limits.limit_of(phi / (E + psi), YS, sp.oo) == 1 else None


def _continuous(e: sp.Expr) -> bool:
    if e.is_Atom:
        return True
    if isinstance(e, sp.Pow):
        return e.exp.is_Integer and e.exp > 0 and _continuous(e.base)
    return isinstance(e, _CONTINUOUS) and all(_continuous(a) for a in e.args)


def _nonnegative_by_cases(e: sp.Expr, kinks: list) -> bool:
    import itertools

    for signs in itertools.product((1, -1), repeat=len(kinks)):
        case = e
        for k, (u, s) in enumerate(zip(kinks, signs)):
            w = sp.Symbol(f"w_{k}", nonnegative=s > 0, nonpositive=s < 0)  # one symbol per kink
            case = case.xreplace({sp.Abs(u): s * w, sp.Max(0, u): w if s > 0 else sp.S.Zero}).xreplace({u: w})
        if simplify(case).is_nonnegative is not True:
            return False
    return True


def ratio_mass_range(entry, der: Derivation) -> None:
    """Decide ``der`` (the mass range) by :func:`ratio_mass_below_one` where it applies: [0, 1)."""
    ratio = ratio_mass_below_one(entry)
    if ratio is None:
        return
    phi, psi, E = ratio
    der.step("ratio of row sums $p_j = M_j \\varphi(x_j)/(E + \\sum_t M_t \\psi(x_t))$ with $0 \\le \\varphi \\le \\psi$ "
             "(proved case by case on the sign of each $|\\cdot|$ and $\\max(0, \\cdot)$) and $E > 0$, so "
             "$0 \\le \\sum_j p_j < 1$; $\\varphi(y_0) = 0$ gives mass 0, and one allowed key's weight, "
             "continuous, tends to 1 as its score grows",
             sp.Eq(shown("(\\varphi(y), \\psi(y), E)"), sp.Tuple(phi, psi, E), evaluate=False))
    der.verdict = Verdict(PROVED, "0 ≤ φ ≤ ψ and E > 0 bound the mass in [0, 1); mass 0 is attained and one "
                                  "key's weight covers [0, 1)", method="ratio of row sums, bounds, limit")
    der.value = "[0, 1)"
