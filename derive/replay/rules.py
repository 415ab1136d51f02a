"""The rules, all of them: a step rewrites one subterm by one rule, and the checker accepts it when
the result it states has the normal form (:mod:`derive.replay.algebra`) that the rule gives for the
subterm, and names no symbol the subterm did not (a factor that depends on a sum's index cannot
leave the sum). :data:`RULES` maps each name to (what it states, the function that computes it);
a rule may also return a term whose side conditions the step needs where the subterm is.
"""

from __future__ import annotations

from fractions import Fraction

from derive.replay.algebra import RF, Rejected, fraction
from derive.replay.definitions import BUILTIN, FUNCTIONS, Outside, unfold
from derive.replay.signs import NONNEG, NONPOS, POS
from derive.replay.terms import show

__all__ = ["RULES", "Env", "check_step", "term_of"]


class Env:
    """What a rule may read besides the subterm: the stated definitions, the facts where the
    subterm is (a :class:`~derive.replay.signs.Scope`), and the result the step states."""

    def __init__(self, defs: dict, scope, to=None, eventually=None):
        self.defs, self.scope, self.to, self.eventually = defs, scope, to, eventually

    def sign(self, t) -> int:
        """The sign flags of ``t`` here: always, or (in a limit's chain) for every large value."""
        f = self.scope.sign(t)
        return f | self.eventually(t, self.scope) if self.eventually is not None else f


def _is(sub, heads, what):
    if sub[0] not in heads:
        raise Rejected(f"{show(sub, 60)} is not {what}")


def _unfold(ring, sub, env):
    if sub[0] in FUNCTIONS:
        body = FUNCTIONS[sub[0]](sub[1])
        return ring.nf(body), body
    _is(sub, ("apply",), "a normalizer applied, nor sigmoid, softplus or tanh")
    text = env.defs.get(sub[1])
    if text is None:
        raise Rejected(f"the certificate states no definition of {sub[1]!r}")
    if sub[1] in BUILTIN and text != BUILTIN[sub[1]]:
        raise Rejected(f"the definition stated for the built-in {sub[1]!r} is not its definition {BUILTIN[sub[1]]!r}")
    try:
        body = unfold(text, sub[2], sub[3], sub[4], {k: v for _, k, v in sub[5]})
    except Outside as exc:
        raise Rejected(str(exc)) from None
    return ring.nf(body), body


def _bilinear(ring, sub, env):
    _is(sub, ("dot",), "an inner product")
    out = ring.const(0)
    for ka, ca in ring.linear(ring.nf(sub[1])).items():
        for kb, cb in ring.linear(ring.nf(sub[2])).items():
            out = out + ca * cb * ring.nf(("dot", ring.terms[ka], ring.terms[kb]))
    return out


def _pieces(ring, value: RF) -> list[tuple[Fraction, dict, RF]]:
    """The terms c·m/D of a fraction N/D: (c, the monomial m as {atom: exponent}, 1/D)."""
    inv = RF(ring, value.den, reduce=False).inverse()
    return [(c, {v: e for v, e in enumerate(exps) if e}, inv) for c, exps in value._up().terms()]


def _monomial(ring, m: dict) -> RF:
    out = ring.const(1)
    for v, e in m.items():
        out = out * ring.gen(v) ** e
    return out


def _exp_add(ring, sub, env):
    _is(sub, ("exp",), "exp(…)")
    out = ring.const(1)
    for s in (sub[1][1:] if sub[1][0] == "add" else (sub[1],)):  # each summand over its own denominator
        for c, m, inv in _pieces(ring, ring.nf(s)):
            whole = c.denominator == 1
            arg = _monomial(ring, m) * inv * ring.const(1 if whole else c)
            out = out * ring.nf(("exp", term_of(ring, arg))) ** (int(c) if whole else 1)
    return out


def _log_exp(ring, sub, env):
    if sub[0] != "log" or sub[1][0] != "exp":
        raise Rejected(f"{show(sub, 60)} is not log(exp(…))")
    return ring.nf(sub[1][1])


def _exp_log(ring, sub, env):
    pieces = _pieces(ring, ring.nf(sub[1])) if sub[0] == "exp" else []
    if len(pieces) == 1 and pieces[0][0].denominator == 1 and pieces[0][2].constant() == 1:
        (v, e), = pieces[0][1].items() if len(pieces[0][1]) == 1 else ((None, 0),)
        if e == 1 and ring.terms[v][0] == "log":
            return ring.nf(ring.terms[v][1]) ** int(pieces[0][0])
    raise Rejected(f"{show(sub, 60)} is not exp(k·log(a)) for an integer k")


def _pow_exp(ring, sub, env):
    _is(sub, ("pow",), "a power")
    return ring.nf(("exp", ("mul", sub[2], ("log", sub[1]))))


def _sum_linear(ring, sub, env):
    _is(sub, ("sum",), "a sum")
    out = ring.const(0)
    for c, m, inv in _pieces(ring, ring.nf(sub[4])):
        out = out + ring.nf(("sum", sub[1], sub[2], sub[3], term_of(ring, _monomial(ring, m) * inv * ring.const(c))))
    return out


def _sum_factor(ring, sub, env):
    _is(sub, ("sum",), "a sum")
    pieces = _pieces(ring, ring.nf(sub[4]))
    if len(pieces) != 1:
        raise Rejected("the sum's body is not one term (apply sum_linear first)")
    (c, m, inv), = pieces
    out, inner = ring.const(c), ring.const(1)
    content, factors = inv.den.factor()
    out = out * ring.const(fraction(content)).inverse()
    for x in [ring.gen(v) ** e for v, e in m.items()] + [RF(ring, f, reduce=False) ** -int(e) for f, e in factors]:
        if sub[1] in ring.names(x):  # each factor in or out of the sum, as it involves the index
            inner = inner * x
        else:
            out = out * x
    total = ring.nf(("sum", sub[1], sub[2], sub[3], term_of(ring, inner)))
    # the factor now stands outside the sum: its divisors must be nonzero there (where the sum may be empty)
    return out * total, term_of(ring, out)


def _sum_empty(ring, sub, env):
    _is(sub, ("sum",), "a sum")
    if not (ring.nf(sub[3]) - ring.nf(sub[2]) + ring.const(1)).is_zero():
        raise Rejected(f"the range of {show(sub, 60)} is not empty (its upper end is not its lower end − 1)")
    return ring.const(0)


def _sum_split(ring, sub, env):
    whole, parts = (sub, env.to) if sub[0] == "sum" else (env.to, sub)
    if not (whole[0] == "sum" and parts[0] == "add" and len(parts) == 3 and parts[1][0] == parts[2][0] == "sum"):
        raise Rejected("sum_split relates one sum and the sum of two sums")
    body = lambda s: ring.nf(("sum", s[1], ("num", Fraction(0)), ("num", Fraction(0)), s[4])).key  # noqa: E731
    a, b = parts[1], parts[2]
    same = body(a) == body(whole) == body(b)
    ends = [ring.nf(x).key for x in (a[2], whole[2], b[3], whole[3], b[2], ("add", a[3], ("num", Fraction(1))))]
    if not (same and ends[0] == ends[1] and ends[2] == ends[3] and ends[4] == ends[5]):
        raise Rejected("the two sums do not split the range of one sum of the same body at one point")
    return ring.nf(env.to)


def _by_sign(ring, sub, env):
    _is(sub, ("fn",), "abs, max or min")
    if sub[1] == "abs()":
        f = env.sign(sub[2])
        if f & (NONNEG | NONPOS):
            return ring.nf(sub[2] if f & NONNEG else ("mul", ("num", Fraction(-1)), sub[2]))
    elif sub[1] in ("max()", "min()"):
        for a in sub[2:]:  # the argument that is ≥ (max) or ≤ (min) every other one
            if all(env.sign(("add", a, ("mul", ("num", Fraction(-1)), b))) & (NONNEG if sub[1] == "max()" else NONPOS)
                   for b in sub[2:] if b is not a):
                return ring.nf(a)
    raise Rejected(f"the sign that decides {show(sub, 60)} is not known here")


def _homogeneous(ring, sub, env):
    if sub[0] != "fn" or sub[1] not in ("abs()", "max()", "min()"):
        raise Rejected(f"{show(sub, 60)} is not abs, max or min")
    args = [ring.nf(a) for a in sub[2:]]
    common = None  # the exponent of each atom in every nonzero argument's numerator, less its denominator's
    for a in (a._up() for a in args if not a.is_zero()):
        mine = {}
        for p, sign in ((a.num, 1), (a.den, -1)):
            exps = list(p.to_dict())
            for v in range(len(exps[0])):
                mine[v] = mine.get(v, 0) + sign * int(min(e[v] for e in exps))
        mine = {v: e for v, e in mine.items() if e}
        common = mine if common is None else {v: min(e, mine[v], key=abs) for v, e in common.items()
                                              if v in mine and (e > 0) == (mine[v] > 0)}
    factor = ring.const(1)
    for v, e in (common or {}).items():
        if env.scope.sign(ring.terms[v]) & POS:
            factor = factor * ring.gen(v) ** e
    if factor.constant() == 1:
        raise Rejected(f"the arguments of {show(sub, 60)} have no common positive factor")
    return factor * ring.nf(("fn", sub[1], *(term_of(ring, a * factor.inverse()) for a in args)))


def _sqrt_square(ring, sub, env):
    value = ring.nf(sub[1]) if sub[0] == "sqrt" else None
    try:
        roots = [RF(ring, p.sqrt(), reduce=False) for p in (value.num, value.den)]
    except Exception:  # noqa: BLE001 - not a square (python-flint's DomainError), or no sqrt(…)
        raise Rejected(f"{show(sub, 60)} is not the square root of a square") from None
    num, den = (_abs(ring, r) for r in roots)
    return num * den.inverse()


def _abs(ring, r: RF) -> RF:
    """abs(r), r's leading coefficient taken out (abs(2a) is 2·abs(a), abs(3) is 3)."""
    lc = fraction(r.num.leading_coefficient())
    rest = r * ring.const(lc).inverse()
    return ring.const(abs(lc)) * (rest if rest.constant() is not None else ring.nf(("fn", "abs()", term_of(ring, rest))))


def _cases_same(ring, sub, env):
    _is(sub, ("cases",), "a case distinction")
    values = {ring.nf(v).key: ring.nf(v) for v, _ in sub[1:]}
    if len(values) != 1:
        raise Rejected("the cases do not all have one normal form")
    return next(iter(values.values()))


def _allowed(ring, sub, env):
    if sub[0] != "mask" or not env.scope.allowed(sub[1], sub[2]):
        raise Rejected(f"{show(sub, 60)} is not the mask entry of a key known to be allowed here")
    return ring.const(1)


RULES = {
    "unfold": ("a normalizer applied is its stated definition (a built-in's must be the foundation's, "
               "derive.replay.definitions.BUILTIN); sigmoid(a) = 1/(1 + exp(−a)), softplus(a) = log(1 + exp(a)), "
               "tanh(a) = (exp(2a) − 1)/(exp(2a) + 1)", _unfold),
    "bilinear": ("⟨Σ α_k a_k, Σ β_l b_l⟩ = Σ α_k β_l ⟨a_k, b_l⟩ and ⟨a, b⟩ = ⟨b, a⟩", _bilinear),
    "exp_add": ("exp(a + b + …) = exp(a)·exp(b)·…, each summand split into its terms c·m/D over its "
                "denominator D: exp(c·m/D) = exp(m/D)^c for an integer c", _exp_add),
    "log_exp": ("log(exp(a)) = a", _log_exp),
    "exp_log": ("exp(k·log(a)) = a^k for an integer k (log(a) is defined: a > 0 is a side condition)", _exp_log),
    "pow_exp": ("a^b = exp(b·log(a)) (a > 0 is a side condition)", _pow_exp),
    "sum_linear": ("Σ_t (a + b) = Σ_t a + Σ_t b", _sum_linear),
    "sum_factor": ("Σ_t c·f(t) = c·Σ_t f(t) when c does not involve t (c's divisors must be nonzero outside "
                   "the sum, which may be empty: a side condition there)", _sum_factor),
    "sum_empty": ("Σ_{t=a}^{a−1} f(t) = 0", _sum_empty),
    "sum_split": ("Σ_{t=a}^{c} f(t) = Σ_{t=a}^{b} f(t) + Σ_{t=b+1}^{c} f(t) (Karr's convention: for all a, b, c)",
                  _sum_split),
    "cases_same": ("a case distinction whose cases have one normal form is that normal form", _cases_same),
    "sign": ("abs(a) = a when a ≥ 0, −a when a ≤ 0; max (min) of arguments one of which is ≥ (≤) every "
             "other is that argument (the signs by the sign rules where the term occurs; in a limit's chain, "
             "for every large enough value of its variable)", _by_sign),
    "homogeneous": ("max(c·a, c·b) = c·max(a, b), min alike, abs(c·a) = c·abs(a), for a common factor c > 0 "
                    "(a product of positive atoms)", _homogeneous),
    "sqrt_square": ("sqrt(a²/b²) = abs(a)/abs(b)", _sqrt_square),
    "allowed": ("M[i, k] = 1 for a key k allowed where the entry occurs (by the claim's statement, the mask's "
                "condition, or a factor M[i, k] around it)", _allowed),
}


def check_step(ring, rule: str, sub, to, env: Env):
    """Accept the rewrite of ``sub`` into ``to`` by ``rule`` (else raise :class:`Rejected` saying why);
    returns the term whose divisors, logs and roots the step also needs defined where ``sub`` is
    (the definition unfolded, a factor taken out of a sum), or None."""
    if rule not in RULES:
        raise Rejected(f"unknown rule {rule!r}")
    extra = ring.names(ring.nf(to)) - ring.names(ring.nf(sub)) - ({"i", "n"} if rule == "unfold" else set())
    if extra and rule != "sum_split":
        raise Rejected(f"the result names {', '.join(sorted(extra))}, which the rewritten term "
                       f"{show(sub, 80)} does not (a factor that depends on a sum's index taken out of it?)")
    env.to = to
    want = RULES[rule][1](ring, sub, env)
    want, witness = want if isinstance(want, tuple) else (want, None)
    if ring.nf(to).key != want.key:
        raise Rejected(f"the stated result {show(to, 120)} is not what the rule gives for {show(sub, 120)}")
    return witness


def term_of(ring, value: RF):
    """A term whose normal form is ``value`` (for the engine's certificates and the checker's messages)."""
    num = _poly_term(ring, value.num)
    return num if value.den.is_one() else ("mul", num, ("pow", _poly_term(ring, value.den), ("num", Fraction(-1))))


def _poly_term(ring, p):
    out = []
    for exps, c in sorted(p.to_dict().items(), reverse=True):
        factors = [ring.terms[v] if e == 1 else ("pow", ring.terms[v], ("num", Fraction(int(e))))
                   for v, e in enumerate(exps) if e]
        if fraction(c) != 1 or not factors:
            factors.insert(0, ("num", fraction(c)))
        out.append(factors[0] if len(factors) == 1 else ("mul", *factors))
    return out[0] if len(out) == 1 else ("add", *out) if out else ("num", Fraction(0))
