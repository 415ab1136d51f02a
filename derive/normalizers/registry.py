"""The registry of row normalizers.

Each entry gives, for a row of scores x (symbolic n, mask M):

* ``weight(score, key, params)`` — the symbolic weight of ``key`` (a SymPy expression built
  from :mod:`derive.model.attention`: masked entries get weight 0);
* ``stable(x, mask, params)`` — a numerically stable numpy implementation over the last
  axis (``mask`` is a boolean array, True = allowed, or ``None``);
* ``reference(x, mask, params)`` — the definition evaluated with mpmath at the current
  precision, for one row given as a list (masked entries are ``None``-free: pass
  ``mask``).

Adding a normalizer is one :class:`Normalizer` entry in :data:`REGISTRY`; every property
and check is derived from these definitions by generic machinery.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mpmath
import numpy as np
import sympy as sp

from derive.errors import InputError
from derive.model.attention import M, Score, i, j, row_sum

__all__ = ["REGISTRY", "Normalizer", "get", "names"]


@dataclass(frozen=True)
class Normalizer:
    name: str
    title: str
    params: tuple[str, ...]
    weight: Callable[..., sp.Expr]
    stable: Callable[..., np.ndarray]
    reference: Callable[..., list]
    latex: str

    def symbols(self) -> dict[str, sp.Symbol]:
        return {p: sp.Symbol(p, real=True) for p in self.params}


# ---- softmax family: exp(x_j) / (exp(s) + Σ_t exp(x_t)), s = −∞ for softmax -------------


def _sink_weight(score: Score, key: sp.Expr, sink: sp.Expr | None) -> sp.Expr:
    den = row_sum(lambda x: sp.exp(score(x)))
    if sink is not None:
        den = sp.exp(sink) + den
    return M[i, key] * sp.exp(score(key)) / den


def _masked(x: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    x = np.asarray(x, dtype=np.result_type(x, np.float32))
    return x if mask is None else np.where(mask, x, -np.inf)


def _sink_stable(x: np.ndarray, mask: np.ndarray | None, sink: float | None) -> np.ndarray:
    """exp(x − m) / (exp(s − m) + Σ exp(x − m)), m = max(s, max x): never overflows."""
    x = _masked(x, mask)
    m = np.max(x, axis=-1, keepdims=True)
    if sink is not None:
        m = np.maximum(m, sink)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    den = e.sum(axis=-1, keepdims=True)
    if sink is not None:
        den = den + np.exp(np.asarray(sink, dtype=x.dtype) - m)
    with np.errstate(invalid="ignore", divide="ignore"):
        return e / den


def _sink_reference(x, mask, sink) -> list:
    allowed = [mask is None or bool(mask[k]) for k in range(len(x))]
    e = [mpmath.exp(mpmath.mpf(v)) if ok and v != -np.inf else mpmath.mpf(0) for v, ok in zip(x, allowed)]
    den = mpmath.fsum(e) + (mpmath.exp(mpmath.mpf(sink)) if sink is not None else 0)
    if den == 0:
        return [mpmath.nan] * len(x)
    return [v / den for v in e]


REGISTRY: dict[str, Normalizer] = {}
SINK = sp.Symbol("s", real=True)  # the sink logit, a shared real parameter


def register(entry: Normalizer) -> Normalizer:
    REGISTRY[entry.name] = entry
    return entry


register(Normalizer(
    name="softmax",
    title="softmax",
    params=(),
    weight=lambda score, key=j, **p: _sink_weight(score, key, None),
    stable=lambda x, mask=None, **p: _sink_stable(x, mask, None),
    reference=lambda x, mask=None, **p: _sink_reference(x, mask, None),
    latex=r"\operatorname{softmax}",
))
register(Normalizer(
    name="softmax1",
    title="softmax₁ (QuietAttention)",
    params=(),
    weight=lambda score, key=j, **p: _sink_weight(score, key, sp.S.Zero),
    stable=lambda x, mask=None, **p: _sink_stable(x, mask, 0.0),
    reference=lambda x, mask=None, **p: _sink_reference(x, mask, 0),
    latex=r"\operatorname{softmax}_1",
))
register(Normalizer(
    name="sink",
    title="sink logit s (gpt-oss)",
    params=("s",),
    weight=lambda score, key=j, s=SINK, **p: _sink_weight(score, key, s),
    stable=lambda x, mask=None, s=0.0, **p: _sink_stable(x, mask, s),
    reference=lambda x, mask=None, s=0.0, **p: _sink_reference(x, mask, s),
    latex=r"\operatorname{sink}_s",
))


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
