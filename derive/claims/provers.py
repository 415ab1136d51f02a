"""The provers of the claim kinds on scores and normalizers; ``PROVERS[kind](ctx, claim) -> Outcome``
dispatches by the claim-kind record (:mod:`derive.spec.claim_kinds`), which names each prover."""

from __future__ import annotations

import sympy as sp

from derive.claims import show
from derive.claims.core import ON_ALLOWED, expand, expanded_by, key_free, key_terms, scores_lemma, settle, two_keys
from derive.claims.modifiers import row_constant as masked_row_constant
from derive.claims.normalizer import PROPERTY_INPUTS_APART, decide_property, property_outcome
from derive.normalizers.algebra import SIDES
from derive.claims.result import Outcome, step
from derive.claims.numeric import concrete_mask
from derive.claims.substitute import mentions
from derive.claims.variant import Variant, fresh
from derive.model.attention import display_apart, j
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED
from derive.settings import Settings

__all__ = ["PROVERS", "Context"]


class Context:
    def __init__(self, spec, cfg: Settings):
        self.spec, self.cfg = spec, cfg
        self.base = Variant(spec)
        self._inv: dict = {}

    def changed(self, name: str) -> Variant:
        return Variant(self.spec, {name: fresh(name)})


def delta_form(diff, variant, name: str):
    """``diff`` with the fresh copy NAME' written as NAME + ΔNAME (vectors and scalars)."""
    if diff is None or name not in variant.rename or name not in variant.binds:  # a traced table: as is
        return diff
    b = variant.binds[name]
    base = variant.spec.binds()[name].obj
    if b.kind == "vector":
        from derive.model.vectors import VectorSymbol

        sub = {b.obj: base + VectorSymbol(f"Δ{name}")}
    elif b.kind == "scalar":
        sub = {b.obj: base + sp.Symbol(f"Δ{name}", real=True)}
    else:
        return diff
    return expand(diff.xreplace(sub), Settings(time_limit=2.0)) or diff


def _why_second_row(va: Variant, vb: Variant, diff, name: str, cfg) -> str | None:
    """The reason when only a user normalizer's second score row y_j changes."""
    if diff != 0 or va.score2_j is None or vb.score2_j is None or not va.same_mask(vb):
        return None
    d2 = expand(vb.score2_j - va.score2_j, cfg)
    if d2 == 0:
        return None
    return f"the scores x_j do not change, but the second score row y_j changes by " \
        f"{show.math(delta_form(d2, vb, name)) if d2 is not None else 'a term'}"


def _why_scores(diff, name: str, norm: str, steps=(), mask="none", shifts: bool = False) -> str:
    """The reason a claim on the scores fails, from the difference the lemma examined: on the
    allowed keys when the lemma restricted it there (its step says so). ``shifts``: the normalizer
    is not shift-invariant, so a change that is the same for every key moves the weights too (a
    counterexample on one key shows that, not the key-dependent part): the reason says both."""
    if diff is None:
        return f"changing {name} changes the weights"
    if diff == 0:
        return f"the scores do not change, but the normalizer {norm} depends on {name}"
    where = f" on the keys the mask {mask} allows" if any(
        s.get("text") == ON_ALLOWED.format(mask=mask) for s in steps) else ""
    moving = key_terms(diff)
    also = (f"; and {norm} is not shift-invariant, so even a change that is the same for every key of the row "
            "moves the weights") if shifts else ""
    if moving != 0:
        if moving == diff:
            return f"the score changes by a key-dependent term{where}: {show.math(diff)}{also}"
        # common factors pulled out when that is shorter: factor_terms takes out the terms' common
        # content only (j·m − i·m → (j − i)·m); a polynomial factorisation (sp.factor) can take
        # hours on a score such as c**4096·⟨q, k⟩
        factored = sp.factor_terms(diff)
        whole = factored if len(sp.Add.make_args(factored)) < len(sp.Add.make_args(diff)) else diff
        return (f"the score changes by {show.math(whole)}{where}, which depends on the key through "
                f"{show.math(moving)}{also}")
    return f"the score changes by the row-constant term {show.math(diff)}{where}, and {norm} is not shift-invariant"


def _read_by_mask(ctx: Context, name: str) -> Outcome | None:
    """Undecided when ``name`` is a table the traced mask_mod reads: the variant with a fresh
    copy would keep the old mask, so comparing the two would say nothing about NAME."""
    flex = ctx.spec.flex
    if name not in ctx.spec.symbols and flex is not None and flex.mask_reads(name):
        return Outcome(UNDECIDED, f"{name} is read by the mask_mod: changing it changes the allowed keys, "
                                  "and invariance under a changing mask is not decided")
    return None


def _tables(ctx: Context, name: str | None = None) -> tuple | None:
    """(captured tables, heads) of the traced modifiers: a counterexample reads their real entries,
    except those of the table ``name`` a claim quantifies over (both copies are then functions)."""
    if ctx.spec.flex is None or not ctx.spec.flex.data:
        return None
    from derive.claims.modifiers import _heads

    skip = {name, f"{name}_h"}
    data = {k: v for k, v in ctx.spec.flex.data.items() if getattr(k, "name", k) not in skip}
    return data, _heads(ctx.spec)


def _pair(ctx: Context, name: str):
    """(base variant, the variant with NAME replaced), or the Outcome that says why the two
    cannot be compared: NAME read by a traced mask_mod, NAME named nowhere in the variant, or a
    substitution that changed nothing (then both sides would be one expression)."""
    masked = _read_by_mask(ctx, name)
    if masked is not None:
        return masked
    if name not in mentions(ctx.spec):
        return Outcome(UNDECIDED, f"{name} does not occur in this variant (its score, mask, normalizer or "
                                  f"value): the claim would compare the variant with itself, which says "
                                  f"nothing about {name}")
    va, vb = ctx.base, ctx.changed(name)
    if not va.reaches(vb):
        return _not_involved(va, name)
    return va, vb


def _not_involved(va: Variant, name: str) -> Outcome:
    """NAME is written in the spec, but the one substitution replaced nothing: every term that
    involves it is exactly 0 as read (``(10**7 + 1 - 10**7 - 1) * dot(k, b)``), so both variants
    are one expression and the claim holds for every value of NAME. Confirmed on the engine
    objects themselves: if NAME's object does occur in a part, the substitution missed it, which
    is an engine fault (raised, reported as an internal error), never a verdict."""
    from sympy.core.function import AppliedUndef

    from derive.model.vectors import VectorFunction

    b = va.binds.get(name)
    if b is None:  # a traced table the substitution did not reach
        raise RuntimeError(f"replacing the table {name} changed no part of the variant")

    def occurs(part) -> bool:
        if isinstance(part, (tuple, list)):
            return any(occurs(p) for p in part)
        if not isinstance(part, sp.Basic):
            return False
        if b.kind == "function":
            return any(type(e).__name__ == name for e in part.atoms(AppliedUndef, VectorFunction))
        return part.has(b.obj)

    if occurs(va.parts()):
        raise RuntimeError(f"replacing {name} changed no part of the variant, although a part involves it")
    return Outcome(PROVED, f"every term that involves {name} is exactly 0 as read, so no part of the variant "
                           f"(score, value, mask, normalizer) depends on {name}",
                   [step("score as read", show.latex(va.score_j))])


def _sides(va: Variant, vb: Variant, lhs, rhs, lemma: tuple) -> tuple:
    """(lhs, rhs, mask, lemma) for settle: with one mask, the symbolic M; when the substitution
    changed the mask (document(IDS)), each side on its own mask, and no lemma (the lemmas assume
    one mask)."""
    if va.same_mask(vb):
        return lhs, rhs, va.mask, lemma
    steps = list(lemma[2]) + [step(f"the mask changes too: {va.mask} becomes {vb.mask}")]
    return concrete_mask(lhs, va.mask), concrete_mask(rhs, vb.mask), "none", (False, "", steps, lemma[3])


def _mark(out: Outcome, va: Variant, vb: Variant, name: str) -> Outcome:
    if out.status == REFUTED:
        out.witness["changed_name"] = fresh(name)
        if not va.same_mask(vb):
            out.witness["mask"] = f"{va.mask} / {vb.mask}"
    return out


def invariant(ctx: Context, claim) -> Outcome:
    name = claim.arg
    if name in ctx._inv:
        return ctx._inv[name]
    pair = _pair(ctx, name)
    if isinstance(pair, Outcome):
        ctx._inv[name] = pair
        return pair
    va, vb = pair
    lemma = scores_lemma(va, vb, ctx.cfg)
    delta = delta_form(lemma[3], vb, name)
    if delta is not None and lemma[3] is not None and delta != lemma[3]:
        lemma[2].append(step(f"the same, writing {fresh(name)} = {name} + Δ{name}", show.latex(delta)))
    lhs, rhs, mask, lemma = _sides(va, vb, va.weight(), vb.weight(), lemma)
    shifts = va.same_mask(vb) and _shifts(ctx, delta)
    why = _why_scores(delta, name, ctx.spec.normalizer, lemma[2], ctx.spec.mask, shifts) \
        if va.same_mask(vb) else f"changing {name} changes the allowed keys"
    why = _why_second_row(va, vb, lemma[3], name, ctx.cfg) or why
    out = settle(claim.name, lhs, rhs, mask, ctx.cfg, lemma,
                 guards=va.guards + vb.guards, data=_tables(ctx, name), compared=(f"p_ij with {name}", f"p_ij with {fresh(name)}"),
                 why_refuted=why)
    if shifts and out.status == REFUTED and out.witness and out.witness.get("n") == 1 and out.reason == why:
        # one key has no other key to differ from: the instance shows the second reason, not the first
        out.reason += " (the certified instance has one key, so what it shows is the second reason alone)"
    ctx._inv[name] = _mark(out, va, vb, name)
    return out


def _shifts(ctx: Context, diff) -> bool:
    """Is a key-dependent change of the scores also one the normalizer sees when it is the same for
    every key (the normalizer is not shift-invariant: refuted)? Asked only for such a change."""
    if diff is None or diff == 0 or key_terms(diff) == 0:
        return False
    out = property_outcome(ctx.spec.normalizer, ctx.spec.normalizer_text, "shift_invariant",
                           ctx.base.property_params, ctx.cfg)
    return out.status == REFUTED


def depends(ctx: Context, claim) -> Outcome:
    inv = invariant(ctx, claim)
    name = claim.arg
    if inv.status == PROVED:
        return Outcome(REFUTED, f"the weights do not depend on {name}: {inv.reason}", inv.steps)
    if inv.status == REFUTED:
        steps = list(inv.steps) + [step(f"certified instance on which changing {name} changes a weight",
                                        data=inv.witness)]
        return Outcome(PROVED, inv.reason, steps)
    return Outcome(UNDECIDED, inv.reason, inv.steps, fault=inv.fault)


def output_invariant(ctx: Context, claim) -> Outcome:
    name = claim.arg
    pair = _pair(ctx, name)
    if isinstance(pair, Outcome):
        return pair
    va, vb = pair
    ok, reason, steps, diff = scores_lemma(va, vb, ctx.cfg)
    dv = expand(vb.value() - va.value(), ctx.cfg)
    if dv is not None:
        steps.append(step("difference of the values, expanded", show.latex(dv)))
    dx = sp.S.Zero if va.extra is None else expand(vb.extra - va.extra, ctx.cfg)
    if dx != 0:
        steps.append(step(f"the value of the {ctx.spec.normalizer} token changes",
                          show.latex(dx) if dx is not None else ""))
    if ok and dv == 0 and dx == 0:
        lemma = (True, f"{reason}, and the values do not involve {name}", steps, diff)
    else:
        lemma = (False, "", steps, diff)
    why = f"the value changes by {show.math(delta_form(dv, vb, name))}" if ok and dv is not None else \
        _why_scores(delta_form(diff, vb, name), name, ctx.spec.normalizer, steps, ctx.spec.mask)
    if ok and dv == 0 and dx != 0:
        why = f"the value of the {ctx.spec.normalizer} token changes" + \
            (f" by {show.math(delta_form(dx, vb, name))}" if dx is not None else "")
    lhs, rhs, mask, lemma = _sides(va, vb, va.output(), vb.output(), lemma)
    if not va.same_mask(vb):
        why = f"changing {name} changes the allowed keys"
    out = settle(claim.name, lhs, rhs, mask, ctx.cfg, lemma, why_refuted=why,
                 guards=va.guards + vb.guards, rows=False,
                 data=_tables(ctx, name), compared=(f"output with {name}", f"output with {fresh(name)}"))
    return _mark(out, va, vb, name)


def output_shift(ctx: Context, claim) -> Outcome:
    name = claim.arg
    va = ctx.base
    v0 = va.with_zero(name)
    vec = va.binds[name].obj
    ok, _, steps, diff = scores_lemma(v0, va, ctx.cfg)
    dv = expand(va.value() - v0.value() - vec, ctx.cfg)
    s1 = decide_property(ctx.spec.normalizer, "weights_sum_to_one", va.property_params, ctx.cfg)
    steps.append(step(f"value minus {name} minus the value at {name} = 0", show.latex(dv) if dv is not None else ""))
    steps.append(step(f"weights sum to one: {s1.status} ({s1.reason})"))
    good = ok and dv == 0 and s1.status == PROVED and va.extra is None
    lemma = (good, f"the weights do not involve {name}, the value is shifted by exactly {name}, and the "
                   "weights sum to 1, so the output is shifted by exactly " + name, steps, diff)
    why = "the weights of a row need not sum to 1, so the shift is scaled" if ok and dv == 0 else \
        _why_scores(diff, name, ctx.spec.normalizer, steps, ctx.spec.mask)
    out = settle(claim.name, va.output(), v0.output() + vec, ctx.spec.mask, ctx.cfg, lemma,
                 guards=va.guards + v0.guards, why_refuted=why, rows=False,
                 data=_tables(ctx), compared=("output", f"output with {name} = 0, plus {name}"))
    return _on_empty_rows(ctx, out, f"the output of such a row is 0, not shifted by {name}", {name: [1]}, [0], [1],
                          ["output", f"output with {name} = 0, plus {name}"])


def row_constant(ctx: Context, claim) -> Outcome:
    """``row_constant(EXPR)``: EXPR takes one value on the keys of a row: on every pair of keys
    without a mask, on the allowed keys with one (:func:`derive.claims.modifiers.row_constant`)."""
    if ctx.spec.mask != "none":
        return masked_row_constant(ctx, claim)
    guards = list(ctx.base.guards)
    e = ctx.base.expr(claim.node, guards)
    one, two = two_keys(set(ctx.spec.symbols))
    steps = [step("expression", show.latex(e))]
    ex = expand(e, ctx.cfg)
    lemma = None
    if ex is not None:
        steps.append(step(expanded_by(e), show.latex(ex)))
        lemma = (key_free(ex), "the expanded expression does not involve the key j", steps, None)
    why = f"the key-dependent part {show.math(key_terms(ex))} remains" if ex is not None else \
        "the expression takes different values for two keys"
    out = settle(claim.name, e.xreplace({j: one}), e.xreplace({j: two}), ctx.spec.mask, ctx.cfg,
                 lemma or (False, "", steps, None), why_refuted=why, rows=False, guards=guards,
                 data=_tables(ctx), compared=(f"EXPR at key {one}", f"EXPR at key {two}"))
    return out


def equivalent(ctx: Context, claim) -> Outcome:
    va = ctx.base
    guards = list(va.guards)
    other = va.expr(claim.node, guards)
    guards += [g for g in va.weight_domain(score_j=other) if g not in guards]
    lemma = scores_lemma(va, va, ctx.cfg, sb=other)
    why = _why_scores(lemma[3], "the score", ctx.spec.normalizer, lemma[2], ctx.spec.mask)
    return settle(claim.name, va.weight(), va.weight(score_j=other), ctx.spec.mask, ctx.cfg, lemma,
                  guards=guards, data=_tables(ctx), compared=("p_ij with the score", "p_ij with EXPR"),
                  why_refuted=why.replace("changes by", "differs by"))


def _sum_to_one_on_masked_rows(ctx: Context, out: Outcome) -> Outcome:
    """``weights_sum_to_one`` under a mask that may leave a row empty (its weights are all 0)."""
    return _on_empty_rows(ctx, out, "the weights of such a row are all 0, so they sum to 0", {}, 0, 1,
                          ["the sum of the weights of row i", "1"])


def _on_empty_rows(ctx: Context, out: Outcome, why: str, values: dict, lhs, rhs, compared: list) -> Outcome:
    """A claim that fails on a row with no allowed key (weights 0, output 0): refuted when the
    mask leaves such a row (``lhs`` ≠ ``rhs`` there, with ``values``), else a proof holds only on
    the other rows and is undecided when derive cannot tell whether the mask leaves one."""
    from derive.claims.rows import empty_row

    from derive.claims.modifiers import _heads

    data = ctx.spec.flex.data if ctx.spec.flex is not None else None
    status, where = empty_row(ctx.spec.mask, data, _heads(ctx.spec))
    if status == "never" or out.status == REFUTED:
        return out
    if status == "empty":
        n, row, head = where
        values = {**values, "head": head} if head else values
        ce = {"d": 1, "n": n, "mask": str(ctx.spec.mask), "indices": {"i": row}, "values": values,
              "functions": None, "original": lhs, "changed": rhs,
              "enclosures": {"lhs": str(lhs), "rhs": str(rhs), "bits": 64}, "compared": compared}
        at = f" at head {head}" if head else ""
        return Outcome(REFUTED, f"the mask {ctx.spec.mask} leaves row i = {row} with no allowed key when n = {n}{at}; "
                                + why, out.steps, witness=ce)
    if out.status == PROVED:
        return Outcome(UNDECIDED, f"{out.reason}, on every row with an allowed key; whether the mask "
                                  f"{ctx.spec.mask} leaves a row with none (whose weights are all 0) is not decided",
                       out.steps, check=out.check)
    return out


def _row_of_the_mask(ctx: Context, witness: dict | None) -> bool:
    """Whether the row of a normalizer property's counterexample (n keys, row i, the allowed
    keys M[i]) is a row of the spec's mask: the same keys allowed at that n and i."""
    from derive.claims.rows import _at

    cond = getattr(ctx.spec.mask, "condition", None)
    if cond is None:
        return True  # no mask: every key allowed
    try:
        n, row, allowed = witness["n"], witness["indices"]["i"], witness["values"]["M"][witness["indices"]["i"] - 1]
    except (KeyError, IndexError, TypeError):
        return False
    data = ctx.spec.flex.data if ctx.spec.flex is not None else None
    return all(_at(cond, row, key, data) is bool(allowed[key - 1]) for key in range(1, n + 1))


def _position_free(name: str) -> bool:
    """The normalizer's weights depend on the allowed scores in key order and their number only:
    its formula names no position (i, j, or t in a condition)."""
    from derive.normalizers.registry import get
    from derive.language.parser import Name, parse, walk

    formula = get(name).formula
    return bool(formula) and not any(isinstance(nd, Name) and nd.id in ("i", "j", "t") for nd in walk(parse(formula)))


def _moved_to_the_mask(ctx: Context, witness: dict | None) -> dict | None:
    """A counterexample row of m allowed keys moved to a row of the spec's mask with m allowed
    keys (its scores in the same order), for a position-free normalizer; None if there is none."""
    from derive.claims.rows import MAX_N, _at

    cond = getattr(ctx.spec.mask, "condition", None)
    if cond is None or not witness or not _position_free(ctx.spec.normalizer):
        return None
    try:
        row = witness["indices"]["i"]
        allowed, scores = witness["values"]["M"][row - 1], witness["values"]["x"][row - 1]
    except (KeyError, IndexError, TypeError):
        return None
    if set(witness["values"]) != {"M", "x"}:
        return None  # a second score row or other data: not moved
    kept = [x for a, x in zip(allowed, scores) if a]
    data = ctx.spec.flex.data if ctx.spec.flex is not None else None
    for n in range(1, MAX_N + 1):
        grid = [[_at(cond, r, k, data) for k in range(1, n + 1)] for r in range(1, n + 1)]
        for r, keys in enumerate(grid, 1):
            if None in keys or sum(keys) != len(kept):
                continue
            x = [[0] * n for _ in range(n)]
            it = iter(kept)
            x[r - 1] = [next(it) if a else 0 for a in keys]
            m = [[int(a is True) for a in ks] for ks in grid]
            return {**witness, "n": n, "mask": str(ctx.spec.mask), "indices": {"i": r}, "values": {"M": m, "x": x}}
    return None


def _sum_to_one_on_the_mask(ctx: Context, claim, out: Outcome) -> Outcome:
    """``weights_sum_to_one`` refuted on a row the spec's mask never makes (a normalizer whose
    weights depend on the number of allowed keys, under a mask whose rows all have one key):
    the claim is about the spec's rows, so a counterexample is searched on its mask instead."""
    if out.status == UNDECIDED and ctx.spec.mask != "none":
        return _sum_to_one_on_mask_rows(ctx, claim, out)
    if out.status != REFUTED or _row_of_the_mask(ctx, out.witness):
        return out
    moved = _moved_to_the_mask(ctx, out.witness)
    if moved is not None:
        return Outcome(REFUTED, out.reason, out.steps, witness=moved)
    from derive.model.attention import n, u

    va = ctx.base
    mass = sp.Sum(va.weight(key=u), (u, 1, n))
    found = settle(claim.name, mass, sp.S.One, ctx.spec.mask, ctx.cfg, None, guards=va.guards, rows=False,
                   data=_tables(ctx), why_refuted=out.reason, compared=SIDES["weights_sum_to_one"])
    if found.status == REFUTED:
        return Outcome(REFUTED, out.reason, out.steps, witness=found.witness)
    if found.status == PROVED:  # true on every row the mask makes, though not on every row
        return Outcome(PROVED, f"{found.reason}: the weights of every row of the mask {ctx.spec.mask} sum to 1 "
                               f"(on {_instance_row(out.witness)}, which the mask never makes, they need not)",
                       out.steps + found.steps, check=found.check)
    return Outcome(UNDECIDED, f"the weights need not sum to 1 on {_instance_row(out.witness)}, which the mask "
                              f"{ctx.spec.mask} never makes (it is not the set of keys the mask allows in that row), "
                              "and no row of the mask was found whose weights do not sum to 1", out.steps)


def _sum_to_one_on_mask_rows(ctx: Context, claim, out: Outcome) -> Outcome:
    """``weights_sum_to_one`` undecided for every row (any allowed set), decided on the rows of the
    spec's mask: proved or refuted there, else the property's verdict stands."""
    from derive.model.attention import n, u

    va = ctx.base
    mass = sp.Sum(va.weight(key=u), (u, 1, n))
    found = settle(claim.name, mass, sp.S.One, ctx.spec.mask, ctx.cfg, None, guards=va.guards, rows=False,
                   data=_tables(ctx), why_refuted="the weights of a row of the mask need not sum to 1",
                   compared=SIDES["weights_sum_to_one"])
    if found.status == PROVED:
        return Outcome(PROVED, f"{found.reason}: the weights of every row of the mask {ctx.spec.mask} sum to 1",
                       out.steps + found.steps, check=found.check)
    if found.status == REFUTED:
        return Outcome(REFUTED, found.reason, out.steps + found.steps, witness=found.witness)
    return out


def _instance_row(witness: dict | None) -> str:
    """The row of a normalizer property's counterexample, in words: row i = 1 with keys 1 and 2 allowed."""
    try:
        row = witness["indices"]["i"]
        table = witness["values"].get("M", witness["values"].get("𝕄"))
        keys = [k for k, a in enumerate(table[row - 1], 1) if a]
    except (KeyError, IndexError, TypeError, AttributeError):
        return "a row of the property's instance"
    listed = ", ".join(map(str, keys[:-1])) + (" and " if len(keys) > 1 else "") + str(keys[-1]) if keys else "none"
    return f"row i = {row} with key{'s' * (len(keys) != 1)} {listed} allowed"


def _normalizer_claim(prop: str):
    def prover(ctx: Context, claim) -> Outcome:
        out = _property(ctx, claim)
        if prop != "weights_sum_to_one":
            return out
        return _sum_to_one_on_masked_rows(ctx, _sum_to_one_on_the_mask(ctx, claim, out))

    def _property(ctx: Context, claim) -> Outcome:
        out = property_outcome(ctx.spec.normalizer, ctx.spec.normalizer_text, prop, ctx.base.property_params,
                               ctx.cfg)
        values = (out.witness or {}).get("values")
        if values:  # the property's own inputs (mask table, scores, shift), listed apart from declared names
            taken = set(ctx.spec.symbols)
            shown = {str(k): str(v) for k, v in display_apart(taken).items()}
            shown |= {k: v for k, v in PROPERTY_INPUTS_APART.items() if k in taken}
            named = {str(v) for v in ctx.base.property_params.values()}  # the normalizer's declared parameters
            own = [k for k in values if k in ("M", "x", "y", "c") and k not in named]
            out.witness["values"] = {(shown.get(k, k) if k in own else k): v for k, v in values.items()}
        return out

    return prover


shift_invariant = _normalizer_claim("shift_invariant")
can_abstain = _normalizer_claim("can_abstain")
weights_sum_to_one = _normalizer_claim("weights_sum_to_one")

_ = UNDECIDED


class _Provers(dict):
    """``PROVERS[kind]``: the prover the claim-kind record names (derive.spec.claim_kinds)."""

    def __missing__(self, kind):
        import importlib

        from derive.spec.claim_kinds import by_name

        module, _, attr = by_name(kind).prover.partition(":")
        return self.setdefault(kind, getattr(importlib.import_module(module), attr))


PROVERS = _Provers()
