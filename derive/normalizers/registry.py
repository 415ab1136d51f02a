"""The registry of row normalizers.

Each entry gives, for a row of scores x (symbolic n, mask M):

* ``weight(score, key, params)`` — the symbolic weight of ``key`` (a SymPy expression built
  from :mod:`derive.model.attention`: masked entries get weight 0);
* ``stable(x, mask, params)`` — a numerically stable numpy implementation over the last
  axis (``mask`` is a boolean array, True = allowed, or ``None``);
* ``reference(x, mask, params)`` — the definition evaluated with mpmath at the current
  precision, for one row given as a list (masked entries are ``None``-free: pass
  ``mask``).

Optional fields (with defaults) feed the generic property provers of
:mod:`derive.normalizers.properties`: ``domain`` (the parameter ranges, as symbols with
assumptions or expressions in them), ``sample`` (in-domain parameter values used for
counterexamples and plots), ``shift_effect`` (a *claim*, proved or refuted by the prover,
that a common shift c of the scores equals this or another entry with changed
parameters), ``extra_value`` and ``extra_weight`` (the entry mixes a value vector of its
own into the output, with that weight) and ``definition`` (LaTeX for documents).

Adding a normalizer is one :class:`Normalizer` entry in :data:`REGISTRY`; every property
and check is derived from these definitions by generic machinery.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import mpmath
import numpy as np
import sympy as sp

from derive.errors import InputError
from derive.model.attention import M, Score, i, j, row_sum

__all__ = ["REGISTRY", "SINK", "Normalizer", "get", "names", "register"]


@dataclass(frozen=True)
class Normalizer:
    name: str
    title: str
    params: tuple[str, ...]
    weight: Callable[..., sp.Expr]
    stable: Callable[..., np.ndarray]
    reference: Callable[..., list]
    latex: str
    definition: str = ""
    domain: dict = field(default_factory=dict)  # param → symbol/expression with assumptions
    domain_text: str = ""
    sample: dict = field(default_factory=dict)  # param → in-domain value (counterexamples, plots)
    shift_effect: Callable | None = None  # (c, params) → (entry name, params) claimed equal
    extra_value: bool = False  # mixes a value vector of its own into the output
    note: str = ""
    sources: tuple[str, ...] = ()  # keys of derive.document.references: where the normalizer comes from
    # An overflow-free form with a free shift m, when it is not the generic one (scores x − m
    # with the shifted parameters of ``shift_effect``): (score, key, m, **params) → weight.
    stable_form: Callable | None = None
    stable_text: str = ""  # how m is chosen so that no exponent is positive
    # A composition p_j = M_j·outer(p'_j, **params) with p' the weights of entry ``inner``
    # (checked by the provers before use, never assumed).
    inner: str | None = None
    outer: Callable | None = None
    # With ``extra_value``: (score, **params) → the weight of the entry's own token, which
    # multiplies its own value in the output (the learned token of bias_kv).
    extra_weight: Callable | None = None

    def symbols(self) -> dict[str, sp.Expr]:
        """The symbolic parameters, with their domain (e.g. c > 0 for a soft cap)."""
        return {p: self.domain.get(p, sp.Symbol(p, real=True)) for p in self.params}

    def sample_values(self) -> dict[str, sp.Expr]:
        return {p: sp.nsimplify(self.sample.get(p, 0)) for p in self.params}


# ---- softmax family: exp(x_j) / (exp(s) + Σ_t exp(x_t)), s = −∞ for softmax -------------


def _sink_weight(score: Score, key: sp.Expr, sink: sp.Expr | None) -> sp.Expr:
    den = row_sum(lambda x: sp.exp(score(x)))
    if sink is not None:
        den = sp.exp(sink) + den
    return M[i, key] * sp.exp(score(key)) / den


def _masked(x: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    x = np.asarray(x, dtype=np.result_type(x, np.float32))
    return x if mask is None else np.where(mask, x, -np.inf)


def _sink_stable(x: np.ndarray, mask: np.ndarray | None, sink) -> np.ndarray:
    """exp(x − m) / (exp(s − m) + Σ exp(x − m)), m = max(s, max x): never overflows."""
    x = _masked(x, mask)
    m = np.max(x, axis=-1, keepdims=True)
    if sink is not None:
        sink = np.asarray(sink, dtype=x.dtype)
        if sink.ndim:
            sink = sink[..., None]
        m = np.maximum(m, sink)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    den = e.sum(axis=-1, keepdims=True)
    if sink is not None:
        den = den + np.exp(sink - m)
    with np.errstate(invalid="ignore", divide="ignore"):
        return e / den


def _sink_reference(x, mask, sink) -> list:
    allowed = [mask is None or bool(mask[k]) for k in range(len(x))]
    e = [mpmath.exp(mpmath.mpf(v)) if ok and v != -np.inf else mpmath.mpf(0) for v, ok in zip(x, allowed)]
    den = mpmath.fsum(e) + (mpmath.exp(mpmath.mpf(sink)) if sink is not None else 0)
    if den == 0:
        return [mpmath.nan] * len(x)
    return [v / den for v in e]


def _augmented_stable(x, mask, extra) -> np.ndarray:
    """Prepend one more key with score ``extra`` (a number or one per row), run the plain
    softmax over the longer row and drop the extra key's weight: an implementation of the
    token view, independent of the sink formula."""
    x = _masked(x, mask)
    extra = np.broadcast_to(np.asarray(extra, dtype=x.dtype), x.shape[:-1])[..., None]
    full = np.concatenate([extra, x], axis=-1)
    return _sink_stable(full, None, None)[..., 1:]


# ---- elementwise and clipped ----------------------------------------------------------


def _sigmoid_stable(x, mask, b) -> np.ndarray:
    x = np.asarray(x, dtype=np.result_type(x, np.float32))
    z = x + np.asarray(b, dtype=x.dtype)
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(z))
        out = np.where(z >= 0, 1 / (1 + e), e / (1 + e))
    return out if mask is None else np.where(mask, out, 0)


def _sigmoid_reference(x, mask, b) -> list:
    return [
        mpmath.mpf(0) if (mask is not None and not mask[k]) else 1 / (1 + mpmath.exp(-(mpmath.mpf(v) + b)))
        for k, v in enumerate(x)
    ]


def _clipped_stable(x, mask, zeta, gamma) -> np.ndarray:
    p = _sink_stable(x, mask, None)
    out = np.clip((zeta - gamma) * p + gamma, 0, 1)
    return out if mask is None else np.where(mask, out, 0)


def _clipped_reference(x, mask, zeta, gamma) -> list:
    p = _sink_reference(x, mask, None)
    out = []
    for k, v in enumerate(p):
        if mask is not None and not mask[k]:
            out.append(mpmath.mpf(0))
        else:
            out.append(min(mpmath.mpf(1), max(mpmath.mpf(0), (mpmath.mpf(zeta) - gamma) * v + gamma)))
    return out


def _softcap_reference(x, mask, c) -> list:
    capped = [c * mpmath.tanh(mpmath.mpf(v) / c) if v != -np.inf else -np.inf for v in x]
    return _sink_reference(capped, mask, None)


def _softcap_stable(x, mask, c) -> np.ndarray:
    x = np.asarray(x, dtype=np.result_type(x, np.float32))
    return _sink_stable(c * np.tanh(x / c), mask, None)


REGISTRY: dict[str, Normalizer] = {}
SINK = sp.Symbol("s", real=True)  # the sink logit, a shared real parameter


def register(entry: Normalizer) -> Normalizer:
    REGISTRY[entry.name] = entry
    return entry


_s = SINK
_b = sp.Symbol("b", real=True)
_sstar = sp.Symbol("s^*_i", real=True)
_zeta = sp.Symbol("zeta", real=True)
_gamma = sp.Symbol("gamma", real=True)
_cap = sp.Symbol("c_cap", positive=True)  # the soft cap c (named apart from a shift c)

register(
    Normalizer(
        name="softmax",
        title="softmax",
        sources=("vaswani2017",),
        params=(),
        weight=lambda score, key=j, **p: _sink_weight(score, key, None),
        stable=lambda x, mask=None, **p: _sink_stable(x, mask, None),
        reference=lambda x, mask=None, **p: _sink_reference(x, mask, None),
        latex=r"\operatorname{softmax}",
        definition=r"p_j = \frac{e^{x_j}}{\sum_t e^{x_t}}",
        stable_text="$m = \\max_t x_t$",
    )
)
register(
    Normalizer(
        name="softmax1",
        title="softmax₁ (QuietAttention)",
        sources=("miller2023",),
        params=(),
        weight=lambda score, key=j, **p: _sink_weight(score, key, sp.S.Zero),
        stable=lambda x, mask=None, **p: _sink_stable(x, mask, 0.0),
        reference=lambda x, mask=None, **p: _sink_reference(x, mask, 0),
        latex=r"\operatorname{softmax}_1",
        definition=r"p_j = \frac{e^{x_j}}{1 + \sum_t e^{x_t}}",
        shift_effect=lambda c, p: ("sink", {"s": -c}),
        stable_text="$m = \\max(0, \\max_t x_t)$: the implicit zero logit joins the max",
    )
)
register(
    Normalizer(
        name="sink",
        title="sink logit s (gpt-oss)",
        sources=("gpt-oss2025",),  # Xiao et al.'s sink tokens have values: bias_kv
        params=("s",),
        weight=lambda score, key=j, s=SINK, **p: _sink_weight(score, key, s),
        stable=lambda x, mask=None, s=0.0, **p: _sink_stable(x, mask, s),
        reference=lambda x, mask=None, s=0.0, **p: _sink_reference(x, mask, s),
        latex=r"\operatorname{sink}_s",
        definition=r"p_j = \frac{e^{x_j}}{e^{s} + \sum_t e^{x_t}}",
        domain={"s": _s},
        domain_text="$s$ real (learned per head)",
        sample={"s": 1},
        shift_effect=lambda c, p: ("sink", {"s": p["s"] - c}),
        stable_text="$m = \\max(s, \\max_t x_t)$",
    )
)
register(
    Normalizer(
        name="zero_token",
        title="zero-token attention (add_zero_attn)",
        sources=("pytorch-mha",),
        params=(),
        # The row with one more key, of score 0 (⟨q_i, 0⟩/√d) and value 0, prepended.
        weight=lambda score, key=j, **p: _sink_weight(score, key, sp.S.Zero),
        stable=lambda x, mask=None, **p: _augmented_stable(x, mask, 0.0),
        reference=lambda x, mask=None, **p: _sink_reference(x, mask, 0),
        latex=r"\operatorname{zero}",
        definition=r"p_j = \frac{e^{x_j}}{e^{0} + \sum_t e^{x_t}}\ \text{(extra key of score 0, value 0)}",
        shift_effect=lambda c, p: ("sink", {"s": -c}),
        stable_text="$m = \\max(0, \\max_t x_t)$, the extra key's 0 included",
        note="the extra key's score is exactly 0 and its value is the zero vector",
    )
)
register(
    Normalizer(
        name="bias_kv",
        title="learned key/value token (add_bias_kv)",
        sources=("pytorch-mha", "xiao2024"),
        params=("s_star",),
        # The learned key k* scores s*_i = ⟨q_i, k*⟩/√d (query-dependent); its weight
        # e^{s*}/(e^{s*} + Σ e^{x_t}) multiplies its own value v*.
        weight=lambda score, key=j, s_star=_sstar, **p: _sink_weight(score, key, s_star),
        stable=lambda x, mask=None, s_star=0.0, **p: _augmented_stable(x, mask, s_star),
        reference=lambda x, mask=None, s_star=0.0, **p: _sink_reference(x, mask, s_star),
        latex=r"\operatorname{kv}^{*}",
        definition=r"p_j = \frac{e^{x_j}}{e^{s^*_i} + \sum_t e^{x_t}},\ s^*_i = \langle q_i, k^* \rangle/\sqrt{d}",
        domain={"s_star": _sstar},
        domain_text="$s^*_i = \\langle q_i, k^* \\rangle / \\sqrt{d}$ real, one per query row",
        sample={"s_star": 1},
        shift_effect=lambda c, p: ("bias_kv", {"s_star": p["s_star"] - c}),
        stable_text="$m = \\max(s^*_i, \\max_t x_t)$, per row",
        extra_value=True,
        extra_weight=lambda score, s_star=_sstar, **p: (
            sp.exp(s_star) / (sp.exp(s_star) + row_sum(lambda x: sp.exp(score(x))))
        ),
        note="weights of the real keys only; the learned token adds $e^{s^*_i} v^* / (e^{s^*_i} + \\sum_t e^{x_t})$ to the output",
    )
)
register(
    Normalizer(
        name="sigmoid",
        title="sigmoid attention",
        sources=("ramapuram2025",),
        params=("b",),
        weight=lambda score, key=j, b=_b, **p: M[i, key] / (1 + sp.exp(-(score(key) + b))),
        stable=lambda x, mask=None, b=0.0, **p: _sigmoid_stable(x, mask, b),
        reference=lambda x, mask=None, b=0.0, **p: _sigmoid_reference(x, mask, b),
        latex=r"\sigma",
        definition=r"p_j = \sigma(x_j + b) = \frac{1}{1 + e^{-(x_j + b)}}",
        domain={"b": _b},
        domain_text="$b$ real",
        sample={"b": 0},
        shift_effect=lambda c, p: ("sigmoid", {"b": p["b"] + c}),
        stable_form=lambda score, key, m, b=_b, **p: (
            M[i, key]
            * sp.Piecewise(
                (1 / (1 + sp.exp(-(score(key) + b))), score(key) + b >= 0),
                (sp.exp(score(key) + b) / (1 + sp.exp(score(key) + b)), True),
            )
        ),
        stable_text="no shift: $e^{-\\lvert x + b \\rvert}$ in the branch that keeps the exponent $\\le 0$",
    )
)
register(
    Normalizer(
        name="clipped",
        title="clipped softmax (Quantizable Transformers)",
        sources=("bondarenko2023",),
        params=("zeta", "gamma"),
        weight=lambda score, key=j, zeta=_zeta, gamma=_gamma, **p: (
            M[i, key] * sp.Min(1, sp.Max(0, (zeta - gamma) * _sink_weight(score, key, None) + gamma))
        ),
        stable=lambda x, mask=None, zeta=1.0, gamma=-0.5, **p: _clipped_stable(x, mask, zeta, gamma),
        reference=lambda x, mask=None, zeta=1.0, gamma=-0.5, **p: _clipped_reference(x, mask, zeta, gamma),
        latex=r"\operatorname{clip}",
        definition=r"p_j = \min\bigl(1, \max\bigl(0, (\zeta - \gamma)\operatorname{softmax}(x)_j + \gamma\bigr)\bigr)",
        domain={"zeta": 1 + sp.Symbol("zeta'", nonnegative=True), "gamma": -sp.Symbol("gamma'", nonnegative=True)},
        domain_text="$\\zeta \\ge 1$, $\\gamma \\le 0$",
        sample={"zeta": 1, "gamma": sp.Rational(-1, 10)},
        inner="softmax",
        outer=lambda w, zeta=_zeta, gamma=_gamma, **p: sp.Min(1, sp.Max(0, (zeta - gamma) * w + gamma)),
        stable_text="the inner softmax with $m = \\max_t x_t$",
    )
)
register(
    Normalizer(
        name="softcap",
        title="soft-capped softmax (Gemma 2)",
        sources=("gemma2-2024",),
        params=("c",),
        weight=lambda score, key=j, c=_cap, **p: _sink_weight(lambda k: c * sp.tanh(score(k) / c), key, None),
        stable=lambda x, mask=None, c=50.0, **p: _softcap_stable(x, mask, c),
        reference=lambda x, mask=None, c=50.0, **p: _softcap_reference(x, mask, c),
        latex=r"\operatorname{softmax}\circ\operatorname{cap}_{c_{\mathrm{cap}}}",
        # The cap is written c_cap everywhere it is shown: c alone is a common shift of the scores.
        definition=r"p_j = \operatorname{softmax}\bigl(c_{\mathrm{cap}} \tanh(x/c_{\mathrm{cap}})\bigr)_j",
        domain={"c": _cap},
        domain_text=r"$c_{\mathrm{cap}} > 0$ (50 in Gemma 2)",
        stable_form=lambda score, key, m, c=_cap, **p: _sink_weight(lambda k: c * sp.tanh(score(k) / c) - m, key, None),
        stable_text=r"$m = c_{\mathrm{cap}}$: the capped scores lie in $(-c_{\mathrm{cap}}, c_{\mathrm{cap}})$, so every exponent is $< 0$",
        sample={"c": 1},
    )
)


def names() -> list[str]:
    return sorted(REGISTRY)


def get(name: str) -> Normalizer:
    try:
        return REGISTRY[name]
    except KeyError:
        import difflib

        near = difflib.get_close_matches(name, names(), n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise InputError(f"unknown normalizer {name!r}: expected one of {', '.join(names())}{hint}") from None
