"""The certificates of ``derive check``'s proofs, and the verdict that rests on them.

A proved claim gets a certificate of what it states, built from the spec as written: the
variant is built again with SymPy's automatic evaluation off (``x/x``, ``0/x``, ``x − x`` stay as
written), the normalizer is applied by name to its scores (the checker unfolds its definition
itself), and the mask is its condition. The certificate is replayed by the checker alone
(:mod:`derive.replay`): a proof whose certificate does not replay is undecided, "the proof did not
replay: …"; a claim the checker's language cannot state (an inequality, a mask decided cell by
cell, max or abs) stays proved, labelled "proved (not replayed)".

* invariant, output_invariant, output_shift, equivalent, row_constant, equivalent_to: an identity
  of the two weights (or outputs, or values of EXPR at two keys) compared;
* depends: an instance, the certified counterexample of the invariance, evaluated again by the
  checker in ball arithmetic;
* shift_invariant, weights_sum_to_one, can_abstain: the normalizer property's own certificate
  (:mod:`derive.normalizers.certify`); weights_sum_to_one proved on the rows of the spec's mask:
  the identity Σ_u p_u = 1 under the mask, on any row.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from derive.certify.seal import REJECTED, certificate, outside, seal
from derive.certify.sympy_terms import Outside, Terms, condition_term
from derive.claims.result import Outcome
from derive.model.attention import i, j

# The keys a weight's scores and an output's sum are written over: names no declared symbol has
T, U = (sp.Symbol(f"{s}#", integer=True, positive=True) for s in "tu")
from derive.prove.verdict import PROVED, UNDECIDED

__all__ = ["certify"]


def certify(ctx, claim, out: Outcome) -> Outcome:
    """``out`` with its seal; a proof whose certificate does not replay is undecided."""
    if out.status != PROVED:
        return out
    s = out.seal
    if s is None:
        try:
            build = _BUILD.get(claim.kind, _none)
            s = build(ctx, claim, out) if build is _row_constant else build(ctx, claim)
        except Outside as exc:
            s = outside(str(exc))
    if s.status == REJECTED:
        return Outcome(UNDECIDED, f"the proof did not replay: {s.reason}", out.steps, check=out.check)
    out.seal = s
    return out


def _none(ctx, claim):
    return outside(f"{claim.kind} is not stated in the checker's language (an inequality or a decision on masks)")


class _Side:
    """A variant built as written (no automatic evaluation), and its parts as terms."""

    def __init__(self, tr: Terms, spec, rename=None, zero=None, change=None):
        from derive.claims.variant import Variant

        self.tr, self.spec = tr, spec
        self.change = change or (lambda e: e)  # applied to every part before it is written
        try:
            with sp.evaluate(False):
                self.v = Variant(spec, rename)
                if zero is not None:
                    self.v = self.v.with_zero(zero)
        except Exception:  # noqa: BLE001 - an assumption SymPy cannot query on an unevaluated tree:
            # the variant as SymPy builds it (the spec's loader has refused a score with no value
            # on a whole row; a normalizer's formula is read by the checker itself, as written)
            self.v = Variant(spec, rename)
            if zero is not None:
                self.v = self.v.with_zero(zero)

    def at(self, f, key):
        with sp.evaluate(False):
            return self.tr.term(self.change(f(key)), frozenset({T, U}))

    def weight(self, key=j, score=None):
        v = self.v
        lam = ("lam", T.name, self.at(lambda k: v.score(k, score), T))
        lam2 = None if v.score2_j is None else ("lam", T.name, self.at(v.score2, T))
        params = tuple(("param", p, self.at(lambda _, x=x: x, key)) for p, x in sorted(v.params.items()))
        return ("apply", self.spec.normalizer, self.tr.term(key, frozenset({T, U})), lam, lam2, params)

    def output(self):
        body = ("mul", self.weight(U), self.at(self.v.value, U))
        out = ("sum", U.name, ("num", Fraction(1)), ("sym", "n"), body)
        if self.v.extra is not None:
            out = ("add", out, self.at(lambda _: self.v.extra_weight() * self.v.extra, j))
        return out

    def definitions(self) -> dict:
        from derive.normalizers.registry import get

        return {self.spec.normalizer: get(self.spec.normalizer).formula}

    def mask(self):
        cond = getattr(self.v.mask, "condition", None)
        try:
            return {"key": "j", "condition": _write(condition_term(self.tr, cond) if cond is not None else ("true",))}
        except Outside:
            return None


def _write(term):
    from derive.replay.terms import write

    return write(term)


def _identity(ctx, claim, sides, lhs, rhs, defs=None, mask="same", keys=None):
    a = sides[0]
    for s in sides:
        s.tr.types.update({"i": "position", "j": "position", "n": "count"})
    for name in _poles(ctx, claim):  # the claim speaks of where the score has a value
        if a.tr.types.get(name) == "real":
            a.tr.types[name] = "nonzero"
    m = a.mask() if mask == "same" else mask
    cert = certificate("identity", f"{claim.name}: {claim.text}", lhs, rhs, a.tr.types, mask=m, rows="any",
                       definitions=defs or a.definitions(), extra={"same_keys": keys} if keys else None)
    return seal(cert)


def _poles(ctx, claim) -> set[str]:
    """The symbols whose zero is a pole of the score, score2, the claim's EXPR or (for a claim on
    the outputs) the value as written: a divisor that is one symbol, which every proof keeps
    (derive.claims.score_domain leaves no claim proved where a divisor's zero is not a pole)."""
    from derive.language.translate import translate

    spec, out = ctx.spec, set()
    value = spec.value if claim.kind.startswith("output") else None
    for node in (spec.score, spec.score2, value, getattr(claim, "node", None)):
        if node is None:
            continue
        guards: list = []
        try:
            translate(node, spec.binds(), guards=guards)
        except Exception:  # noqa: BLE001 - a node that is not an expression of the spec: no pole
            continue
        out |= {b.name for kind, b in guards if kind == "nonzero" and isinstance(b, sp.Symbol)}
    return out


def _pair(ctx, claim, change=None):
    from derive.claims.variant import fresh

    tr = Terms()
    a, b = _Side(tr, ctx.spec, change=change), _Side(tr, ctx.spec, {claim.arg: fresh(claim.arg)}, change=change)
    if str(a.v.mask) != str(b.v.mask):
        raise Outside("changing the name changes the mask")
    return a, b


def _invariant(ctx, claim):
    a, b = _pair(ctx, claim)
    return _identity(ctx, claim, (a, b), a.weight(), b.weight())


def _output_invariant(ctx, claim):
    a, b = _pair(ctx, claim)
    return _identity(ctx, claim, (a, b), a.output(), b.output())


def _output_shift(ctx, claim):
    tr = Terms()
    a, z = _Side(tr, ctx.spec), _Side(tr, ctx.spec, zero=claim.arg)
    vec = a.at(lambda _: a.v.binds[claim.arg].obj, j)
    return _identity(ctx, claim, (a, z), a.output(), ("add", z.output(), vec))


def _equivalent(ctx, claim):
    a = _Side(Terms(), ctx.spec)
    with sp.evaluate(False):
        other = a.v.expr(claim.node)
    return _identity(ctx, claim, (a,), a.weight(), a.weight(score=other))


def _row_constant(ctx, claim, out=None):
    from derive.claims.core import two_keys

    if out is not None and "under the mask" in out.reason:
        return outside("constant on the keys a mask allows: the checker uses no mask's condition in an identity")
    a = _Side(Terms(), ctx.spec)
    one, two = two_keys(set(ctx.spec.symbols))
    with sp.evaluate(False):
        e = a.v.expr(claim.node)
        lhs, rhs = a.tr.term(e.xreplace({j: one})), a.tr.term(e.xreplace({j: two}))
    return _identity(ctx, claim, (a,), lhs, rhs)


def _weights_sum_to_one(ctx, claim):
    """Σ_u p_u = 1 for the spec's normalizer under its mask, on any row (a row with no allowed key
    sums to 0: the checker must show each row has one), when proved otherwise than as the
    normalizer's property (which carries its own certificate)."""
    a = _Side(Terms(), ctx.spec)
    total = ("sum", U.name, ("num", Fraction(1)), ("sym", "n"), a.weight(U))
    return _identity(ctx, claim, (a,), total, ("num", Fraction(1)))


def _equivalent_to(ctx, claim):
    from derive.claims.modifiers import _other

    other = _other(ctx, claim)
    if ctx.spec.flex is not None and ctx.spec.flex.data or other.flex is not None and other.flex.data:
        raise Outside("a traced table's entries are not in the checker's language")
    from derive.claims.modifiers import one_symbol_per_name

    one, _ = one_symbol_per_name(ctx.base.weight(), _Side(Terms(), other).v.weight())
    same = lambda e: e.xreplace(one) if one else e  # noqa: E731 - a name declared in both is one parameter
    tr = Terms()
    a, b = _Side(tr, ctx.spec, change=same), _Side(tr, other, change=same)
    keys = _same_keys(a.mask(), b.mask())
    return _identity(ctx, claim, (a, b), a.weight(), b.weight(), {**a.definitions(), **b.definitions()},
                     a.mask(), keys)


def _same_keys(ma, mb) -> dict | None:
    """The masks compared (the weights are compared under one mask table M), or None when one."""
    if ma is None or mb is None:
        raise Outside("a mask's condition is not in the checker's language")
    if ma == mb:
        return None
    _differences(ma["condition"]), _differences(mb["condition"])
    return {"key": "j", "lhs": ma["condition"], "rhs": mb["condition"]}


def _differences(cond) -> None:
    """The checker decides masks whose comparisons are of differences of positions (i − j < 3, j ≤ 4):
    any other (a square, a product) is outside its language."""
    from derive.replay.check import _cases, _unabs
    from derive.replay.signs import Scope
    from derive.replay.terms import read

    scope = Scope({"i": "position", "j": "position", "n": "count"}, None, False)
    for negate in (False, True):
        for case in _cases(_unabs(read(cond)), negate):
            if any(not scope._constraint(c[2], c[3], 0) for c in case if c[1] != "!="):
                raise Outside("a mask's condition compares more than differences of positions (decided cell by "
                              "cell on the integers, which the checker does not replay)")


def _mask_equivalent(ctx, claim):
    from derive.claims.modifiers import _other_mask

    mb, data = _other_mask(ctx, claim)
    if data or getattr(ctx.spec.mask, "data", None):
        raise Outside("a traced table's entries are not in the checker's language")
    tr = Terms()
    cond = lambda m: _write(condition_term(tr, m.condition) if m.condition is not None else ("true",))  # noqa: E731
    keys = {"key": "j", "lhs": cond(ctx.spec.mask), "rhs": cond(mb)}
    _differences(keys["lhs"]), _differences(keys["rhs"])
    tr.types.update({"i": "position", "j": "position", "n": "count"})
    cert = certificate("same_keys", f"{claim.name}: {claim.text}", ("num", Fraction(0)), ("num", Fraction(0)),
                       tr.types, rows="any", extra={"same_keys": keys}, chain=False)
    return seal(cert)


def _depends(ctx, claim):
    inv = ctx._inv.get(claim.arg)
    w = inv.witness if inv is not None else None
    if not w or "head" in w.get("values", {}):
        raise Outside("the counterexample reads a traced table")
    from derive.claims.numeric import instantiate

    a, b = _pair(ctx, claim, instantiate)  # each opaque function its family member, as the search drew
    if any(f"{fn}(" in a.definitions()[ctx.spec.normalizer] for fn in ("abs", "relu", "max", "min", "prod_t")):
        raise Outside("the checker evaluates no max, min, abs or product at an instance")
    lhs, rhs = a.weight(), b.weight()
    inst = _instance(w, a.v.mask, (lhs, rhs))
    cert = certificate("instance", f"{claim.name}: {claim.text}", lhs, rhs, a.tr.types, mask=a.mask(), rows="any",
                       definitions=a.definitions(), extra={"instance": inst}, chain=False)
    return seal(cert)


def _instance(w: dict, mask, terms) -> dict:
    """The counterexample as the checker reads it: exact values, the mask as a table."""
    size = int(w["n"])
    cond = getattr(mask, "condition", None)
    rows = []
    for r in range(1, size + 1):
        row = []
        for c in range(1, size + 1):
            ok = sp.true if cond is None else cond.xreplace({i: r, j: c})
            if ok not in (sp.true, sp.false):
                raise Outside("the mask is not decided at the counterexample's positions")
            row.append(int(ok is sp.true))
        rows.append(row)
    values = {k: str(v) for k, v in w["indices"].items()}
    vectors = {}
    for name, v in w["values"].items():
        if isinstance(v, list):
            vectors[name] = _exact(v)
        else:
            values[name] = _exact(v)
    inst = {"n": size, "d": int(w["d"]), "values": values, "vectors": vectors, "tables": {}, "mask": rows,
            "functions": {}}
    missing = _missing(terms, inst)
    if missing:
        raise Outside(f"the counterexample gives no value of {', '.join(sorted(missing))}")
    return inst


def _exact(v):
    if isinstance(v, list):
        return [_exact(x) for x in v]
    return str(Fraction(str(v)))


def _missing(terms, inst) -> set:
    from derive.replay.terms import free

    out = set()

    def walk(t):
        if isinstance(t, tuple) and t and isinstance(t[0], str):
            if t[0] == "vec" and t[1] not in inst["vectors"]:
                out.add(t[1])
            if t[0] in ("at", "fn", "vfn", "cases") or t[0] == "rot" and inst["d"] != 1:
                out.add({"rot": "a rotation (d > 1)", "cases": "a case distinction"}.get(t[0], t[1]))
        if isinstance(t, tuple):
            for x in t:
                walk(x)

    for term in terms:
        walk(term)
        out |= {s for s in free(term) if s not in inst["values"] and s not in ("n", "d")}
    return out


_BUILD = {"invariant": _invariant, "output_invariant": _output_invariant, "output_shift": _output_shift,
          "equivalent": _equivalent, "row_constant": _row_constant, "equivalent_to": _equivalent_to,
          "depends": _depends, "mask_equivalent": _mask_equivalent, "weights_sum_to_one": _weights_sum_to_one}
