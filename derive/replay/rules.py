"""The rules, all of them: a step rewrites one subterm by one rule, and the checker accepts the
step when the result the certificate states has the normal form (:mod:`derive.replay.algebra`)
that the rule gives, and names no symbol the subterm did not (a factor that depends on a sum's
index cannot leave the sum). Each rule's value is computed here from the subterm alone.

RULES maps a name to (statement, function of the subterm → normal form of the result).
"""

from __future__ import annotations

from fractions import Fraction

from derive.replay.algebra import RF, Rejected, Vec
from derive.replay.definitions import BUILTIN, FUNCTIONS, Outside, unfold
from derive.replay.signs import NONNEG, NONPOS, POS
from derive.replay.terms import free, show

__all__ = ["RULES", "check_step", "term_of"]


def _unfold(ring, sub, env):
    if sub[0] in FUNCTIONS:
        body = FUNCTIONS[sub[0]](sub[1])
        return ring.nf(body), body
    if sub[0] != "apply":
        raise Rejected(f"{show(sub, 60)} is neither a normalizer applied nor sigmoid, softplus or tanh")
    name = sub[1]
    text = env.defs.get(name)
    if text is None:
        raise Rejected(f"the certificate states no definition of {name!r}")
    if name in BUILTIN and text != BUILTIN[name]:
        raise Rejected(f"the definition stated for the built-in {name!r} is not its definition {BUILTIN[name]!r}")
    try:
        body = unfold(text, sub[2], sub[3], sub[4], {k: v for _, k, v in sub[5]})
    except Outside as exc:
        raise Rejected(str(exc)) from None
    return ring.nf(body), body


def _bilinear(ring, sub, env):
    if sub[0] != "dot":
        raise Rejected(f"{show(sub, 60)} is not an inner product")
    a, b = ring.vector(sub[1]), ring.vector(sub[2])
    out = ring.const(0)
    for ka, ca in a.items():
        for kb, cb in b.items():
            out = out + ca * cb * ring.nf(("dot", ring.terms[ka], ring.terms[kb]))
    return out


def _terms(ring, value: RF):
    """The terms c·m/D of a fraction (N = Σ c·m): (coefficient, monomial RF, D RF)."""
    ctx = value.num.context()
    den = RF(ring, value.den, reduce=False)
    for exps, c in value.num.to_dict().items():
        yield Fraction(int(c.p), int(c.q)), RF(ring, ctx.from_dict({tuple(exps): 1}), reduce=False), den


def _exp_add(ring, sub, env):
    if sub[0] != "exp":
        raise Rejected(f"{show(sub, 60)} is not exp(…)")
    out = ring.const(1)
    summands = sub[1][1:] if sub[1][0] == "add" else (sub[1],)
    for s in summands:  # each summand's terms over its own denominator
        for c, m, den in _terms(ring, ring.scalar(s)):
            if c.denominator == 1:
                out = out * ring.nf(("exp", term_of(ring, m * den.inverse()))) ** int(c)
            else:
                out = out * ring.nf(("exp", term_of(ring, ring.const(c) * m * den.inverse())))
    return out


def _log_exp(ring, sub, env):
    if sub[0] != "log" or sub[1][0] != "exp":
        raise Rejected(f"{show(sub, 60)} is not log(exp(…))")
    return ring.scalar(sub[1][1])


def _exp_log(ring, sub, env):
    terms = list(_terms(ring, ring.scalar(sub[1]))) if sub[0] == "exp" else []
    if len(terms) == 1:
        c, m, den = terms[0]
        powers = [(v, e) for v, e in enumerate(next(iter(m.num.to_dict()))) if e]
        if c.denominator == 1 and den.num.is_one() and len(powers) == 1 and powers[0][1] == 1 and \
                ring.terms[powers[0][0]][0] == "log":
            return ring.scalar(ring.terms[powers[0][0]][1]) ** int(c)
    raise Rejected(f"{show(sub, 60)} is not exp(k·log(a)) for an integer k")


def _pow_exp(ring, sub, env):
    if sub[0] != "pow":
        raise Rejected(f"{show(sub, 60)} is not a power")
    return ring.nf(("exp", ("mul", sub[2], ("log", sub[1]))))


def _sum_of(ring, sub):
    if sub[0] != "sum":
        raise Rejected(f"{show(sub, 60)} is not a sum")
    return sub[1], ring.nf(sub[4])


def _pieces(ring, body):
    """body = Σ pieces (each c·m/D, times its vector atom for a vector body): (vector atom or None, RF)."""
    if isinstance(body, RF):
        return [(None, ring.const(c) * m * den.inverse()) for c, m, den in _terms(ring, body)]
    return [(k, ring.const(c) * m * den.inverse()) for k, coef in sorted(body.items())
            for c, m, den in _terms(ring, coef)]


def _with(ring, k, scalar_term):
    return scalar_term if k is None else ("mul", scalar_term, ring.terms[k])


def _sum_linear(ring, sub, env):
    v, body = _sum_of(ring, sub)
    out = None
    for k, piece in _pieces(ring, body):
        part = ring.nf(("sum", v, sub[2], sub[3], _with(ring, k, term_of(ring, piece))))
        out = part if out is None else _add(out, part)
    return out if out is not None else ring.const(0)


def _add(a, b):
    if isinstance(a, RF):
        return a + b
    from derive.replay.algebra import _sum

    return _sum(a.ring, [a, b])


def _sum_factor(ring, sub, env):
    v, body = _sum_of(ring, sub)
    pieces = _pieces(ring, body)
    if len(pieces) != 1:
        raise Rejected("the sum's body is not one term (apply sum_linear first)")
    (k, piece), = pieces
    (c, m, den), = _terms(ring, piece)
    out, inner = ring.const(c), ring.const(1)
    for var, e in enumerate(next(iter(m.num.to_dict()))):
        if e:
            x = RF(ring, ring.ctx.gen(var), reduce=False) ** int(e)
            if v in ring.frees[var]:
                inner = inner * x
            else:
                out = out * x
    content, factors = den.num.factor()
    out = out * ring.const(Fraction(int(content.p), int(content.q))).inverse()
    for f, e in factors:  # each factor of the denominator in or out, as it involves the index
        x = RF(ring, f, reduce=False) ** -int(e)
        if ring.depends(x, v):
            inner = inner * x
        else:
            out = out * x
    if k is not None and v not in ring.frees[k]:  # a vector free of the index leaves the sum too
        vec = Vec({k: out})
        vec.ring = ring
        return _scale(vec, ring.nf(("sum", v, sub[2], sub[3], term_of(ring, inner)))), term_of(ring, out)
    total = ring.nf(("sum", v, sub[2], sub[3], _with(ring, k, term_of(ring, inner))))
    # the factor now stands outside the sum: its divisors must be nonzero there (where the sum may be empty)
    return (out * total if isinstance(total, RF) else _scale(total, out)), term_of(ring, out)


def _scale(vec, c):
    out = Vec({k: x * c for k, x in vec.items() if not (x * c).is_zero()})
    out.ring = vec.ring
    return out


def _sum_empty(ring, sub, env):
    _sum_of(ring, sub)
    if not (ring.scalar(sub[3]) - ring.scalar(sub[2]) + ring.const(1)).is_zero():
        raise Rejected(f"the range of {show(sub, 60)} is not empty (its upper end is not its lower end − 1)")
    return ring.const(0)


def _sum_split(ring, sub, env):
    to = env.to
    whole, parts = (sub, to) if sub[0] == "sum" else (to, sub)
    if not (whole[0] == "sum" and parts[0] == "add" and len(parts) == 3 and
            parts[1][0] == parts[2][0] == "sum"):
        raise Rejected("sum_split relates one sum and the sum of two sums")
    a, b = parts[1], parts[2]
    body = ring.nf(("sum", whole[1], ("num", Fraction(0)), ("num", Fraction(0)), whole[4]))
    same = all(ring.nf(("sum", s[1], ("num", Fraction(0)), ("num", Fraction(0)), s[4])) == body for s in (a, b))
    ends = ring.scalar(a[2]) == ring.scalar(whole[2]) and ring.scalar(b[3]) == ring.scalar(whole[3]) and \
        ring.scalar(b[2]) == ring.scalar(a[3]) + ring.const(1)
    if not (same and ends):
        raise Rejected("the two sums do not split the range of one sum of the same body at one point")
    return ring.nf(to)


def _allowed(ring, sub, env):
    if sub[0] != "mask" or not env.scope.allowed(sub[1], sub[2]):
        raise Rejected(f"{show(sub, 60)} is not the mask entry of a key known to be allowed here")
    return ring.const(1)


def _by_sign(ring, sub, env):
    if sub[0] != "fn" or sub[1] not in ("abs()", "max()", "min()"):
        raise Rejected(f"{show(sub, 60)} is not abs, max or min")
    sign = env.sign
    if sub[1] == "abs()":
        f = sign(sub[2])
        if f & NONNEG or f & NONPOS:
            return ring.nf(sub[2] if f & NONNEG else ("mul", ("num", Fraction(-1)), sub[2]))
    else:
        for a in sub[2:]:  # the argument that is ≥ (max) or ≤ (min) every other one
            if all(sign(("add", a, ("mul", ("num", Fraction(-1)), b))) & (NONNEG if sub[1] == "max()" else NONPOS)
                   for b in sub[2:] if b is not a):
                return ring.nf(a)
    raise Rejected(f"the sign that decides {show(sub, 60)} is not known here")


def _homogeneous(ring, sub, env):
    if sub[0] != "fn" or sub[1] not in ("abs()", "max()", "min()"):
        raise Rejected(f"{show(sub, 60)} is not abs, max or min")
    args = [ring.scalar(a) for a in sub[2:]]
    common = None  # the exponent of each positive atom in every nonzero argument
    for a in args:
        if a.is_zero():
            continue
        mine = {}
        for p, sign in ((a.num, 1), (a.den, -1)):
            exps = [e for e in p.to_dict()]
            for v in range(len(exps[0])):
                low = min(e[v] for e in exps)
                if low:
                    mine[v] = mine.get(v, 0) + sign * int(low)
        common = mine if common is None else {v: min(e, mine[v], key=abs) for v, e in common.items()
                                              if v in mine and (e > 0) == (mine[v] > 0)}
    factor = ring.const(1)
    for v, e in (common or {}).items():
        if env.scope.sign(ring.terms[v]) & POS:
            factor = factor * RF(ring, ring.ctx.gen(v), reduce=False) ** e
    if factor.constant() == 1:
        raise Rejected(f"the arguments of {show(sub, 60)} have no common positive factor")
    inner = ring.nf((sub[0], sub[1], *(term_of(ring, a * factor.inverse()) for a in args)))
    return factor * inner


def _sqrt_square(ring, sub, env):
    value = ring.scalar(sub[1]) if sub[0] == "sqrt" else None
    try:
        roots = [RF(ring, p.sqrt(), reduce=False) for p in (value.num, value.den)]
    except Exception:  # noqa: BLE001 - not a square (python-flint's DomainError), or no sqrt(…)
        raise Rejected(f"{show(sub, 60)} is not the square root of a square") from None
    num, den = (_abs(ring, r) for r in roots)
    return num * den.inverse()


def _abs(ring, r):
    """abs(r) with r's leading coefficient taken out of it (abs(2a) is 2·abs(a), abs(3) is 3)."""
    lc = _fraction(r.num.leading_coefficient())
    rest = r * ring.const(lc).inverse()
    return ring.const(abs(lc)) * (rest if rest.constant() is not None else ring.nf(("fn", "abs()", term_of(ring, rest))))


def _fraction(c) -> Fraction:
    return Fraction(int(c.p), int(c.q))


def _cases_same(ring, sub, env):
    if sub[0] != "cases":
        raise Rejected(f"{show(sub, 60)} is not a case distinction")
    values = {ring.nf(v).key: ring.nf(v) for v, _ in sub[1:]}
    if len(values) != 1:
        raise Rejected("the cases do not all have one normal form")
    return next(iter(values.values()))


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
    "sum_factor": ("Σ_t c·f(t) = c·Σ_t f(t) when c does not involve t", _sum_factor),
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


class Env:
    """What a rule may read besides the subterm: the stated definitions, the facts where the
    subterm occurs (a :class:`~derive.replay.signs.Scope`) and the step's stated result."""

    def __init__(self, defs: dict, scope, to=None, eventually=None):
        self.defs, self.scope, self.to, self.eventually = defs, scope, to, eventually

    def sign(self, t) -> int:
        """The sign flags of ``t`` here: always, or (in a limit's chain) for every large value."""
        f = self.scope.sign(t)
        return f | self.eventually(t, self.scope) if self.eventually is not None else f


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
    got = ring.nf(to)
    if type(got) is not type(want) or got.key != want.key:
        raise Rejected(f"the stated result {show(to, 120)} is not what the rule gives for {show(sub, 120)}")
    return witness


def term_of(ring, value):
    """A term whose normal form is ``value`` (for the engine's certificates and the checker's messages)."""
    if isinstance(value, Vec):
        parts = [("mul", term_of(ring, c), ring.terms[k]) for k, c in sorted(value.items())]
        return parts[0] if len(parts) == 1 else ("add", *parts) if parts else ("num", Fraction(0))
    num = _poly_term(ring, value.num)
    if value.den.is_one():
        return num
    return ("mul", num, ("pow", _poly_term(ring, value.den), ("num", Fraction(-1))))


def _poly_term(ring, p):
    out = []
    for exps, c in sorted(p.to_dict().items(), reverse=True):
        factors = [ring.terms[v] if e == 1 else ("pow", ring.terms[v], ("num", Fraction(int(e))))
                   for v, e in enumerate(exps) if e]
        coef = Fraction(int(c.p), int(c.q))
        if coef != 1 or not factors:
            factors.insert(0, ("num", coef))
        out.append(factors[0] if len(factors) == 1 else ("mul", *factors))
    return out[0] if len(out) == 1 else ("add", *out) if out else ("num", Fraction(0))


def markdown_table() -> str:
    """The rules as docs/spec.md lists them (``python -m derive.replay.rules`` rewrites that table)."""
    bar = "\\|"
    return "\n".join(["| rule | what it states |", "|---|---|"] +
                     [f"| `{name}` | {text.replace('|', bar)} |" for name, (text, _) in RULES.items()]) + "\n"


if __name__ == "__main__":  # rewrite the rules table of docs/spec.md between its markers
    from pathlib import Path

    path = Path("docs/spec.md")
    text = path.read_text(encoding="utf-8")
    start, end = "<!-- rules: generated from derive/replay/rules.py -->\n", "<!-- end of the rules -->"
    head, rest = text.split(start, 1)
    path.write_text(head + start + markdown_table() + end + rest.split(end, 1)[1], encoding="utf-8")
