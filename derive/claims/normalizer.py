"""Normalizer properties (shift invariance, abstention, weights summing to one).

Decided by :func:`derive.normalizers.properties.decide`, the generic provers that also
build the normalizer comparison table.
"""

from __future__ import annotations

import json
from dataclasses import replace

from derive.claims.result import Outcome, step
from derive.crosscheck.check import tolerance_text
from derive.timeout import TimeLimit, time_limit
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED, Verdict
from derive.render.markup import plain_math
from derive.settings import Settings
from derive.spec.claim_kinds import NORMALIZER_PROPERTIES, by_name

__all__ = ["PROPERTIES", "PROPERTY_INPUTS_APART", "decide_property"]

# a normalizer property's counterexample lists its row of scores x (y), mask table M and shift c;
# under these names when the spec declares one of those names itself
PROPERTY_INPUTS_APART = {"x": "x_scores", "y": "y_scores", "c": "c_shift"}

PROPERTIES = NORMALIZER_PROPERTIES  # the claim kinds that are properties of the normalizer
_CACHE: dict = {}


def _decide(name: str, prop: str, params: dict, cfg: Settings) -> Verdict:
    from derive.normalizers.properties import decide

    try:
        with time_limit(4 * cfg.time_limit):
            return decide(name, prop, **params)
    except TimeLimit:
        return Verdict(UNDECIDED, f"the normalizer property check hit the time limit ({4 * cfg.time_limit:g} s)")
    # any other exception is an engine failure: it propagates to the claim, whose outcome is an error


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
    return Outcome(out.status, out.reason, list(out.steps), out.witness and dict(out.witness), out.check, out.seal,
                   out.fault)


def _property_outcome(name: str, label: str, prop: str, params: dict, cfg: Settings) -> Outcome:
    v = decide_property(name, prop, params, cfg)
    said = {PROVED: by_name(prop).says_proved, REFUTED: by_name(prop).says_refuted}.get(v.status)
    if said:
        v = replace(v, reason=f"{said}: {v.reason}")
    steps = [step(f"{prop.replace('_', ' ')} of {label}: {v.reason}" + (f" ({plain_math(v.method)})" if v.method else ""))]
    steps += [s if isinstance(s, dict) else step(str(s)) for s in getattr(v, "steps", None) or []]
    witness = _uniform(v.witness, name, params) if v.witness else None
    if v.status == PROVED:
        if witness:
            steps.append(step("certified example", data=witness))
        check = _cross_check(name, prop, params, cfg)
        if check is not None and check["verdict"] == "not run":
            steps.append(step(f"numeric cross-check: not run ({check['reason']}); the verdict rests on the "
                              "symbolic steps alone"))
            check = None
        if check is not None:
            if check["verdict"] != "passed":  # two parts of the engine contradict each other (claims.run)
                steps.append(step("numeric cross-check FAILED", data=check))
                return Outcome(UNDECIDED, "the proof went through but the numeric cross-check failed", steps,
                               check=check, fault="the proof went through but the numeric cross-check failed on "
                                                  + json.dumps(check.get("witness"), default=str))
            steps.append(step(f"numeric cross-check on random score tables: {check['examples']} instances, "
                              f"and {check['hypothesis_examples']} more searched by Hypothesis, agree within "
                              f"{tolerance_text(check['tolerance'])}"))
        return Outcome(PROVED, v.reason, steps, check=check, seal=v.seal)
    if v.status == REFUTED:  # can_abstain is refuted by a proof of its negation (the steps), never an instance
        return Outcome(REFUTED, v.reason, steps, witness=None if prop == "can_abstain" else witness or None)
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


def _uniform(w: dict, name: str, params: dict) -> dict:
    """A property witness in the counterexample layout of the other claims: the two sides in the
    order the property compares them (``compared``), their certified enclosures, and every input,
    the normalizer's parameters too (a declared one under its name, the normalizer's own as
    ``NAME.PARAM``), so that the instance replays as printed."""
    if "instance" not in w:
        return {k: val for k, val in w.items() if not k.startswith("_")}
    inst = w["instance"]
    values = {k: val for k, val in inst.items() if k not in ("d", "n")}
    own = list(values)  # the property's own inputs (x, M, c)
    from derive.normalizers.registry import get

    for p, val in (w.get("parameters") or {}).items():
        shown = str(params[p]) if p in params else get(name).shown_parameter(p)
        if shown in own:  # a declared parameter named like an input of the property (c, the shift)
            values[PROPERTY_INPUTS_APART.get(shown, shown)] = values.pop(shown)
            own[own.index(shown)] = PROPERTY_INPUTS_APART.get(shown, shown)
        values[shown] = val
    out = {"d": inst.get("d"), "n": inst.get("n"), "mask": w.get("mask", "none"),
           "indices": w.get("indices", {}), "values": values,
           "functions": None, "original": w.get("lhs"), "changed": w.get("rhs")}
    if w.get("enclosures"):
        out["enclosures"] = w["enclosures"]
    if w.get("compared"):
        out["compared"] = list(w["compared"])
    return out
