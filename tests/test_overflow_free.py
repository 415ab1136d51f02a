"""The overflow-free forms derived from the formulas: proved equal to the definitions, finite and
right at scores of ±1000 where the definitions as written overflow, and a wrong form refuted."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy as sp

from derive.crosscheck import evaluate as ev
from derive.crosscheck.evaluate import Instance, evaluate
from derive.model.attention import M, i, j
from derive.normalizers.algebra import X, weight
from derive.normalizers.formula import compile_weight
from derive.normalizers.overflow import MSHIFT, Overflow, derive_overflow_free
from derive.normalizers.properties import params_for
from derive.normalizers.registry import from_formula, get, names
from derive.normalizers.stable import prove_form, stable_property

# row, parameters (the entry's symbols → values): rows where the definition as written overflows
EXTREME = {
    "softmax": ([1000.0, -1000.0, 3.0], {}),
    "softmax1": ([1000.0, 999.0, -1000.0], {}),
    "sink": ([-1000.0, 1000.0], {"s": 999.0}),
    "zero_token": ([1000.0, 0.0], {}),
    "bias_kv": ([1000.0, 2.0], {"s_star": -1000.0}),
    "clipped": ([1000.0, 999.5, -1000.0], {"zeta": 1.25, "gamma": -0.125}),
    "softcap": ([1000.0, -1000.0, 0.0], {"c": 1000.0}),
    "softpick": ([1000.0, -1000.0, 999.0, 0.0], {"eps": 1e-30}),
    "ssmax": ([1000.0, 999.0, -1000.0], {"s": 1.0}),
    "sigmoid": ([-1000.0, 1000.0, 0.0], {"b": 0.5}),
    "sigmoid_logn": ([-1000.0, 1000.0, 0.0], {}),
    "stick_breaking": ([-1000.0, 1000.0, -1000.0, 2.0], {}),
    "relu_n": ([-1000.0, 1000.0, 0.5], {}),
}


def test_every_entry_has_an_extreme_row():
    assert set(EXTREME) == set(names())


def _no_overflow(monkeypatch):
    """exp of an argument above 700 raises: every exponent a form takes must stay small.

    The closures evaluate every expression (no generated function, whose exp guard returns ∞
    instead of calling :meth:`_Eval.unary`), so each exponential passes through the hook."""
    monkeypatch.setattr(ev._Eval, "run", lambda self, e, env: ev.compiled(e)(self, env))
    real = ev._Eval.unary

    def unary(self, name, x):
        if name == "exp" and self.mode == "float" and x > 700:
            raise OverflowError(f"exp({x})")
        return real(self, name, x)

    monkeypatch.setattr(ev._Eval, "unary", unary)


def _values(entry, expr, row, params, shifts=None):
    """``expr`` (an expression of key j) at every key of ``row``, with the shifts set to their values."""
    size = len(row)
    x = np.zeros((size + 1, size + 1))
    x[size, 1:] = row
    mask = np.zeros((size + 1, size + 1))
    mask[size, 1:] = 1
    syms = entry.symbols()
    scalars = {}
    for name, value in params.items():
        sym = syms[name]
        if isinstance(sym, sp.Symbol):
            scalars[sym] = value
            continue
        (own,) = sym.free_symbols  # zeta = 1 + zeta': the domain's symbol gets the value that gives ``value``
        scalars[own] = float(sp.solve(sp.Eq(sym, sp.Rational(value)), own)[0])
    inst = Instance(d=1, n=size, scalars=scalars, tables={"x": x, "M": mask})
    for m, value in (shifts or {}).items():
        inst.scalars[m] = evaluate(value, inst, "float", {i: size})
    return [evaluate(expr, inst, "float", {i: size, j: k}) for k in range(1, size + 1)]


@pytest.mark.parametrize("name", sorted(EXTREME))
def test_the_form_is_right_where_the_definition_overflows(name, monkeypatch):
    entry = get(name)
    row, params = EXTREME[name]
    form = derive_overflow_free(entry, entry.symbols())
    assert form.form is not None, form.reason
    with mpmath.workdps(60):
        want = [float(v) for v in entry.reference(row, None, **params)]
    _no_overflow(monkeypatch)
    got = _values(entry, form.form, row, params, form.shifts)
    assert all(math.isfinite(v) for v in got)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-300)
    if form.own:  # no exponential: the definition is the form
        assert name == "relu_n"
        return
    with pytest.raises(OverflowError):  # the definition as written takes an exponential above 700
        _values(entry, weight(entry, entry.symbols()), row, params)


def test_softpick_with_a_tiny_epsilon_and_every_score_huge(monkeypatch):
    entry = get("softpick")
    row = [1000.0, 1000.0 - 1e-9, 1000.0]
    form = derive_overflow_free(entry, entry.symbols())
    _no_overflow(monkeypatch)
    got = _values(entry, form.form, row, {"eps": 1e-300}, form.shifts)
    with mpmath.workdps(60):
        want = [float(v) for v in entry.reference(row, None, eps=1e-300)]
    assert got == pytest.approx(want, rel=1e-9)


def test_every_registry_entry_has_a_proved_form():
    for name in names():
        der = stable_property(get(name), params_for(get(name)))
        assert der.verdict.proved, (name, der.verdict)
    assert stable_property(get("softpick"), params_for(get("softpick"))).value == "$m = \\max(0, \\max_t x_{t})$"
    assert stable_property(get("sink"), params_for(get("sink"))).value == "$m = \\max(s, \\max_t x_{t})$"
    assert stable_property(get("stick_breaking"), params_for(get("stick_breaking"))).value == "$\\sigma$ in branch form"


def test_a_formula_without_exponentials_is_its_own_form():
    der = stable_property(get("relu_n"), {})
    assert der.verdict.proved and der.verdict.method == "no exponential of a score"
    assert der.equality is None and len(der.steps) == 1  # the definition shown once, no "p = p"
    assert "its own overflow-free form" in der.verdict.reason


def test_the_softpick_form_scales_the_one_and_epsilon():
    form = derive_overflow_free(get("softpick"), get("softpick").symbols())
    eps = get("softpick").symbols()["eps"]
    e = sp.exp(-MSHIFT)
    assert form.form.has(eps * e) and form.form.has(sp.Max(0, sp.exp(X[i, j] - MSHIFT) - e))
    assert sp.sstr(form.shifts[MSHIFT]) == "Max(0, max_t(x[i, t], 1..n))"


def _user(name, text, **scalars):
    f = compile_weight(text, {k: v for k, v in scalars.items()}, score2="y_" in text)
    return from_formula(name, name, text, compiled=f, domain=dict(f.defaults))


def test_two_ratios_get_two_shifts():
    entry = _user("diff", "exp(x_j)/sum_t(exp(x_t)) - lam*exp(y_j)/sum_t(exp(y_t))", lam={"positive": True})
    der = stable_property(entry, entry.symbols())
    assert der.verdict.proved
    assert der.value == "$m = \\max_t x_{t}$; $m_{2} = \\max_t y_{t}$"


@pytest.mark.parametrize("text, why", [
    ("exp(x_j) / n", "outside every ratio"),
    ("exp(x_j) * exp(x_j) / sum_t(exp(x_t))", "a product of two terms with exponentials"),
    ("log(1 + exp(x_j)) / sum_t(exp(x_t))", "an exponential under log"),
    ("exp(x_j) / prod_t(1 + exp(x_t))", "a product over the row"),
])
def test_no_form_is_undecided_with_the_reason(text, why):
    der = stable_property(_user("u", text), {})
    assert der.verdict.status == "undecided" and why in der.verdict.reason


def test_a_wrong_overflow_free_form_is_refuted():
    """The constant 1 and ε left unscaled: equal to softpick only where m = 0."""
    entry = get("softpick")
    params = entry.symbols()
    f = compile_weight("relu(exp(x_j - m) - 1) / (sum_t(abs(exp(x_t - m) - 1)) + eps)",
                       {"eps": {"positive": True}, "m": {}})
    wrong = f.weight(lambda k: X[i, k], j, eps=params["eps"], m=MSHIFT).xreplace({M[i, j]: 1})
    good = derive_overflow_free(entry, params)
    (old, right, shift), = good.rewrites
    bad = Overflow(M[i, j] * wrong, dict(good.shifts), rewrites=[(old, wrong, shift)])
    assert bad.form != good.form
    v = prove_form(bad, entry, params)
    assert v.status == "refuted" and v.witness
    assert prove_form(good, entry, params).proved
