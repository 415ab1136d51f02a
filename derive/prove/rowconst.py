"""Row-constant or key-dependent: a proof obligation, not a pattern match.

An expression f(j) is *row-constant* over the keys of a row when f(j₁) = f(j₂) for any
two keys j₁, j₂ — proved symbolically by :func:`prove_equal`. It is *key-dependent* when a
certified counterexample shows f(j₁) ≠ f(j₂) for some concrete instance. Anything else
is undecided. The same test with the query index i decides whether a term varies
between rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from derive.prove.equality import prove_equal
from derive.prove.verdict import PROVED, REFUTED, Verdict
from derive.settings import DEFAULT, Settings

__all__ = ["Classification", "classify"]


@dataclass(frozen=True)
class Classification:
    expr: sp.Expr
    index: sp.Symbol
    verdict: Verdict
    first: sp.Expr  # f(index₁)
    second: sp.Expr  # f(index₂)

    @property
    def label(self) -> str:
        if self.verdict.status == PROVED:
            return "row-constant" if self.index.name == "j" else f"constant in ${sp.latex(self.index)}$"
        if self.verdict.status == REFUTED:
            return "key-dependent" if self.index.name == "j" else f"depends on ${sp.latex(self.index)}$"
        return "undecided"


def classify(expr: sp.Expr, index: sp.Symbol, cfg: Settings = DEFAULT) -> Classification:
    """Decide whether ``expr`` takes the same value for every value of ``index``."""
    one = sp.Symbol(f"{index.name}_1", integer=True, positive=True)
    two = sp.Symbol(f"{index.name}_2", integer=True, positive=True)
    first, second = expr.subs(index, one), expr.subs(index, two)
    verdict = prove_equal(first, second, cfg=cfg, fixed={one: 1, two: 2})
    return Classification(expr, index, verdict, first, second)
