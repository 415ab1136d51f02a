"""The faulty forms derived symbolically, for every row length n, mask M and shift m.

For a matched faulty form, derive writes the code *as written* as a SymPy expression of
the scores x[i, t] (masked keys have M[i, t] = 0), then

* proves that it equals a closed form — e.g. the unshifted +1 code equals softmax₁(x − m)
  for every real m, in particular m = max x;
* refutes that the closed form equals the definition (a certified counterexample), unless
  the fault is purely numerical (then the identity with the definition is proved);
* proves that the suggested fix equals the definition.

Proofs go through :func:`derive.prove.equality.prove_equal`; numbers are never a proof.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from derive.impl.faults import OTHER_FAULTS, SINKS
from derive.model.attention import M as MASK
from derive.model.attention import ScalarBase, i, j, row_sum
from derive.normalizers.registry import get
from derive.prove.equality import prove_equal
from derive.prove.verdict import Verdict

__all__ = ["Derivation", "derive_fault"]

X = ScalarBase("x")
SHIFT = sp.Symbol("m", real=True)
_CONST = {"ln 2": sp.log(2), "log₂e": 1 / sp.log(2)}
_EXP2_TEXT = {  # (factor, on the sink logit?) → the code as written
    ("ln 2", True): "exp2(x_j·log₂e) / (exp2(s) + Σ exp2(x_t·log₂e))",
    ("log₂e", True): "exp(x_j) / (exp(s·log₂e) + Σ exp(x_t))",
    ("ln 2", False): "exp2(x_j) / (exp(s) + Σ exp2(x_t))",
    ("log₂e", False): "exp(x_j·log₂e) / (exp(s) + Σ exp(x_t·log₂e))",
}


@dataclass(frozen=True)
class Derivation:
    written: str  # the code as written, in words of the formula
    closed: str  # the closed form it equals
    definition: str  # the definition, e.g. softmax₁(x)
    identity: Verdict  # written = closed
    versus_definition: Verdict  # closed = definition (refuted, or proved for numerical faults)
    fix: Verdict | None  # the fix = definition

    def as_json(self) -> dict:
        return {
            "written": self.written, "closed_form": self.closed, "definition": self.definition,
            "written_equals_closed_form": _verdict(self.identity),
            "closed_form_equals_definition": _verdict(self.versus_definition),
            "fix_equals_definition": None if self.fix is None else _verdict(self.fix),
        }


def _verdict(v: Verdict) -> dict:
    out = {"status": v.status, "method": v.method or v.reason}
    if v.witness is not None:
        out["counterexample"] = {k: v.witness[k] for k in ("instance", "indices", "lhs", "rhs")}
    return out


def _weight(num_base, exponent, sink_term):
    """M[i,j]·B^{e(j)} / (sink_term + Σ_t M[i,t]·B^{e(t)})."""
    den = row_sum(lambda u: num_base ** exponent(u))
    if sink_term is not None:
        den = sink_term + den
    return MASK[i, j] * num_base ** exponent(j) / den


def _definition_text(norm) -> str:
    """The definition in words of the code: an elementwise formula as written (x for x_j, σ
    for sigmoid), any other LABEL(x) with the entry's label."""
    import re

    if re.search(r"\b(sum_t|prod_t|max_t|min_t|n)\b", norm.formula):
        return f"{norm.label}(x)"
    return re.sub(r"\bsigmoid\b", "σ", re.sub(r"\bx_j\b", "x", norm.formula))


def _softmax_of(score):
    return get("softmax").weight(score, j)


def _param(syms: dict, name: str, value) -> dict:
    """{underlying symbol: value} making parameter ``name`` equal ``value`` (e.g. ζ = 1 + ζ')."""
    expr = syms[name]
    (sym,) = expr.free_symbols
    (solution,) = sp.solve(sp.Eq(expr, value), sym)
    return {sym: solution}


def _other_forms(fault: str, name: str, fields: tuple):
    """(written, closed, closed label, definition, fix, text, values at which to refute)."""
    norm = get(name)
    syms = norm.symbols()
    f = dict(fields)
    definition = norm.weight(lambda k: X[i, k], j, **syms)
    if name == "sigmoid":
        b = syms["b"]
        if fault == "sigmoid-bias-sign":
            written = MASK[i, j] / (1 + sp.exp(-(X[i, j] - b)))
            closed = norm.weight(lambda k: X[i, k], j, b=-b)
            return written, closed, "σ(x − b)", definition, None, "1 / (1 + exp(−(x_j − b)))", {}
        if fault == "softmax-for-sigmoid":
            written = _softmax_of(lambda k: X[i, k])
            return written, written, "softmax(x)", definition, None, "exp(x_j) / Σ exp(x_t)", {}
        if fault == "sigmoid-exp-ratio":
            written = MASK[i, j] * sp.exp(X[i, j] + b) / (1 + sp.exp(X[i, j] + b))
            return written, definition, "σ(x + b)", definition, None, "exp(x_j + b) / (1 + exp(x_j + b))", {}
    if name == "clipped":
        zeta, gamma = syms["zeta"], syms["gamma"]
        p = _softmax_of(lambda k: X[i, k])
        if fault == "clipped-one-sided":
            if f["side"] == "lower":
                written = MASK[i, j] * sp.Min(1, (zeta - gamma) * p + gamma)
                at = {**_param(syms, "zeta", 1), **_param(syms, "gamma", sp.Rational(-1, 2))}
                text = "min(1, (ζ − γ)·softmax(x)_j + γ)"
            else:
                written = MASK[i, j] * sp.Max(0, (zeta - gamma) * p + gamma)
                at = {**_param(syms, "zeta", 2), **_param(syms, "gamma", sp.Rational(-1, 2))}
                text = "max(0, (ζ − γ)·softmax(x)_j + γ)"
            return written, written, text, definition, None, text, at
        if fault == "softmax-for-clipped":
            at = {**_param(syms, "zeta", 1), **_param(syms, "gamma", sp.Rational(-1, 2))}
            return p, p, "softmax(x)", definition, None, "exp(x_j) / Σ exp(x_t)", at
    if name == "softcap":
        c = syms["c"]
        at = {c: 2}
        if fault == "softcap-missing":
            written = _softmax_of(lambda k: X[i, k])
            return written, written, "softmax(x)", definition, None, "exp(x_j) / Σ exp(x_t)", at
        if fault == "softcap-misscaled":
            inner = (lambda k: sp.tanh(X[i, k] / c)) if f["inside"] else (lambda k: c * sp.tanh(X[i, k]))
            written = _softmax_of(inner)
            text = f"softmax({f['formula']})"
            return written, written, text, definition, None, text, at
    return None


def _forms(fault: str, name: str, fields: tuple):
    norm = get(name)
    syms = norm.symbols()
    sink = SINKS[name]
    s = syms[sink] if isinstance(sink, str) else (None if sink is None else sp.S(sink))
    e = sp.E
    definition = norm.weight(lambda k: X[i, k], j, **syms)
    f = dict(fields)
    label = norm.label
    if fault == "unshifted-sink-term":
        written = _weight(e, lambda k: X[i, k] - SHIFT, sp.exp(s))
        closed = norm.weight(lambda k: X[i, k] - SHIFT, j, **syms)
        fix = _weight(e, lambda k: X[i, k] - SHIFT, sp.exp(s - SHIFT))
        return written, closed, f"{label}(x − m)", definition, fix, "exp(x_j − m) / (exp(s) + Σ exp(x_t − m))"
    if fault == "softmax-for-softmax1":
        written = _weight(e, lambda k: X[i, k], None)
        return written, written, "softmax(x)", definition, None, "exp(x_j) / Σ exp(x_t)"
    if fault == "softmax1-for-softmax":
        written = _weight(e, lambda k: X[i, k], sp.S.One)
        closed = get("softmax1").weight(lambda k: X[i, k], j)
        return written, closed, "softmax₁(x)", definition, None, "exp(x_j) / (1 + Σ exp(x_t))"
    if fault == "sink-scaled":
        c = sp.sqrt(f["d"]) ** f["power"]
        written = _weight(e, lambda k: X[i, k], sp.exp(s * c))
        closed = norm.weight(lambda k: X[i, k], j, **{sink: s * c})
        return written, closed, f"sink_(c·s)(x), c = {f['c']}", definition, None, \
            "exp(x_j) / (exp(c·s) + Σ exp(x_t))"
    if fault == "exp2-units":
        c = _CONST[f["c"]]
        log2e = 1 / sp.log(2)
        if f["where"] == "sink logit":  # scores right in base 2, the sink in the wrong unit
            written = _weight(sp.Integer(2), lambda k: X[i, k] * log2e, 2 ** (s * c * log2e))
            closed = norm.weight(lambda k: X[i, k], j, **{sink: s * c})
            return written, closed, f"{label}(x) with s·{f['c']}", definition, None, _EXP2_TEXT[f["c"], True]
        written = _weight(sp.Integer(2), lambda k: X[i, k] * c * log2e, None if s is None else sp.exp(s))
        closed = norm.weight(lambda k: X[i, k] * c, j, **syms)
        return written, closed, f"{label}({f['c']}·x)", definition, None, _EXP2_TEXT[f["c"], False]
    if fault == "no-max-subtraction":
        written = _weight(e, lambda k: X[i, k], None if s is None else sp.exp(s))
        fix = _weight(e, lambda k: X[i, k] - SHIFT, None if s is None else sp.exp(s - SHIFT))
        return written, definition, f"{label}(x)", definition, fix, "exp(x_j) / (exp(s) + Σ exp(x_t))"
    return None


def _base_e(expr):
    """2^y written as exp(y·ln 2): the definition of the power, applied before proving."""
    return expr.replace(lambda a: a.is_Pow and a.base == 2, lambda a: sp.exp(a.exp * sp.log(2)))


def _prove(lhs, rhs) -> Verdict:
    # prove_equal skips a SymPy pass that fails internally and still searches a counterexample
    return prove_equal(_base_e(lhs), _base_e(rhs))


def _at_text(at: dict) -> str:
    names = {"zeta'": "ζ", "gamma'": "γ", "c_cap": "c_cap"}
    out = []
    for sym, value in sorted(at.items(), key=lambda kv: kv[0].name):
        if sym.name == "zeta'":
            value = 1 + value
        if sym.name == "gamma'":
            value = -value
        out.append(f"{names.get(sym.name, sym.name)} = {sp.sstr(value)}")
    return ", ".join(out)


@lru_cache(maxsize=64)
def derive_fault(fault: str, name: str, fields: tuple) -> Derivation | None:
    """The symbolic derivation of faulty form ``fault`` of normalizer ``name``, or None."""
    label = get(name).label
    if name in OTHER_FAULTS:
        forms = _other_forms(fault, name, fields)
        if forms is None:
            return None
        written, closed, closed_label, definition, fix, text, at = forms
        identity = _prove(written, closed)
        if closed is definition:  # a numerical fault: the code is the definition in exact arithmetic
            versus = _prove(closed, definition)
            return Derivation(text, closed_label, closed_label, identity, versus, None)
        versus = _prove(closed.subs(at), definition.subs(at))
        definition_label = _definition_text(get(name)) + (f" at {_at_text(at)}" if at else "")
        return Derivation(text, closed_label, definition_label, identity, versus, None)
    if name not in SINKS:
        return None
    forms = _forms(fault, name, fields)
    if forms is None:
        return None
    written, closed, closed_label, definition, fix, text = forms
    if SINKS[name] is None:
        text = text.replace("exp(s) + ", "").replace("exp(s − m) + ", "")
    elif SINKS[name] == 0.0:
        text = text.replace("exp(s)", "1")
    elif SINKS[name] == "s_star":
        text = text.replace("exp(s)", "exp(s*)").replace("exp(s − m)", "exp(s* − m)")
    identity = _prove(written, closed)
    versus = _prove(closed, definition)
    fixed = None if fix is None else _prove(fix, definition)
    return Derivation(text, closed_label, f"{label}(x)", identity, versus, fixed)
