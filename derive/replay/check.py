"""Replaying a certificate: read it, re-apply each step, decide the claim, discharge each condition.

A certificate (JSON, ``docs/spec.md`` has the format and its schema) states a claim about two
terms, the chain of steps (each one rule of :data:`derive.replay.rules.RULES` at one place of
one side), and the side conditions. Replay:

1. every step is checked as its rule requires and applied;
2. the claim is decided exactly: an identity when both sides have one normal form (rational
   arithmetic over the atoms, :mod:`derive.replay.algebra`); a limit as τ → ∞ when the
   normal form is a fraction of polynomials in exp(τ) whose leading coefficients decide it; an
   instance when both sides, evaluated in ball arithmetic at exact inputs, certainly differ;
3. every divisor, log argument and sqrt argument of every term of the chain (the sides, and each
   step's result) must be among the listed side conditions (nonzero, positive, nonnegative),
   and each listed condition is discharged by the sign rules of :mod:`derive.replay.signs`.

Any failure is a :class:`~derive.replay.algebra.Rejected` naming the step or the condition.
"""

from __future__ import annotations

from fractions import Fraction

from derive.replay.algebra import RF, Rejected, Ring
from derive.replay.rules import RULES, Env, check_step, term_of
from derive.replay.signs import NEG, NONNEG, NONPOS, NONZERO, POS, Scope, enter
from derive.replay.terms import BINDERS, Malformed, children, get, put, read, show, subst, write

__all__ = ["FORMAT", "Rejected", "conditions", "replay"]

FORMAT = "derive-certificate/1"
TYPES = ("real", "positive", "negative", "nonnegative", "nonzero", "position", "count", "natural", "integer")
KINDS = ("identity", "limit", "instance", "same_keys")
_NEED = {"nonzero": NONZERO, "positive": POS, "nonnegative": NONNEG, "nonempty": 0}
_WORD = {"nonzero": "≠ 0", "positive": "> 0", "nonnegative": "≥ 0", "nonempty": "is over a nonempty set of keys"}


def _field(d: dict, key: str, types):
    if not isinstance(d, dict) or key not in d or not isinstance(d[key], types):
        raise Malformed(f"the certificate needs {key!r} ({getattr(types, '__name__', types)})")
    return d[key]


def replay(cert: dict) -> dict:
    """Replay one certificate: ``{"steps": …, "conditions": …}`` when it replays; raises
    :class:`Rejected` (it does not) or :class:`Malformed` (it is not a certificate)."""
    claim, sides, ring, scope, defs = _read(cert)
    if claim["kind"] == "instance":
        from derive.replay.evaluate import differ

        return {"bits": differ(sides["lhs"], sides["rhs"], _field(claim, "instance", dict), defs)}
    if "same_keys" in claim or claim["kind"] == "same_keys":
        _same_keys(_field(claim, "same_keys", dict), scope)
    if claim["kind"] == "same_keys":
        return {"steps": 0, "conditions": 0}
    needed = _chain(cert, sides, ring, defs, scope, claim)
    _decide(claim["kind"], claim, sides, ring, scope)
    listed = {}
    for k, c in enumerate(_field(cert, "conditions", list), 1):
        if not isinstance(c, dict):
            raise Malformed(f"condition {k} is not an object")
        cond = (_field(c, "kind", str), read(_field(c, "term", list)),
                tuple((_name(b[0]), read(b[1]), read(b[2])) for b in _field(c, "binders", list)),
                tuple(read(g) for g in _field(c, "guards", list)))
        if cond[0] not in _NEED:
            raise Malformed(f"condition {k}: unknown kind {cond[0]!r}")
        listed[_key(cond, ring)] = (k, cond)
    for key, cond in needed.items():
        if key not in listed:
            raise Rejected(f"the certificate does not list the side condition {_text(cond)}")
    later = Eventually(claim["var"] if claim["kind"] == "limit" else None, ring, defs)
    for k, cond in listed.values():
        kind_, term, binders, guards = cond
        here = scope.inside(binders, guards)
        if kind_ == "nonempty":
            if not here.nonempty(term[1], term[2], term[3], _guards(term[4])):
                raise Rejected(f"side condition {k} does not hold on the domain: {_text(cond)}")
            continue
        if not (here.sign(term) & _NEED[kind_] or
                here.sign(term_of(ring, ring.nf(later.rewrite(term, here, 32)))) & _NEED[kind_] or
                later.var is not None and later(term, here) & _NEED[kind_]):
            raise Rejected(f"side condition {k} does not hold on the domain: {_text(cond)}")
    return {"steps": len(cert["steps"]), "conditions": len(listed)}


def _name(v) -> str:
    if not isinstance(v, str):
        raise Malformed(f"a binder's name must be text, got {v!r}")
    return v


def _read(cert: dict):
    if _field(cert, "format", str) != FORMAT:
        raise Malformed(f"unknown certificate format {cert.get('format')!r} (expected {FORMAT!r})")
    claim = _field(cert, "claim", dict)
    if _field(claim, "kind", str) not in KINDS:
        raise Malformed(f"unknown claim kind {claim['kind']!r}")
    types = _field(cert, "symbols", dict)
    if any(t not in TYPES for t in types.values()):
        raise Malformed(f"a symbol type is not one of {', '.join(TYPES)}")
    mask = cert.get("mask")
    if mask is not None:
        mask = (_field(mask, "key", str), read(_field(mask, "condition", list)))
    allowed = cert.get("allowed", [])
    if not isinstance(allowed, list):
        raise Malformed("'allowed' is a list of keys")
    scope = Scope(types, mask, cert.get("rows") == "nonempty", allowed=tuple(read(a) for a in allowed))
    sides = {"lhs": read(_field(claim, "lhs", list)), "rhs": read(_field(claim, "rhs", list))}
    return claim, sides, Ring(), scope, _field(cert, "definitions", dict)


def _chain(cert: dict, sides: dict, ring: Ring, defs: dict, scope: Scope, claim: dict) -> dict:
    """Apply the steps to ``sides`` (checked); the side conditions the chain needs, by key."""
    needed: dict = {}
    later = Eventually(_field(claim, "var", str), ring, defs) if claim["kind"] == "limit" else None
    for side in sides.values():
        _collect(side, (), (), needed, ring)
    for k, s in enumerate(_field(cert, "steps", list), 1):
        side, at, rule = _field(s, "side", str), _field(s, "at", list), _field(s, "rule", str)
        if side not in sides:
            raise Malformed(f"step {k}: side must be lhs or rhs")
        to = read(_field(s, "result", list))
        where = f"step {k} ({rule} on the {side} at {at})"
        sub = get(sides[side], at)
        binders, guards = _context(sides[side], at, where)
        try:
            witness = check_step(ring, rule, sub, to, Env(defs, scope.inside(binders, guards), eventually=later))
        except Rejected as exc:
            raise Rejected(f"{where}: {exc}") from None
        # a divisor, log or root around the step whose argument still applied a normalizer had no
        # condition yet (_need): it gets one now (any other keeps its value through the step)
        renew = [depth for depth in range(len(at)) if at[depth] == 1 and
                 get(sides[side], at[:depth])[0] in ("pow", "log", "sqrt") and _has(get(sides[side], at[:depth + 1]), "apply")]
        sides[side] = put(sides[side], at, to)
        _collect(to, binders, guards, needed, ring)
        if witness is not None:
            _collect(witness, binders, guards, needed, ring)
        for depth in renew:
            _need(get(sides[side], at[:depth]), *_context(sides[side], at[:depth], where), needed, ring)
    return needed


def _same_keys(masks: dict, scope: Scope) -> None:
    """Two masks' conditions on (i, KEY) hold at the same positions: neither holds where the other
    does not, each such case of comparisons infeasible as difference constraints over the integers."""
    key = _field(masks, "key", str)
    a, b = (_unabs(read(_field(masks, side, list))) for side in ("lhs", "rhs"))
    for x, y in ((a, b), (b, a)):
        for case in _cases(("and", x, ("not", y))):
            if not scope.inside(guards=[("ind", c) for c in case]).infeasible():
                raise Rejected(f"the masks' conditions are not shown to allow the same keys {key}: "
                               f"{show(x, 80)} holds where {show(y, 80)} may not")


def _unabs(c):
    """|e| < w written as −w < e < w (and ≤, >, ≥ alike)."""
    if c[0] in ("and", "or", "not"):
        return (c[0], *map(_unabs, c[1:]))
    if c[0] == "cmp" and c[2][0] == "fn" and c[2][1] == "abs()":
        op, e, w = c[1], c[2][2], c[3]
        neg = ("mul", ("num", Fraction(-1)), w)
        if op in ("<", "<="):
            return ("and", ("cmp", op, e, w), ("cmp", {"<": ">", "<=": ">="}[op], e, neg))
        if op in (">", ">="):
            return ("or", ("cmp", op, e, w), ("cmp", {">": "<", ">=": "<="}[op], e, neg))
    return c


_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def _cases(c, negate: bool = False) -> list:
    """A condition (negated) as a disjunction of conjunctions of comparisons, none of them !=."""
    h = c[0]
    if h in ("true", "false"):
        return [[]] if (h == "true") != negate else []
    if h == "not":
        return _cases(c[1], not negate)
    if h in ("and", "or"):
        if (h == "or") != negate:
            return [x for a in c[1:] for x in _cases(a, negate)]
        out = [[]]
        for a in c[1:]:
            out = [x + y for x in out for y in _cases(a, negate)]
        return out
    op = _NEGATE[c[1]] if negate else c[1]
    if op == "!=":
        return [[("cmp", "<", c[2], c[3])], [("cmp", ">", c[2], c[3])]]
    return [[("cmp", op, c[2], c[3])]]


def _decide(kind: str, claim: dict, sides: dict, ring: Ring, scope: Scope) -> None:
    for name, t in sides.items():
        if _has(t, "apply"):
            raise Rejected(f"the {name} still applies a normalizer: its definition was never unfolded")
    a, b = ring.nf(sides["lhs"]), ring.nf(sides["rhs"])
    if kind == "identity":
        if a.key != b.key:
            raise Rejected(f"the two sides do not reduce to one normal form: their difference is "
                           f"{show(term_of(ring, a - b), 160)}")
        return
    var = _field(claim, "var", str)
    if ring.is_vector(a) or var in ring.names(b):
        raise Rejected("a limit is of a scalar, to a value free of its variable")
    limit = _limit(a, var, ring, scope)
    if limit.key != b.key:
        raise Rejected(f"the limit is {show(term_of(ring, limit), 120)}, not {show(sides['rhs'], 120)}")


def _lead(value: RF, var: str, ring: Ring) -> list:
    """[(order, leading coefficient)] of the numerator and denominator of ``value`` as polynomials
    in E = exp(var) and var, whose other atoms must be free of var; the order of E^a·var^b is
    (a, b): the larger grows faster as var → ∞."""
    ks = [next(v for v, x in enumerate(next(iter(ring.nf(a).num.to_dict()))) if x)
          for a in (("exp", ("sym", var)), ("sym", var))]
    value = value._up()
    lead = []
    for p in (value.num, value.den):
        terms = p.to_dict()
        for exps in terms:
            if any(x and v not in ks and var in ring.frees[v] for v, x in enumerate(exps)):
                raise Rejected(f"the expression involves {var} otherwise than through exp({var}) and {var}")
        top = max((exps[ks[0]], exps[ks[1]]) for exps in terms)
        coef = p.context().from_dict({tuple(0 if v in ks else x for v, x in enumerate(exps)): c for exps, c in
                                      terms.items() if (exps[ks[0]], exps[ks[1]]) == top})
        lead.append((top, RF(ring, coef, reduce=False)))
    return lead


class Eventually:
    """Signs for every large enough value of a limit's variable (``var``, None: not a limit): each
    term first rewritten by the rules exp_add, sum_linear, sum_factor and sign (:meth:`rewrite`,
    which also serves a side condition whose sign shows only once rewritten), then read off its
    leading coefficients."""

    def __init__(self, var: str, ring: Ring, defs: dict):
        self.var, self.ring, self.defs = var, ring, defs

    def __call__(self, term, scope: Scope) -> int:
        ring = self.ring
        value = ring.nf(self.rewrite(term, scope, 32))
        if value.is_zero():
            return NONNEG | NONPOS
        try:
            (_, cn), (_, cd) = _lead(value, self.var, ring)
        except Rejected:
            return 0
        fn, fd = scope.sign(term_of(ring, cn)), scope.sign(term_of(ring, cd))
        if not (fn & NONZERO and fd & NONZERO):
            return 0
        return POS | NONNEG | NONZERO if bool(fn & POS) == bool(fd & POS) else NEG | NONPOS | NONZERO

    def rewrite(self, t, scope: Scope, budget: int):
        if not isinstance(t, tuple) or not isinstance(t[0], str) or t[0] == "apply" or budget <= 0:
            return t
        out = list(t)
        for k, c, _ in children(t):
            if isinstance(c[0], str):
                out[k] = self.rewrite(c, scope, budget - 1)
        t = tuple(out)
        env = Env(self.defs, scope, eventually=self if self.var is not None else None)
        for rule in ("exp_add", "sum_linear", "sum_factor", "sign"):
            try:
                value = RULES[rule][1](self.ring, t, env)
            except Rejected:
                continue
            value = value[0] if isinstance(value, tuple) else value
            if value.key != self.ring.nf(t).key:
                return self.rewrite(term_of(self.ring, value), scope, budget - 1)
        return t


def _limit(value: RF, var: str, ring: Ring, scope: Scope) -> RF:
    """lim_{var → ∞} of a fraction of polynomials in E = exp(var) and var, whose other atoms are free of var."""
    if value.is_zero():
        return value
    (dn, cn), (dd, cd) = _lead(value, var, ring)
    if not scope.sign(term_of(ring, cd)) & NONZERO:
        raise Rejected(f"the leading coefficient {show(term_of(ring, cd), 100)} of the denominator in "
                       f"exp({var}) may be 0")
    if dn > dd:
        raise Rejected(f"the expression grows without bound as {var} → ∞")
    return ring.const(0) if dn < dd else cn * cd.inverse()


def _has(t, head: str) -> bool:
    return isinstance(t, tuple) and (t[0] == head or any(_has(a, head) for a in t[1:] if isinstance(a, tuple)))


def _context(term, path, where: str) -> tuple[tuple, tuple]:
    """(binders, guards) around the subterm at ``path``: the sums it is inside and the mask
    entries and brackets it is multiplied by."""
    binders, guards = [], []
    for k in path:
        if not isinstance(term, tuple) or term[0] == "apply":
            raise Rejected(f"{where}: a step inside a normalizer application (unfold it first)")
        if term[0] in BINDERS and k == 4:
            binders, guards = map(list, enter(tuple(binders), tuple(guards), (term[1], term[2], term[3])))
        if term[0] == "mul":
            guards += [a for j, x in enumerate(term[1:], 1) if j != k for a in _factors(x) if a[0] in ("mask", "ind")]
        term = term[k]
    return tuple(binders), tuple(guards)


def _collect(t, binders, guards, out: dict, ring: Ring) -> None:
    """Every divisor, log and sqrt argument and real-power base of ``t``, with where it occurs."""
    if not isinstance(t, tuple) or not isinstance(t[0], str):
        for a in t if isinstance(t, tuple) else ():
            _collect(a, binders, guards, out, ring)
        return
    h = t[0]
    _need(t, binders, guards, out, ring)
    if h == "apply":
        return
    if h in BINDERS:
        if h in ("max_t", "min_t"):  # a max or min over no key has no value
            cond = ("nonempty", t, binders, guards)
            out.setdefault(_key(cond, ring), cond)
        _collect(t[2], binders, guards, out, ring)
        _collect(t[3], binders, guards, out, ring)
        _collect(t[4], *enter(binders, guards, (t[1], t[2], t[3])), out, ring)
        return
    if h == "mul":
        factors = _factors(t)
        mine = tuple(a for a in factors if a[0] in ("mask", "ind"))
        for a in factors:
            _collect(a, binders, guards + tuple(g for g in mine if g is not a), out, ring)
        return
    for a in t[1:]:
        if isinstance(a, tuple):
            _collect(a, binders, guards, out, ring)


def _need(t, binders, guards, out: dict, ring: Ring) -> None:
    """The side condition of ``t`` if it is a divisor's power, a log, a root or a real power. An
    argument that still applies a normalizer has none yet: it has one once unfolded (a chain
    unfolds every application, and each step renews the conditions of the terms around it)."""
    h, need = t[0], None
    if h == "pow":
        e = t[2]
        need = ("nonzero" if e[1] < 0 else None) if e[0] == "num" and e[1].denominator == 1 else "positive"
    elif h in ("log", "sqrt"):
        need = "positive" if h == "log" else "nonnegative"
    if need and not _has(t[1], "apply"):
        cond = (need, t[1], binders, guards)
        out.setdefault(_key(cond, ring), cond)


def _guards(body) -> list:
    return [f for f in _factors(body) if f[0] in ("mask", "ind")]


def _factors(t) -> list:
    """The factors of a product, nested products flattened."""
    return [x for a in t[1:] for x in _factors(a)] if t[0] == "mul" else [t]


def _key(cond, ring: Ring) -> str:
    """A side condition up to the names of its binders (renamed #b0, #b1 … in order) and the
    form of its terms (their normal forms)."""
    kind, term, binders, guards = cond
    m, ranges = {}, []
    for k, (v, lo, hi) in enumerate(binders):
        ranges.append((ring.nf(subst(lo, m)).key, ring.nf(subst(hi, m)).key))
        m[v] = ("sym", f"#b{k}")
    nf = lambda x: ring.nf(subst(x, m)).key  # noqa: E731
    return repr((kind, nf(term), ranges, sorted(nf(g) for g in guards)))


def _text(cond) -> str:
    kind, term, binders, guards = cond
    where = "".join(f" for {v} = {show(lo, 40)}..{show(hi, 40)}" for v, lo, hi in binders)
    if guards:
        where += " where " + ", ".join(show(g, 40) for g in guards) + " = 1"
    return f"{show(term, 120)} {_WORD[kind]}{where}"


def conditions(cert: dict, ring: Ring | None = None) -> list[dict]:
    """The side conditions a certificate's chain needs (what the engine lists when it writes one;
    ``ring``: the atoms its search met, so that their normal forms are not computed again)."""
    claim, sides, fresh, scope, defs = _read(cert)
    ring = ring or fresh
    needed = _chain(cert, sides, ring, defs, scope, claim)
    return [{"kind": k, "term": write(t), "binders": [[v, write(lo), write(hi)] for v, lo, hi in b],
             "guards": [write(g) for g in gs]} for k, t, b, gs in needed.values()]
