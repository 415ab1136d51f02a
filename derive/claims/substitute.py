"""One substitution for a whole variant: "NAME is replaced by another value".

A claim about NAME (``invariant``, ``depends``, ``output_invariant``, ``output_shift``) compares
the variant with the same variant in which NAME is something else. Every part of a variant that
can involve NAME goes through :func:`substitution`, the one rule for it: the score (a traced
score_mod too, whose ⟨q_i, k_j⟩/√d is built from the spec's q and k), the value, the mask (its
condition: ``document(IDS)`` reads IDS), the normalizer's parameters and own value, and the
domain guards. The replacement is either a fresh object of the same kind (``b_k`` → ``b_k'``, a
fresh opaque function, a fresh table for a captured one) or, for a vector, 0.

:func:`mentions` says, from the spec's text alone (not from the engine objects), whether the
variant names NAME anywhere. A claim compares the two variants only when the variant names NAME
and the substitution changed something: otherwise the two sides would be one expression, and a
"proof" would prove nothing about NAME.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp
from sympy.core.function import AppliedUndef

from derive.model.vectors import VectorFunction, vector_function
from derive.language.parser import Binary, Call, Name, Unary
from derive.language.translate import scalar_function

__all__ = ["ZERO", "mentions", "names_in", "substitution"]

ZERO = object()  # the replacement "NAME = 0" (a vector NAME)


def substitution(spec, name: str, to) -> Callable[[sp.Basic], sp.Basic]:
    """The map expr ↦ expr with NAME replaced by ``to`` (a fresh label, or :data:`ZERO`), for
    every engine object NAME stands for: a declared symbol, q, k, v, and a captured table of
    that name (a declared name and a traced table of the same name are one thing)."""
    declared = _declared(spec, name, to) if name in spec.binds() else None
    flex = spec.flex
    table = None
    if flex is not None and name in flex.table_names() and to is not ZERO:
        from derive.flex.spec import renamed

        tables = {}
        for built in (flex.score, flex.mask):
            if built is not None:
                tables.update(built.tables)

        def table(expr):
            return renamed(expr, tables, {name: to}) if isinstance(expr, sp.Basic) else expr
    if declared is None and table is None:
        raise KeyError(name)
    parts = [f for f in (declared, table) if f is not None]

    def both(expr):
        for f in parts:
            expr = f(expr)
        return expr

    return both


def _declared(spec, name: str, to) -> Callable[[sp.Basic], sp.Basic]:
    base = spec.binds()
    b = base.get(name)
    if b is not None and b.kind == "function":
        if to is ZERO:
            raise ValueError(f"{name} is a function: it cannot be set to 0")

        def swap_function(expr):
            def is_it(e):
                return isinstance(e, (AppliedUndef, VectorFunction)) and type(e).__name__ == name

            def fresh(e):
                cls = vector_function(to) if isinstance(e, VectorFunction) else scalar_function(to)
                return cls(*e.args)

            return expr.replace(is_it, fresh) if isinstance(expr, sp.Basic) else expr

        return swap_function
    new = sp.S.Zero if to is ZERO else spec.binds({name: to})[name].obj
    return lambda expr: expr.xreplace({b.obj: new}) if isinstance(expr, sp.Basic) else expr


def names_in(node) -> set[str]:
    """The names (and called functions) of a parsed spec expression."""
    if isinstance(node, Name):
        return {node.id}
    if isinstance(node, Unary):
        return names_in(node.operand)
    if isinstance(node, Binary):
        return names_in(node.left) | names_in(node.right)
    if isinstance(node, Call):
        out = {node.func}
        for a in node.args:
            out |= names_in(a)
        return out
    return set()


def mentions(spec) -> set[str]:
    """Every name the variant reads, from its text: the score, the second score row and the value as written, the
    normalizer's arguments (the score of a token of its own reads q), the mask's table (``document(IDS)``)
    and the tables of traced modifiers; a traced score_mod reads q and k through its ``score``."""
    from derive.model.masks import _DOC

    out = set()
    for node in (spec.score, spec.value, getattr(spec, "score2", None)):
        if node is not None:
            out |= names_in(node)
    out |= set(spec.norm_args)
    token = _token(spec)
    if token is not None:  # the token's score reads the spec's names (q)
        from derive.language.parser import parse

        out |= names_in(parse(token.score)) - {token.key[0]}
    doc = _DOC.match(str(spec.mask))
    if doc:
        out.add(doc.group(1))
    flex = spec.flex
    if flex is not None:
        from derive.flex.tree import SCORE

        out |= flex.table_names()
        if flex.score is not None and SCORE in flex.score.expr.free_symbols:
            out |= {"q", "k"}
    return out


def _token(spec):
    from derive.normalizers.registry import get

    return get(spec.normalizer).token if spec.norm_args else None
