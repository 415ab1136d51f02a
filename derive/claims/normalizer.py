"""Normalizer properties (shift invariance, abstention, weights summing to one).

Decided by :func:`derive.normalizers.properties.decide`, the generic provers that also
build the normalizer comparison table.
"""

from __future__ import annotations

from dataclasses import replace

from derive.claims.result import Outcome, step
from derive.crosscheck.check import tolerance_text
from derive.prove.timeout import TimeLimit, time_limit
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED, Verdict
from derive.render.markup import plain_math
from derive.settings import Settings

__all__ = ["PROPERTIES", "decide_property"]

PROPERTIES = ("shift_invariant", "can_abstain", "weights_sum_to_one")
_CACHE: dict = {}
COMPARED = {"shift_invariant": ("p_ij", "p_ij with c added to every score"),
            "weights_sum_to_one": ("Σ_j p_ij", "1")}


def _decide(name: str, prop: str, params: dict, cfg: Settings) -> Verdict:
    from derive.normalizers.properties import decide

    try:
        with time_limit(4 * cfg.time_limit):
            return decide(name, prop, **params)
    except TimeLimit:
        return Verdict(UNDECIDED, f"the normalizer property check hit the time limit ({4 * cfg.time_limit:g} s)")
    except Exception as exc:  # noqa: BLE001 - a failure there is not a proof
        return Verdict(UNDECIDED, f"the normalizer property check failed: {type(exc).__name__}")


def decide_property(name: str, prop: str, params: dict, cfg: Settings) -> Verdict:
    key = (name, prop, tuple(sorted((k, str(v)) for k, v in params.items())), cfg)
    if key not in _CACHE:
        _CACHE[key] = _decide(name, prop, params, cfg)
    return _CACHE[key]


def property_outcome(name: str, label: str, prop: str, params: dict, cfg: Settings) -> Outcome:
    key = ("outcome", name, label, prop, tuple(sorted((k, str(v)) for k, v in params.items())), cfg)
    if key not in _CACHE:
        _CACHE[key] = _property_outcome(name, label, prop, params, cfg)
    out = _CACHE[key]
    return Outcome(out.status, out.reason, list(out.steps), out.witness and dict(out.witness), out.check, out.seal)


# What a verdict of each property means, said in words before the prover's own reason.
MEANING = {
    ("shift_invariant", PROVED): "adding one constant to every score of a row leaves its weights unchanged",
    ("shift_invariant", REFUTED): "adding one constant to every score of a row changes its weights",
    ("weights_sum_to_one", PROVED): "the weights of every row sum to 1",
    ("weights_sum_to_one", REFUTED): "the weights of a row need not sum to 1",
}


def _property_outcome(name: str, label: str, prop: str, params: dict, cfg: Settings) -> Outcome:
    v = decide_property(name, prop, params, cfg)
    if (prop, v.status) in MEANING:
        v = replace(v, reason=f"{MEANING[prop, v.status]}: {v.reason}")
    steps = [step(f"{prop.replace('_', ' ')} of {label}: {v.reason}" + (f" ({plain_math(v.method)})" if v.method else ""))]
    steps += [s if isinstance(s, dict) else step(str(s)) for s in getattr(v, "steps", None) or []]
    witness = _uniform(v.witness) if v.witness else None
    if v.status == PROVED:
        if witness:
            steps.append(step("certified example", data=witness))
        check = _cross_check(name, prop, params, cfg)
        if check is not None and check["verdict"] == "not run":
            steps.append(step(f"numeric cross-check: not run ({check['reason']}); the verdict rests on the "
                              "symbolic steps alone"))
            check = None
        if check is not None:
            if check["verdict"] != "passed":
                steps.append(step("numeric cross-check FAILED", data=check))
                return Outcome(UNDECIDED, "the proof went through but the numeric cross-check failed; "
                                          "please report this", steps, check=check)
            steps.append(step(f"numeric cross-check on random score tables: {check['examples']} instances, "
                              f"and {check['hypothesis_examples']} more searched by Hypothesis, agree within "
                              f"{tolerance_text(check['tolerance'])}"))
        return Outcome(PROVED, v.reason, steps, check=check, seal=v.seal)
    if v.status == REFUTED:
        if witness and prop in COMPARED:
            witness["compared"] = list(COMPARED[prop])
        return Outcome(REFUTED, v.reason, steps, witness=witness or None)
    return Outcome(UNDECIDED, v.reason, steps)


def _cross_check(name: str, prop: str, params: dict, cfg: Settings) -> dict | None:
    """Numeric evidence for a proved identity property, on a generic score table x[i, t]."""
    import sympy as sp

    from derive.claims.numeric import check_numeric
    from derive.claims.variant import normalizer_weight
    from derive.model.attention import ScalarBase, i, j, n, u

    x, c = ScalarBase("x"), sp.Symbol("c", real=True)

    def w(key, shift=0):
        return normalizer_weight(name, lambda t: x[i, t] + shift, key, params)

    if prop == "shift_invariant":
        return check_numeric(prop, w(j), w(j, c), cfg)
    if prop == "weights_sum_to_one":
        return check_numeric(prop, sp.Sum(w(u), (u, 1, n)), sp.S.One, cfg)
    return None


def _uniform(w: dict) -> dict:
    """A property witness in the counterexample layout of the other claims."""
    if "instance" not in w:
        return {k: val for k, val in w.items() if not k.startswith("_")}
    inst = w["instance"]
    return {"d": inst.get("d"), "n": inst.get("n"), "mask": w.get("mask", "none"),
            "indices": w.get("indices", {}),
            "values": {k: val for k, val in inst.items() if k not in ("d", "n")},
            "functions": None, "original": w.get("lhs"), "changed": w.get("rhs")}
