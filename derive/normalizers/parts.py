"""Parts of a registry entry beyond its formula (see :mod:`derive.normalizers.registry`): a
token of the normalizer's own, and the values ``derive impl`` tries for a parameter."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NEGATIVE", "POSITIVE", "REAL", "Token", "Trial"]


@dataclass(frozen=True)
class Trial:
    """The values ``derive impl`` tries for a parameter, inside its domain: a range Hypothesis
    draws from, three values of the fixed edge cases and two that diagnosis probes with."""

    low: float
    high: float
    edge: tuple[float, float, float]
    probe: tuple[float, float]


REAL = Trial(-10.0, 10.0, (0.0, 1.5, -2.0), (1.5, -0.75))
POSITIVE = Trial(1e-3, 10.0, (1.0, 1.5, 2.0), (1.5, 0.75))
NEGATIVE = Trial(-10.0, -1e-3, (-1.0, -1.5, -2.0), (-1.5, -0.75))


@dataclass(frozen=True)
class Token:
    """A token of the normalizer's own (a learned key and value), given in a spec by two vectors:
    its score, ``score`` in the spec's expression language with ``key`` for the key vector, is
    the entry's parameter ``logit``; its value is mixed into the output with the token's weight."""

    logit: str  # the entry's parameter that is the token's score
    score: str  # the token's score, e.g. "dot(q, k_star) / sqrt(d)" (q: the query of row i)
    key: tuple[str, str]  # (argument, what it is), e.g. ("k_star", "the learned key k*")
    value: tuple[str, str]  # (argument, what it is), e.g. ("v_star", "the learned value v*")
