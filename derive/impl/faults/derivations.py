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

from derive.impl.faults.closed import SHIFT
from derive.model.attention import X, i, j
from derive.normalizers.registry import get
from derive.crosscheck.witness import find_witness
from derive.prove.equality import prove_equal
from derive.prove.verdict import REFUTED, Verdict

__all__ = ["Derivation", "derive_fault"]

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


def _base_e(expr):
    """2^y written as exp(y·ln 2): the definition of the power, applied before proving."""
    return expr.replace(lambda a: a.is_Pow and a.base == 2, lambda a: sp.exp(a.exp * sp.log(2)))


def _prove(lhs, rhs) -> Verdict:
    # prove_equal skips a SymPy pass that fails internally and still searches a counterexample
    return prove_equal(_base_e(lhs), _base_e(rhs))


def _refute(lhs, rhs) -> Verdict:
    """Verdict on ``lhs = rhs`` where it is expected false (the closed form of an exact fault
    against the definition): the certified counterexample :func:`prove_equal` would search after
    its proof attempt is searched first, with the same arguments, so it is the same witness;
    a proof attempt of a false identity (``simplify`` of a difference that is not 0) costs more
    than the search. A certified instance refutes whatever a proof attempt says; without one,
    :func:`prove_equal` decides."""
    a, b = _base_e(lhs), _base_e(rhs)
    witness = find_witness(a, b)
    if witness is not None:
        return Verdict(REFUTED, "the difference does not vanish on a certified instance", method="counterexample",
                       witness=witness)
    return prove_equal(a, b)


def _stand_ins(fields: dict) -> dict:
    """The symbolic values of a rewrite's stand-ins: the shift m and the factor c."""
    from derive.impl.faults.row import _FACTORS, C_, M_

    if "c" in fields and fields["c"] in _FACTORS:
        c = _FACTORS[fields["c"]][1]
    elif "d" in fields:
        c = sp.sqrt(fields["d"]) ** fields["power"]
    else:
        c = sp.S.One
    return {M_: SHIFT, C_: c}


def _at_text(values: dict) -> str:
    return ", ".join(f"{k} = {sp.sstr(v)}" for k, v in sorted(values.items()))


@lru_cache(maxsize=64)
def derive_fault(fault: str, name: str, fields: tuple) -> Derivation | None:
    """The symbolic derivation of faulty form ``fault`` of normalizer ``name``, or None (a fault
    of the masked rows, described rather than derived)."""
    from derive.impl.faults.texts import registered
    from derive.impl.faults.row import BY_NAME, M_, _stable, faulty_formula, formula_of, parts, pretty
    from derive.impl.faults.rewrite import show

    f = BY_NAME.get(fault)
    p = parts(name)
    if f is None or p is None or f.rewrite is None or f.numeric not in ("exact", "dtype"):
        return None
    norm = get(name)
    fd = dict(fields)
    form = faulty_formula(name, norm.formula, fault, fields)
    stand = _stand_ins(fd)
    text = pretty(show(form.node), fd.get("c"))
    definition_label = f"{p.label}(x)"

    def build(syms):
        written = form.weight(lambda k: X[i, k], j, **{**syms, **stand})
        definition = norm.weight(lambda k: X[i, k], j, **syms)
        if f.numeric == "dtype":
            return written, definition, definition_label, definition
        known = f.closed(p, fd, syms, stand["__c"]) if f.closed else None
        if known is None:  # a registered normalizer it equals, or the formula as written
            known_as = registered(form)
            return written, written, (f"{known_as}(x)" if known_as else text), definition
        return written, known[0], known[1], definition

    syms = norm.symbols()
    written, closed, closed_label, definition = build(syms)
    identity = _prove(written, closed)
    versus = (_refute if f.numeric == "exact" else _prove)(closed, definition)
    if f.numeric == "exact" and versus.status == "undecided" and norm.params:
        at = {q: sp.nsimplify(norm.sample.get(q, 1)) for q in norm.params}
        _, closed_at, _, definition_at = build(at)
        retry = _refute(closed_at, definition_at)
        if retry.status == "refuted":
            versus, definition_label = retry, f"{definition_label} at {_at_text(at)}"
    fixed = None
    if f.fix_form:
        fix = formula_of(_stable(p), norm.definition_of, (M_,)).weight(lambda k: X[i, k], j, **{**syms, **stand})
        fixed = _prove(fix, definition)
    return Derivation(text, closed_label, definition_label, identity, versus, fixed)
