"""Fully masked rows (every score −∞), as data: what each definition gives there, and the
conventions accepted where it gives nothing.

One rule for every normalizer:

* where the definition has a value on a fully masked row (softmax₁, sinks, the extra-key
  forms: exactly 0 mass, the extra term takes all the weight; sigmoid: 0 per key), that
  value is required, as on any other row;
* where it has none (softmax and the forms built on it: 0/0), each of the conventions of
  :data:`CONVENTIONS` is accepted — NaN (the 0/0 itself), zeros (attend to nothing), or
  the weights of a row of equal scores (what masking with a large finite negative number
  such as ``torch.finfo(dtype).min`` gives, 1/n for softmax) — and the report says which
  one the implementation uses; anything else disagrees.

Accepted is never silent: the report states the rule and the convention seen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath

__all__ = ["CONVENTIONS", "RULES", "MaskedRule", "convention", "is_fully_masked", "rule"]


@dataclass(frozen=True)
class MaskedRule:
    defined: bool  # whether the definition has a value on a fully masked row
    says: str  # what the definition gives there, in words (prose markup: formulas as $…$)


RULES: dict[str, MaskedRule] = {
    "softmax": MaskedRule(False, r"no value ($0/0$: the denominator $\sum_j \exp(x_j)$ is 0)"),
    "softmax1": MaskedRule(True, "exactly 0 on every key: the implicit zero logit (the 1) takes all the weight"),
    "sink": MaskedRule(True, "exactly 0 on every key: the sink logit s takes all the weight"),
    "zero_token": MaskedRule(True, "exactly 0 on every real key: the extra key of score 0 takes all the weight"),
    "bias_kv": MaskedRule(True, "exactly 0 on every real key: the learned key k* takes all the weight"),
    "sigmoid": MaskedRule(True, "exactly 0 on every key: a masked key has weight 0, with no normalization"),
    "clipped": MaskedRule(False, "no value (the inner softmax is 0/0)"),
    "softcap": MaskedRule(False, "no value (softmax of the capped scores is 0/0)"),
}

# accepted where the definition has no value, in the order they are tried
CONVENTIONS: dict[str, str] = {
    "nan": "NaN (the 0/0 of the formula)",
    "zeros": "zeros (attend to nothing)",
    "uniform": ("the weights of a row of equal scores, as masking with a large finite negative number "
                "(finfo.min) gives: 1/n for softmax"),
}


def is_fully_masked(row) -> bool:
    return len(row) > 0 and all(v == -math.inf for v in row)


def rule(norm) -> MaskedRule:
    """The rule of ``norm``; for a normalizer not in the table, read off its reference."""
    if norm.name in RULES:
        return RULES[norm.name]
    with mpmath.workdps(30):
        values = norm.reference([0.0, 0.0], mask=[False, False], **{p: 0.5 for p in norm.params})
    if any(mpmath.isnan(v) for v in values):
        return MaskedRule(False, "no value (its reference is NaN there)")
    return MaskedRule(True, "the value of its reference: " + ", ".join(mpmath.nstr(v, 6) for v in values))


def uniform_row(norm, n: int, params: dict, dps: int) -> list[float]:
    """The definition on a row of n equal finite scores (all 0)."""
    with mpmath.workdps(dps):
        return [float(v) for v in norm.reference([0.0] * n, mask=None, **params)]


def convention(norm, output: list[float], params: dict, dps: int, bound) -> str | None:
    """Which accepted convention ``output`` follows on a fully masked row, or None.

    ``bound(exact)`` is the tolerance of one weight (for the uniform convention).
    """
    if output and all(math.isnan(v) for v in output):
        return "nan"
    if output and all(v == 0.0 for v in output):
        return "zeros"
    uniform = uniform_row(norm, len(output), params, dps)
    if all(math.isfinite(y) and abs(y - u) <= bound(u) for y, u in zip(output, uniform)):
        return "uniform"
    return None
