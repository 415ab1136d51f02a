"""The exact reference: a normalizer's definition at high precision, and its Jacobian.

Values come from ``Normalizer.reference`` (arb balls at an adaptive precision, given as
mpmath numbers) on the *exact* inputs the implementation received (the inputs rounded to
its dtype). A masked entry (score −∞) is passed as a mask entry False. On a fully masked
row the rules of :mod:`.masked` say whether the definition has a value there; where it has
none the reference is *undefined* (NaN) and the conventions of :mod:`.masked` are accepted.
Where no precision up to the cap encloses a weight tightly, the row is *undecided*
(``Exact.undecided``) and is not judged.

The Jacobian ∂p_j/∂x_k is derived symbolically: the registry's symbolic weight for a row
of concrete length n is differentiated with SymPy and evaluated with mpmath. For the
softmax family this is diag(p) − p pᵀ restricted to the allowed keys.
"""

from __future__ import annotations

import math
from functools import lru_cache

import mpmath
import sympy as sp

from derive.model.attention import M, i, n
from derive.normalizers.exact import Undecided

__all__ = ["Exact", "exact_row", "jacobian", "kink_distance"]

_X = sp.IndexedBase("x")


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
    from derive.impl.masked import is_fully_masked, rule
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


@lru_cache(maxsize=64)
def _jacobian_fn(name: str, size: int):
    from derive.normalizers.registry import get

    norm = get(name)
    # plain real symbols for the parameters: a domain expression such as 1 + zeta' (clipped
    # softmax's ζ ≥ 1) is not a valid argument name for lambdify
    order = list(norm.params)
    syms = {p: sp.Symbol(f"param_{k}", real=True) for k, p in enumerate(order)}
    xs = sp.symbols(f"x1:{size + 1}", real=True)
    ms = sp.symbols(f"m1:{size + 1}")
    rows = []
    for k in range(1, size + 1):
        w = norm.weight(lambda key: _X[key], sp.Integer(k), **syms)
        w = w.subs(n, size).doit()
        w = w.subs({M[i, q]: ms[q - 1] for q in range(1, size + 1)})
        w = w.subs({_X[q]: xs[q - 1] for q in range(1, size + 1)})
        rows.append([sp.diff(w, xv) for xv in xs])
    fn = sp.lambdify([xs, ms, [syms[p] for p in order]], rows, modules="mpmath")
    return fn, order


def _numeric_jacobian(norm, xs, allowed, params):
    cols = []
    for k in range(len(xs)):
        if not allowed[k]:
            cols.append([mpmath.mpf(0)] * len(xs))
            continue

        def f(h, k=k, j=None):
            shifted = list(xs)
            shifted[k] = xs[k] + h
            return norm.reference(shifted, mask=allowed, **params)

        cols.append([mpmath.diff(lambda h, j=j: f(h)[j], 0) for j in range(len(xs))])
    return [[cols[k][j] for k in range(len(xs))] for j in range(len(xs))]


def jacobian(norm, row: list[float], params: dict, dps: int) -> list[list]:
    """J[j][k] = ∂p_j/∂x_k at ``row`` (masked entries: derivative 0)."""
    xs, allowed = _split(row)
    with mpmath.workdps(dps):
        try:
            fn, order = _jacobian_fn(norm.name, len(row))
            vals = fn([mpmath.mpf(v) for v in xs], [1 if a else 0 for a in allowed],
                      [mpmath.mpf(params[p]) for p in order])
            return [[mpmath.mpf(v) for v in r] for r in vals]
        except (TypeError, ValueError, NotImplementedError, AttributeError, KeyError):
            return _numeric_jacobian(norm, [mpmath.mpf(v) for v in xs], allowed, params)


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
