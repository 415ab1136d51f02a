"""Kernel forms (docs/kernels.md): the document, the numeric kernels against the definition,
every faulty form against the kernel that has the fault, and the backward against torch."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from derive.build import build
from derive.crosscheck.evaluate import Instance, evaluate
from derive.document.api import Document
from derive.errors import StepFailed
from derive.kernels import backward as bw
from derive.kernels.faults import FAULTS, K
from derive.kernels.forms import a, m, m2, sigma, w
from derive.kernels.numeric import backward, online, split
from derive.model.attention import i, n

ROOT = Path(__file__).parent.parent
FAULT = {f.key: f for f in FAULTS}


def need_torch():
    """torch, or skip; with CI=true a missing torch fails instead of skipping."""
    if os.environ.get("CI") == "true":
        import torch

        return torch
    return pytest.importorskip("torch", reason="the autograd comparison needs torch")


# ---- the document ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def built_kernels(tmp_path_factory):
    out = tmp_path_factory.mktemp("kernels")
    report = build([str(ROOT / "proofs" / "kernels.py")], docs=out, out=out / "build", pdf=False, log=lambda m: None)
    assert report.documents == 1
    return json.loads((out / "kernels.json").read_text(encoding="utf-8")), (out / "kernels.md").read_text()


@pytest.fixture(scope="module")
def kernels_json():
    """The committed document: test_docs_current (a default test) builds every document and checks
    that docs/ is what the build writes, byte for byte, so the tests below read docs/ instead of
    building kernels.md once more."""
    return (json.loads((ROOT / "docs" / "kernels.json").read_text(encoding="utf-8")),
            (ROOT / "docs" / "kernels.md").read_text())


@pytest.mark.slow
def test_committed_document_is_current(built_kernels):
    data, page = built_kernels
    assert page == (ROOT / "docs" / "kernels.md").read_text(), "run `derive build proofs/kernels.py`"
    assert data == json.loads((ROOT / "docs" / "kernels.json").read_text(encoding="utf-8"))


def test_every_step_is_proved_and_every_fault_refuted(kernels_json):
    data, page = kernels_json
    kinds = {}
    for s in data["steps"]:
        kinds.setdefault(s["kind"], []).append(s)
        assert s["verdict"] == ("refuted" if s["kind"] == "refutation" else "proved"), s["name"]
    refuted = kinds["refutation"]
    # each fault with a formula, and the backward's dQ scaled by log₂e (section 5)
    assert len(refuted) == sum(1 for f in FAULTS if f.rewrite is not None) + 1 == 11
    assert "dQ scaled by log₂e" in {s["name"] for s in refuted}
    for s in refuted:
        assert s["witness"]["enclosures"]["bits"] >= 64
    names = {s["name"] for s in data["steps"]}
    for must in ("step: ℓ", "step: acc", "merge step: ℓ", "merge step: acc", "base-2 state", "lse from lse_KV",
                 "gradient of the scores", "gradient of the values", "gradient of a sink logit", "fully masked row"):
        assert must in names
    assert [f["key"] for f in data["data"]["faults"]] == [f.key for f in FAULTS]
    for ref in ("2205.14135", "2307.08691", "flashdecoding", "2309.17453"):
        assert ref in page
    assert "nan, nan, nan" in page  # the empty split's NaN, run



def test_fault_texts_are_math_in_documents_and_plain_on_a_terminal():
    """The documents print a fault's formulas as math spans; ``derive impl --form`` prints the
    same texts on a terminal, where each formula is read aloud (no ``$``, ``\\`` or braces)."""
    for f in FAULTS:
        for md, plain in ((f.does_md, f.does), (f.computes_md, f.computes), (f.fix_md, f.fix)):
            assert not any(c in plain for c in "$\\{}"), plain
            assert ("$" in md) == (plain != md), md
    by_key = {f.key: f for f in FAULTS}
    assert by_key["acc_not_rescaled"].fix_md == (r"$\mathrm{acc} \leftarrow e^{m - m'} \mathrm{acc} + "
                                                r"\sum_{\mathrm{tile}} e^{x - m'} v$")
    assert by_key["acc_not_rescaled"].fix == "acc ← e^(m − m') acc + ∑_tile e^(x − m') v"
    assert by_key["seeded_twice_empty_split"].fix == ("an empty split returns (m, ℓ, acc) = (−∞, 0, 0) (or lse = −∞); "
                                                      "only the combine adds the extra logit")
    # the gradient of the extra logit with its value: −p_* D only where v* = 0 (a sink), never for add_bias_kv
    assert by_key["extra_grad_missing"].fix.startswith("∂L/∂x* = p_*(⟨dO_i, v*⟩ − D_i) per row, with "
                                                       "p_* = e^(x* − lse_i)")
    assert by_key["kv_only_lse_backward"].does == ("recomputes p_j = e^(x_j − lse_KV) with lse_KV = log ∑_t e^x_t, "
                                                   "without the extra logit")

# ---- the numeric kernels are the definition on adversarial partitions -------------------


def _exact(x, v, extra=None, wv=None, scale=1.0):
    z = np.exp(scale * np.asarray(x))
    num, den = z @ v, z.sum()
    if extra is not None:
        num, den = num + math.exp(extra) * (0 if wv is None else np.asarray(wv)), den + math.exp(extra)
    return (num / den if den > 0 else np.zeros(v.shape[1])), (math.log(den) if den > 0 else -math.inf)


ROWS = [
    np.array([0.5, -1.0, 2.0, 30.0, -40.0, 1.0, 0.0]),
    np.array([-np.inf, -np.inf, 3.0, -np.inf, 1.0, -np.inf, -np.inf]),  # fully masked tiles
    np.array([5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0]),  # ties across tiles
    np.full(7, -np.inf),  # a fully masked row
]


@pytest.mark.parametrize("row", range(len(ROWS)))
@pytest.mark.parametrize("extra", [None, 0.0, 0.7, -30.0, 40.0])
def test_online_and_split_forms_agree_with_the_definition(row, extra):
    x, v = ROWS[row], np.random.default_rng(row).normal(size=(7, 3))
    want, want_lse = _exact(x, v, extra)
    for block in (1, 2, 3, 7, 100):
        for base2 in (True, False):
            out, lse = online(x, v, block, extra, base2=base2)
            assert np.allclose(out, want, atol=1e-12) and math.isclose(lse, want_lse, abs_tol=1e-12), (block, base2)
    for splits in (1, 2, 3, 7, 12):
        out, lse = split(x, v, splits, extra)
        assert np.allclose(out, want, atol=1e-12) and math.isclose(lse, want_lse, abs_tol=1e-12), splits


def test_a_learned_key_value_enters_once():
    x, v, wv = ROWS[0], np.random.default_rng(1).normal(size=(7, 3)), np.array([1.0, -2.0, 0.5])
    want, _ = _exact(x, v, 0.3, wv)
    assert np.allclose(online(x, v, 2, 0.3, wv)[0], want)
    assert np.allclose(split(x, v, 9, 0.3, wv)[0], want)


# ---- each faulty formula is what the faulty kernel computes -----------------------------


def _instance(x, v, scalars=None):
    nn, dd = len(x), v.shape[1]
    inst = Instance(d=dd, n=nn)
    xt = np.zeros((nn + 1, nn + 1))
    xt[1, 1:] = x
    mt = np.zeros((nn + 1, nn + 1))
    mt[1, 1:] = 1
    fam = np.zeros((nn + 1, dd))
    fam[1:] = v
    inst.tables.update(x=xt, M=mt)
    inst.families["v"] = fam
    inst.vectors[w] = np.zeros(dd)
    inst.scalars.update(scalars or {})
    return inst


def _formula(key, inst, env=None):
    f = FAULT[key]
    subs = {k: val for k, val in f.assume.items() if k not in (n, a, m, m2)}
    return np.asarray(evaluate(f.faulty().subs(subs), inst, "float", {i: 1, **(env or {})}), dtype=float)


X = np.array([0.5, -1.0, 2.0, 1.5, -0.5])
V = np.random.default_rng(3).normal(size=(5, 2))


def test_faulty_formulas_match_the_faulty_kernels():
    s = 0.7
    inst = _instance(X, V, {sigma: s})
    # three tiles of 2, 2, 1 keys, the extra logit in each: K = 3
    assert np.allclose(online(X, V, 2, s, fault="extra_per_tile")[0], _formula("extra_per_tile", inst, {K: 3}))
    # 7 splits of 5 keys: two empty splits, each seeding once more -> the extra logit 3 times
    got = split(X, V, 7, s, fault="seeded_twice_empty_split")[0]
    assert np.allclose(got, np.asarray(evaluate(FAULT["extra_per_tile"].faulty(), inst, "float", {i: 1, K: 3}),
                                       dtype=float))
    assert np.allclose(split(X, V, 6, s, fault="seeded_twice_empty_split")[0], _formula("seeded_twice_empty_split", inst))
    assert np.allclose(online(X, V, 2, s, fault="missing_log2e")[0], _formula("missing_log2e", inst))
    raw = X * 2.0  # scores X = raw/√d with d = 4
    inst4 = _instance(X, np.random.default_rng(4).normal(size=(5, 4)), {sigma: s})
    v4 = inst4.families["v"][1:]
    assert np.allclose(online(raw, v4, 2, s, scale=0.5, fault="scale_on_extra")[0],
                       _formula("scale_on_extra", inst4))
    # softmax₁ with +1 after a shift by the running max (base 2 or natural: the same shift in natural units)
    got = online(X, V, 2, 0.0, base2=False, fault="unshifted_extra")[0]
    want = evaluate(FAULT["unshifted_extra"].faulty().subs(sigma, 0), inst, "float", {i: 1, m: float(X.max())})
    assert np.allclose(got, np.asarray(want, dtype=float))
    # two tiles (keys 1..3, 4..5), the max grows in the second; the shifts are the running maxima
    y = np.array([0.5, -1.0, 1.0, 2.0, -0.5])
    env = {i: 1, a: 3, m: float(y[:3].max()), m2: float(y.max())}
    for key in ("acc_not_rescaled", "sum_not_rescaled"):
        got = online(y, V, 3, None, base2=False, fault=key)[0]
        assert np.allclose(got, np.asarray(evaluate(FAULT[key].faulty(), _instance(y, V), "float", env), dtype=float))
        assert not np.allclose(got, _exact(y, V)[0])


def test_backward_faults_match_the_formulas():
    x, v, g, s = np.array([0.3, -1.2, 2.0]), np.random.default_rng(5).normal(size=(3, 2)), np.array([1.0, -0.5]), 0.4
    dx, _, ds = backward(x, v, g, s)
    assert ds == pytest.approx(-math.exp(s - _exact(x, v, s)[1]) * float(g @ _exact(x, v, s)[0]))
    assert backward(x, v, g, s, fault="extra_grad_missing")[2] == 0.0
    assert backward(x, v, g, s, fault="extra_grad_sign")[2] == pytest.approx(-ds)
    kv = backward(x, v, g, s, fault="kv_only_lse_backward")[0]
    # the formula, key j = 1 against the rest of the row
    j = 0
    rest = [t for t in range(3) if t != j]
    inst = Instance(d=2, n=3, scalars={bw.xj: x[j], bw.R: float(np.exp(x[rest]).sum()), sigma: s},
                    vectors={bw.vj: v[j], bw.W: np.exp(x[rest]) @ v[rest], bw.g: g, w: np.zeros(2)})
    want = float(evaluate(FAULT["kv_only_lse_backward"].faulty(), inst, "float", {}))
    assert kv[j] == pytest.approx(want)
    assert dx[j] == pytest.approx(float(evaluate(bw.dx_recompute(), inst, "float", {})))


def test_the_unguarded_empty_split_is_nan_and_the_guarded_one_is_not():
    assert np.all(np.isnan(split(X, V, 7, 0.7, fault="nan_empty_split")[0]))
    assert np.allclose(split(X, V, 7, 0.7)[0], _exact(X, V, 0.7)[0])


# ---- the document API additions ----------------------------------------------------------


def test_a_refutation_of_a_true_identity_stops_the_build():
    x = sp.Symbol("x", real=True)
    doc = Document("demo", "Demo")
    with pytest.raises(StepFailed, match="no certified counterexample"):
        doc.refutation(sp.exp(x + 1), sp.E * sp.exp(x), why="", name="true")
    step = doc.refutation(sp.exp(x), 1 + x, why="", name="false")
    assert step.verdict.status == "refuted" and step.verdict.witness["enclosures"]


def test_where_restricts_the_cross_check():
    doc = Document("demo", "Demo")
    lo, hi = sp.Symbol("lo", integer=True, positive=True), sp.Symbol("hi", integer=True, positive=True)
    t = sp.Symbol("t", integer=True, positive=True)
    # Karr's convention makes this hold for all lo, hi; the evaluator's empty range only for lo <= hi + 1
    lhs = sp.Sum(t, (t, 1, lo)) + sp.Sum(t, (t, lo + 1, hi))
    step = doc.equation(lhs, sp.Sum(t, (t, 1, hi)), why="", where=sp.Le(lo, hi))
    assert step.check.passed and step.check.examples == doc.cfg.examples  # drawn again until lo <= hi
    never = doc.equation(lhs, sp.Sum(t, (t, 1, hi)), why="", where=sp.Gt(lo, n))
    assert never.check.passed and never.check.examples == 0  # indices are drawn in 1..n: nothing is counted


# ---- the backward against torch autograd ------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_recompute_backward_equals_torch_autograd(seed):
    torch = need_torch()
    rng = np.random.default_rng(seed)
    nk, dv = int(rng.integers(1, 9)), int(rng.integers(1, 5))
    x = rng.normal(size=nk) * 3
    x[rng.random(nk) < 0.3] = -np.inf  # masked keys (possibly all)
    v, g = rng.normal(size=(nk, dv)), rng.normal(size=dv)
    s = float(rng.normal() * 2)
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    vt = torch.tensor(v, dtype=torch.float64, requires_grad=True)
    st = torch.tensor([s], dtype=torch.float64, requires_grad=True)
    p = torch.softmax(torch.cat([st, xt]), dim=0)[1:]  # gpt-oss: the sink joins the softmax, its column dropped
    out = p @ vt
    (out * torch.tensor(g)).sum().backward()
    dx, dvv, ds = backward(x, v, g, s)
    allowed = np.isfinite(x)
    assert np.allclose(out.detach().numpy(), _exact(x, v, s)[0], atol=1e-12)
    assert np.allclose(dx[allowed], xt.grad.numpy()[allowed], atol=1e-12)
    assert np.allclose(np.nan_to_num(dvv), vt.grad.numpy(), atol=1e-12)
    assert ds == pytest.approx(float(st.grad[0]), abs=1e-12)


def test_split_fault_variants_count_the_extra_logit_as_real_kernels_do():
    """Fault 1 seeded in every split, an empty one too; fault 2 also for a fully masked split."""
    from derive.kernels import numeric

    one = ([0.0], [[1.0]])
    assert numeric.split(*one, 2, extra=0.0)[0][0] == pytest.approx(1 / 2)  # the definition
    assert numeric.split(*one, 2, extra=0.0, fault="extra_per_tile")[0][0] == pytest.approx(1 / 2)
    assert numeric.split(*one, 2, extra=0.0, fault="extra_per_tile", also=("empty",))[0][0] == pytest.approx(1 / 3)
    masked = ([-np.inf, 0.0], [[5.0], [1.0]])
    assert numeric.split(*masked, 2, extra=0.0, fault="seeded_twice_empty_split")[0][0] == pytest.approx(1 / 2)
    got = numeric.split(*masked, 2, extra=0.0, fault="seeded_twice_empty_split", also=("masked",))[0][0]
    assert got == pytest.approx(1 / 3)


# ---- a fault is one transformation, listed where it changes the normalizer's form ----------------

APPLIES = {  # read off each registered formula; softmax has no extra logit, softmax₁'s is 0 (no parameter)
    "softmax": {"online": ("acc_not_rescaled", "sum_not_rescaled", "guard_stored_as_max",
                           "missing_neg_inf_guard"),
                "split": ("nan_empty_split",), "backward": ()},
    "softmax1": {"online": ("extra_per_tile", "unshifted_extra", "acc_not_rescaled", "sum_not_rescaled",
                            "guard_stored_as_max", "missing_neg_inf_guard"),
                 "split": ("extra_per_tile", "seeded_twice_empty_split", "unshifted_extra", "nan_empty_split"),
                 "backward": ("kv_only_lse_backward",)},
    "sink": {"online": ("extra_per_tile", "missing_log2e", "scale_on_extra", "unshifted_extra", "acc_not_rescaled",
                        "sum_not_rescaled", "guard_stored_as_max", "missing_neg_inf_guard"),
             "split": ("extra_per_tile", "seeded_twice_empty_split", "missing_log2e", "scale_on_extra",
                       "unshifted_extra", "nan_empty_split"),
             "backward": ("kv_only_lse_backward", "extra_grad_missing", "extra_grad_sign")},
}
APPLIES["zero_token"] = APPLIES["softmax1"]
APPLIES["bias_kv"] = APPLIES["sink"]


def test_each_registered_normalizer_gets_the_faults_its_form_admits():
    from derive.kernels.faults import faults_for
    from derive.normalizers.registry import get, names

    got = {name: {form: faults_for(get(name), form) for form in ("online", "split", "backward")} for name in names()}
    none = {"online": (), "split": (), "backward": ()}
    assert got == {name: APPLIES.get(name, none) for name in names()}  # not of the family: none at all


def test_a_fault_whose_rewrite_changes_nothing_is_listed_nowhere():
    from dataclasses import replace

    from derive.kernels.faults import applies
    from derive.normalizers.registry import get, names

    same = {"logit": lambda s, m, K, c, log: s * log(sp.E), "rescale": lambda r_ell, r_acc, one: (r_ell * one, r_acc),
            "lse": lambda s, minus_inf: s + 0, "grad": lambda g, zero: g + zero}
    for f in FAULTS:
        if f.rewrite is not None:
            idle = replace(f, rewrite=same[f.part])
            assert not any(applies(idle, get(name)) for name in names()), f.key
            assert sp.simplify(idle.faulty() - idle.correct()) == 0


def _refute(f, logit):
    doc = Document("demo", "Demo")
    subs = {sigma: logit} if f.part != "logit" or sigma not in f.assume else {}
    return doc.refutation(f.faulty().subs(subs), f.correct().subs(subs), why="", name=f.key,
                          fixed=f.fixed or None, assume={k: v for k, v in f.assume.items() if k != sigma} or None,
                          **f.sizes)


def test_a_listed_fault_is_refuted_with_a_certified_counterexample_and_an_unlisted_one_cannot_be():
    """For softmax₁ (σ = 0) log₂e missing on the extra logit and the score scale on it change
    nothing: not listed, and no counterexample exists; for a sink logit s they are refuted."""
    s = sp.Symbol("s", real=True)
    for key in ("missing_log2e", "scale_on_extra"):
        step = _refute(FAULT[key], s)
        assert step.verdict.status == "refuted" and step.verdict.witness["enclosures"]["bits"] >= 64
        with pytest.raises(StepFailed, match="no certified counterexample"):
            _refute(FAULT[key], sp.S.Zero)
    assert _refute(FAULT["extra_per_tile"], sp.S.Zero).verdict.status == "refuted"  # 2 e^0 ≠ e^0


def test_the_numeric_kernels_apply_the_same_transformation():
    """The faulty numeric kernel is the correct one with the extra logit the fault's rewrite gives."""
    s = 0.7
    for key, shift, count, scale in (("missing_log2e", None, 1, 1.0), ("scale_on_extra", None, 1, 0.5),
                                     ("extra_per_tile", None, 3, 1.0)):
        used = FAULT[key].rewrite(s, shift, count, scale, math.log)
        got = online(X / scale, V, 2, s, scale=scale, fault=key)
        want = online(X, V, 2, used)
        assert np.allclose(got[0], want[0]) and math.isclose(got[1], want[1]), key
    got = backward(X, V, np.array([1.0, -0.5]), s, fault="extra_grad_sign")[2]
    assert got == pytest.approx(FAULT["extra_grad_sign"].rewrite(backward(X, V, np.array([1.0, -0.5]), s)[2], 0.0))


def test_a_spec_normalizer_of_the_family_gets_the_faults_of_its_formula():
    """A spec's own normalizer with an extra logit a (a parameter) gets a sink's kernel faults;
    with the extra term 1 + 1 (σ = log 2, no parameter) every fault of the logit but no gradient
    fault; a spec's normalizer outside the family none."""
    from derive.kernels.faults import faults_for
    from derive.normalizers.formula import compile_weight
    from derive.normalizers.registry import USER, get, user_entry

    made = [user_entry("mine", compile_weight(text, {"a": {}} if "a" in text else {})) for text in (
        "exp(x_j) / (exp(a) + sum_t(exp(x_t)))", "exp(x_j) / (1 + 1 + sum_t(exp(x_t)))",
        "exp(x_j) / (exp(a) + sum_t(exp(x_t)))**2")]
    try:
        for form in ("online", "split", "backward"):
            assert faults_for(get(made[0]), form) == faults_for(get("sink"), form)
            assert faults_for(get(made[2]), form) == ()
        two = get(made[1])
        assert faults_for(two, "online") == faults_for(get("sink"), "online")
        assert faults_for(two, "backward") == ("kv_only_lse_backward",)
    finally:
        for key in made:
            USER.pop(key, None)


@pytest.mark.parametrize("key", ["acc_not_rescaled", "sum_not_rescaled"])
def test_a_rescaling_fault_has_no_state_to_rescale_under_a_seed_of_minus_infinity(key):
    """A sink of logit −∞ seeds (m, ℓ) = (−∞, 1): the first tile's factor e^{−∞} = 0 drops the seed,
    with the fault or without it, so the faulty kernel is softmax's faulty kernel."""
    y = np.array([0.5, -1.0, 1.0, 2.0, -0.5])
    for base2 in (True, False):
        got = online(y, V, 2, -math.inf, base2=base2, fault=key)
        want = online(y, V, 2, None, base2=base2, fault=key)
        assert np.allclose(got[0], want[0]) and math.isclose(got[1], want[1])
