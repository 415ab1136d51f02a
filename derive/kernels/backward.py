"""The backward pass in the recompute form kernels use, over one key j and the rest of the row.

A row with any number of keys and any mask splits into key j (score x_j, value v_j) and
the other allowed keys, which enter the output only through R = Σ_{t≠j} M_t e^{x_t} ≥ 0 and
W = Σ_{t≠j} M_t e^{x_t} v_t. Differentiating with respect to x_j, v_j or the extra logit σ
therefore needs no assumption on n. With g = dout and L = ⟨g, out⟩, kernels recompute
P_j = e^{x_j − lse} from the saved lse (sink-inclusive) and use D = ⟨g, out⟩:

    ∂L/∂x_j = P_j (⟨g, v_j⟩ − D),   ∂L/∂v_j = P_j g,   ∂L/∂σ = P_σ (⟨g, w⟩ − D).
"""

from __future__ import annotations

import sympy as sp

from derive.kernels.forms import sigma, w
from derive.model.vectors import Dot, VectorSymbol

__all__ = ["D", "L", "Z", "dL_dsigma", "dL_dx", "dsigma_recompute", "dx_recompute", "lse", "lse_kv", "out"]

xj = sp.Symbol("x_j", real=True)
R = sp.Symbol("R", nonnegative=True)
vj = VectorSymbol("v_j")
W = VectorSymbol("W")
g = VectorSymbol("g")  # dout
eps = sp.Symbol("epsilon", real=True)
delta = VectorSymbol("delta")

Z = sp.exp(sigma) + sp.exp(xj) + R
lse = sp.log(Z)  # sink-inclusive: what the forward saves and the backward needs
lse_kv = sp.log(sp.exp(xj) + R)  # KV-only


def out(value_j=vj) -> sp.Expr:
    return (sp.exp(sigma) * w + sp.exp(xj) * value_j + W) / Z


def L(value_j=vj) -> sp.Expr:
    """L = ⟨g, out⟩, written with ⟨·,·⟩ expanded so that SymPy can differentiate it."""
    return (sp.exp(sigma) * Dot(g, w) + sp.exp(xj) * Dot(g, value_j) + Dot(g, W)) / Z


def P(logit, which=lse) -> sp.Expr:
    return sp.exp(logit - which)


D = Dot(g, out())


def dL_dx() -> sp.Expr:
    return sp.diff(L(), xj)


def dL_dsigma() -> sp.Expr:
    return sp.diff(L(), sigma)


def dx_recompute(which=lse) -> sp.Expr:
    return P(xj, which) * (Dot(g, vj) - D)


def dsigma_recompute(sign: int = 1) -> sp.Expr:
    return sign * P(sigma) * (Dot(g, w) - D)
