"""The exact reference: a normalizer's definition at high precision, and its Jacobian.

Values come from ``Normalizer.reference`` (arb balls at an adaptive precision, given as
mpmath numbers) on the *exact* inputs the implementation received (the inputs rounded to
its dtype). A masked entry (score −∞) is passed as a mask entry False. On a fully masked
row the rules of :mod:`derive.impl.exact.masked` say whether the definition has a value there; where it has
none the reference is *undefined* (NaN) and the conventions of :mod:`derive.impl.exact.masked` are accepted.
Where no precision up to the cap encloses a weight tightly, the row is *undecided*
(``Exact.undecided``) and is not judged.

The Jacobian ∂p_j/∂x_k comes from the same formula and the same arb evaluator, differentiated
in forward mode (:mod:`derive.normalizers.exact_jacobian`) at the same adaptive precision with
the same rule: an entry not enclosed tightly at the cap leaves the gradient of that row
undecided, never judged. For the softmax family it is diag(p) − p pᵀ on the allowed keys.
"""

from __future__ import annotations

import math

import mpmath

from derive.normalizers.exact import Undecided

__all__ = ["Exact", "NoJacobian", "exact_row", "jacobian", "kink_distance"]


class Exact:
    """One row's exact weights (mpf) and whether the definition gives them a value;
    ``undecided``: why they could not be evaluated (the row is then not judged), or ''."""

    def __init__(self, values: list, defined: bool, scales: list | None = None, undecided: str = ""):
        self.values, self.defined, self.undecided = values, defined, undecided
        # per weight, the magnitude the tolerance is relative to (see exact_row)
        self.scales = [abs(float(v)) if defined else 0.0 for v in values] if scales is None else scales

    def floats(self) -> list[float]:
        return [float(v) for v in self.values]


def _split(row: list[float]) -> tuple[list[float], list[bool]]:
    allowed = [v != -math.inf for v in row]
    return [v if ok else 0.0 for v, ok in zip(row, allowed)], allowed


def exact_row(norm, row: list[float], params: dict, dps: int) -> Exact:
    from derive.impl.exact.masked import is_fully_masked, rule
    from derive.normalizers.sensitivity import scales

    if is_fully_masked(row) and not rule(norm).defined:
        return Exact([mpmath.nan] * len(row), False)
    xs, allowed = _split(row)
    with mpmath.workdps(dps):
        try:
            values = norm.reference(xs, mask=allowed, **params)
        except Undecided as e:
            return Exact([mpmath.nan] * len(row), False, undecided=str(e))
        defined = all(not mpmath.isnan(v) for v in values)
        # The tolerance of a weight is relative to its magnitude |p_k| (the condition of the
        # softmax family and of sigmoid, with κ), except where the definition's last step
        # cancels: then to the magnitude of that step's terms (see derive.normalizers.sensitivity).
        own = _params(norm, params)
        terms = scales(norm.definition_of, xs, allowed, **own) if defined and own is not None else None
    return Exact(list(values), defined, terms)


def _params(norm, params: dict) -> dict | None:
    """The formula's parameter values, or None when one is not given."""
    f = norm.definition_of
    if f is None or any(p not in params for p in f.params):
        return None
    return {p: params[p] for p in f.params}


class NoJacobian(Exception):
    """The Jacobian at this row is not judged: why; ``kink``: because the weights are not
    differentiable there (else it could not be evaluated: undecided)."""

    def __init__(self, reason: str, kink: bool = False):
        super().__init__(reason)
        self.kink = kink


def jacobian(norm, row: list[float], params: dict, dps: int) -> list[list]:
    """J[j][k] = ∂p_j/∂x_k at ``row`` (masked entries: derivative 0), each entry correct to
    ``dps`` digits: forward-mode differentiation of the normalizer's formula in arb balls at
    an adaptive precision (:mod:`derive.normalizers.exact_jacobian`). Raises
    :class:`NoJacobian` (with the reason) where the weights are not differentiable or no
    precision up to the cap encloses an entry tightly: the gradient is then not judged."""
    from derive.normalizers.exact import Undefined
    from derive.normalizers.exact_jacobian import NotDifferentiable, jacobian as forward

    if norm.definition_of is None:
        raise NoJacobian(f"the normalizer {norm.name} has no formula to differentiate")
    own = _params(norm, params)
    if own is None:
        missing = [p for p in norm.definition_of.params if p not in params]
        raise NoJacobian(f"no value for the parameter(s) {', '.join(missing)}")
    xs, allowed = _split(row)
    with mpmath.workdps(dps):
        try:
            return forward(norm.definition_of, xs, allowed, **own)
        except NotDifferentiable as e:
            raise NoJacobian(f"the weights are not differentiable at this row ({e})", kink=True) from None
        except Undefined:
            raise NoJacobian("a weight has no value at this row") from None
        except Undecided as e:
            raise NoJacobian(f"their derivatives (the Jacobian the gradient is compared with): {e}") from None


def kink_distance(norm, row: list[float], params: dict, dps: int):
    """The smallest relative distance of the row from a point where ``norm``'s weights are not
    differentiable (a kink of relu, abs, max or min in its formula), or None (smooth there)."""
    from derive.normalizers.sensitivity import kink_distances, kinked

    own = _params(norm, params)
    if own is None or not kinked(norm.definition_of):
        return None
    xs, allowed = _split(row)
    with mpmath.workdps(dps):
        dists = kink_distances(norm.definition_of, xs, allowed, **own)
        return float(min(dists)) if dists else None
