"""Fully masked rows (every score −∞), as data: what each definition gives there, and the
conventions accepted where it gives nothing.

One rule for every normalizer, derived from its formula (:func:`derived_rule`):

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

__all__ = ["CONVENTIONS", "MaskedRule", "convention", "derived_rule", "is_fully_masked", "rule", "rules"]


@dataclass(frozen=True)
class MaskedRule:
    defined: bool  # whether the definition has a value on a fully masked row (for some parameter values)
    says: str  # what the definition gives there, in words (prose markup: formulas as $…$)
    unless: str = ""  # where it has none after all, for some parameter values: a condition ($…$), else ''


_NONE = "every sum over the keys is 0 and $n = 0$"


def derived_rule(norm) -> MaskedRule:
    """What the definition gives on a row with no allowed key, read off its formula
    (:func:`derive.normalizers.empty_row.empty_row`, decided over the parameters' domain): a
    value (every weight 0) where the weight has one with every reduction over no key, as an
    extra term of the denominator gives; none (0/0) where it has not — for every parameter
    value, for none, or (``unless``) for the values where a condition fails, e.g.
    ``exp(x_j) / (a**2 + sum_t(exp(x_t)))``, whose row is 0/0 at a = 0."""
    import sympy as sp

    from derive.normalizers.empty_row import NEVER, UNKNOWN, empty_row
    from derive.normalizers.family import recognise
    from derive.render.latex import tex

    f = norm.definition_of
    if f is None:  # an entry without a formula: its reference decides
        return _from_reference(norm)
    verdict, conds = empty_row(f)  # the parameters over their domain, as the formula declares them
    if verdict == NEVER:
        return MaskedRule(False, f"no value (the formula has none with no allowed key: {_NONE})")
    if verdict == UNKNOWN:
        return MaskedRule(True, "exactly 0 on every key where the formula has a value with no allowed key "
                                f"({_NONE}), and none where it has not: which parameter values these are was not "
                                "decided", unless="not decided")
    if conds:
        fails = " or ".join(f"${tex(_solved(c.fails_where()))}$" for c in conds)
        return MaskedRule(True, f"exactly 0 on every key, except where {fails}: there no value (the formula has none "
                                f"with no allowed key: {_NONE})", unless=fails)
    fam, _ = recognise(norm)
    if fam is not None and fam.extra != 0:
        shown = fam.extra.xreplace({sp.Symbol(p, real=True): v for p, v in norm.symbols().items()})
        return MaskedRule(True, f"exactly 0 on every key: the extra term ${tex(shown)}$ of the denominator takes "
                                "all the weight")
    return MaskedRule(True, "exactly 0 on every key: a masked key has weight 0, and the formula has a value with no "
                            "allowed key")


def _solved(rel):
    """``rel`` (E = 0, E ≤ 0 or E < 0 over the parameters) solved for its one parameter where
    SymPy gives a plain answer (a² = 0 → a = 0), else as it is."""
    import sympy as sp

    free = sorted(rel.free_symbols, key=str)
    if len(free) != 1:
        return rel
    try:
        out = sp.solve(rel, free[0])
    except (NotImplementedError, ValueError, TypeError):
        return rel
    if isinstance(rel, sp.Eq) and isinstance(out, list) and len(out) == 1:
        return sp.Eq(free[0], out[0])
    if isinstance(out, list) or out in (sp.true, sp.false):
        return rel
    return out


def _from_reference(norm) -> MaskedRule:
    with mpmath.workdps(30):
        values = norm.reference([0.0, 0.0], mask=[False, False], **{p: 0.5 for p in norm.params})
    if any(mpmath.isnan(v) for v in values):
        return MaskedRule(False, "no value (its reference is NaN there)")
    return MaskedRule(True, "the value of its reference: " + ", ".join(mpmath.nstr(v, 6) for v in values))


def rules() -> dict[str, MaskedRule]:
    """normalizer name → its :class:`MaskedRule`, for every registry entry."""
    from derive.normalizers.registry import get, names

    return {name: rule(get(name)) for name in names()}


_RULES: dict = {}


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
    """The rule of ``norm``, derived from its formula (see :func:`derived_rule`)."""
    key = (norm.name, norm.formula)
    if key not in _RULES:
        _RULES[key] = derived_rule(norm)
    return _RULES[key]


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
