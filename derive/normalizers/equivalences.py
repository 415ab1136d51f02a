"""Equivalences between attention with an extra token and a normalizer, with their conditions.

The token model: row i attends to its n real keys k_t (values v_t, mask M) and to one
extra token with key k* and value v*, always allowed. Its output is

    out_i = (e^{⟨q_i, k*⟩/√d}·v* + Σ_u M_u e^{x_u} v_u) / (e^{⟨q_i, k*⟩/√d} + Σ_t M_t e^{x_t}).

Each :class:`Equivalence` states one claim with the condition it encodes (what κ, ν and
the real keys are); :func:`decide_all` proves or refutes each with the generic
:func:`~derive.normalizers.algebra.settle` (a violated condition gives a certified
counterexample).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp

from derive.model.attention import M, d, i, j, n, t, u
from derive.model.vectors import Dot, VectorBase, vector
from derive.normalizers.registry import get
from derive.prove.verdict import Verdict
from derive.shared import once

__all__ = [
    "EQUIVALENCES",
    "KAPPA",
    "NU",
    "Equivalence",
    "K",
    "Q",
    "V",
    "decide_all",
    "normalizer_output",
    "token_output",
]

Q, K, V = VectorBase("q"), VectorBase("k"), VectorBase("v")
B_K, B_V, P0, K_STAR, V_STAR = vector("b_K"), vector("b_V"), vector("p_0"), vector("k^*"), vector("v^*")
KAPPA, NU = K_STAR, V_STAR  # the extra token's key and value (k*, v* on the notation sheet)
ZERO = sp.S.Zero


def _score(key_shift=ZERO):
    return lambda k: Dot(Q[i], K[k] + key_shift) / sp.sqrt(d)


def token_output(kappa, nu, key_shift=ZERO) -> sp.Expr:
    """The output of row i with the extra token (key κ, value ν); real keys k_t + key_shift."""
    s = _score(key_shift)
    extra = sp.exp(Dot(Q[i], kappa) / sp.sqrt(d))
    num = extra * nu + sp.Sum(M[i, u] * sp.exp(s(u)) * V[u], (u, 1, n))
    return num / (extra + sp.Sum(M[i, t] * sp.exp(s(t)), (t, 1, n)))


def normalizer_output(name: str, params: dict | None = None, key_shift=ZERO) -> sp.Expr:
    """Σ_u p_u·v_u with the registry entry's weights over the real keys."""
    w = get(name).weight
    return sp.Sum(w(_score(key_shift), key=u, **(params or {})) * V[u], (u, 1, n))


@dataclass(frozen=True)
class Equivalence:
    name: str
    statement: str  # with $…$ math
    condition: str  # the condition it encodes, or the one it violates
    lhs: Callable[[], sp.Expr]
    rhs: Callable[[], sp.Expr]
    expect: str  # "proved" or "refuted": what the author states (checked, never assumed)


_SSTAR = Dot(Q[i], K_STAR) / sp.sqrt(d)

EQUIVALENCES = [
    Equivalence(
        "zero token ≡ softmax₁",
        "zero-token attention equals softmax₁ attention",
        "the token's key is 0 (score exactly 0) and its value is 0",
        lambda: token_output(ZERO, ZERO),
        lambda: normalizer_output("softmax1"),
        "proved",
    ),
    Equivalence(
        "positional term reaches the token",
        "a positional embedding reaches the token's key: $k^{*} = p_0$",
        "violated: the token's score is $\\langle q_i, p_0 \\rangle/\\sqrt{d}$, not 0 unless $q_i \\perp p_0$",
        lambda: token_output(P0, ZERO),
        lambda: normalizer_output("softmax1"),
        "refuted",
    ),
    Equivalence(
        "V bias reaches the token",
        "the token's value picks up the V bias: $v^{*} = b_V$",
        "violated: the output gains $b_V$ times the token's weight",
        lambda: token_output(ZERO, B_V),
        lambda: normalizer_output("softmax1"),
        "refuted",
    ),
    Equivalence(
        "K bias on every key, token included",
        "the K bias reaches the token and every real key alike: $k^{*} = b_K$, $k_t + b_K$",
        "equal to softmax₁ of the *bias-free* scores: the bias shifts the whole row, the token's score included",
        lambda: token_output(B_K, ZERO, key_shift=B_K),
        lambda: normalizer_output("softmax1"),
        "proved",
    ),
    Equivalence(
        "… but not softmax₁ of the biased scores",
        "the same model against softmax₁ of the biased scores $\\langle q_i, k_t + b_K \\rangle/\\sqrt{d}$",
        "the bias is not cancelled by softmax₁",
        lambda: token_output(B_K, ZERO, key_shift=B_K),
        lambda: normalizer_output("softmax1", key_shift=B_K),
        "refuted",
    ),
    Equivalence(
        "sink(0) ≡ softmax₁",
        "a sink logit $s = 0$ is softmax₁",
        "s = 0",
        lambda: get("sink").weight(_score(), key=j, s=ZERO),
        lambda: get("softmax1").weight(_score(), key=j),
        "proved",
    ),
    Equivalence(
        "learned key/value token",
        (
            "add_bias_kv: a query-dependent sink $x^{*}_i = \\langle q_i, k^{*} \\rangle/\\sqrt{d}$ on the real keys "
            "plus the token's own value"
        ),
        "the token's key k* and value v* are learned, appended after the projections",
        lambda: token_output(K_STAR, V_STAR),
        lambda: (
            normalizer_output("sink", {"s": _SSTAR})
            + sp.exp(_SSTAR) / (sp.exp(_SSTAR) + sp.Sum(M[i, t] * sp.exp(_score()(t)), (t, 1, n))) * V_STAR
        ),
        "proved",
    ),
]


_DECIDED: dict[int, Verdict] = {}  # verdicts decided in this process (or handed to it), by index


def decide(k: int) -> Verdict:
    """The verdict of ``EQUIVALENCES[k]``, decided by the normalizers' prover."""
    from derive.normalizers.algebra import settle

    if k not in _DECIDED:
        e = EQUIVALENCES[k]
        _DECIDED[k] = settle(e.lhs(), e.rhs(), get("softmax"), {})
    return _DECIDED[k]


def decide_all() -> list[tuple[Equivalence, Verdict]]:
    # the verdicts (an Equivalence holds lambdas) are decided once per build across documents
    verdicts = once("equivalences.decide_all", lambda: [decide(k) for k in range(len(EQUIVALENCES))])
    return list(zip(EQUIVALENCES, verdicts))
