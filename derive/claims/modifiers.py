"""Claims about modifiers: ``decreasing_in_distance``, ``equivalent_to``, ``mask_equivalent``.

* ``decreasing_in_distance``: for a fixed query i and a fixed dot-product score s, the
  score is non-increasing in |i − j| over the allowed keys. Proved when, with j = i ∓ e
  (e ≥ 0 real, the side(s) the mask allows), the derivative in e is ≤ 0 by SymPy's
  assumptions (and, for a two-sided mask, the score is symmetric: f(i + e) = f(i − e));
  refuted by a certified instance of the one searcher (:func:`find_witness`):
  keys j₁, j₂ both allowed, |i − j₁| ≤ |i − j₂| and f(j₂) − f(j₁) > 0, on the real data
  (a per-head table takes each head's own value).
* ``equivalent_to("OTHER.toml")``: the two variants give the same weights. Proved when
  the masks are proved equal and the scores agree on the allowed keys (then every
  normalizer, which sees only allowed keys, gives the same weights); refuted by a
  certified instance of the weights, each side with its own mask.
* ``mask_equivalent("OTHER.toml")``: the two masks allow the same keys, for every n: decided
  on the integer positions cell by cell (:func:`derive.model.masks.decide_same_keys`), a
  difference certified at the pair of positions found.
* ``row_constant(EXPR)`` under a mask: one value on the keys the mask allows in each row.
"""

from __future__ import annotations

from pathlib import Path

import sympy as sp

from derive.claims import show
from derive.claims.core import expand, expanded_by, settle, two_keys
from derive.claims.numeric import concrete_mask, ids_as_labels
from derive.claims.result import Outcome, step
from derive.crosscheck.witness import find_witness, witness_at
from derive.errors import InputError
from derive.model.masks import Mask, Undecidable, decide_same_keys, indicator, labelled, mask_side
from derive.flex.spec import data_of
from derive.model.tables import PerHead, concrete_data
from derive.model.attention import i, j
from derive.timeout import TimeLimit, time_limit
from derive.routes import sympy_gave_up
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED

__all__ = ["decide_masks", "equivalent_to", "mask_equivalent", "row_constant",
           "same_mask"]

def _cond(mask):
    cond = getattr(mask, "condition", False)
    if cond is False:  # a plain string from an older caller
        return None if mask == "none" else j <= i
    return cond


def _heads(spec) -> int:
    data = spec.flex.data if spec.flex is not None else {}
    sizes = [len(v) for k, v in data.items() if isinstance(k, sp.Symbol) or isinstance(v, PerHead)]
    if spec.flex is not None:
        sizes += [b.heads for b in (spec.flex.score, spec.flex.mask) if b is not None and b.heads is not None]
    # the heads every captured table has: a head past one table's end makes the modifier fail in
    # torch, so it is no instance, and reading that table's last head instead would invent one
    return min(sizes, default=1)


def _data(spec) -> dict:
    return spec.flex.data if spec.flex is not None else {}


def _allowed(mask, key, data: dict | None = None) -> sp.Expr:
    """1 when ``key`` is allowed in row i, as the searcher evaluates it: a traced table on its
    real entries (``data``, else the mask's own), an opaque document id table as labels."""
    ind = indicator(_cond(mask), i, key)
    data = data or getattr(mask, "data", None)
    return labelled(concrete_data(ind, data, 0) if data else ind)


def _other(ctx, claim):
    from derive.spec.load import load_spec

    path = Path(ctx.spec.file).parent / claim.arg
    try:
        return load_spec(path)
    except InputError as exc:
        raise _Bad(str(exc)) from None


class _Bad(Exception):
    pass


def _canon(cond):
    """Strict comparisons of integer-valued sides made non-strict: i − j < 4 ↦ i − j ≤ 3."""
    if cond is None:
        return sp.true

    def fix(r):
        diff = r.lhs - r.rhs
        if not diff.is_integer:
            return r
        if isinstance(r, sp.StrictLessThan):
            return sp.Le(r.lhs, r.rhs - 1)
        if isinstance(r, sp.StrictGreaterThan):
            return sp.Ge(r.lhs, r.rhs + 1)
        return r

    return cond.replace(lambda e: isinstance(e, (sp.StrictLessThan, sp.StrictGreaterThan)), fix)


def same_mask(ma, mb) -> tuple[str, str, list]:
    """(status, reason, steps) of "the masks allow the same keys" (proof only; no search)."""
    status, reason, steps, _ = decide_masks(ma, mb)
    return (status, reason, steps) if status == PROVED else (UNDECIDED, reason, steps)


def decide_masks(ma, mb) -> tuple[str, str, list, tuple | None]:
    """(status, reason, steps, (i, j)) of "the masks allow the same keys": proved when the two
    conditions are the same or agree on every cell of the integer positions
    (:func:`decide_same_keys`); refuted with a pair of positions (i, j) where they differ, to be
    certified by the caller; else undecided."""
    ca, cb = _canon(_cond(ma)), _canon(_cond(mb))
    steps = [step(f"mask {ma}", show.latex(ca)), step(f"mask {mb}", show.latex(cb))]
    if ca == cb or sp.simplify_logic(sp.Equivalent(ca, cb)) == sp.true:
        return PROVED, "the two conditions are the same", steps, None
    try:
        same, at, cells = decide_same_keys(ca, cb)
    except Undecidable as exc:
        return UNDECIDED, f"the conditions differ in form and are not decided on the integers ({exc})", steps, None
    if same:
        steps.append(step(f"each comparison depends on i − j, i or j alone; the integers it allows cut the "
                          f"positions i, j ≥ 1 into {cells} cells on which both conditions are constant, and "
                          "they agree on every cell"))
        return PROVED, "the two conditions allow the same integer positions (decided cell by cell)", steps, None
    steps.append(step(f"the conditions differ at i = {at[0]}, j = {at[1]}"))
    return REFUTED, "a key is allowed by one mask and not by the other", steps, at


def _other_mask(ctx, claim):
    """(mask, its data) of the other side: a traced mask_mod (``mods.py:NAME``) or a spec's mask."""
    flex = ctx.spec.flex
    if flex is not None and claim.arg in flex.masks:
        built = flex.masks[claim.arg]
        return Mask(claim.arg, built.expr), data_of(built)
    other = _other(ctx, claim)
    return other.mask, _data(other)


def _clash(da: dict, db: dict) -> list[str]:
    """The table names both sides capture with different entries: the same name, two different
    tables, so a proof that reads them as one function would be wrong."""
    return sorted(str(k) for k in da.keys() & db.keys() if da[k] != db[k])


def mask_equivalent(ctx, claim) -> Outcome:
    try:
        mb, db = _other_mask(ctx, claim)
    except _Bad as exc:
        return Outcome(UNDECIDED, f"cannot load {claim.arg}: {exc}")
    ma, da = ctx.spec.mask, _data(ctx.spec)
    status, reason, steps, at = decide_masks(ma, mb)
    clash = _clash(da, db)
    if status == PROVED and not clash:
        return Outcome(PROVED, reason, steps)
    if clash:  # the same name for two different tables: each side on its own entries
        a, b = _allowed(ma, j, da), _allowed(mb, j, db)
    else:  # a table both name is one table (the real one, if traced), as in equivalent_to
        data = {**db, **da}
        a, b = _allowed(ma, j, data), _allowed(mb, j, data)
    wit = None
    if at is not None and not clash:  # the pair the decision found, certified on its own
        wit = witness_at(a, b, max(at), {i: at[0], j: at[1]})
    if wit is None:
        wit = find_witness(a, b, cfg=ctx.cfg)
    if wit is not None:
        values = {k: v for k, v in wit["instance"].items() if k not in ("d", "n")}  # document ids, if any
        ce = {"d": wit["instance"]["d"], "n": wit["instance"]["n"], "mask": f"{ma} vs {mb}",
              "indices": wit["indices"], "values": values, "functions": None, "original": wit["lhs"],
              "changed": wit["rhs"], "enclosures": wit["enclosures"],
              "compared": [f"allowed by {ma}", f"allowed by {mb}"]}
        return Outcome(REFUTED, "a key is allowed by one mask and not by the other", steps, witness=ce)
    return Outcome(UNDECIDED, f"no proof ({reason}) and no counterexample were found", steps)


def equivalent_to(ctx, claim) -> Outcome:
    from derive.claims.variant import Variant

    try:
        other = _other(ctx, claim)
    except _Bad as exc:
        return Outcome(UNDECIDED, f"cannot load {claim.arg}: {exc}")
    va, vb = ctx.base, Variant(other)
    ma, mb = ctx.spec.mask, other.mask
    mstatus, mreason, steps = same_mask(ma, mb)
    steps.append(step(f"the masks: {mstatus} ({mreason})"))
    lemma = (False, "", steps, None)
    same_norm = ctx.spec.normalizer_text == other.normalizer_text and \
        {str(k): str(v) for k, v in va.params.items()} == {str(k): str(v) for k, v in vb.params.items()}
    diff = expand(vb.score() - va.score(), ctx.cfg)
    if diff is not None:
        steps.append(step("difference of the scores, expanded", show.latex(diff)))
        side = mask_side(ma)
        e = sp.Symbol("e", integer=True, nonnegative=True)
        on_allowed = diff if side is None else _on_side(diff, {j: i - e if side == "past" else i + e}, e, ctx.cfg)
        if side is not None:
            steps.append(step(f"on the allowed keys (j = i {'−' if side == 'past' else '+'} e, e ≥ 0)",
                              show.latex(on_allowed)))
        if mstatus == PROVED and same_norm and on_allowed == 0:
            lemma = (True, "the masks are the same and the scores agree on every allowed key, so the weights "
                           "(which see only allowed keys) are the same", steps, diff)
    da, db = _data(ctx.spec), _data(other)
    if _clash(da, db):  # the same name for two different tables: no proof, each side on its own entries
        lemma = (False, "", steps, None)
        data, data_a, data_b = {**db, **da}, da, db
    else:
        data = data_a = data_b = {**db, **da}  # a table both name is one table (the real one, if traced)
    lhs, rhs = concrete_mask(va.weight(), ma, data_a), concrete_mask(vb.weight(), mb, data_b)
    one, clash = one_symbol_per_name(lhs, rhs)
    if clash:
        return Outcome(UNDECIDED, f"the two specs declare {clash} with domains that do not overlap "
                                  "(a sign in one excludes the other's)", steps)
    lhs, rhs = lhs.xreplace(one), rhs.xreplace(one)
    guards = [(kind, g.xreplace(one)) for kind, g in va.guards + vb.guards]
    if not lemma[0] and mstatus == PROVED and not data:
        lemma = _one_key_lemma(va, vb, ma, one, steps) or _same_mask_lemma(va, vb, one, steps, ctx.cfg) or lemma
    if lemma[0]:
        return settle(claim.name, lhs, rhs, "none", ctx.cfg, lemma,
                      compared=("p_ij of this spec", f"p_ij of {claim.arg}"))
    heads = max(_heads(ctx.spec), _heads(other)) if data else 1
    if data and (_heads(ctx.spec) != _heads(other) and da and db):
        heads = min(_heads(ctx.spec), _heads(other))  # a head past one side's tables is no head of that model
    out, proved = None, []
    for head in range(heads):  # every head of the model, on its tables' real entries
        a = concrete_data(lhs, data_a, head) if data_a else lhs
        b = concrete_data(rhs, data_b, head) if data_b else rhs
        out = settle(claim.name, a, b, "none", ctx.cfg, None, guards=guards,
                     why_refuted="the two variants give different weights" + (f" at head {head}" if data else ""),
                     compared=("p_ij of this spec", f"p_ij of {claim.arg}"))
        if out.status != PROVED:
            break
        proved.append(out)
    if data and out.status == PROVED:
        out = Outcome(PROVED, f"the weights agree at each of the model's {heads} heads (on the real entries of its "
                              f"tables): {out.reason}", [s for o in proved for s in o.steps], check=out.check)
    out.steps = steps + out.steps
    if data and out.status == REFUTED:
        out.witness["values"]["head"] = head
    if out.status == PROVED and _no_proof(other):  # the other side's weight as written (this one's: see run)
        return Outcome(UNDECIDED, f"{claim.arg}: {_no_proof(other)}", out.steps)
    if out.status == REFUTED:
        out.witness["mask"] = f"{ma} / {mb}"
    return out


def _same_mask_lemma(va, vb, one: dict, steps: list, cfg):
    """With one mask for both, the weights compared as functions of the mask's table M (each key
    allowed or not): equal as such, they are equal under this mask."""
    from derive.claims.mask_rows import on_mask_rows
    from derive.prove.equality import prove_zero

    a, b = va.weight().xreplace(one), vb.weight().xreplace(one)
    ok, how, _ = prove_zero(a - b, cfg)
    if ok:
        steps.append(step(f"the weights of both specs, with the allowed keys as a table M, reduce to one ({how})"))
        return (True, "the masks are the same and the weights are equal for every table of allowed keys", steps, None)
    parts = on_mask_rows(a - b, va.spec.mask)
    if parts and all(prove_zero(p, cfg)[0] for p in parts):
        steps.append(step(f"on the rows of the mask {va.spec.mask} every sum over the allowed keys is a sum over a "
                          "range of keys; the weights of both specs reduce to one there"))
        return (True, f"the masks are the same and the weights agree on every row of the mask {va.spec.mask}", steps,
                None)
    return None


def _one_key_lemma(va, vb, mask, one: dict, steps: list):
    """The weights of both specs on a row of one key, when their common mask allows key i alone in
    every row (:mod:`derive.claims.one_key`): equal there, a proof for every row of the mask."""
    from derive.claims.one_key import collapse, one_key_rows

    if not one_key_rows(mask):
        return None
    a, b = collapse(va.weight()), collapse(vb.weight())
    if a is None or b is None:
        return None
    a, b = a.xreplace(one), b.xreplace(one)
    if sp.simplify(a - b) != 0:
        return None
    steps.append(step(f"the mask {mask} allows key i alone in every row; on a row of one key the weights are",
                      show.latex(sp.Tuple(a, b))))
    return (True, f"every row of the mask {mask} has one allowed key, and there the two specs' weights agree",
            steps, None)


def _no_proof(spec) -> str | None:
    from derive.normalizers.partial import over, why_no_proof
    from derive.normalizers.registry import get

    binds = spec.binds()
    named = {p: binds[name].obj for p, name in spec.norm_params().items() if name in binds}
    return why_no_proof(over(get(spec.normalizer).definition_of, named), spec.mask)


def one_symbol_per_name(a: sp.Expr, b: sp.Expr) -> tuple[dict, str]:
    """The two sides of a comparison of two specs are matched by name: a parameter ``s`` declared
    ``scalar`` in one and ``scalar positive`` in the other is one parameter, over the narrower
    domain (where both sides are defined). Returns (symbol → the name's one symbol, "") or
    ({}, NAME) when the two declarations do not nest (positive in one, negative in the other)."""
    by_name: dict = {}
    for sym in sorted(a.free_symbols | b.free_symbols, key=sp.default_sort_key):
        if isinstance(sym, sp.Symbol) and not isinstance(sym, sp.Dummy):
            by_name.setdefault(sym.name, []).append(sym)
    out = {}
    for name, syms in by_name.items():
        if len(syms) < 2:
            continue
        facts = {x: {(k, v) for k, v in x.assumptions0.items() if v is not None} for x in syms}
        narrow = [x for x in syms if all(facts[y] <= facts[x] for y in syms)]
        if not narrow:
            return {}, name
        out.update({x: narrow[0] for x in syms if x != narrow[0]})
    return out, ""


def _offsets(cond, side, dist, limit: int = 64) -> list | None:
    """The distances e = |i − j| a one-sided mask allows, when the condition depends on e alone
    and they are finitely many (a window); else None."""
    x = sp.Symbol("x", nonnegative=True)
    c = cond.xreplace({j: i - x if side == "past" else i + x})
    if c.free_symbols - {x}:
        return None
    try:
        # every allowed distance must lie in [0, limit]: a window cut at the limit would hide the rest
        if sp.Intersection(c.as_set(), sp.Interval(0, sp.oo)).is_subset(sp.Interval(0, limit)) is not True:
            return None
        allowed = sp.Intersection(c.as_set(), sp.Range(0, limit + 1))
        values = list(allowed) if allowed.is_finite_set and isinstance(allowed, (sp.FiniteSet, sp.Range)) else None
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise
        return None  # a set SymPy cannot form proves nothing
    if values is None or not values or max(values) >= limit:
        return None
    return [int(v) for v in values]


def row_constant(ctx, claim) -> Outcome:
    """``row_constant(EXPR)`` over the *allowed* keys of a row: with a mask other than none,
    a term constant on the allowed keys (not on all keys) is row-constant under that mask."""
    mask = ctx.spec.mask
    cond = _cond(mask)
    guards = list(ctx.base.guards)
    e_expr = ctx.base.expr(claim.node, guards)
    steps = [step("expression", show.latex(e_expr))]
    ex = expand(e_expr, ctx.cfg)
    lemma = (False, "", steps, None)
    if ex is not None:
        steps.append(step(expanded_by(e_expr), show.latex(ex)))
        side = mask_side(mask)
        from derive.model.masks import on_allowed_keys

        same = on_allowed_keys(ex, mask) if side is None else None  # document(IDS): IDS(j − 1) = IDS(i − 1)
        if j not in ex.free_symbols:
            lemma = (True, "the expanded expression does not involve the key j", steps, None)
        elif same is not None and j not in same.free_symbols:
            steps.append(step(f"on the allowed keys of row i (mask {mask})", show.latex(same)))
            lemma = (True, f"constant on the allowed keys of each row under the mask {mask} (not on all keys)",
                     steps, None)
        elif side is not None:
            dist = sp.Symbol("e", integer=True, nonnegative=True)
            on = _on_side(ex, {j: i - dist if side == "past" else i + dist}, dist, ctx.cfg)
            steps.append(step(f"on the allowed keys of row i (j = i {'−' if side == 'past' else '+'} e, e ≥ 0, "
                              f"mask {mask})", show.latex(on)))
            offsets = _offsets(cond, side, dist)
            if dist not in on.free_symbols or (offsets is not None and len({sp.simplify(on.subs(dist, v))
                                                                             for v in offsets}) == 1):
                if offsets is not None and dist in on.free_symbols:
                    steps.append(step(f"the mask allows only e ∈ {{{', '.join(map(str, offsets))}}}, where it "
                                      "takes one value"))
                lemma = (True, f"constant on the allowed keys of each row under the mask {mask} (not on all keys)",
                         steps, None)
    one, two = two_keys(set(ctx.spec.symbols))
    both = sp.Eq(sp.Mul(_allowed(mask, one, _data(ctx.spec)), _allowed(mask, two, _data(ctx.spec))), 1,
                 evaluate=False)
    # EXPR is compared (and must be defined) only where both keys are allowed; the domain of a
    # key's term is demanded on the keys the mask allows
    labelled_expr = ids_as_labels(e_expr, mask)  # a document's ids, read by EXPR too, as the mask's labels
    lhs, rhs = (sp.Piecewise((labelled_expr.xreplace({j: key}), both), (0, True)) for key in (one, two))
    here = sp.Eq(_allowed(mask, j, _data(ctx.spec)), 1, evaluate=False)
    guards = [(kind, sp.Piecewise((g, here), (1, True)) if j in g.free_symbols else g) for kind, g in guards]
    out = settle(claim.name, lhs, rhs, "none", ctx.cfg, lemma, rows=False, guards=guards,
                 why_refuted=f"two keys allowed by the mask {mask} give different values",
                 compared=(f"EXPR at key {one}", f"EXPR at key {two}"))
    if out.status == REFUTED:
        out.witness["mask"] = str(mask)  # both keys are allowed by it (the search ran on its indicator)
    return out


def _on_side(expr, sub: dict, dist, cfg):
    """``expr`` on the allowed side, j = i ∓ e: expanded (|e| is e), and simplified only when e
    remains inside a piece that the side may decide (abs, max, min, a branch), within the time
    bound (a bound hit leaves it as expanded: nothing is proved from it). Other identities are
    left to the rewrite chain of :func:`settle`."""
    on = sp.expand(expr.xreplace(sub))
    pieces = on.atoms(sp.Abs, sp.Max, sp.Min, sp.Piecewise, sp.sign, sp.Heaviside)
    if any(dist in p.free_symbols for p in pieces):
        try:
            with time_limit(cfg.time_limit):
                on = sp.simplify(on)
        except TimeLimit:
            pass
        except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
            if not sympy_gave_up(exc):
                raise  # (a rewrite SymPy cannot finish proves nothing)
    return on

