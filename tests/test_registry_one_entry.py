"""A normalizer is ONE registry entry: added to a temporary registry (and removed after the test),
it gets ``derive check``, the row form of ``derive impl``, the kernel forms when its formula is of
the softmax family (and the reason why not otherwise), fault diagnosis, and its property table
(``derive normalizer``), through the command line, with no other edit anywhere.

Two entries: ``halfsink``, softmax with the extra logit s/2 (a scaled sink: the logit is an
expression in the parameter, not the parameter), and ``floor``, softmax less a threshold τ,
clipped at 0 (not of the softmax family; its last step cancels and it has a kink, which the
exact comparison reads off the formula)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sympy as sp

from derive.cli import main
from derive.normalizers.registry import REGISTRY, from_formula

ZOO = str(Path("tests/zoo").resolve())
HALF, FLOOR = "halfsink", "floor"


@pytest.fixture
def entries(monkeypatch):
    """The two entries, each written once, in the registry for this test only."""
    half = from_formula(HALF, "softmax with half a sink logit", "exp(x_j) / (exp(s / 2) + sum_t(exp(x_t)))",
                        ref_defaults={"s": 0.0})
    floor = from_formula(FLOOR, "softmax less a threshold", "max(0, exp(x_j) / sum_t(exp(x_t)) - tau)",
                         ref_defaults={"tau": 0.0})
    for e in (half, floor):
        monkeypatch.setitem(REGISTRY, e.name, e)
    return half, floor


def _code(tmp_path) -> str:
    f = tmp_path / "impls.py"
    f.write_text(
        "import sys\n"
        f"sys.path.insert(0, {ZOO!r})\n"
        "import numpy as np\n"
        "import kernels_numpy as K, sink_numpy as S\n"
        "def half(x, *, s):\n    return S.sink(x, s / 2)\n"
        "def half_forgets_the_half(x, *, s):\n    return S.sink(x, s)\n"
        "def half_unshifted(x, *, s):\n"
        "    m = np.max(x, axis=-1, keepdims=True)\n"
        "    e = np.exp(x - m)\n"
        "    return e / (np.exp(s / 2) + e.sum(axis=-1, keepdims=True))\n"
        "def half_online(x, v, block, *, s):\n    return K.sink_online(x, v, block, s=s / 2)\n"
        "def half_online_extra_per_tile(x, v, block, *, s):\n"
        "    return K.sink_online_extra_per_tile(x, v, block, s=s / 2)\n"
        "def half_split(x, v, splits, *, s):\n    return K.sink_split(x, v, splits, s=s / 2)\n"
        "def half_split_extra_per_split(x, v, splits, *, s):\n"
        "    return K.sink_split_extra_per_split(x, v, splits, s=s / 2)\n"
        "def half_backward(x, v, dout, *, s):\n"
        "    dx, dv, d = K.sink_backward(x, v, dout, s=s / 2)\n"
        "    return dx, dv, {'s': d['s'] / 2}\n"
        "def half_backward_no_chain_rule(x, v, dout, *, s):\n"
        "    return K.sink_backward(x, v, dout, s=s / 2)\n"
        "def half_backward_grad_sign(x, v, dout, *, s):\n"
        "    dx, dv, d = K.sink_backward(x, v, dout, s=s / 2)\n"
        "    return dx, dv, {'s': -d['s'] / 2}\n"
        "def _softmax(x):\n"
        "    m = np.max(x, axis=-1, keepdims=True)\n"
        "    e = np.exp(x - m)\n"
        "    return e / e.sum(axis=-1, keepdims=True)\n"
        "def floor(x, *, tau):\n    return np.where(x == -np.inf, 0.0, np.maximum(0.0, _softmax(x) - tau))\n"
        "def floor_masked_keys_weigh(x, *, tau):\n    return np.maximum(0.0, _softmax(x) - tau)\n"
        "def floor_unclipped(x, *, tau):\n    return _softmax(x) - tau\n"
        "def floor_no_bound(x, *, tau):\n    return np.where(x == -np.inf, 0.0, _softmax(x) - tau)\n"
        "def floor_online(x, v, block, *, tau):\n    return K.softmax_online(x, v, block)\n")
    return str(f)


def _run(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _impl(capsys, target: str, name: str, *more) -> tuple[int, dict, str]:
    code, out, err = _run(capsys, "impl", target, "--as", name, "--dtype", "float64", "--examples", "12",
                          "--format", "json", *more)
    return code, (json.loads(out) if out.strip() else {}), err


# ---- derive check --------------------------------------------------------------------------


def test_derive_check_gives_verdicts_for_both_entries(entries, tmp_path, capsys):
    # floor: shift invariance is proved; whether it sums to 1 depends on τ (true at τ = 0 only)
    # and whether it can abstain on τ too: those two may stay undecided, never proved
    for name, arg, truth in ((HALF, "s0", {"shift": {"refuted"}, "abst": {"proved"}, "sum1": {"refuted"}}),
                             (FLOOR, "t0", {"shift": {"proved"}, "abst": {"refuted", "undecided"},
                                            "sum1": {"refuted", "undecided"}})):
        spec = tmp_path / f"{name}.toml"
        spec.write_text(f'name = "{name}"\nscore = "dot(q, k) / sqrt(d)"\nnormalizer = "{name}({arg})"\n'
                        f'[symbols]\n{arg} = "scalar"\n[claims]\nshift = "shift_invariant"\n'
                        'abst = "can_abstain"\nsum1 = "weights_sum_to_one"\n')
        code, out, err = _run(capsys, "check", str(spec), "--format", "json")
        assert code in (0, 1), err
        got = {c["name"]: c["verdict"] for f in json.loads(out)["specs"] for c in f["claims"]}
        assert set(got) == set(truth) and all(got[k] in truth[k] for k in got), (name, got)


def test_a_spec_names_the_parameter_as_the_entry_says(entries, tmp_path, capsys):
    """The spec's argument rule comes from the entry too: a missing or extra argument is exit 2."""
    spec = tmp_path / "bad.toml"
    spec.write_text(f'name = "x"\nscore = "dot(q, k)"\nnormalizer = "{HALF}(a, b)"\n[symbols]\na = "scalar"\n'
                    'b = "scalar"\n')
    code, out, err = _run(capsys, "check", str(spec))
    assert code == 2 and out == ""
    assert f"key 'normalizer': {HALF} needs the parameter s (a declared scalar): {HALF} or {HALF}(NAME)" in err


# ---- derive impl: the row form and fault diagnosis ----------------------------------------


@pytest.mark.slow  # heavy (8–15 s); CI runs it
def test_row_form_accepts_the_right_code_and_refutes_the_wrong(entries, tmp_path, capsys):
    code_py = _code(tmp_path)
    for fn, name in (("half", HALF), ("floor", FLOOR)):
        code, report, err = _impl(capsys, f"{code_py}:{fn}", name)
        assert code == 0, (fn, err, report)
    # floor_masked_keys_weigh: a masked key gets max(0, −τ) > 0 for τ < 0, not 0
    for fn, name in (("half_forgets_the_half", HALF), ("floor_unclipped", FLOOR), ("floor_masked_keys_weigh", FLOOR)):
        code, report, err = _impl(capsys, f"{code_py}:{fn}", name)
        assert code == 1, (fn, err)
        assert report["verdict"] == "disagrees" and report["counterexample"]["row"], (fn, report)
    # the general rewrite of a bound, max(0, ·) dropped from the entry's own formula (masked keys still 0)
    code, report, err = _impl(capsys, f"{code_py}:floor_no_bound", FLOOR)
    assert code == 1 and [m["name"] for m in report["diagnosis"]["matched"]] == ["bound-dropped"], (err, report)


def test_floor_tolerance_and_kinks_come_from_its_formula(entries):
    """floor's last step is p − τ (cancels near τ) under a max (a kink at p = τ): the exact
    comparison's scale is p + |τ|, the kink distance is read off the row, and the edge rows put
    the first weight exactly on the kink."""
    from derive.impl.cases.rows import special_rows
    from derive.impl.exact.reference import exact_row, kink_distance

    _, floor = entries
    ex = exact_row(floor, [0.0, 0.0], {"tau": 0.25}, 40)
    assert ex.values[0] == pytest.approx(0.25) and ex.scales == pytest.approx([0.75, 0.75])
    assert kink_distance(floor, [0.0, 0.0], {"tau": 0.5}, 40) == 0.0
    assert kink_distance(floor, [0.0, 0.0], {"tau": 0.25}, 40) == pytest.approx(0.25 / 0.75)
    rows = special_rows(floor, {"tau": 0.25})
    assert len(rows) == 12  # lengths 2, 3, 8, 64, each on the kink and ± 1e-7
    on = exact_row(floor, list(rows[0]), {"tau": 0.25}, 40)
    assert abs(float(on.values[0])) < 1e-15
    assert special_rows(floor, {"tau": 2.0}) == []  # p never reaches 2: no kink to sit on


def test_fault_diagnosis_of_the_scaled_sink(entries, tmp_path, capsys):
    code, report, err = _impl(capsys, f"{_code(tmp_path)}:half_unshifted", HALF)
    assert code == 1, err
    assert "unshifted-extra-term" in [m["name"] for m in report["diagnosis"]["matched"]]


# ---- derive impl: the kernel forms ---------------------------------------------------------


@pytest.mark.slow  # heavy (8–15 s); CI runs it
def test_kernel_forms_of_the_softmax_family_entry(entries, tmp_path, capsys):
    code_py = _code(tmp_path)
    for fn, form, want in (("half_online", "online", 0), ("half_online_extra_per_tile", "online", 1),
                           ("half_split", "split", 0), ("half_split_extra_per_split", "split", 1)):
        code, report, err = _impl(capsys, f"{code_py}:{fn}", HALF, "--form", form, "--examples", "5")
        assert code == want, (fn, err, report)
        if want:  # the kernel fault of its form, applied to the entry's extra logit s/2
            assert [m["name"] for m in report["diagnosis"]["matched"]] == ["extra_per_tile"], report


def test_the_backward_of_a_scaled_extra_logit_takes_the_chain_rule(entries, tmp_path, capsys):
    """σ = s/2: the gradient of s is ∂L/∂σ / 2. The kernel that returns ∂L/∂σ as the gradient of s
    is wrong; the one with the factor 1/2 agrees; a sign error in it is the known fault."""
    code_py = _code(tmp_path)
    for fn, want, named in (("half_backward", 0, None), ("half_backward_no_chain_rule", 1, []),
                            ("half_backward_grad_sign", 1, ["extra_grad_sign"])):
        code, report, err = _impl(capsys, f"{code_py}:{fn}", HALF, "--form", "backward", "--examples", "3")
        assert code == want, (fn, err, report)
        if want:
            assert report["results"][0]["failure"]["what"] == "ds", report
            assert [m["name"] for m in report["diagnosis"]["matched"]] == named, report


def test_the_kernel_faults_that_apply_come_from_the_formula(entries, monkeypatch):
    """The scaled sink gets every kernel fault a sink gets (its extra logit s/2 has a parameter, and
    no rewrite leaves it unchanged); a fixed extra logit log 2 gets those of the logit but no
    gradient fault (there is no parameter to differentiate); the entry outside the family none."""
    from derive.kernels.faults import faults_for
    from derive.normalizers.registry import get

    half, floor = entries
    two = from_formula("twosink", "softmax with a 2 in the denominator", "exp(x_j) / (2 + sum_t(exp(x_t)))")
    monkeypatch.setitem(REGISTRY, two.name, two)
    for form in ("online", "split", "backward"):
        assert faults_for(half, form) == faults_for(get("sink"), form)
        assert faults_for(floor, form) == ()
    assert faults_for(two, "online") == faults_for(get("sink"), "online")
    assert faults_for(two, "split") == faults_for(get("sink"), "split")
    assert faults_for(two, "backward") == ("kv_only_lse_backward",)


def test_no_online_form_for_the_other_entry_and_why(entries, tmp_path, capsys):
    code, out, err = _run(capsys, "impl", f"{_code(tmp_path)}:floor_online", "--as", FLOOR, "--form", "online",
                          "--dtype", "float64", "--examples", "5")
    assert code == 2 and out == ""
    assert f"{FLOOR} has no kernel form checked here: its weight is not of the form e^x_j/(E + ∑_t e^x_t)" in err, err


# ---- derive normalizer: the property table ------------------------------------------------


def test_property_tables(entries, capsys):
    code, out, err = _run(capsys, "normalizer", HALF, "--format", "json", "--time-limit", "20")
    assert code == 0, err
    t = json.loads(out)
    verdicts = {r["property"]: r["verdict"] for r in t["properties"]}
    assert verdicts["shift_invariant"] == "refuted" and verdicts["can_abstain"] == "proved"
    assert t["softmax_family"]["member"] and t["softmax_family"]["kernel_forms"] == ["online", "split", "backward"]
    assert t["softmax_family"]["extra_logit"] == "s/2"
    assert t["fully_masked_row"]["defined"]

    code, out, err = _run(capsys, "normalizer", FLOOR, "--format", "json", "--time-limit", "20")
    assert code == 0, err
    t = json.loads(out)
    verdicts = {r["property"]: r["verdict"] for r in t["properties"]}
    # true at τ = 0 only: refuted, or undecided within the time limit, never proved
    assert verdicts["shift_invariant"] == "proved" and verdicts["weights_sum_to_one"] in ("refuted", "undecided")
    assert not t["softmax_family"]["member"] and t["softmax_family"]["kernel_forms"] == []
    assert "not of the form" in t["softmax_family"]["why_not"]
    assert not t["fully_masked_row"]["defined"]


# ---- a mask form ---------------------------------------------------------------------------


def test_a_mask_form_is_one_entry(monkeypatch, tmp_path, capsys):
    """``chunked(C)`` (a row sees the keys of its own chunk of C positions) added as one entry of
    :data:`derive.model.masks.FORMS`: specs take it, ``derive check`` decides claims under it, an
    unknown mask's message and did-you-mean hint list it, and the table of docs/spec.md has its row."""
    from derive.model import masks
    from derive.model.attention import i, j

    chunked = masks.MaskForm("chunked", "C", "⌊(i − 1)/C⌋ = ⌊(j − 1)/C⌋: the keys of the row's own chunk",
                             lambda c: sp.Eq(sp.floor((i - 1) / c), sp.floor((j - 1) / c)))
    monkeypatch.setattr(masks, "FORMS", (*masks.FORMS, chunked))
    spec = tmp_path / "chunked.derive.toml"
    spec.write_text('name = "chunked"\nscore = "dot(q, k + b) / sqrt(d)"\nnormalizer = "softmax"\n'
                    'mask = "chunked(4)"\n[symbols]\nb = "vector"\n[claims]\n'
                    'sums = "weights_sum_to_one"\nkb = "invariant(b)"\nkb_matters = { claim = "depends(b)", expect = "refuted" }\n',
                    encoding="utf-8")
    code, out, err = _run(capsys, "check", str(spec), "--format", "json")
    assert code == 0, err
    verdicts = {c["name"]: c["verdict"] for c in json.loads(out)["specs"][0]["claims"]}
    assert verdicts == {"sums": "proved", "kb": "proved", "kb_matters": "refuted"}
    spec.write_text(spec.read_text(encoding="utf-8").replace("chunked(4)", "chunkd"), encoding="utf-8")
    code, _, err = _run(capsys, "check", str(spec))
    assert code == 2 and "unknown mask 'chunkd'; did you mean 'chunked'?" in err, err
    assert "prefix_lm(P), document(IDS) or chunked(C))" in err
    assert "| `chunked(C)` | ⌊(i − 1)/C⌋ = ⌊(j − 1)/C⌋: the keys of the row's own chunk |" in masks.table_markdown()


def test_the_entries_are_gone_after_the_test():
    assert HALF not in REGISTRY and FLOOR not in REGISTRY


def test_a_parameters_sign_is_stated_once():
    """softmax with a temperature τ > 0: the sign is stated once (``scalars``); the entry's symbol,
    its sample and the domain text follow from it, and the symbolic weight knows τ > 0."""
    tau = from_formula("temperature", "softmax with a temperature", "exp(x_j / tau) / sum_t(exp(x_t / tau))",
                       scalars={"tau": {"positive": True}})
    assert tau.symbols()["tau"].is_positive and tau.sample == {"tau": 1} and tau.domain_text == "$tau$ positive"
    signed = from_formula("signed", "sigmoid less a bias", "sigmoid(x_j - b)", scalars={"b": {"negative": True}})
    assert signed.sample == {"b": -1} and signed.domain_text == "$b$ negative"
