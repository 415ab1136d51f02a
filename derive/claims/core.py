"""Shared proof steps: expanding a difference, key-independence, weights equality.

The sound lemmas used by the provers:

* scores that expand to the same expression give the same weights (any normalizer);
* scores that differ by a term free of the key j give the same weights when the
  normalizer is shift-invariant (itself a proved property, see :mod:`.normalizer`).

When a lemma does not apply, a claim is refuted only by a certified counterexample on
the actual weights, or proved by the engine's general rewrite chain, else undecided.
"""

from __future__ import annotations

import json

import sympy as sp

from derive.claims import show
from derive.prove.equality import prove_zero
from derive.timeout import TimeLimit, time_limit
from derive.claims.normalizer import decide_property
from derive.crosscheck.witness import satisfies
from derive.claims.numeric import (check_numeric, concrete_mask, find_certified, interpretations, row_values,
                                   same_sides)
from derive.claims.result import Outcome, step
from derive.routes import sympy_gave_up
from derive.crosscheck.check import tolerance_text
from derive.model.attention import j
from derive.model.vectors import Rot, expand_dot
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED
from derive.settings import Settings

__all__ = ["ON_ALLOWED", "expand", "expanded_by", "key_free", "key_terms", "respects_signs", "scores_lemma", "settle", "two_keys"]


def expand(expr: sp.Expr, cfg: Settings) -> sp.Expr | None:
    """⟨·,·⟩ expanded by bilinearity (and the rotation rule), then sp.expand; None on time-out.
    Kept per expression (and time limit): the atlas's variants share score differences."""
    key = (expr, cfg.time_limit)
    try:
        return _EXPANDED[key]
    except KeyError:
        out = _EXPANDED[key] = _expand(expr, cfg)
        return out
    except TypeError:  # not hashable: not kept
        return _expand(expr, cfg)


_EXPANDED: dict = {}


def _expand(expr: sp.Expr, cfg: Settings) -> sp.Expr | None:
    try:
        with time_limit(cfg.time_limit):
            return sp.expand(expand_dot(sp.expand(expr)))
    except TimeLimit:
        return None
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise
        return None  # a rewrite SymPy cannot finish proves nothing


def expanded_by(*exprs) -> str:
    """How :func:`expand` rewrote ``exprs``: by bilinearity, and by the rotation rule where one has RoPE."""
    rope = any(sp.sympify(e).has(Rot) for e in exprs)
    return "expanded by bilinearity" + (" and R(a)ᵀR(b) = R(b − a)" if rope else "")


def key_free(expr: sp.Expr) -> bool:
    return j not in expr.free_symbols


def key_terms(expr: sp.Expr) -> sp.Expr:
    return sp.Add(*[a for a in sp.Add.make_args(expr) if not key_free(a)])


def scores_lemma(va, vb, cfg: Settings, sa=None, sb=None) -> tuple[bool, str, list, sp.Expr | None]:
    """Do the score functions of two variants give the same weights, by a lemma?"""
    a = va.score() if sa is None else sa
    b = vb.score() if sb is None else sb
    steps = [step("score", show.latex(a)), step("compared with", show.latex(b))]
    diff = expand(b - a, cfg)
    if diff is None:
        steps.append(step("expanding the difference hit the time limit"))
        return False, "", steps, None
    how = f", {expanded_by(a, b)}" if a != b else " (the change does not reach the score)"
    steps.append(step(f"difference of the scores{how}", show.latex(diff)))
    if {str(k): str(v) for k, v in va.params.items()} != {str(k): str(v) for k, v in vb.params.items()}:
        return False, "", steps, diff
    if not va.same_mask(vb):  # the lemmas below hold for one mask
        return False, "", steps, diff
    a2, b2 = getattr(va, "score2_j", None), getattr(vb, "score2_j", None)
    if a2 is not None or b2 is not None:  # a user normalizer's second score row y_j is compared too
        diff2 = None if a2 is None or b2 is None else expand(b2 - a2, cfg)
        steps.append(step("difference of the second score rows y_j, expanded",
                          show.latex(diff2) if diff2 is not None else ""))
        if diff2 != 0:
            return False, "", steps, diff
        if diff != 0:  # a row-constant shift of x alone is not a shift of the normalizer's input
            return False, "", steps, diff
    if diff == 0:
        steps.append(step("the scores are identical, so are the weights"))
        return True, "the scores are identical after expansion", steps, diff
    where = ""
    mask = va.spec.mask
    if not key_free(diff) and mask == vb.spec.mask:
        on = _on_allowed(diff, mask, cfg)
        if on is not None and on != diff:  # the weights see only the allowed keys: compare there
            steps.append(step(ON_ALLOWED.format(mask=mask), show.latex(on)))
            diff, where = on, f" on the keys the mask {mask} allows"
            if diff == 0:
                return True, f"the scores agree on every key the mask {mask} allows, so the weights (which " \
                             "see only allowed keys) are the same", steps, diff
    if key_free(diff):
        norm = va.spec.normalizer
        v = decide_property(norm, "shift_invariant", va.property_params, cfg)
        if v.status == PROVED:
            steps.append(step(f"the difference does not involve the key j (row-constant){where}, and {norm} is "
                              f"shift-invariant ({v.reason}), so the weights are equal"))
            return True, f"the score changes only by a row-constant term{where} and {norm} is shift-invariant", \
                steps, diff
    return False, "", steps, diff


ON_ALLOWED = "the difference on the keys the mask {mask} allows"


def _on_allowed(diff, mask, cfg: Settings):
    from derive.model.masks import on_allowed_keys

    try:
        with time_limit(cfg.time_limit):
            return on_allowed_keys(diff, mask)
    except TimeLimit:
        return None
    except Exception as exc:  # noqa: BLE001 - narrowed: where SymPy gives up (derive.routes)
        if not sympy_gave_up(exc):
            raise
        return None  # a rewrite SymPy cannot finish proves nothing


def settle(label: str, lhs, rhs, mask: str, cfg: Settings, lemma: tuple | None, *, guards: list = (),
           fixed: dict | None = None, why_refuted: str = "", rows: bool = True,
           compared: tuple[str, str] = ("as specified", "changed"), data: tuple | None = None) -> Outcome:
    """The verdict on lhs = rhs: lemma → counterexample → engine rewrite chain → undecided.
    ``data``: (captured tables, heads) of traced modifiers; a counterexample then reads the real
    entries of one head (an invented table is no instance of the model)."""
    ok, reason, steps, _ = lemma if lemma else (False, "", [], None)
    steps = list(steps)
    if ok:
        return _proved(label, lhs, rhs, reason, steps, cfg, mask)
    tables, heads = data if data and data[0] else ({}, 1)
    for head in range(heads):
        a, b = (_at_head(x, tables, head) for x in (lhs, rhs))
        gs = [(kind, _at_head(g, tables, head)) for kind, g in guards]
        wit = find_certified(a, b, mask, cfg, fixed=fixed, guards=gs, head=head)
        if wit is not None and not respects_signs(wit["_instance"].scalars):
            wit = None  # a value outside a declared sign is no counterexample
        if wit is not None:
            ce = _counterexample(wit, mask, a, b, rows)
            if tables:
                ce["values"]["head"] = head
            return Outcome(REFUTED, why_refuted or "the two sides differ on a concrete instance", steps,
                           witness={**ce, "compared": list(compared)})
    one = _on_one_key_rows(lhs, rhs, mask, steps) or _on_mask_rows(lhs, rhs, mask, steps, cfg)
    if one is not None:
        return _proved(label, lhs, rhs, one, steps, cfg, mask)
    ok, how, residue = _engine(lhs - rhs, cfg)
    if ok:
        steps.append(step(f"the difference reduces to 0 by the rewrite chain ({how})"))
        return _proved(label, lhs, rhs, "the difference reduces to 0", steps, cfg, mask)
    why = "no proof and no counterexample were found"
    if residue is None:
        why = f"no proof ({how}) and no counterexample were found"
    return Outcome(UNDECIDED, why, steps)


def _on_one_key_rows(lhs, rhs, mask, steps: list) -> str | None:
    """The reason lhs = rhs holds when the mask allows key i alone in every row and the two sides,
    collapsed to that row (:mod:`derive.claims.one_key`), agree; else None."""
    from derive.claims.one_key import collapse, one_key_rows

    if not one_key_rows(mask):
        return None
    a, b = collapse(lhs), collapse(rhs)
    if a is None or b is None or sp.simplify(a - b) != 0:
        return None
    steps.append(step(f"the mask {mask} allows key i alone in every row; on a row of one key the two sides are",
                      show.latex(sp.Tuple(a, b))))
    return f"every row of the mask {mask} has one allowed key, and there the two sides agree"


def _on_mask_rows(lhs, rhs, mask, steps: list, cfg: Settings) -> str | None:
    """The reason lhs = rhs holds on every row of a causal mask, its sums over the allowed keys
    written over ranges (:mod:`derive.claims.mask_rows`) and each regime reduced to 0; else None."""
    from derive.claims.mask_rows import on_mask_rows

    parts = on_mask_rows(lhs - rhs, mask)
    if not parts:
        return None
    for part in parts:
        ok, how, _ = prove_zero(part, cfg)
        if not ok:
            return None
    steps.append(step(f"on the rows of the mask {mask} every sum over the allowed keys is a sum over a range of keys "
                      f"({len(parts)} regime{'s' * (len(parts) > 1)} of the rows); the difference reduces to 0 in each"))
    return f"on every row of the mask {mask} the two sides agree (its sums over the allowed keys written over ranges)"


def two_keys(taken) -> tuple[sp.Symbol, sp.Symbol]:
    """Two key indices named apart from the spec's names: j_1, j_2, else j_3, j_4, …"""
    k = 1
    while f"j_{k}" in taken or f"j_{k + 1}" in taken:
        k += 2
    return tuple(sp.Symbol(f"j_{m}", integer=True, positive=True) for m in (k, k + 1))


def _at_head(expr, tables: dict, head: int):
    if not tables:
        return expr
    from derive.model.tables import concrete_data

    return concrete_data(sp.sympify(expr), tables, head)


def respects_signs(scalars: dict) -> bool:
    """Every scalar value has its symbol's sign (``scalar positive`` …, a normalizer's own
    parameter such as clipped's ζ' ≥ 0); the search draws only such values, this re-checks."""
    return all(satisfies(sym, val) for sym, val in scalars.items())


def _engine(expr, cfg):
    return prove_zero(expr, cfg)


def _proved(label, lhs, rhs, reason, steps, cfg, mask="none") -> Outcome:
    # the claim is about the variant with its own mask: the cross-check evaluates that variant
    from derive.claims.numeric import ids_as_labels

    lhs, rhs = (concrete_mask(ids_as_labels(sp.sympify(x), mask), mask) for x in (lhs, rhs))
    if same_sides(lhs, rhs):
        steps.append(step("numeric cross-check: not run (both sides are one expression, so a numeric comparison "
                          "could not fail); the verdict rests on the symbolic steps alone"))
        return Outcome(PROVED, reason, steps, check=None)
    check = check_numeric(label, lhs, rhs, cfg)
    if check is None:
        steps.append(step("numeric cross-check: not run (a term of the claim has no numeric evaluation); "
                          "the verdict rests on the symbolic steps alone"))
    elif check["verdict"] == "not run":
        steps.append(step(f"numeric cross-check: not run ({check['reason']}); the verdict rests on the symbolic "
                          "steps alone"))
        check = None
    elif check["verdict"] != "passed":
        # Two parts of the engine contradict each other, unless a caller knows why (a proof that
        # holds on the rows with an allowed key, and a mask that leaves a row without one): the
        # outcome carries the fault, and a claim that ends on it is an internal error (claims.run).
        steps.append(step("numeric cross-check FAILED", data=check))
        return Outcome(UNDECIDED, "the symbolic steps went through but the numeric cross-check failed", steps,
                       check=check, fault="the symbolic steps went through but the numeric cross-check failed on "
                                        + json.dumps(check.get("witness"), default=str))
    else:
        steps.append(step(f"numeric cross-check: {check['examples']} random instances, and "
                          f"{check['hypothesis_examples']} more searched by Hypothesis, agree within "
                          f"{tolerance_text(check['tolerance'])}"))
    return Outcome(PROVED, reason, steps, check=check)


def _labelled_ids(expr, mask):
    """``expr`` with a document mask's ids as its labels (listed under values, not as a function)."""
    from derive.claims.numeric import ids_as_labels

    return ids_as_labels(expr, mask)


def _counterexample(wit: dict, mask: str, lhs, rhs, rows: bool) -> dict:
    out = {
        "d": wit["instance"]["d"],
        "n": wit["instance"]["n"],
        "mask": mask,
        "indices": wit["indices"],
        "values": {k: v for k, v in wit["instance"].items() if k not in ("d", "n")},
        "functions": interpretations(_labelled_ids(sp.Tuple(lhs, rhs), mask)) or None,
        "original": wit["lhs"],
        "changed": wit["rhs"],
        "enclosures": wit["enclosures"],
    }
    if rows:
        a, b = row_values(wit, 0, mask), row_values(wit, 1, mask)
        if a is not None and b is not None:
            out["row_original"], out["row_changed"] = a, b
    return out


_ = UNDECIDED
