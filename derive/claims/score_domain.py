"""Where the spec's score (or value) as written has no value, and a proof may not see it.

A divisor of the score that may be 0 is a point where the score, and so the row's weights, has
no value. SymPy's reading keeps such a divisor as written, but a proof simplifies: it cancels a
factor the numerator shares (``dot(q, k) * (c**2 - 1)/((c - 1)*(c + 1))`` is ``dot(q, k)`` to
it, also at c = ±1), and SymPy drops one it can cancel as it builds (``c/c`` is 1). A claim on
such a variant is then proved about an expression that has a value where the score as written
has none. So no claim that reads the score is proved then: undecided, with the divisor's zero
named (a counterexample, searched inside the domain, stands). A divisor whose zeros are poles of
the score (``dot(q, k) / c``, c of unknown sign) is kept by every proof, which then holds where the
score has a value; a divisor certainly nonzero (``sqrt(d)``, ``1 + dot(k, k)``, a declared sign) is no
such point.
"""

from __future__ import annotations

import sympy as sp

from derive.language.domain import _signed
from derive.language.translate import translate

__all__ = ["why_no_proof"]


def why_no_proof(spec, outputs: bool = False, expr=None, parts=("score", "score2", "value", "EXPR")) -> str | None:
    """Why no claim on the weights of ``spec`` (with ``outputs``, on its outputs, which read the
    value too; with ``expr``, the claim's EXPR, which it reads too) may rest on a proof, or None."""
    binds = spec.binds()
    for part, node in (("score", spec.score), ("score2", spec.score2), ("value", spec.value), ("EXPR", expr)):
        if node is None or part not in parts or part == "value" and not outputs:
            continue
        guards: list = []
        expr = translate(node, binds, guards=guards)[0]
        for kind, b in guards:
            if kind != "nonzero":
                continue
            lost = _lost_zero(expr, b)
            if lost is not None:
                part = "claim's EXPR" if part == "EXPR" else part
                return (f"the {part} as written has no value where {sp.sstr(lost)} = 0 (a divisor, "
                        f"{sp.sstr(b)}), but a proof about it may cancel that factor; derive proves claims "
                        f"only about the {part} as written, where it has a value")
    return None


def _lost_zero(expr: sp.Expr, b: sp.Expr) -> sp.Expr | None:
    """A factor of the divisor ``b`` that may be 0 and that the reading ``expr`` does not keep as a
    pole: one it dropped, or one its numerator shares."""
    if _signed(b).is_nonzero:
        return None
    num, den = sp.fraction(sp.together(expr))
    for f, _ in sp.factor_list(b)[1]:
        if not f.free_symbols or _signed(f).is_nonzero:
            continue
        kept = sp.cancel(sp.gcd(den, f) / f).is_number  # f is still a factor of the denominator
        if not kept or sp.gcd(num, f).free_symbols:
            return f
    return None
