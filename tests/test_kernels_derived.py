"""The kernel forms and faults are derived from single definitions, read when they are used.

* A kernel fault is one record of :data:`derive.kernels.faults.FAULTS`: the numeric kernels
  (:mod:`derive.kernels.numeric`) name no fault; a fault added as one record in a temporary table
  gets its numeric behaviour (how many times the extra logit enters, the guard it leaves out, the
  lse and gradient it transforms) and the diagnosis of ``derive impl`` with no other edit.
* The tables read off the normalizer registry (the kernel forms of the family, the extra logits
  the kernel check knows) are computed on use: an entry added after their modules were imported
  is seen by them, by ``derive impl --form`` and by its fault diagnosis.
* One recogniser of the softmax family (:func:`derive.normalizers.family.recognise`); the exact row
  of a formula is the softmax one only for a recognised member written literally in that shape.
"""

from __future__ import annotations

import ast
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import derive.impl.faults.kernel as kernel_faults
import derive.impl.cases.kernel as kernel_inputs
import derive.kernels.forms as forms
from derive.cli import main
from derive.kernels import faults, numeric
from derive.normalizers.registry import REGISTRY, from_formula

NEG = -math.inf
ZOO = str(Path("tests/zoo").resolve())
ROW = np.array([0.5, NEG, 2.0, -1.0, NEG, NEG, 1.5])  # a masked key, and a fully masked split of two
VALUES = np.arange(14, dtype=float).reshape(7, 2) / 4 - 1


# ---- numeric.py names no fault -------------------------------------------------------------


def test_the_numeric_kernels_and_their_realizations_name_no_fault():
    import derive.impl.faults.kernel_diagnose as kernel_diagnose

    keys = [f.key for f in faults.FAULTS]
    for module in (numeric, kernel_faults, kernel_diagnose):
        src = Path(module.__file__).read_text(encoding="utf-8")
        named = [k for k in keys if k in src]
        assert named == [], f"{module.__name__} names the faults {named}: read the record instead"
    # the numeric kernels read the guards of the forms (the records name the one they leave out)
    src = Path(numeric.__file__).read_text(encoding="utf-8")
    consts = {n.value for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert {c for c in consts if c in faults.GUARDS} == set(faults.GUARDS)


def test_the_realizations_of_each_fault_are_read_off_its_record():
    # the attention form realizes a fault by its own model (derive.impl.faults.attention), not the numeric kernels
    got = {(form, f.key): kernel_faults.variants(form, f.key) for f in faults.FAULTS for form in f.checked
           if form != "attention"}
    scales = [{"scale": 1.0 / math.sqrt(d)} for d in (2, 4, 8, 16, 32, 64, 128, 256)]
    seeded_or_finalized = [{"base2": b, "finalize": fin} for fin in (False, True) for b in (True, False)]
    assert got == {
        ("online", "extra_per_tile"): [{}, {"no_tile_nan": True}], ("split", "extra_per_tile"): [{}, {"also": ("empty",)}],
        ("split", "seeded_twice_empty_split"): [{}, {"also": ("masked",)}],
        ("online", "missing_log2e"): [{}], ("split", "missing_log2e"): [{}],
        ("online", "scale_on_extra"): scales, ("split", "scale_on_extra"): scales,
        ("online", "unshifted_extra"): [{}], ("split", "unshifted_extra"): [{}],
        ("online", "acc_not_rescaled"): seeded_or_finalized, ("online", "sum_not_rescaled"): seeded_or_finalized,
        ("split", "nan_empty_split"): [{}], ("backward", "kv_only_lse_backward"): [{}, {"p_only": True}],
        ("backward", "extra_grad_missing"): [{}], ("backward", "extra_grad_sign"): [{}],
        ("online", "guard_stored_as_max"): [{"base2": True}, {"base2": False}],
        ("online", "missing_neg_inf_guard"): [{"base2": True}, {"base2": False}],
    }
    assert [f.key for f in faults.FAULTS if f.shows_nan] == ["nan_empty_split", "missing_neg_inf_guard"]


def _record(key: str, part: str, rewrite=None, **more) -> faults.KernelFault:
    return faults.KernelFault(key, "split", ("online", "split", "backward"), key, "does", "computes", "fix", part,
                              rewrite, **more)


@pytest.fixture
def table(monkeypatch):
    """A temporary fault table: add(record) puts one more fault in it, for this test only."""
    def add(f: faults.KernelFault) -> faults.KernelFault:
        monkeypatch.setattr(faults, "FAULTS", faults.FAULTS + (f,))
        return f

    return add


def _same(a, b):
    (o1, l1), (o2, l2) = a, b
    assert np.allclose(o1, o2, rtol=1e-13, atol=0, equal_nan=True) and (l1 == l2 or math.isclose(l1, l2, rel_tol=1e-13))


def test_a_new_fault_of_the_extra_logit_gets_its_count_from_its_record(table):
    """Seeded in every split with a key AND added in the combine: K = splits with a key + 1; the
    same rewrite counted only over fully masked splits: K = those splits."""
    s = 0.75
    both = table(_record("seeded_and_combined", "logit", lambda s, m, K, c, log: s + log(K), adds=("tile", "combine")))
    dead = table(_record("per_dead_split", "logit", lambda s, m, K, c, log: s + log(K), adds=("masked",)))
    for splits, keyed, masked in ((1, 1, 0), (2, 2, 0), (4, 4, 1), (7, 7, 3), (9, 7, 3)):
        _same(numeric.split(ROW, VALUES, splits, s, fault="seeded_and_combined"),
              numeric.split(ROW, VALUES, splits, s + math.log(keyed + 1)))
        if masked:
            _same(numeric.split(ROW, VALUES, splits, s, fault=dead.key),
                  numeric.split(ROW, VALUES, splits, s + math.log(masked)))
        else:  # no split adds it: K = 0, the extra logit never enters
            _same(numeric.split(ROW, VALUES, splits, s, fault=dead), numeric.split(ROW, VALUES, splits, None))
    for block, tiles in ((1, 7), (2, 4), (3, 3), (7, 1), (8, 1)):
        _same(numeric.online(ROW, VALUES, block, s, fault=both), numeric.online(ROW, VALUES, block, s + math.log(tiles + 1)))
    # a realization that adds it in the empty splits too (two of nine splits of seven keys are empty)
    _same(numeric.split(ROW, VALUES, 9, s, fault=both, also=("empty",)), numeric.split(ROW, VALUES, 9, s + math.log(10)))
    # a fault that adds it per tile only: a row of no key (no tile) finalizes 0/0 where the kernel has no guard
    per_tile = table(_record("tile_only", "logit", lambda s, m, K, c, log: s + log(K), adds=("tile",)))
    empty = (np.zeros(0), np.zeros((0, 2)))
    assert np.all(np.isnan(numeric.online(*empty, 2, s, fault=per_tile, no_tile_nan=True)[0]))
    _same(numeric.online(*empty, 2, s, fault=per_tile), (np.zeros(2), NEG))
    _same(numeric.online(*empty, 2, s, fault=both, no_tile_nan=True), numeric.online(*empty, 2, s))  # entered once


def test_a_new_ieee_fault_leaves_out_the_guard_its_record_names(table):
    late = np.array([NEG, -1000.0])
    v = np.array([[1.0], [2.0]])
    stored = table(_record("stand_in_kept", "ieee", guard="running_max"))
    nan = table(_record("split_zero_over_zero", "ieee", guard="empty_split"))
    good = numeric.online(late, v, 1, None)
    assert good[0][0] == 2.0 and good[1] == -1000.0
    _same(numeric.online(late, v, 1, None, fault=stored.key), numeric.online(late, v, 1, None, fault="guard_stored_as_max"))
    assert numeric.online(late, v, 1, None, fault=stored)[1] == NEG  # underflow: lse −∞
    assert np.all(np.isnan(numeric.split(ROW, VALUES, 4, 0.5, fault=nan)[0]))
    _same(numeric.split(ROW, VALUES, 4, 0.5, fault=stored), numeric.split(ROW, VALUES, 4, 0.5))  # not its guard
    _same(numeric.online(ROW, VALUES, 2, 0.5, fault=nan), numeric.online(ROW, VALUES, 2, 0.5))


def test_new_faults_of_the_backward_transform_the_lse_and_the_gradient(table):
    x, v, g, s = np.array([0.5, NEG, 2.0]), VALUES[:3], np.array([1.0, -2.0]), 0.25
    doubled = table(_record("grad_doubled", "grad", lambda g, zero: 2 * g))
    halved = table(_record("lse_logit_less_log2", "lse", lambda s, minus_inf: s - math.log(2)))
    dx, dv, ds = numeric.backward(x, v, g, s)
    assert numeric.backward(x, v, g, s, fault=doubled)[2] == pytest.approx(2 * ds, rel=1e-14)
    # P recomputed from the lse of the extra logit s − log 2: the lse of a row whose extra term is e^s/2
    lse = math.log(math.exp(s) / 2 + math.exp(0.5) + math.exp(2.0))
    want = np.exp(x - lse) * (v @ g - float(g @ numeric.split(x, v, 1, s)[0]))
    assert np.allclose(numeric.backward(x, v, g, s, fault=halved.key)[0], want, rtol=1e-13)
    assert not np.allclose(want, dx)


@pytest.mark.slow  # a kernel check (about 15 s)
def test_a_new_fault_is_tried_by_the_diagnosis_with_no_other_edit(table, tmp_path, capsys):
    """One record: the fault applies to the sink (its rewrite changes the extra logit), so
    ``derive impl --form online`` tries it and names it for a kernel that has it."""
    from derive.normalizers.registry import get

    f = table(replace(faults.by_key("extra_per_tile"), key="seeded_and_finalized", title="extra logit seeded and added",
                      adds=("tile", "combine"), checked=("online",)))
    assert "seeded_and_finalized" in faults.faults_for(get("sink"), "online")
    assert "seeded_and_finalized" not in faults.faults_for(get("softmax"), "online")  # no extra logit to add
    code = tmp_path / "kern.py"
    code.write_text(f"import sys\nsys.path.insert(0, {ZOO!r})\nimport numpy as np\nimport kernels_numpy as K\n"
                    "def k(x, v, block, *, s):\n"
                    "    tiles = -(-x.shape[-1] // block)\n"
                    "    return K.sink_online(x, v, block, s=s + np.log(tiles + 1.0))\n")
    capsys.readouterr()
    rc = main(["impl", f"{code}:k", "--as", "sink", "--form", "online", "--dtype", "float64", "--examples", "3",
               "--format", "json"])
    out, err = capsys.readouterr()
    assert rc == 1, err
    assert [m["name"] for m in json.loads(out)["diagnosis"]["matched"]] == [f.key]


# ---- tables read off the registry, on use ---------------------------------------------------


HALF = "halfsink_late"
TWO = "twosink_late"


@pytest.fixture
def late(monkeypatch):
    """Two family entries added AFTER forms, kernel_inputs and kernel_faults were imported (above)."""
    half = from_formula(HALF, "softmax with half a sink logit", "exp(x_j) / (exp(s / 2) + sum_t(exp(x_t)))",
                        params=("s",), domain={"s": sp.Symbol("s", real=True)}, sample={"s": 1},
                        ref_defaults={"s": 0.0})
    two = from_formula(TWO, "softmax with a 2 in the denominator", "exp(x_j) / (2 + sum_t(exp(x_t)))")
    for e in (half, two):
        monkeypatch.setitem(REGISTRY, e.name, e)
    return half, two


def test_the_registry_tables_see_an_entry_added_after_import(late, monkeypatch):
    s = sp.Symbol("s", real=True)
    view = forms.registry_forms()
    assert view.extra[HALF].logit == s / 2 and view.extra[TWO].logit == sp.log(2)
    assert HALF not in view.no_form and HALF not in view.not_checked
    logits = kernel_inputs.extra_logits()
    assert logits[HALF] == s / 2 and logits[TWO] == pytest.approx(math.log(2))
    # the diagnosis compares a kernel with every other fixed extra logit of the family: none, 0, and log 2 now
    assert dict(kernel_faults.other_extras(HALF)) == {"softmax": None, "softmax1": 0.0, TWO: pytest.approx(math.log(2))}
    assert dict(kernel_faults.other_extras(TWO)) == {"softmax": None, "softmax1": 0.0}
    monkeypatch.delitem(REGISTRY, TWO)
    assert TWO not in forms.registry_forms().extra and TWO not in kernel_inputs.extra_logits()
    assert TWO not in dict(kernel_faults.other_extras(HALF))


def _impl(capsys, code, fn, form, *more):
    capsys.readouterr()
    rc = main(["impl", f"{code}:{fn}", "--as", HALF, "--form", form, "--dtype", "float64", "--examples", "3",
               "--format", "json", *more])
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if out.strip() else {}), err


@pytest.mark.slow  # nine kernel checks
def test_derive_impl_kernel_forms_and_diagnosis_see_an_entry_added_after_import(late, tmp_path, capsys):
    code = tmp_path / "half.py"
    code.write_text(
        f"import sys\nsys.path.insert(0, {ZOO!r})\nimport numpy as np\nimport kernels_numpy as K\n"
        "def online(x, v, block, *, s):\n    return K.sink_online(x, v, block, s=s / 2)\n"
        "def online_plain(x, v, block, *, s):\n    return K.softmax_online(x, v, block)\n"
        "def online_two(x, v, block, *, s):\n    return K.sink_online(x, v, block, s=float(np.log(2.0)))\n"
        "def split(x, v, splits, *, s):\n    return K.sink_split(x, v, splits, s=s / 2)\n"
        "def split_per_split(x, v, splits, *, s):\n    return K.sink_split_extra_per_split(x, v, splits, s=s / 2)\n"
        "def backward(x, v, dout, *, s):\n"
        "    dx, dv, d = K.sink_backward(x, v, dout, s=s / 2)\n"
        "    return dx, dv, {'s': d['s'] / 2}\n"
        "def backward_sign(x, v, dout, *, s):\n"
        "    dx, dv, d = K.sink_backward(x, v, dout, s=s / 2)\n"
        "    return dx, dv, {'s': -d['s'] / 2}\n")
    for fn, form in (("online", "online"), ("split", "split"), ("backward", "backward")):
        rc, report, err = _impl(capsys, code, fn, form)
        assert rc == 0, (fn, err, report)
    for fn, form, named in (("online_plain", "online", ["equals-softmax"]), ("online_two", "online", [f"equals-{TWO}"]),
                            ("split_per_split", "split", ["extra_per_tile"]),
                            ("backward_sign", "backward", ["extra_grad_sign"])):
        rc, report, err = _impl(capsys, code, fn, form)
        assert rc == 1, (fn, err)
        assert [m["name"] for m in report["diagnosis"]["matched"]] == named, (fn, report["diagnosis"])
        if fn == "online_two":
            assert "fixed extra logit 0.693147" in report["diagnosis"]["matched"][0]["does"]


# ---- one recogniser of the softmax family ---------------------------------------------------


def _formula(text, scalars=None):
    from derive.normalizers.formula import compile_weight

    return compile_weight(text, scalars or {})


@pytest.mark.parametrize("text, scalars, member, softmax_row", [
    ("exp(x_j) / sum_t(exp(x_t))", {}, True, True),
    ("exp(x_j) / (exp(s) + sum_t(exp(x_t)))", {"s": {}}, True, True),
    ("exp(x_j) / (sum_t(exp(x_t)) + exp(-b))", {"b": {}}, True, True),  # E = e^{−b} > 0: a member, σ = −b
    ("exp(x_j) / (sum_t(exp(x_t)) - 1)", {}, False, False),  # E = −1: no logit
    ("exp(x_j) / (-1 + sum_t(exp(x_t)))", {}, False, False),
    ("exp(x_j) / (s + sum_t(exp(x_t)))", {"s": {}}, False, False),  # E = s may be ≤ 0
    ("exp(x_j) / (s + sum_t(exp(x_t)))", {"s": {"positive": True}}, True, True),
    ("exp(2*x_j) / sum_t(exp(2*x_t))", {}, False, False),  # softmax of 2x, not of x
    ("exp(x_j) / (1 + sum_t(x_t))", {}, False, False),  # the exp missing in the sum
    ("x_j / (1 + sum_t(exp(x_t)))", {}, False, False),  # the exp missing on the key
    ("exp(x_j) / (1 + sum_t(exp(x_j)))", {}, False, False),  # x_j where x_t belongs
    ("exp(x_j) / (1 + sum_t(exp(x_t), t != j))", {}, False, False),  # the key left out of its own sum
    ("exp(x_j - s) / (1 + sum_t(exp(x_t - s)))", {"s": {}}, True, False),  # a member, written otherwise: the tree
    # SymPy reads 0·log(x_j) and 0/x_j as 0 (softmax), exp(2·log(s)) as s²; the formula has no value where
    # x_j ≤ 0, x_j = 0, s < 0, nor does max_t over the keys after the last one: no member, no softmax row
    ("exp(x_j) / (0 * log(x_j) + sum_t(exp(x_t)))", {}, False, False),
    ("exp(x_j) / (0 / x_j + sum_t(exp(x_t)))", {}, False, False),
    ("exp(x_j) / (exp(2 * log(s)) + sum_t(exp(x_t)))", {"s": {"nonzero": True}}, False, False),
    ("exp(x_j) / (exp(2 * log(s)) + sum_t(exp(x_t)))", {"s": {"positive": True}}, True, True),
    ("exp(x_j) / (sum_t(exp(x_t)) + 0 * max_t(x_t, t > j))", {}, False, False),
    ("exp(x_j) / (1 / s**2 + sum_t(exp(x_t)))", {"s": {"nonzero": True}}, True, True),
])
def test_one_recogniser_decides_the_exact_softmax_row(text, scalars, member, softmax_row):
    from derive.normalizers.exact_softmax import softmax_extra
    from derive.normalizers.family import recognise_formula

    f = _formula(text, scalars)
    assert (recognise_formula(f)[0] is not None) == member
    assert softmax_extra(f)[0] == softmax_row


def test_the_exact_row_is_the_formula_s_value_on_rows_that_fool_a_pattern():
    """Each reference against the formula evaluated by hand in mpmath (exact inputs, 50 digits)."""
    import mpmath

    x = [0.5, -1.0, 2.0]
    with mpmath.workdps(50):
        e = [mpmath.exp(mpmath.mpf(v)) for v in x]
        cases = [
            ("exp(x_j) / (sum_t(exp(x_t)) + exp(-b))", {"b": {}}, 1.5, [q / (sum(e) + mpmath.exp(-1.5)) for q in e]),
            ("exp(x_j) / (sum_t(exp(x_t)) - 1)", {}, None, [q / (sum(e) - 1) for q in e]),
            ("exp(2*x_j) / sum_t(exp(2*x_t))", {}, None, [q ** 2 / sum(p ** 2 for p in e) for q in e]),
        ]
        for text, scalars, b, want in cases:
            f = _formula(text, scalars)
            got = f.reference(x, **({"b": b} if b is not None else {}))
            assert all(abs(g - w) <= mpmath.mpf(10) ** -40 * abs(w) for g, w in zip(got, want)), text
        # 0·log(x_j): no real value where x_j ≤ 0, the formula's own value elsewhere
        got = _formula("exp(x_j) / (0 * log(x_j) + sum_t(exp(x_t)))").reference(x)
        assert mpmath.isnan(got[1]) and abs(got[0] - e[0] / sum(e)) < mpmath.mpf(10) ** -40
        # x at which the denominator Σ e^x − 1 is 0: no value, NaN, never a finite weight
        got = _formula("exp(x_j) / (sum_t(exp(x_t)) - 1)").reference([0.0])
        assert mpmath.isnan(got[0])


def test_no_kernel_form_where_the_simplified_weight_hides_a_missing_value(monkeypatch):
    """0·log(x_j) is 0 to SymPy, so the symbolic weight is softmax's; the formula has no value where
    x_j ≤ 0. A kernel form (and the kernel check's softmax reference) would give it one: none is derived."""
    from derive.normalizers.family import kernel_form

    e = from_formula("logzero", "softmax plus 0·log x_j", "exp(x_j) / (0 * log(x_j) + sum_t(exp(x_t)))")
    monkeypatch.setitem(REGISTRY, e.name, e)
    facts = kernel_form(e)
    assert not facts.checked and "not certainly defined at every key" in facts.why
    assert "logzero" in forms.registry_forms().no_form and "logzero" not in kernel_inputs.extra_logits()
