"""Shared symbolic machinery for the normalizer property provers.

A row is the score table ``x[i, t]`` with the engine's mask ``M[i, t]`` and symbolic n.
The helpers here build an entry's weights and total mass, prove or refute equalities
(symbolic parameters for the proof; the entry's in-domain ``sample`` parameters for a
counterexample), recognise the two shapes most normalizers take — the *row form*
p_j = M_j·F(x_j)·R(Z) with Z = Σ_t M_t F(x_t), and the *elementwise form*
p_j = M_j·g(x_j) — and decide signs of expressions with SymPy's assumptions.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import sympy as sp

from derive.crosscheck.instances import make_instance, signature
from derive.crosscheck.witness import certify, find_witness, rounded
from derive.model.attention import M, X, i, j, n, t, u
from derive.model.vectors import expand_dot
from derive.normalizers.registry import get
from derive.prove.memo import memoized, simplify
from derive.prove.equality import prove_zero
from derive.prove.sums import canon_sums
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED, Verdict
from derive.render.latex import tex
from derive.routes import NO_VALUE, sympy_gave_up
from derive.settings import DEFAULT

__all__ = [
    "CFG",
    "Derivation",
    "N",
    "RowForm",
    "X",
    "Z",
    "depends_on_score",
    "elementwise",
    "mass",
    "plain_witness",
    "prove_congruent",
    "proved_equal",
    "put_in",
    "row_form",
    "score",
    "settle",
    "sign_of",
    "tex",
    "tidy",
    "weight",
]

Z = sp.Symbol("Z", positive=True)  # Σ over the allowed keys of F(x_t)
N = sp.Symbol("N_i", integer=True, positive=True)  # number of allowed keys of the row
CFG = DEFAULT.merge(time_limit=8.0, witness_examples=150)


def score(k):
    return X[i, k]


def weight(entry, params: dict, sc=score, key=j) -> sp.Expr:
    if sc is score:  # the plain scores: built once per (entry, key, parameters)
        return _plain_weight(entry.name, entry.weight, key, tuple(sorted(params.items())))
    return entry.weight(sc, key=key, **params)


@memoized
def _plain_weight(name: str, make, key, params: tuple) -> sp.Expr:
    """The weight with scores x[i, t]. Building it is not free: the clipped softmax's min and
    max compare their arguments under the assumptions each time one is built."""
    return make(score, key=key, **dict(params))


def mass(entry, params: dict, sc=score) -> sp.Expr:
    """Σ_u p_u over the row (weights of masked keys are 0)."""
    return canon_sums(sp.Sum(weight(entry, params, sc, u), (u, 1, n)))


def prove_congruent(a: sp.Expr, b: sp.Expr, depth: int = 6) -> tuple[bool, str]:
    """a = b by rewriting a − b to 0, else argument by argument (f(x) = f(y) if x = y).

    With min/max/piecewise parts the argument-by-argument route is tried first: simplify
    rarely decides those and is slow on them."""
    same_shape = depth and a.func == b.func and len(a.args) == len(b.args) and a.args
    if same_shape and a.has(sp.Min, sp.Max, sp.Piecewise, sp.Heaviside):
        # a pair of arguments certified to differ somewhere has no proof: the route fails (its
        # reason is not kept), so it is left at once rather than after the attempt
        if not any(x != y and _differ(x, y) for x, y in zip(a.args, b.args)):
            ok, how = _by_arguments(a, b, depth)
            if ok:
                return ok, how
    try:
        ok, how, _ = prove_zero(a - b, CFG)
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise
        ok, how = False, f"the simplifier cannot take it ({type(exc).__name__})"
    if ok:
        return True, how
    if same_shape and not a.has(sp.Min, sp.Max, sp.Piecewise, sp.Heaviside):
        return _by_arguments(a, b, depth)
    return False, how


def _differ(x: sp.Expr, y: sp.Expr) -> bool:
    """Do ``x`` and ``y`` certainly differ (ball arithmetic, at the first instance
    :func:`quick_witness` tries)? False means only "not shown"."""
    try:
        return _quick_instance(x, y, signature(x, y), 0)[0] is not None
    except NO_VALUE:  # an instance that cannot be evaluated shows nothing
        return False


def _by_arguments(a, b, depth):
    hows = []
    for x, y in zip(a.args, b.args):
        if x == y:
            continue
        ok, how = prove_congruent(x, y, depth - 1)
        if not ok:
            return False, how
        hows.append(how.removeprefix(_BY_ARGS).removesuffix(")") if how.startswith(_BY_ARGS) else how)
    return True, _BY_ARGS + "; ".join(dict.fromkeys(hows)) + ")"  # nested levels flattened: one label


_BY_ARGS = "argument by argument ("


# What the two sides of each property's equation are, in the order they are compared: a
# counterexample lists its two values under these names (prose markup), the first the left side.
SIDES = {
    "shift_invariant": ("p_ij", "p_ij with c added to every score"),
    "shift_effect": ("p_ij with c added to every score", "p_ij of the normalizer the shift gives"),
    "weights_sum_to_one": ("$\\sum_j p_{ij}$", "1"),
    "ratio_identity": ("$p_{i1} / p_{i2}$", "$e^{x_{i1} - x_{i2}}$"),
    "k_bias_cancels": ("p_ij with the key bias b_K", "p_ij without it"),
    "can_abstain": ("p_i1 on a row of one key, whatever its score", "the limit 0 that abstention needs"),
    "can_abstain_instance": ("the sum of the row's weights (or the one weight named), whatever the scores",
                             "the limit 0 that abstention needs"),
    "limit_any_path": ("the limits along the path x_A", "the limits along the path x_B"),
    "stable_form": ("the overflow-free form", "the definition"),
}


def plain_witness(w: dict | None) -> dict | None:
    return None if w is None else {k: v for k, v in w.items() if not k.startswith("_")}


def settle(
    lhs: sp.Expr, rhs: sp.Expr, entry, params: dict, *, sides: tuple[str, str] = ("the left side", "the right side"),
    fixed: dict | None = None,
    sample: dict | None = None, guards: list = (),
) -> Verdict:
    """Prove ``lhs = rhs`` for symbolic parameters, else refute it with a certified instance at
    the entry's in-domain sample parameters (inside ``guards``, the domain of the weight as
    written where its reading has a wider one: see :mod:`derive.normalizers.partial`), else
    undecided. ``sides`` names what ``lhs`` and ``rhs`` are (prose markup): a counterexample
    lists its two values, and their enclosures, under these names (``compared``)."""
    values = sample if sample is not None else entry_sample_subs(entry, params)
    a, b = put_in(lhs, values), put_in(rhs, values)  # only evaluated numerically, in the witness search
    guards = [(kind, put_in(g, values)) for kind, g in guards]
    # a certified counterexample settles it: no proof can exist (the quick instances know no domain)
    w = None if guards else quick_witness(a, b, fixed)
    at = values
    if w is None:
        ok, how = prove_congruent(lhs, rhs)
        if ok:
            return Verdict(PROVED, "the difference reduces to 0", method=how)
        w = find_witness(a, b, fixed=fixed, cfg=CFG, guards=guards)
        if w is None and values and sample is None:  # another parameter value of the domain (a < 0 of a scalar a)
            w, at = _at_other_values(lhs, rhs, entry, params, values, fixed, guards)
    else:
        how = "refuted before a proof was attempted"
    if w is not None:
        w = plain_witness(w)
        w["compared"] = list(sides)
        if at:
            w["parameters"] = sample_parameters(entry, params) if at is values else _named_values(params, at)
        return Verdict(REFUTED, "a certified instance where the two sides differ", method="counterexample", witness=w)
    return Verdict(UNDECIDED, f"no symbolic proof ({how}) and no counterexample found")


def _at_other_values(lhs, rhs, entry, params: dict, sample: dict, fixed, guards) -> tuple:
    """(witness, parameter values) of a counterexample at a parameter value other than the sample,
    from the few :mod:`derive.normalizers.instances` tries; (None, None) when none is found."""
    for at in assignments(entry, params):
        if at == sample:
            continue
        gs = [(kind, put_in(g, at)) for kind, g in guards]
        w = find_witness(put_in(lhs, at), put_in(rhs, at), fixed=fixed, cfg=CFG, guards=gs)
        if w is not None:
            return w, at
    return None, None


# parameter values tried for a refutation at other than the sample value, each kept where its domain allows
CANDIDATES = (sp.Rational(1, 2), sp.S.Zero, sp.S.One, sp.S.NegativeOne, sp.Integer(2))
MAX_COMBOS = 12  # parameter assignments tried


def assignments(entry, params: dict):
    """Parameter values to try: dicts symbol → value, the sample first, each inside the symbol's domain."""
    from derive.crosscheck.witness import satisfies

    syms = sorted({s for v in params.values() if isinstance(v, sp.Basic) for s in v.free_symbols}, key=str)
    if not syms:
        yield {}
        return
    sample = entry_sample_subs(entry, params)
    choices = []
    for s in syms:
        vals = ([sample[s]] if s in sample else []) + [v for v in CANDIDATES if v != sample.get(s)]
        choices.append([v for v in vals if satisfies(s, v)])
    for combo in itertools.islice(itertools.product(*choices), MAX_COMBOS):
        yield dict(zip(syms, combo))


def _named_values(params: dict, at: dict) -> dict:
    """The value of each parameter (by its name in the entry) under the symbol values ``at``."""
    out = {}
    for p, v in params.items():
        if isinstance(v, sp.Basic) and v.free_symbols and not (v.free_symbols - set(at)):
            out[p] = _num(v.xreplace(at))
    return out


def put_in(e: sp.Basic, values: dict) -> sp.Basic:
    """``e.xreplace(values)`` (values for symbols or table entries: one pass, no pattern
    matching as in ``subs``) with every min and max rebuilt unevaluated: the same function,
    without comparing the arguments under the assumptions (slow on sums and exponentials).
    For an expression that is evaluated numerically, or whose limit is taken argument by
    argument, never for one that is shown."""
    if e in values:
        return values[e]
    if not e.args:
        return e
    args = [put_in(a, values) for a in e.args]
    if all(a is b for a, b in zip(args, e.args)):
        return e
    return e.func(*args, evaluate=False) if isinstance(e, (sp.Min, sp.Max)) else e.func(*args)


def proved_equal(lhs: sp.Expr, rhs: sp.Expr, entry, params: dict) -> bool:
    """``lhs = rhs`` proved, where only that it holds counts and not how (no verdict shows it).

    First the difference, with ⟨·,·⟩ expanded by bilinearity and exp(a + b) = exp(a)·exp(b),
    is cancelled as a rational function (``cancel`` also takes constant factors out of sums):
    0 is a proof. Otherwise :func:`settle` decides, as it would have."""
    try:
        if sp.cancel(sp.expand(expand_dot(lhs - rhs), power_exp=True)) == 0:
            return True
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise  # (a form SymPy cannot cancel proves nothing; settle decides)
    return settle(lhs, rhs, entry, params).proved


def quick_witness(a: sp.Expr, b: sp.Expr, fixed: dict | None = None) -> dict | None:
    """A few small integer instances tried before Hypothesis's search (the same certificate)."""
    sig = signature(a, b)
    for seed in range(6):
        cert, inst, env = _quick_instance(a, b, sig, seed, fixed)
        if cert is not None:
            return {
                "instance": inst.describe(),
                "indices": {s.name: v for s, v in sorted(env.items(), key=lambda kv: kv[0].name)},
                "lhs": rounded(cert.lhs),
                "rhs": rounded(cert.rhs),
                "enclosures": cert.as_json(),
            }
    return None


def _quick_instance(a: sp.Expr, b: sp.Expr, sig, seed: int, fixed: dict | None = None) -> tuple:
    """(certificate that a ≠ b or None, instance, index values) at the small integer instance ``seed``."""
    nn = max(2, sig.min_n) + seed % 2
    inst, env = make_instance(sig, 2, nn, np.random.default_rng(seed), bound=2, integers=True, mask="full",
                              fixed=fixed)
    return certify(a, b, inst, env), inst, env


class Shown(sp.Symbol):
    """A symbol printed verbatim in LaTeX (a label such as ∂p_j/∂x_j in a displayed step)."""

    def _latex(self, printer):
        return self.name


def shown(latex: str) -> Shown:
    return Shown(latex)


def sample_parameters(entry, params: dict) -> dict:
    """The in-domain sample value of each parameter that is still symbolic, by parameter name."""
    return {
        p: _num(v)
        for p, v in entry.sample_values().items()
        if isinstance(params.get(p), sp.Basic) and params[p].free_symbols
    }


def _num(v):
    f = float(v)
    return int(f) if f.is_integer() else f


def entry_sample_subs(entry, params: dict) -> dict:
    """Map each still-symbolic parameter (its free symbols) to the entry's sample value."""
    out = {}
    for name, value in entry.sample_values().items():
        expr = params.get(name)
        if isinstance(expr, sp.Basic) and expr.free_symbols:
            out.update(_solve_for(expr, value, next(iter(expr.free_symbols))))
    return out


@memoized
def _solve_for(expr: sp.Expr, value: sp.Expr, sym: sp.Symbol) -> tuple:
    """The first solution of expr = value for sym, as (symbol, value) pairs (none: ())."""
    sol = sp.solve(sp.Eq(expr, value), sym, dict=True)
    return tuple(sol[0].items()) if sol else ()


@dataclass(frozen=True)
class RowForm:
    """p_j = M_j·F(x_j)·R(Z), Z = Σ_t M_t·F(x_t); total mass f(Z) = Z·R(Z)."""

    F: sp.Lambda
    R: sp.Expr
    f: sp.Expr
    identity_scores: bool  # F = exp: Z takes every value in (0, ∞)


@memoized
def row_form(W: sp.Expr) -> RowForm | None:
    W = canon_sums(W)
    sums = W.atoms(sp.Sum)  # of the canonical form: a sum's factors free of t are outside it
    if len(sums) != 1:
        return None
    (S,) = sums
    body = S.function
    rest = simplify(body / M[i, t])
    if rest.has(M):
        return None
    y = sp.Symbol("y", real=True)
    F = sp.Lambda(y, rest.xreplace({X[i, t]: y}))
    if F(y).has(X) or F(y).is_positive is not True:
        return None
    Wz = W.xreplace({S: Z})
    R = Wz / (M[i, j] * F(X[i, j]))
    if depends_on_score(R):
        return None  # no rewriting of R is free of x_j: simplifying it first would change nothing
    R = simplify(R)
    if R.has(X) or R.has(M) or j in R.free_symbols:
        return None
    return RowForm(F, R, simplify(Z * R), F(y) == sp.exp(y))


@memoized
def tidy(expr: sp.Expr) -> sp.Expr:
    """An equal form of ``expr`` for display, at a fraction of ``simplify``'s cost: one fraction
    (``cancel``) with numerator and denominator factored (``factor``), exponentials of a sum
    merged (``powsimp``: e^{a} e^{b} is e^{a + b}). Min, max and piecewise parts are left as they
    are (``cancel`` would compare their arguments under the assumptions at length)."""
    if expr.has(sp.Min, sp.Max, sp.Piecewise, sp.Heaviside):
        return expr
    try:
        return sp.powsimp(sp.factor(sp.cancel(expr)))
    except sp.PolynomialError:  # a generator SymPy's polynomials refuse: shown as built
        return expr


def depends_on_score(R: sp.Expr, key=j) -> bool:
    """Does R certainly vary with x_key? Every other symbol is set to 1 (when its assumptions
    allow it) and ball arithmetic certifies that x_key = 0 and x_key = 1 give different values;
    then every expression equal to R (its simplified form too) has x_key in it. False means
    only "not shown"."""
    from derive.crosscheck.evaluate import Instance
    from derive.crosscheck.witness import certify, satisfies

    values = {M[i, key]: sp.S.One}
    for s in R.free_symbols - {X[i, key], M[i, key], i, key}:
        if not isinstance(s, sp.Symbol) or not satisfies(s, 1):
            return False
        values[s] = sp.S.One
    at = [R.xreplace(values | {X[i, key]: sp.S(v)}) for v in (0, 1)]
    if any(a.free_symbols for a in at):
        return False
    try:
        return certify(at[0], at[1], Instance(d=1, n=1), {}) is not None
    except NO_VALUE:  # a value that cannot be enclosed shows nothing
        return False


@memoized
def elementwise(W: sp.Expr) -> sp.Lambda | None:
    """g with p_j = M_j·g(x_j), when the weight of a key depends on its own score only (once per
    weight: the range, abstention and limit provers all ask)."""
    if W.atoms(sp.Sum):
        return None
    y = sp.Symbol("y", real=True)
    g = simplify(W.subs(M[i, j], 1)).xreplace({X[i, j]: y})
    if g.has(X) or g.has(M):
        return None
    if simplify(W - M[i, j] * g.xreplace({y: X[i, j]})) != 0:
        return None
    return sp.Lambda(y, g)


def sign_of(expr: sp.Expr) -> str | None:
    """'+', '-', '0', or None (undecided), from the assumptions on the symbols."""
    if expr.has(sp.Heaviside, sp.Min, sp.Max, sp.Piecewise):
        # piecewise expressions: only what the assumptions decide directly (simplify won't help)
        return {True: "+"}.get(expr.is_positive) or {True: "-"}.get(expr.is_negative) or ("0" if expr.is_zero else None)

    def decided(form):
        if form == 0 or form.is_zero:
            return "0"
        if form.is_positive:
            return "+"
        if form.is_negative:
            return "-"
        return None

    cheap = (lambda: expr, lambda: sp.factor(expr), lambda: sp.factor(expr.rewrite(sp.exp)))
    for make in cheap:
        got = decided(make())
        if got:
            return got
    if _both_signs(expr):  # no form of it has one sign: simplifying would only confirm that
        return None
    e = simplify(expr)
    for form in (e, sp.factor(e), simplify(e.rewrite(sp.exp))):
        got = decided(form)
        if got:
            return got
    return None


_SIGN_VALUES = (1, -1, 0, 2)  # the values tried for a symbol, the first two its assumptions allow


def _both_signs(expr: sp.Expr, symbols: int = 6) -> bool:
    """Does ``expr`` take a positive and a negative value, certified by ball arithmetic, at
    points where each symbol has a value its assumptions allow? Then neither "+", "-" nor
    "0" holds for all values of the symbols, and :func:`sign_of` can only be undecided.
    False means only "not shown" (a symbol that is not a plain scalar, more than ``symbols``
    of them, or no point of each sign among the 2^k tried)."""
    from derive.crosscheck.evaluate import Instance, evaluate
    from derive.crosscheck.witness import satisfies

    free = sorted(expr.free_symbols, key=sp.default_sort_key)
    if len(free) > symbols or not all(type(s) is sp.Symbol for s in free):
        return False
    values = [[sp.Integer(v) for v in _SIGN_VALUES if satisfies(s, v)][:2] for s in free]
    seen = set()
    for point in itertools.product(*values):
        try:
            v = evaluate(expr.xreplace(dict(zip(free, point))), Instance(d=1, n=1), "arb", {}, prec=64)
        except NO_VALUE:  # a point where it has no value (or none enclosed) shows nothing
            continue
        seen |= {"+"} if v > 0 else {"-"} if v < 0 else set()  # arb: True only when certain
        if len(seen) == 2:
            return True
    return False


@dataclass
class Derivation:
    """A decided property of one normalizer: the verdict, the claim, and the steps shown.

    Each step is ``(justification, latex)``; an equality among them was proved by
    :func:`settle`/``prove_zero``, a sign by :func:`sign_of`, a limit by SymPy's ``limit``.
    """

    normalizer: str
    prop: str
    claim: str
    verdict: Verdict
    value: str = ""  # a short result for the table: a range, a limit, a sign …
    steps: list = None
    note: str = ""
    equality: tuple | None = None  # (lhs, rhs) of the proved equation behind a "proved" verdict
    setup: tuple = ()  # indices of the steps that only restate the definition under a substitution
    # (step index, property, LaTeX of a substitution, reversed): steps whose equation is that
    # property's proved equation of the same normalizer under the substitution (read from right
    # to left if reversed); a document refers to it
    restates: tuple = ()

    def __post_init__(self):
        if self.steps is None:
            self.steps = []

    def step(self, why: str, math, setup: bool = False, restates: tuple[str, str, bool] | None = None) -> None:
        """A step of the derivation. ``math``: an expression, an equation, LaTeX text, or a function
        of no arguments that returns one (a display computed only when the steps are shown:
        ``derive check`` never is). ``setup`` marks a step that only writes the definition out for
        the case at hand (two keys, one key, a shifted row), which a document may leave out.
        ``restates``: (property, substitution, reversed) when the step's equation is that property's
        equation under the substitution, which a document refers to instead of displaying it again."""
        if restates:
            self.restates = (*self.restates, (len(self.steps), *restates))
        if setup:
            self.setup = (*self.setup, len(self.steps))
        self.steps.append((why, math))

    def __getstate__(self) -> dict:
        """Pickled (a result shared between the build's processes) with every display computed."""
        return {**self.__dict__, "steps": [(why, _shown(m)) for why, m in self.steps]}

    def latex_steps(self) -> list[tuple[str, str]]:
        """The steps with the entry's parameters shown by their own names (ζ, not 1 + ζ')."""
        back = display_subs(self.normalizer)
        show = lambda e: e.xreplace(back) if back else e

        def latex(m) -> str:
            m = _shown(m)
            if isinstance(m, str):
                return m
            if isinstance(m, tuple):  # (lhs, rhs): an equation, printed side by side
                return f"{tex(show(m[0]))} = {tex(show(m[1]))}"
            return tex(show(m))

        return [(why, latex(m)) for why, m in self.steps]

    def value_text(self) -> str:
        """The table's short result: text, with ``$…$`` around a formula."""
        if isinstance(self.value, sp.Basic):
            back = display_subs(self.normalizer)
            return f"${tex(simplify(self.value.xreplace(back)) if back else self.value)}$"
        return self.value


def _shown(m):
    """A step's display: computed now if it was given as a function."""
    return m() if callable(m) and not isinstance(m, (sp.Basic, tuple, str)) else m


def display_subs(name) -> dict:
    """Map the domain symbols of an entry (or of the entry of that name) back to its parameter names (ζ' → ζ − 1)."""
    entry = get(name) if isinstance(name, str) else name
    return dict(_display_subs(tuple(entry.domain.items())))


@memoized
def _display_subs(domain: tuple) -> tuple:
    out = {}
    for p, expr in domain:
        free = list(expr.free_symbols)
        if len(free) == 1 and expr != free[0]:
            sol = sp.solve(sp.Eq(expr, _DISPLAY.get(p, sp.Symbol(p, real=True))), free[0])
            if sol:
                out[free[0]] = sol[0]
    return tuple(out.items())


_DISPLAY = {"zeta": sp.Symbol("zeta", real=True), "gamma": sp.Symbol("gamma", real=True)}
