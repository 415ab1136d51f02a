"""Limits of a row's weights as its scores go to −∞, along three kinds of path.

(a) the uniform path x = −τ·1, τ → ∞, for symbolic n (the row sum becomes N_i·F(−τ));
(b) the iterated limits lim_{x₁→−∞} … lim_{x_k→−∞} as the literature writes them: proved
    for symbolic k by one induction step on the row form (removing the innermost key
    leaves the row of k − 1 keys), and also computed explicitly for small k as examples;
(c) every path on which all x_j → −∞: proved from a bound (each weight ≤ the row's mass)
    or refuted by two paths with different limits.
"""

from __future__ import annotations

import sympy as sp

from derive.model.attention import M, i, j, n, t
from derive.normalizers.algebra import (
    CFG,
    SIDES,
    Derivation,
    X,
    Z,
    elementwise,
    entry_sample_subs,
    put_in,
    row_form,
    sample_parameters,
    shown,
    tidy,
    sign_of,
    weight,
)
from derive.normalizers.continuity import limit_at_infinity
from derive.prove.memo import memoized, simplify
from derive.timeout import TimeLimit, time_limit
from derive.prove.sums import canon_sums
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED, Verdict
from derive.routes import NO_VALUE, sympy_gave_up

__all__ = ["explicit_iterated", "limit_any_path", "limit_iterated", "limit_of", "limit_uniform", "path_limit",
           "rational_in_exponentials"]

TAU = sp.Symbol("tau", positive=True)
K = sp.Symbol("k", integer=True, positive=True)


def _lim(expr, var, point, direction="+", tidy=True):
    """SymPy's limit; where it fails on min/max, the limit of a continuous function of
    arguments that all converge to finite values is the function of their limits, and a
    min or max whose arguments converge to different numbers is eventually the one argument
    with the smaller or larger limit (so it is replaced by it: the two expressions agree for
    every value of ``var`` near ``point``). Simplified unless ``tidy`` is false (a limit only
    passed on to another limit)."""
    out = None if isinstance(expr, (sp.Min, sp.Max)) else _sympy_lim(expr, var, point, direction, tidy)
    if out is None and isinstance(expr, (sp.Min, sp.Max, sp.Add, sp.Mul)):
        args = [_lim(a, var, point, direction, tidy) for a in expr.args]
        if all(a is not None and a.is_finite for a in args):
            return _tidy(expr.func(*args), tidy)
    if out is None and not isinstance(expr, (sp.Min, sp.Max)) and expr.has(sp.Min, sp.Max):
        eventual = _eventually(expr, var, point, direction)
        if eventual is not None:
            return _lim(eventual, var, point, direction, tidy)
    return out


def _eventually(expr, var, point, direction):
    """``expr`` with one min or max replaced by the argument it eventually equals (the one whose
    limit is strictly the smallest or largest, all limits being numbers); None if there is none."""
    for m in sorted(expr.atoms(sp.Min, sp.Max), key=sp.count_ops):
        if not m.has(var):
            continue
        limits = [_lim(a, var, point, direction) for a in m.args]
        if not all(v is not None and v.is_extended_real and v.is_number for v in limits):
            continue
        best = max(limits) if isinstance(m, sp.Max) else min(limits)
        if sum(v == best for v in limits) == 1:
            return expr.xreplace({m: m.args[limits.index(best)]})
    return None


def _tidy(expr, tidy):
    return simplify(expr) if tidy else expr


def _sympy_lim(expr, var, point, direction="+", tidy=True):
    direct = limit_at_infinity(expr, var, point)  # the limit laws, where they decide it
    if direct is None:
        direct = rational_in_exponentials(expr, var, point)
    if direct is not None:
        return _tidy(direct, tidy)
    try:
        with time_limit(CFG.time_limit):
            out = _sympy_limit(expr, var, point, direction)
    except TimeLimit:
        return None
    if out is None or out.has(sp.Limit) or out.has(sp.AccumBounds) or out is sp.nan:
        return None
    if _generic_only(expr, var, point, direction, out):
        return None
    return _tidy(out, tidy)


def rational_in_exponentials(expr, var, point):
    """The limit as ``var`` → ±∞ of an expression in ``var`` alone that is a rational function,
    with rational coefficients, of exponentials e^{a_k var} whose rates a_k are rational
    multiples of one another (e^{−τ}/(e^{−τ} + e^{−2τ}), e^{−τ log 2} …): a rational number or
    ±∞; else None (SymPy's ``limit`` decides). With z = e^{g var/L} (g the first rate, L the
    common denominator of the ratios a_k/g) every e^{a_k var} is an integer power of z, so the
    expression is P(z)/Q(z) with P, Q in ℚ[z], and z → 0⁺ or ∞: the limit is the ratio of the
    lowest-degree (or highest-degree) coefficients when their degrees agree, 0 when the
    numerator's is higher (lower), ±∞ by the sign of that ratio otherwise. It is the limit of a
    rational function, exact: SymPy's answer without the Gruntz algorithm's expansions."""
    if point not in (sp.oo, -sp.oo) or expr.free_symbols != {var} or not var.is_extended_real:
        return None
    sign = 1 if point == sp.oo else -1
    rates = []
    for e in expr.atoms(sp.exp):
        a = sp.diff(e.args[0], var)
        if a.has(var) or a == 0 or sp.expand(e.args[0] - a * var) != 0:
            return None  # not e^{a var} for a number a ≠ 0
        rates.append((e, sign * a))
    if not rates:
        return None
    g = rates[0][1]
    ratios = [a / g for _, a in rates]
    if not all(r.is_Rational for r in ratios) or g.is_negative is None or g.is_zero is not False:
        return None
    common = sp.ilcm(1, *(r.q for r in ratios))
    z = sp.Dummy("z", positive=True)
    W = expr.xreplace({e: z ** int(r * common) for (e, _), r in zip(rates, ratios)})
    if W.has(var):
        return None
    try:
        num, den = sp.fraction(sp.cancel(sp.together(W)))
        P, Q = sp.Poly(num, z), sp.Poly(den, z)
    except (sp.PolynomialError, sp.GeneratorsNeeded):
        return None
    if P.domain not in (sp.ZZ, sp.QQ) or Q.domain not in (sp.ZZ, sp.QQ) or Q.is_zero:
        return None
    if P.is_zero:
        return sp.S.Zero
    at_zero = bool(g.is_negative)  # z = e^{g var/L} → 0⁺ as var → ±∞ when g < 0 (sign included), else → ∞
    (p_deg,), p_c = P.terms()[-1] if at_zero else P.terms()[0]
    (q_deg,), q_c = Q.terms()[-1] if at_zero else Q.terms()[0]
    if p_deg == q_deg:
        return sp.Rational(p_c, 1) / q_c
    if (p_deg > q_deg) == at_zero:
        return sp.S.Zero
    return sp.oo if p_c / q_c > 0 else -sp.oo  # |P/Q| grows like a power of z (or of 1/z), z > 0


def limit_of(expr, var, point, direction="+"):
    """The limit of ``expr`` as ``var`` → ``point``, valid for every value of the other symbols
    (parameters such as a declared scalar or the row's number of keys), or None."""
    return _lim(expr, var, point, direction)


def _generic_only(expr, var, point, direction, out) -> bool:
    """Whether SymPy's limit ``out`` of ``expr`` may hold only for generic values of the other
    symbols. SymPy takes a parameter to be nonzero where that is unknown: Z/(Z + a²) → 0 as
    Z → 0⁺ is its answer, but at a = 0 the expression is 1; e^{−τ}/(N e^{−τ} + 1 − min(N − 1, 1))
    → 0 holds for N = 1 only. So with parameters present the limit is refused when a
    denominator of ``expr`` tends to a finite value of the parameters not provably nonzero, or
    when the limit itself divides by such a value."""
    if not (expr.free_symbols - {var}):
        return False
    for p in _outer_powers(expr):
        base, ex = p.args
        if not base.has(var) or ex.is_negative is not True:
            continue
        b = limit_at_infinity(base, var, point) if point in (sp.oo, -sp.oo) else None
        if b is None:  # exact where it applies (e^{τ} + 1 → ∞): SymPy's answer without its expansions
            b = rational_in_exponentials(base, var, point)
        if b is None:
            try:
                with time_limit(CFG.time_limit):
                    b = _sympy_limit(base, var, point, direction)
            except TimeLimit:
                return True
        if b is None or b is sp.nan or b.has(sp.Limit, sp.AccumBounds):
            return True
        if b.is_infinite or not b.free_symbols:
            continue
        if b.is_zero is not False:
            return True
    return any(ex.is_negative and base.free_symbols and base.is_zero is not False
               for base, ex in (q.args for q in _outer_powers(out)))


def _outer_powers(expr) -> list:
    """The powers of ``expr`` outside a sum or product over the row (those are the row's terms,
    not a denominator whose value a parameter sets)."""
    bound = {lim[0] for red in expr.atoms(sp.Sum, sp.Product) for lim in red.limits}
    return [q for q in expr.atoms(sp.Pow) if not q.has(*bound)] if bound else list(expr.atoms(sp.Pow))


@memoized
def _sympy_limit(expr, var, point, direction):
    """``sympy.limit``, once per argument tuple; None where SymPy gives up (it raises the same
    error for the same expression every time, so that is remembered too). A time limit hit
    stores nothing: it depends on the machine, not on the expression."""
    try:
        return sp.limit(expr, var, point, direction)
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise
        return None  # a limit SymPy's algorithm cannot take (e.g. a comparison with NaN in gruntz)


def limit_uniform(entry, params) -> Derivation:
    der = Derivation(
        entry.name,
        "limit_uniform",
        "the limit of every allowed weight along $x = -\\tau\\mathbf{1}$, $\\tau \\to \\infty$ (symbolic n)",
        None,
    )
    W = weight(entry, params).subs(M[i, j], 1)
    W = W.replace(lambda e: isinstance(e, sp.Indexed) and e.base == X, lambda e: -TAU)
    W = canon_sums(W).subs(sp.Sum(M[i, t], (t, 1, n)), sp.Symbol("N_i", integer=True, positive=True))
    der.step("on the path every score is $-\\tau$; $\\sum_t M_t = N_i$ allowed keys",
             lambda: sp.Eq(shown("p_j"), tidy(W), evaluate=False), setup=True)
    # The limit laws on the weight as built decide most paths; simplifying it first can turn a
    # determinate form into ∞·0 (softpick: relu(e^{−τ} − 1) becomes e^{τ}·max(0, e^{−τ} − 1)).
    direct = limit_at_infinity(W, TAU, sp.oo)
    L = _tidy(direct, True) if direct is not None else _lim(simplify(W), TAU, sp.oo)
    if L is None or L.has(sp.Sum):
        der.verdict, der.value = Verdict(UNDECIDED, "SymPy could not take the limit"), "?"
        return der
    der.step("limit as $\\tau \\to \\infty$", sp.Eq(shown("L"), L, evaluate=False))
    der.verdict = Verdict(PROVED, "limit of a univariate expression in τ, symbolic N_i", method="substitution, limit")
    der.value = L
    return der


def explicit_iterated(entry, params, k: int) -> list | None:
    """lim_{x₁→−∞} … lim_{x_k→−∞} of the k weights of a row of k allowed keys (an example)."""
    xs = sp.symbols(f"x1:{k + 1}", real=True)
    out = []
    for key in range(1, k + 1):
        W = weight(entry, params, key=key).xreplace({n: sp.Integer(k)})
        sums = W.atoms(sp.Sum)  # a sum over the k keys written out (one walk, no pattern matching)
        W = W.xreplace({s: s.doit() for s in sums}) if sums else W
        W = W.xreplace({M[i, a]: sp.S.One for a in range(1, k + 1)} | {X[i, a]: xs[a - 1] for a in range(1, k + 1)})
        W = _iterated(W, list(reversed(xs)))  # the innermost limit is x_k
        if W is None:
            return None
        out.append(W)
    return out


def _iterated(W, xs: list):
    """lim over ``xs`` in turn, each variable → −∞, the last limit simplified. An inner limit
    is passed on as it comes; simplified only if the next limit cannot be taken of it."""
    if not xs:
        return W
    if len(xs) == 1:
        return _lim(W, xs[0], -sp.oo)
    inner = _lim(W, xs[0], -sp.oo, tidy=False)
    if inner is None:
        return None
    out = _iterated(inner, xs[1:])
    return out if out is not None else _iterated(simplify(inner), xs[1:])


def limit_iterated(entry, params, ks=(2,)) -> Derivation:
    der = Derivation(
        entry.name,
        "limit_iterated",
        "$\\lim_{x_1\\to-\\infty}\\cdots\\lim_{x_k\\to-\\infty} p(x)$ for symbolic k (all k keys allowed)",
        None,
    )
    W = weight(entry, params)
    form, g = row_form(W), elementwise(W)
    claimed = None
    if form is not None:
        y = sp.Symbol("y", real=True)
        a = _lim(form.F(y), y, -sp.oo)
        den = sp.denom(sp.together(form.R))
        cont = sign_of(den) in ("+", "-")
        der.step(
            "row form: $p_j = F(x_j) R(Z)$; $R$ is continuous on $Z > 0$ (its denominator has a fixed sign)",
            sp.Eq(shown("R(Z)"), form.R, evaluate=False),
        )
        ell = _lim(form.f, Z, 0, "+") if cont and a == 0 else None  # None also when it holds for some parameters only
        if ell is not None:
            der.step(
                "$\\lim_{x_k \\to -\\infty}$: $F(x_k) \\to 0$ while $Z \\ge F(x_1) > 0$, so key $k$ gets 0 and the others "
                "keep the weights of the row of $k - 1$ keys; by induction only key 1 (the outermost limit) "
                "remains, and its weight $f(F(x_1)) \\to f(0^{+})$",
                sp.Eq(shown("f(0^+)"), ell, evaluate=False),
            )
            claimed = (ell, sp.S.Zero)
            der.value = (
                "(1, 0, …, 0): all to the outermost key"
                if ell == 1
                else ("0 for every key" if ell == 0 else f"({sp.sstr(ell)}, 0, …, 0)")
            )
        elif cont and a is not None and a.is_positive:
            val = simplify(a * form.R.subs(Z, K * a))
            der.step(
                "$F(x) \\to a > 0$: each limit sets $F(x_t) = a$; $Z \\ge a > 0$ keeps $R$ continuous; all $k$ keys end equal",
                sp.Eq(shown("p_j"), val, evaluate=False),
            )
            claimed = (val, val)
            der.value = f"{sp.sstr(val)} for every key"
    elif g is not None:
        yv = g.variables[0]
        lim = _lim(g.expr, yv, -sp.oo)
        if lim is not None:
            der.step(
                "elementwise: each weight depends on its own score only",
                sp.Eq(shown("g(-\\infty)"), lim, evaluate=False),
            )
            claimed = (lim, lim)
            der.value = f"{sp.sstr(lim)} for every key"
    if claimed is None and form is None and g is None:
        claimed = _composed_iterated(entry, params, der)
    examples = {k: explicit_iterated(entry, params, k) for k in ks}
    for k, vec in examples.items():
        if vec is not None:
            der.step(f"example, k = {k} (explicit limits, not a proof)", sp.Tuple(*vec))
    if claimed is None:
        listed = "; ".join(f"k = {k}: {sp.sstr(tuple(v))}" for k, v in examples.items() if v is not None)
        if listed:
            der.verdict = Verdict(UNDECIDED, f"no rule for symbolic k; explicit small-k values only ({listed})")
            der.value = "explicit only: " + listed
        else:
            tried = ", ".join(f"k = {k}" for k in examples)
            der.verdict = Verdict(UNDECIDED, f"no rule for symbolic k, and SymPy took no explicit limit ({tried})")
            der.value = "no rule, no explicit limit"
        return der
    for k, vec in examples.items():
        if vec is None:
            continue
        expect = [claimed[0].subs(K, k)] + [claimed[1].subs(K, k)] * (k - 1)
        if any(simplify(a - b) != 0 for a, b in zip(vec, expect)):
            der.verdict = Verdict(UNDECIDED, f"the symbolic rule disagrees with the explicit k = {k} computation")
            return der
    why = (
        "induction on k with continuity of R; agrees with the explicit small-k limits"
        if form is not None
        else "each weight is a function of its own score; agrees with the explicit small-k limits"
        if g is not None
        else "a continuous function of the inner normalizer's weights; agrees with the explicit small-k limits"
    )
    method = "row form induction" if form is not None else "elementwise" if g is not None else "composition"
    der.verdict = Verdict(PROVED, why, method=method)
    return der


_CONTINUOUS = (sp.Add, sp.Mul, sp.Min, sp.Max)


def _continuous_in(expr, w) -> bool:
    """Built from w, constants and parameters by +, ·, min, max (so continuous in w)."""
    if not expr.has(w) or expr == w:
        return True
    if isinstance(expr, _CONTINUOUS):
        return all(_continuous_in(a, w) for a in expr.args)
    return False


def _composed_iterated(entry, params, der):
    """p_j = M_j·outer(p'_j): the iterated limit of a continuous outer function is the outer
    function of the inner normalizer's iterated limit (the declaration is checked first)."""
    from derive.normalizers.algebra import prove_congruent
    from derive.normalizers.registry import get

    if entry.inner is None or entry.outer is None:
        return None
    inner = get(entry.inner)
    inner_params = inner.symbols()
    w = sp.Symbol("w", real=True)
    outer = entry.outer(w, **params)
    declared = M[i, j] * entry.outer(weight(inner, inner_params), **params)
    own = weight(entry, params)
    # both are 0 at a masked key (the factor M_j); at an allowed one (M_j = 1) they must agree
    allowed = {M[i, j]: sp.S.One}
    ok = own.xreplace({M[i, j]: sp.S.Zero}) == 0 and \
        prove_congruent(own.xreplace(allowed), declared.xreplace(allowed))[0]
    if not ok or not _continuous_in(outer, w):
        return None
    first = limit_iterated(inner, inner_params, ks=())
    if not first.verdict.proved:
        return None
    vec = _claimed_of(inner, inner_params)
    if vec is None:
        return None
    claimed = (simplify(outer.subs(w, vec[0])), simplify(outer.subs(w, vec[1])))
    der.step(
        f"composition: $p_j = M_j \\, \\mathrm{{outer}}(p'_j)$ with $p'$ = {inner.name} (checked), outer continuous",
        sp.Eq(shown("\\operatorname{outer}(w)"), outer, evaluate=False),
    )
    der.step(f"the outer function of {inner.name}'s iterated limit (first key, other keys)", sp.Tuple(*claimed))
    der.value = (
        f"({sp.sstr(claimed[0])}, {sp.sstr(claimed[1])}, …, {sp.sstr(claimed[1])})"
        if claimed[0] != claimed[1]
        else f"{sp.sstr(claimed[0])} for every key"
    )
    return claimed


def _claimed_of(entry, params):
    """(first key, other keys) of the iterated limit by the row-form or elementwise rule."""
    W = weight(entry, params)
    form, g = row_form(W), elementwise(W)
    y = sp.Symbol("y", real=True)
    if form is not None:
        a = _lim(form.F(y), y, -sp.oo)
        if a == 0:
            ell = _lim(form.f, Z, 0, "+")
            return None if ell is None else (ell, sp.S.Zero)
        if a is not None and a.is_positive:
            val = simplify(a * form.R.subs(Z, K * a))
            return (val, val)
    if g is not None:
        lim = _lim(g.expr, g.variables[0], -sp.oo)
        return None if lim is None else (lim, lim)
    return None


def path_limit(entry, params, path: tuple) -> list | None:
    """Limits of the weights of a 2-key row along x = path(τ), τ → ∞."""
    on_path = {M[i, 1]: sp.S.One, M[i, 2]: sp.S.One, X[i, 1]: path[0], X[i, 2]: path[1], n: sp.Integer(2)}
    out = []
    for key in (1, 2):
        W = weight(entry, params, key=key)
        # n = 2: each row sum Σ_{t=1}^{n} is its two terms on the path; everything is put in
        # at once, so the weight (its min and max included) is rebuilt once
        sums = W.atoms(sp.Sum)
        if all(len(s.limits) == 1 and s.limits[0][1:] == (1, n) and not s.function.has(sp.Sum) for s in sums):
            rule = {s: sp.Add(*(s.function.xreplace({s.limits[0][0]: k}) for k in (1, 2))).xreplace(on_path) for s in sums}
            W = put_in(W, rule | on_path)
        else:
            W = W.subs(n, 2).replace(lambda e: isinstance(e, sp.Sum), lambda s: s.doit()).xreplace(on_path)
        # A limit is one number whichever form of W yields it: the form as built first, and
        # the simplified form (slow on min/max) only when that one gives no limit.
        lim = _lim(W, TAU, sp.oo)
        if lim is None:
            lim = _lim(simplify(W), TAU, sp.oo)
        if lim is None:
            return None
        out.append(lim)
    return out


def _certainly_differ(la: list, lb: list) -> bool:
    """Do two lists of exact limits differ somewhere? Decided by ball arithmetic, not simplify."""
    from derive.crosscheck.evaluate import Instance
    from derive.crosscheck.witness import certify

    empty = Instance(d=1, n=1)
    try:
        return any(certify(sp.sympify(p), sp.sympify(q), empty, {}) is not None for p, q in zip(la, lb))
    except NO_VALUE:  # a limit that cannot be enclosed proves nothing
        return False


def limit_any_path(entry, params) -> Derivation:
    der = Derivation(
        entry.name,
        "limit_any_path",
        "along every path on which all $x_j \\to -\\infty$ the weights converge, to a limit independent of the path",
        None,
    )
    W = weight(entry, params)
    form, g = row_form(W), elementwise(W)
    y = sp.Symbol("y", real=True)
    if form is not None:
        a = _lim(form.F(y), y, -sp.oo)
        if a == 0 and sign_of(form.R) == "+":
            ell = _lim(form.f, Z, 0, "+")
            if ell == 0:
                der.step(
                    "$0 \\le p_j \\le f(Z) = Z R(Z)$, the mass ($R > 0$, $F(x_j) \\le Z$), and $Z \\to 0^{+}$ on every such path",
                    sp.Eq(shown("f(0^+)"), ell, evaluate=False),
                )
                der.verdict, der.value = Verdict(PROVED, "bound by the mass, which → 0", method="row form, limit"), "0"
                return der
        elif a is not None and a.is_positive and sign_of(sp.denom(sp.together(form.R))) in ("+", "-"):
            nn = sp.Symbol("N_i", integer=True, positive=True)
            val = simplify(a * form.R.subs(Z, nn * a))
            der.step(
                "$F(x_t) \\to a > 0$ on every such path, $Z \\to N_i a > 0$ and $R$ is continuous there",
                sp.Eq(shown("p_j"), val, evaluate=False),
            )
            der.verdict, der.value = Verdict(PROVED, "continuity", method="row form, limit"), sp.sstr(val)
            return der
    if g is not None:
        lim = _lim(g.expr, y, -sp.oo)
        if lim is not None:
            der.step(
                "elementwise: each weight tends to $g(-\\infty)$ whatever the other scores do",
                sp.Eq(shown("g(-\\infty)"), lim, evaluate=False),
            )
            der.verdict, der.value = Verdict(PROVED, "elementwise limit", method="elementwise, limit"), sp.sstr(lim)
            return der
    sample = entry_sample_subs(entry, params)
    concrete = {k: v.subs(sample) if isinstance(v, sp.Basic) else v for k, v in params.items()}
    A, B = (-TAU, -2 * TAU), (-2 * TAU, -TAU)
    la, lb = path_limit(entry, concrete, A), path_limit(entry, concrete, B)
    if la is not None and lb is not None and _certainly_differ(la, lb):
        der.step("two keys, path A: $x_A = (-\\tau, -2\\tau)$", sp.Tuple(*la))
        der.step("two keys, path B: $x_B = (-2\\tau, -\\tau)$", sp.Tuple(*lb))
        w = {
            "instance": {"n": 2, "x_A": "(−τ, −2τ)", "x_B": "(−2τ, −τ)"},
            "indices": {"i": 1},
            "lhs": [float(v) for v in la],
            "rhs": [float(v) for v in lb],
            "compared": list(SIDES["limit_any_path"]),
        }
        if sample:
            w["parameters"] = sample_parameters(entry, params)
        der.verdict = Verdict(
            REFUTED,
            "two paths with different limits: the limit depends on the path",
            method="two explicit paths",
            witness=w,
        )
        der.value = "depends on the path"
        return der
    der.verdict, der.value = Verdict(UNDECIDED, "no bound applies and the two test paths agree"), "?"
    return der


_ = UNDECIDED
