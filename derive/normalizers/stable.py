"""Overflow-free forms of the normalizers, the widespread faulty softmax₁, and a float table.

* :func:`stable_form` — the overflow-free form derived from the entry's formula
  (:mod:`derive.normalizers.overflow`); :func:`stable_property` proves it equal to the
  definition for every real shift m.
* :func:`faulty_weight` — subtract m = max_j x_j, then add a plain 1 to the denominator.
* :func:`float_table` — where the naive, faulty and stable forms overflow, underflow or
  return NaN, in float16, bfloat16 (emulated), float32 and float64.
"""

from __future__ import annotations


import mpmath
import numpy as np
import sympy as sp

from derive.floats import bf16
from derive.model.attention import M, i, j, n, t
from derive.normalizers.algebra import _BY_ARGS, SIDES, Derivation, X, display_subs, prove_congruent, settle, weight
from derive.normalizers.overflow import MSHIFT, Overflow, derive_overflow_free
from derive.prove.verdict import PROVED, UNDECIDED, Verdict
from derive.normalizers.registry import get

__all__ = [
    "CASES",
    "DTYPES",
    "FORMS",
    "MSHIFT",
    "bf16",
    "faulty_weight",
    "prove_form",
    "float_table",
    "run_form",
    "stable_form",
    "stable_property",
]

def stable_form(entry, params: dict) -> sp.Expr | None:
    """The overflow-free form of the weight (:mod:`derive.normalizers.overflow`; the definition
    itself when it has no exponential of a score), None when none is derived. A claim: prove it."""
    form = derive_overflow_free(entry, params)
    return weight(entry, params) if form.own else form.form


def stable_property(entry, params) -> Derivation:
    """The overflow-free form derived from the formula equals the definition, for every shift m."""
    der = Derivation(
        entry.name,
        "stable_form",
        "the overflow-free form derived from the formula equals the definition for all scores (and every real "
        "shift m, where the form has one)",
        None,
    )
    form = derive_overflow_free(entry, params)
    if form.form is None:
        der.verdict = Verdict(UNDECIDED, form.reason)
        der.value = "?"
        return der
    if form.own:
        der.verdict = Verdict(PROVED, "the definition takes no exponential of a score, so no step of it can "
                              "overflow: it is its own overflow-free form", method="no exponential of a score")
        der.step("the definition, which has no exponential of a score", weight(entry, params))
        der.value = "the definition"
        return der
    der.verdict = prove_form(form, entry, params)
    der.step(f"overflow-free form ({form.text()})", form.form)
    back = display_subs(entry)  # shown with the entry's own parameters (ζ, not 1 + ζ'): still an identity
    der.equality = tuple(e.xreplace(back) for e in (form.form, weight(entry, params)))
    der.value = form.text() if der.verdict.proved else {"refuted": "differs"}.get(der.verdict.status, "?")
    return der


def prove_form(form: Overflow, entry, params) -> Verdict:
    """Each rewritten part equal to the part of the definition it replaces (then the whole is
    equal: it is the definition with equals put for equals); failing that, the whole form
    against the definition by :func:`settle` (a certified counterexample refutes it)."""
    hows = []
    for old, new, _ in form.rewrites:
        ok, how = prove_congruent(new, old)
        if not ok:
            return settle(form.form, weight(entry, params), entry, params,
                          sides=SIDES["stable_form"])
        how = how.removeprefix(_BY_ARGS).removesuffix(")") if how.startswith(_BY_ARGS) else how
        hows.append(how)
    return Verdict(PROVED, "each rewritten part reduces to the part of the definition it replaces",
                   method="; ".join(dict.fromkeys(hows)))


def faulty_weight(key=j) -> sp.Expr:
    """exp(x_j − m) / (1 + Σ_t exp(x_t − m)): the max subtracted, then a plain 1 added."""
    return M[i, key] * sp.exp(X[i, key] - MSHIFT) / (1 + sp.Sum(M[i, t] * sp.exp(X[i, t] - MSHIFT), (t, 1, n)))


# ---- floating point -----------------------------------------------------------------------


DTYPES = ("float16", "bfloat16", "float32", "float64")


class _Arith:
    """Elementary operations in one format: numpy's own, or float32 rounded to bfloat16 after
    every operation (sums accumulate in float32, then round, as bfloat16 kernels do)."""

    def __init__(self, dtype: str):
        self.emulate = dtype == "bfloat16"
        self.dt = np.float32 if self.emulate else np.dtype(dtype).type
        self.flags: set[str] = set()

    def r(self, a):
        return bf16(a) if self.emulate else np.asarray(a, dtype=self.dt)

    def arr(self, x):
        return self.r(np.asarray(x, dtype=np.float64).astype(self.dt))

    def exp(self, a):
        out = self.r(np.exp(a))
        finite = np.isfinite(np.asarray(a, dtype=np.float64))
        if (np.isinf(out) & finite).any():
            self.flags.add("overflow")
        if ((out == 0) & finite).any():
            self.flags.add("underflow")
        return out

    def sum(self, a):
        return self.r(np.sum(a, dtype=self.dt))

    def div(self, a, b):
        if (np.asarray(b) == 0).any():
            self.flags.add("0/0")
        return self.r(a / b)

    def max(self, a):
        return self.r(np.max(a))

    def sub(self, a, b):
        a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        same = np.isinf(a64) & np.isinf(b64) & (np.sign(a64) == np.sign(b64))
        if (same & (a64 < 0)).any():
            self.flags.add("−∞ − (−∞)")
        if (same & (a64 > 0)).any():
            self.flags.add("∞ − ∞")
        return self.r(a - b)

    def add(self, a, b):
        return self.r(a + b)

    def const(self, v):
        return self.r(self.dt(v))


def _softmax_naive(A, x):
    e = A.exp(x)
    return A.div(e, A.sum(e))


def _softmax_stable(A, x):
    m = A.max(x)
    m = m if np.isfinite(m) else A.const(0)
    e = A.exp(A.sub(x, m))
    return A.div(e, A.sum(e))


def _s1_naive(A, x):
    e = A.exp(x)
    return A.div(e, A.add(A.const(1), A.sum(e)))


def _s1_faulty(A, x):
    e = A.exp(A.sub(x, A.max(x)))
    return A.div(e, A.add(A.const(1), A.sum(e)))


def _s1_stable(A, x):
    m = A.max(np.append(x, A.const(0)))  # the implicit zero logit takes part in the max
    e = A.exp(A.sub(x, m))
    return A.div(e, A.add(A.exp(A.sub(A.const(0), m)), A.sum(e)))


FORMS = {
    "softmax naive": ("softmax", _softmax_naive, "e^{x_j} / Σ e^{x_t}"),
    "softmax stable": ("softmax", _softmax_stable, "m = max x"),
    "softmax₁ naive": ("softmax1", _s1_naive, "e^{x_j} / (1 + Σ e^{x_t})"),
    "softmax₁ faulty": ("softmax1", _s1_faulty, "m = max x, then + 1"),
    "softmax₁ stable": ("softmax1", _s1_stable, "m = max(0, max x), + e^{−m}"),
}

CASES = {
    "moderate (1, 2, 3)": ([1.0, 2.0, 3.0], None),
    "large (1e4, 0)": ([1e4, 0.0], None),
    "very negative (−1e4, −1e4)": ([-1e4, -1e4], None),
    "mixed (1e4, −1e4)": ([1e4, -1e4], None),
    "f16 overflow (12, 0)": ([12.0, 0.0], None),
    "f16 underflow (−20, −20)": ([-20.0, -20.0], None),
    "all masked": ([0.5, -1.0], [False, False]),
}

_TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-6, "float64": 1e-12}


def run_form(form: str, x, mask, dtype: str, flags: set | None = None) -> np.ndarray:
    """The form evaluated in ``dtype`` (masked scores are −∞); returned as float64.

    ``flags`` collects what happened on the way: exp overflowed, exp underflowed to 0, or a
    division by 0."""
    _, fn, _ = FORMS[form]
    A = _Arith(dtype)
    xs = np.where(np.asarray(mask, bool), np.asarray(x, float), -np.inf) if mask is not None else np.asarray(x, float)
    with np.errstate(all="ignore"):
        out = np.asarray(fn(A, A.arr(xs)), dtype=np.float64)
    if flags is not None:
        flags.update(A.flags)
    return out


def reference(name: str, x, mask) -> list:
    with mpmath.workdps(50):
        return [float(v) for v in get(name).reference(list(x), mask)]


def outcome(got: np.ndarray, ref: list, dtype: str, flags: set = frozenset()) -> str:
    ref = np.asarray(ref, dtype=float)
    why = ", ".join(sorted(f for f in flags if f != "underflow" or np.isnan(got).any()))
    why = f" ({why})" if why else ""
    if np.isnan(ref).all():
        return "NaN: undefined" if np.isnan(got).all() else "a number for an undefined row"
    if np.isnan(got).any():
        return "NaN" + why
    if np.isinf(got).any():
        return "inf" + why
    err = float(np.max(np.abs(got - ref)))
    if err > _TOL[dtype]:
        return f"wrong by {err:.2g}"
    return "ok, exp underflows to 0" if "underflow" in flags and not np.any(got) else "ok"


def float_table() -> list[list[str]]:
    """Rows: form, case, then one outcome per dtype in :data:`DTYPES`."""
    rows = []
    for form, (name, _, _) in FORMS.items():
        for case, (x, mask) in CASES.items():
            ref = reference(name, x, mask)
            cells = []
            for dt in DTYPES:
                flags: set = set()
                got = run_form(form, x, mask, dt, flags)
                cells.append(outcome(got, ref, dt, flags))
            rows.append([form, case] + cells)
    return rows
