"""Local stand-ins until the normalizer properties module and the sigmoid entry land.

DELETE-ME: once :mod:`derive.normalizers.properties` (``decide``) and the ``sigmoid``
registry entry are merged, this module is only reached for names the registry lacks.
Everything here is a symbolic proof or a certified counterexample, as elsewhere.
"""

from __future__ import annotations

import sympy as sp

from derive.claims.deadline import bounded_prove_zero
from derive.errors import InputError
from derive.model.attention import M, ScalarBase, i, j, n, u
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED, Verdict
from derive.settings import Settings

__all__ = ["fallback_decide", "fallback_weight"]

_X = ScalarBase("x")
_C = sp.Symbol("c", real=True)


def fallback_weight(name: str, score, key, params: dict) -> sp.Expr:
    if name == "sigmoid":
        return M[i, key] / (1 + sp.exp(-score(key)))
    raise InputError(f"normalizer {name!r} is not available in this installation")


def fallback_decide(name: str, prop: str, params: dict, cfg: Settings) -> Verdict:
    from derive.claims.numeric import find_certified
    from derive.claims.variant import normalizer_weight

    def w(key, shift=0):
        return normalizer_weight(name, lambda x: _X[i, x] + shift, key, params)

    if prop == "shift_invariant":
        lhs, rhs = w(j), w(j, _C)
        if True:
            ok, how, _ = bounded_prove_zero(lhs - rhs, cfg)
            if ok:
                return Verdict(PROVED, "exp(x + c) = exp(c)·exp(x): the factor exp(c) cancels", method=how)
        wit = find_certified(lhs, rhs, "none", cfg)
        if wit is not None:
            return Verdict(REFUTED, "adding a constant c to every score changes the weights",
                           method="counterexample", witness=wit)
        return Verdict(UNDECIDED, "neither proved nor refuted")
    total = sp.Sum(w(u), (u, 1, n))
    if prop == "weights_sum_to_one":
        if _sums_to_one(total, cfg):
            return Verdict(PROVED, "renaming the summation variable, Σ_u p_iu is a sum divided by itself",
                           method="α-renaming and factoring the row-constant denominator out of the sum")
        wit = find_certified(total, sp.S.One, "none", cfg)
        if wit is not None:
            return Verdict(REFUTED, "the weights of a row need not sum to 1", method="counterexample",
                           witness=wit)
        return Verdict(UNDECIDED, "neither proved nor refuted")
    if prop == "can_abstain":
        if _sums_to_one(total, cfg):
            return Verdict(REFUTED, "the weights always sum to 1 (proved), so the row cannot abstain",
                           method="negation proved", witness={})
        wit = find_certified(total, sp.S.One, "none", cfg, below=True)
        if wit is not None:
            return Verdict(PROVED, "a row can give its keys less than all the weight (total < 1)",
                           method="certified example", witness=wit)
        return Verdict(UNDECIDED, "no certified example of a total weight below 1 was found")
    return Verdict(UNDECIDED, f"unknown property {prop!r}")


def _sums_to_one(total: sp.Sum, cfg: Settings) -> bool:
    """Σ_u f(u) = 1, proved by α-renaming u → t and cancelling the common sum."""
    from derive.claims.deadline import Deadline, hard_limit
    from derive.model.attention import t

    renamed = sp.Sum(total.function.xreplace({u: t}), (t, 1, n))
    try:
        with hard_limit(cfg.time_limit):
            return sp.simplify(sp.factor_terms(renamed) - 1) == 0
    except (Deadline, Exception):  # noqa: BLE001
        return False
