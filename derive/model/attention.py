"""The attention model over a row of symbolic length n.

Row i of attention normalizes the scores s_it over its *allowed* keys. The allowed set
is described by a mask M with M[i, t] ∈ {0, 1}: all keys (M ≡ 1), a causal prefix
(M[i, t] = [t ≤ i]) or any set at all. A row sum is the symbolic sum
Σ_{t=1}^{n} M[i, t]·f(t), so every statement proved here holds for symbolic n and for
every allowed set (which must be non-empty for the row to be defined).
"""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp


__all__ = [
    "DISPLAY_APART",
    "M",
    "LabelBase",
    "MaskBase",
    "ScalarBase",
    "Score",
    "X",
    "d",
    "display_apart",
    "i",
    "j",
    "mixed_output",
    "n",
    "row_sum",
    "scale",
    "softmax_weight",
    "t",
    "u",
]

d = sp.Symbol("d", integer=True, positive=True)
n = sp.Symbol("n", integer=True, positive=True)
i = sp.Symbol("i", integer=True, positive=True)
j = sp.Symbol("j", integer=True, positive=True)
t = sp.Symbol("t", integer=True, positive=True)
u = sp.Symbol("u", integer=True, positive=True)


class MaskBase(sp.IndexedBase):
    """M[i, t] ∈ {0, 1}: whether key t is allowed for query row i."""


class LabelBase(sp.IndexedBase):
    """A vector of integer labels L[t], t = 1..n: an opaque table of positions compared only
    for equality (a document mask's ids, IDS(t − 1) = L[t])."""


class ScalarBase(sp.IndexedBase):
    """A table of real numbers, e.g. raw scores s[i, t] or per-token shifts."""


M = MaskBase("M")
X = ScalarBase("x")  # the row's scores x[i, t] (scaled), the argument of every normalizer

# What an internal object is shown as when a spec declares its name (a user's scalar t
# next to Σ_t would read as one thing). The replacements are not identifiers, so no
# declared name (nor a fresh copy such as t') can equal them.
DISPLAY_APART = {"t": "τ", "u": "ω", "M": "𝕄"}


def display_apart(taken) -> dict:
    """Replacements, for display only, of the bound variables and the mask whose names are
    ``taken`` by a spec. The internal objects themselves never equal a declared symbol:
    t and u are integer symbols, which no declared kind is, and M is a mask base."""
    out = {}
    for obj in (t, u, M):
        name = obj.name
        if name in taken:
            new = DISPLAY_APART[name]
            out[obj] = MaskBase(new) if obj is M else sp.Symbol(new, integer=True, positive=True)
    return out


Score = Callable[[sp.Expr], sp.Expr]
"""A score is a function of the key index: ``lambda key: Dot(q[i], k[key]) / sqrt(d)``."""


def scale(expr: sp.Expr) -> sp.Expr:
    """The 1/√d scaling of scaled dot-product attention."""
    return expr / sp.sqrt(d)


def row_sum(f: Callable[[sp.Expr], sp.Expr], dummy: sp.Symbol = t) -> sp.Expr:
    """Σ over the allowed keys of row i: Σ_{t=1}^{n} M[i, t]·f(t)."""
    return sp.Sum(M[i, dummy] * f(dummy), (dummy, 1, n))


def softmax_weight(score: Score, key: sp.Expr = j) -> sp.Expr:
    """p_i,key = M[i,key]·exp(s(key)) / Σ_t M[i,t]·exp(s(t))."""
    return M[i, key] * sp.exp(score(key)) / row_sum(lambda x: sp.exp(score(x)))


def mixed_output(weight: Callable[[sp.Expr], sp.Expr], value: Callable[[sp.Expr], sp.Expr]) -> sp.Expr:
    """out_i = Σ_u p_iu·v_u, a vector-valued sum over the keys."""
    return sp.Sum(weight(u) * value(u), (u, 1, n))
