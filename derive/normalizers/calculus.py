"""The Jacobian of a normalizer: signs of ∂p_j/∂x_j and ∂p_j/∂x_k, and zero-gradient regions.

The *two-key model* of a row with at least two allowed keys j ≠ k: every row sum
Σ_t M_t·F(x_t) (F > 0) is exactly F(x_j) + F(x_k) + r, where r = Σ over the other allowed
keys is any number ≥ 0 (0 when there are none). So a sign proved for symbols x_j, x_k
real and r ≥ 0 holds for every n and every mask. Counterexamples are evaluated exactly
(rational scores, SymPy arithmetic) at points of a small grid.
"""

from __future__ import annotations

import itertools

import sympy as sp

from derive.model.attention import M, i, j
from derive.normalizers.algebra import (
    Derivation,
    X,
    entry_sample_subs,
    sample_parameters,
    shown,
    sign_of,
    tidy,
    weight,
)
from derive.prove.memo import simplify
from derive.prove.sums import canon_sums
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED, Verdict

__all__ = ["gradient_nonvanishing", "jacobian_diagonal", "jacobian_offdiagonal", "two_key"]

KEY = sp.Symbol("k", integer=True, positive=True)
XJ, XK = sp.symbols("x_j x_k", real=True)
R = sp.Symbol("R", nonnegative=True)  # the other allowed keys of the row (R on the notation sheet)
# what r stands for in every formula of the three claims (the two-key model of the module docstring)
_TWO_KEYS = ("; in the formulas below, $r \\ge 0$ stands for the terms of the row's sums that come from its "
             "other allowed keys")
_GRID = list(itertools.product((0, -1, 2, 1), (0, 2, -1), (0, 1)))


def two_key(entry, params, pair: bool = False) -> sp.Expr | None:
    """The two-key model of the module docstring; with ``pair``, the row of exactly two allowed keys
    (n = 2, no r), which also takes sums whose terms are only ≥ 0 (softpick's |e^x − 1|): a row of
    two keys is a row, so a point of it refutes, but what holds on it says nothing of longer rows."""
    W = canon_sums(weight(entry, params, key=j)).xreplace({M[i, j]: sp.S.One, M[i, KEY]: sp.S.One})
    ok = True

    def repl(s):
        nonlocal ok
        body = s.function
        F = simplify(body / M[i, s.limits[0][0]])
        if F.has(M):
            ok = False
            return s
        y = sp.Symbol("y", real=True)
        Fy = F.xreplace({X[i, s.limits[0][0]]: y})
        if Fy.is_positive is not True and not (pair and Fy.is_nonnegative is True):
            ok = False
            return s
        return Fy.subs(y, XJ) + Fy.subs(y, XK) + (0 if pair else R)

    W = W.replace(lambda e: isinstance(e, sp.Sum), repl)
    if not ok:
        return None
    W = W.xreplace({X[i, j]: XJ, X[i, KEY]: XK})
    return None if W.has(X) or W.has(M) else W


_CACHE: dict = {}


def _derivatives(entry, params):
    key = (entry.name, tuple(sorted((k, sp.srepr(v)) for k, v in params.items())))
    if key not in _CACHE:
        _CACHE[key] = _compute_derivatives(entry, params)
    return _CACHE[key]


def _compute_derivatives(entry, params):
    W = two_key(entry, params)
    if W is None:  # a row of two keys only: refutations at its points, no sign proved
        W = two_key(entry, params, pair=True)
        if W is None:
            return None, None, None, None, None
        _PAIR.add(entry.name)
        return W, _derivative(W, XJ), _derivative(W, XK), None, None
    djj, djk = _derivative(W, XJ), _derivative(W, XK)
    return W, djj, djk, sign_of(djj), sign_of(djk)


_PAIR: set = set()  # the entries whose derivatives are those of a row of exactly two keys


def _derivative(W, var) -> sp.Expr:
    """∂W/∂var in a readable equal form (:func:`tidy`, not ``simplify``, which costs tens of times
    more and whose forms the sign rules need no more than these): 1 − tanh²(u), the derivative of
    tanh, is written 1/cosh²(u), whose sign the assumptions decide."""
    D = sp.diff(W, var)
    for th in sorted(D.atoms(sp.tanh), key=sp.default_sort_key):
        D = D.subs(1 - th**2, 1 / sp.cosh(th.args[0]) ** 2)
    return tidy(D)


def _point_value(D, entry, params, point):
    xj, xk, r = point
    subs = dict(entry_sample_subs(entry, params))
    subs.update({XJ: xj, XK: xk, R: r})
    v = D.xreplace({s: sp.sympify(val) for s, val in subs.items()})  # numbers for symbols: one pass
    return (sp.S.Zero if v.is_zero else v), subs


def _grid_sign(D, entry, params, point):
    """(sign, exact value) of ``D`` at a grid point, or None where the sign is not certified;
    remembered, since the diagonal claim and the zero-gradient claim search the same derivative."""
    key = (D, entry.name, tuple(sorted((k, sp.srepr(v)) for k, v in params.items())), point)
    if key not in _SIGNS:
        _SIGNS[key] = _compute_grid_sign(D, entry, params, point)
    return _SIGNS[key]


_SIGNS: dict = {}


def _compute_grid_sign(D, entry, params, point):
    v, subs = _point_value(D, entry, params, point)
    if v.has(sp.Heaviside) or _on_kink(D, subs):
        return None  # on a kink: not certified
    if v == 0:
        return "0", v
    f = sp.N(v, 50)
    if not f.is_real or abs(f) < 1e-40:
        return None
    return ("+" if f > 0 else "-"), v


def _on_kink(D, subs) -> bool:
    """Is the point where a step, a sign, an absolute value, a max or a min of ``D`` switches? There
    the derivative SymPy wrote (θ(0) = 1/2, sign(0) = 0) is no derivative, and the point certifies
    nothing (conservative: a kink of a term the derivative does not differentiate counts too)."""
    at = {s_: sp.sympify(v) for s_, v in subs.items()}
    for a in D.atoms(sp.Heaviside, sp.sign, sp.Abs):
        if sp.simplify(a.args[0].xreplace(at)) == 0:
            return True
    for a in D.atoms(sp.Max, sp.Min):
        vals = [sp.simplify(u.xreplace(at)) for u in a.args]
        if len(set(vals)) < len(vals):
            return True
    return False


def _search(D, entry, params, bad):
    """A grid point where ``bad(value)`` holds, certified exactly; or None. For a row of two keys
    only (:data:`_PAIR`) the points with r = 0: a third key of score log r adds r to a row sum of e^x only."""
    for point in _GRID:
        if entry.name in _PAIR and point[2] != 0:
            continue
        found = _grid_sign(D, entry, params, point)
        if found is None:
            continue
        s, v = found
        if bad(s):
            xj, xk, r = point
            inst = {"n": 2 if r == 0 else 3, "x": [xj, xk] + ([f"log({r})"] if r else [])}
            w = {"instance": inst, "indices": {"i": 1, "j": 1, "k": 2}, "derivative": float(sp.N(v)), "sign": s}
            extra = sample_parameters(entry, params)
            if extra:
                w["parameters"] = extra
            return w
    return None


def _heaviside_regions(D) -> list:
    return sorted({h.args[0] for h in D.atoms(sp.Heaviside)}, key=sp.default_sort_key)


def _zero_where(regions: list) -> sp.Basic:
    """Where a product of step functions θ(a) vanishes: some argument a < 0 (c − max(0, y) < 0
    written as y > c, the clip from above, for a number c > 0)."""
    below = [_negative(a) for a in regions]
    return below[0] if len(below) == 1 else sp.Or(*below, evaluate=False)


def _negative(a: sp.Expr) -> sp.Basic:
    terms = sp.Add.make_args(a)
    clip = [t for t in terms if t.is_Mul and t.args[0] == -1 and len(t.args) == 2 and isinstance(t.args[1], sp.Max)
            and sp.S.Zero in t.args[1].args and len(t.args[1].args) == 2]
    rest = sp.Add(*[t for t in terms if t not in clip])
    if len(clip) == 1 and rest.is_number and rest.is_positive:
        y = next(u for u in clip[0].args[1].args if u != 0)
        return sp.StrictGreaterThan(y, rest, evaluate=False)
    return sp.StrictLessThan(a, 0, evaluate=False)


def _sign_claim(entry, params, prop, which, want, claim) -> Derivation:
    der = Derivation(entry.name, prop, claim, None)
    W, Djj, Djk, sjj, sjk = _derivatives(entry, params)
    if W is None:
        der.verdict, der.value = Verdict(UNDECIDED, "the row sums are not of the form $\\sum_t M_t F(x_t)$ with $F > 0$"), "?"
        return der
    D, sgn = (Djj, sjj) if which == "jj" else (Djk, sjk)
    label = "\\frac{\\partial p_j}{\\partial x_j}" if which == "jj" else "\\frac{\\partial p_j}{\\partial x_k}"
    der.step("a row of exactly two allowed keys $j, k$ (its terms are only $\\ge 0$: no model of longer rows)"
             if entry.name in _PAIR else "two-key model: $x_j, x_k$ real, $r \\ge 0$ the rest of the row",
             sp.Eq(shown("p_j"), W, evaluate=False), setup=True)
    der.step("derivative", sp.Eq(shown(label), D, evaluate=False))
    names = {"+": "> 0", "-": "< 0", "0": "= 0"}
    words = {"+": "positive", "-": "negative", "0": "0"}
    if sgn is not None:
        der.value = names[sgn]
        if sgn == want:
            der.verdict = Verdict(
                PROVED, f"the derivative is {words[sgn]} for all real $x_j$, $x_k$ and every $r \\ge 0$",
                method="sign from assumptions"
            )
            return der
        w = _search(D, entry, params, lambda s: s != want) or {
            "instance": {"n": 2, "x": [0, 0]},
            "indices": {"i": 1},
            "sign": sgn,
        }
        der.verdict = Verdict(
            REFUTED, f"the derivative is {words[sgn]} everywhere (proved)", method="sign from assumptions", witness=w
        )
        return der
    regions = _heaviside_regions(D)
    if regions:
        der.step("the derivative carries step functions θ, so it is 0 on the region", _zero_where(regions))
    w = _search(D, entry, params, lambda s: s != want)
    if w is not None:
        der.verdict = Verdict(
            REFUTED, f"an exact point where the derivative is {w['sign']}", method="exact evaluation", witness=w
        )
        der.value = "not strict: 0 in clipped regions" if w["sign"] == "0" else f"sign changes ({w['sign']})"
        return der
    der.verdict, der.value = Verdict(UNDECIDED, "the sign could not be decided and no grid point refutes it"), "?"
    return der


def jacobian_diagonal(entry, params) -> Derivation:
    return _sign_claim(
        entry,
        params,
        "jacobian_diagonal",
        "jj",
        "+",
        "$\\partial p_j/\\partial x_j > 0$ for every allowed key of a row with at least two allowed keys" + _TWO_KEYS,
    )


def jacobian_offdiagonal(entry, params) -> Derivation:
    return _sign_claim(
        entry,
        params,
        "jacobian_offdiagonal",
        "jk",
        "-",
        "$\\partial p_j/\\partial x_k < 0$ for allowed keys $j \\ne k$" + _TWO_KEYS,
    )


def gradient_nonvanishing(entry, params) -> Derivation:
    der = Derivation(
        entry.name,
        "gradient_nonvanishing",
        "no region of zero gradient: $\\partial p_j/\\partial x_j \\ne 0$ everywhere (rows with ≥ 2 allowed keys)"
        + _TWO_KEYS,
        None,
    )
    W, D, _, sgn, _ = _derivatives(entry, params)
    if W is None:
        der.verdict, der.value = Verdict(UNDECIDED, "the row sums are not of the form $\\sum_t M_t F(x_t)$ with $F > 0$"), "?"
        return der
    der.step("derivative", sp.Eq(shown("\\frac{\\partial p_j}{\\partial x_j}"), D, evaluate=False))
    if sgn in ("+", "-"):
        der.verdict = Verdict(
            PROVED,
            f"the derivative is {'positive' if sgn == '+' else 'negative'} everywhere",
            method="sign from assumptions",
        )
        der.value = "never 0"
        return der
    regions = _heaviside_regions(D)
    w = _search(D, entry, params, lambda s: s == "0")
    if w is not None:
        der.verdict = Verdict(
            REFUTED,
            "an exact point where the derivative is 0 (inside a clipped region)",
            method="exact evaluation",
            witness=w,
        )
        der.value = "0 on the clipped regions" if regions else "vanishes somewhere"
        if regions:
            der.step("the derivative carries step functions θ, so it is 0 on the region", _zero_where(regions))
        return der
    der.verdict, der.value = Verdict(UNDECIDED, "sign undecided and no zero found on the grid"), "?"
    return der


_ = (PROVED, UNDECIDED)
