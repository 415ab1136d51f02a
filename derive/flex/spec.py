"""The spec keys ``score_mod`` and ``mask_mod``: trace, rebuild, and hand the engine its parts.

``score_mod = "mods.py:alibi"`` replaces ``score``: the modifier is called as FlexAttention
calls it, with ``score`` the plain scaled dot product ⟨q_i, k_j⟩/√d, so the variant's score
is the traced expression with s ↦ ⟨q_i, k_j⟩/√d. ``mask_mod = "mods.py:causal"`` replaces
``mask``. Paths are relative to the spec file. Tracing runs the user's code, in a child
process (:mod:`derive.flex.trace`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import sympy as sp
from sympy.core.function import AppliedUndef

from derive.errors import InputError
from derive.model.masks import Mask
from derive.flex.trace import DEFAULT_TIMEOUT, Traced, parse_ref, trace
from derive.flex.tree import SCORE, Built, TreeError, build
from derive.model.attention import d, i, j
from derive.model.vectors import Dot, VectorBase

__all__ = ["Flex", "plain_score", "trace_keys", "validate_ref"]

TIMEOUT = [DEFAULT_TIMEOUT]  # set by ``derive check --timeout``


def plain_score(binds: dict | None = None) -> sp.Expr:
    """⟨q_i, k_j⟩/√d, the ``score`` FlexAttention passes to a score_mod (q, k of ``binds``)."""
    q = binds["q"].obj if binds else VectorBase("q")
    k = binds["k"].obj if binds else VectorBase("k")
    return Dot(q[i], k[j]) / sp.sqrt(d)


@dataclass(frozen=True)
class Flex:
    """What the traced modifiers give a spec (kept apart from the hand-written parts)."""

    score: Built | None = None  # the score_mod's expression in s, i, j, h
    mask: Built | None = None
    traced: tuple[Traced, ...] = ()
    data: dict = field(default_factory=dict)  # per-head symbol → values, function name → values
    masks: dict = field(default_factory=dict)  # a claim's mask_mod (mods.py:NAME) → Built

    def score_expr(self, binds: dict | None = None) -> sp.Expr | None:
        """The traced score with s ↦ ⟨q_i, k_j⟩/√d, q and k those of ``binds`` (the spec's own
        by default). A variant substitutes everything else itself (derive.claims.substitute)."""
        if self.score is None:
            return None
        return self.score.expr.xreplace({SCORE: plain_score(binds)})

    def table_names(self) -> set[str]:
        """The captured tables the modifiers read (what ``invariant(NAME)`` may name)."""
        return {name for built in (self.score, self.mask) if built is not None for name in built.tables}

    def mask_reads(self, name: str) -> bool:
        return self.mask is not None and name in self.mask.tables

    def display(self, text, latex) -> list[dict]:
        """One row per modifier for the report: the source line next to the traced math
        (printed by ``text`` and ``latex``, the report's printers)."""
        out = []
        for t in self.traced:
            built = self.score if t.kind == "score" else self.mask
            out.append({"key": f"{t.kind}_mod", "ref": t.ref, "file": t.file, "line": t.line, "source": t.source,
                        "math": text(built.expr), "latex": latex(built.expr)})
        return out


def renamed(expr: sp.Basic, tables: dict, rename: dict) -> sp.Basic:
    """``expr`` with each table of ``rename`` replaced by a fresh one: an opaque function
    (or per-head symbol) of the same indices, with no assumption from the captured values."""
    for name, new in rename.items():
        obj = tables.get(name)
        if obj is None:
            continue
        if isinstance(obj, sp.Symbol):  # a per-head scalar NAME_h
            expr = expr.xreplace({obj: sp.Symbol(obj.name.replace(name, new, 1), real=True)})
            continue
        label = obj.__name__
        fresh = sp.Function(label.replace(name, new, 1), real=True)
        expr = expr.replace(lambda e, label=label: isinstance(e, AppliedUndef) and type(e).__name__ == label,
                            lambda e, fresh=fresh: fresh(*e.args))
    return expr


def validate_ref(text) -> str | None:
    """Why ``text`` is not FILE.py:NAME[(ARGS)], or None."""
    if not isinstance(text, str):
        return f"expected a string, got {type(text).__name__}"
    try:
        parse_ref(text)
    except ValueError as exc:
        return str(exc)
    return None


def trace_keys(data: dict, file: str, refs: dict | None = None) -> tuple[Flex, list[tuple[str, str]]]:
    """Trace ``score_mod`` and ``mask_mod`` of a spec, and the mask_mods ``refs`` its claims
    name (claim key → text); (parts, [(key, error), ...])."""
    base = Path(file).parent
    errors, traced, parts, masks = [], [], {}, {}
    jobs = [(key, kind, data.get(key)) for key, kind in (("score_mod", "score"), ("mask_mod", "mask"))]
    jobs += [(key, "mask", text) for key, text in (refs or {}).items()]
    for key, kind, text in jobs:
        if text is None:
            continue
        try:
            t = trace(text, kind, base, TIMEOUT[0])
            built = build(t.tree, kind)
        except InputError as exc:
            errors.append((key, str(exc)))
            continue
        except TreeError as exc:
            where = parse_ref(text)[0]
            at = f"{where}, line {exc.line}: " if exc.line else f"{where}: "
            errors.append((key, at + exc.text))
            continue
        if key.startswith("claims."):
            masks[text] = built
            continue
        traced.append(t)
        parts[kind] = built
    return Flex(parts.get("score"), parts.get("mask"), tuple(traced), data_of(*parts.values()), masks), errors


def data_of(*built: Built) -> dict:
    """The captured data of traced modifiers: per-head symbol → values, table name → values."""
    out: dict = {}
    for b in built:
        out.update(b.per_head)
        out.update(b.functions)
        out.update(b.per_head_functions)
    return out


def traced_mask(flex: Flex, text: str) -> Mask | None:
    return None if flex.mask is None else Mask(text, flex.mask.expr, data_of(flex.mask))
