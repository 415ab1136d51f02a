"""The backward pass in the recompute form kernels use, over one key j and the rest of the row.

A row with any number of keys and any mask splits into key j (score x_j, value v_j) and
the other allowed keys, which enter the output only through R = Σ_{t≠j} M_t e^{x_t} ≥ 0 and
W = Σ_{t≠j} M_t e^{x_t} v_t. Differentiating with respect to x_j, v_j or the extra logit σ
therefore needs no assumption on n. With g = dout and L = ⟨g, out⟩, kernels recompute
P_j = e^{x_j − lse} from the saved lse (sink-inclusive) and use D = ⟨g, out⟩:

    ∂L/∂x_j = P_j (⟨g, v_j⟩ − D),   ∂L/∂v_j = P_j g,   ∂L/∂σ = P_σ (⟨g, w⟩ − D).

The scores are x_t = ⟨q, k_t⟩/√d: the query and the keys get their gradients through them,
∂L/∂q = Σ_t dS_t k_t/√d and ∂L/∂k_j = dS_j q/√d (dS_t = ∂L/∂x_t), which :func:`dq_directional`
and :func:`dk_directional` state as directional derivatives (a vector is never written in
components); a learned token's key and value (``add_bias_kv``) get theirs through its score
x* = ⟨q, k*⟩/√d and its value v* (:func:`dkstar_directional`, :func:`dvstar_step`).
"""

from __future__ import annotations

import sympy as sp

from derive.kernels.forms import sigma, w
from derive.model.attention import M, d, i, n, t
from derive.model.vectors import Dot, VectorBase, VectorSymbol, expand_dot

__all__ = ["D", "L", "Z", "dL_dsigma", "dL_dx", "dk_directional", "dkstar_directional", "dq_directional",
           "dsigma_recompute", "dvstar_step", "dx_recompute", "lse", "lse_kv", "out", "row_loss", "row_weight"]

xj = sp.Symbol("x_j", real=True)
R = sp.Symbol("R", nonnegative=True)
vj = VectorSymbol("v_j")
W = VectorSymbol("U")  # the other keys' weighted values (U on the notation sheet; W is a projection)
g = VectorSymbol("dO")  # dout
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


# ---- the query and the keys: gradients through the scores x_t = ⟨q, k_t⟩/√d ------------------

q = VectorBase("q")
k = VectorBase("k")
v = VectorBase("v")
kstar = VectorSymbol("k^*")
SCALE = 1 / sp.sqrt(d)  # the softmax scale c


def _score(query, key) -> sp.Expr:
    return expand_dot(Dot(query, key)) * SCALE


def row_loss(query=None, eps=None) -> sp.Expr:
    """L = ⟨g, out⟩ of row i over symbolic n keys and any mask, the scores ⟨query, k_t⟩/√d and the
    extra logit σ (value w); ``query`` defaults to q_i."""
    query = q[i] if query is None else query
    num = sp.exp(sigma) * Dot(g, w) + sp.Sum(M[i, t] * sp.exp(_score(query, k[t])) * Dot(g, v[t]), (t, 1, n))
    return num / (sp.exp(sigma) + sp.Sum(M[i, t] * sp.exp(_score(query, k[t])), (t, 1, n)))


def row_weight(key) -> sp.Expr:
    """p_key of row i (the scores ⟨q_i, k_t⟩/√d, extra logit σ)."""
    return M[i, key] * sp.exp(_score(q[i], k[key])) / (
        sp.exp(sigma) + sp.Sum(M[i, t] * sp.exp(_score(q[i], k[t])), (t, 1, n)))


def dq_directional() -> tuple[sp.Expr, sp.Expr]:
    """(d/dε L(q_i + ε δ) at ε = 0, Σ_t dS_t ⟨δ, k_t⟩/√d): the derivative in the direction δ and
    the recompute form, dS_t = p_t (⟨g, v_t⟩ − D), D = ⟨g, out⟩ = L."""
    lhs = sp.diff(row_loss(q[i] + eps * delta), eps).subs(eps, 0)
    Dfull = row_loss()
    dS = row_weight(t) * (Dot(g, v[t]) - Dfull)
    return lhs, sp.Sum(dS * Dot(delta, k[t]) * SCALE, (t, 1, n))


def _loss_j(xj_, xs=sigma) -> sp.Expr:
    """L with key j's score ``xj_`` and the extra logit ``xs``, the other keys in R, U."""
    return (sp.exp(xs) * Dot(g, w) + sp.exp(xj_) * Dot(g, vj) + Dot(g, W)) / (sp.exp(xs) + sp.exp(xj_) + R)


qi = VectorSymbol("q_i")
kj = VectorSymbol("k_j")


def dk_directional() -> tuple[sp.Expr, sp.Expr]:
    """(d/dε L(k_j + ε δ) at ε = 0, dS_j ⟨q_i, δ⟩/√d) for one row: key j's score is ⟨q_i, k_j⟩/√d."""
    lhs = sp.diff(_loss_j(_score(qi, kj + eps * delta)), eps).subs(eps, 0)
    x0 = _score(qi, kj)
    P0 = sp.exp(x0) / (sp.exp(sigma) + sp.exp(x0) + R)
    return lhs, P0 * (Dot(g, vj) - _loss_j(x0)) * Dot(qi, delta) * SCALE


def dkstar_directional() -> tuple[sp.Expr, sp.Expr]:
    """(d/dε L(k* + ε δ) at ε = 0, ∂L/∂x* · ⟨q_i, δ⟩/√d) for one row: the learned token's score is
    x* = ⟨q_i, k*⟩/√d and its value w = v*."""
    lhs = sp.diff(_loss_j(xj, _score(qi, kstar + eps * delta)), eps).subs(eps, 0)
    s0 = _score(qi, kstar)
    Ps = sp.exp(s0) / (sp.exp(s0) + sp.exp(xj) + R)
    return lhs, Ps * (Dot(g, w) - _loss_j(xj, s0)) * Dot(qi, delta) * SCALE


def dvstar_step() -> tuple[sp.Expr, sp.Expr]:
    """(L(v* + ε δ) − L(v*), ε P_σ ⟨g, δ⟩): L is affine in the extra value with slope P_σ g."""
    moved = (sp.exp(sigma) * Dot(g, w + eps * delta) + sp.exp(xj) * Dot(g, vj) + Dot(g, W)) / Z
    return moved - _loss_j(xj), eps * P(sigma) * Dot(g, delta)
