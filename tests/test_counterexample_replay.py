"""Every printed counterexample replays as printed (issue 30, point 2).

A counterexample is read from its serialized form — the JSON report of ``derive check`` for
the project's spec suites (the atlas, tests/specs with the adversarial corpus,
tests/normalizer_specs) and docs/normalizers.json for the normalizer document's tables — and
both sides are computed again by tests/replay_oracle.py, an mpmath evaluator written apart
from derive (its own parser, the normalizers' formulas written out again, the suites' FlexAttention
modifiers by hand). Each side must lie in its printed enclosure, under the name ``compared``
gives it, and its rounded value must be the printed one.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import replay_oracle as R

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"


def _suites() -> list[Path]:
    return (sorted((ROOT / "derive" / "atlas").glob("*.derive.toml")) + sorted((ROOT / "derive" / "atlas" / "flex").glob("*.toml"))
            + sorted((ROOT / "tests" / "specs").glob("*.toml")) + sorted((ROOT / "tests" / "specs").glob("*/*.toml"))
            + sorted((ROOT / "tests" / "normalizer_specs").glob("*.toml")))


def _printed(path: Path) -> dict:
    """The JSON report of ``path``, as derive check --format json prints it."""
    from derive.claims.run import check_spec
    from derive.report.render import to_json
    from derive.spec import load_spec

    return json.loads(to_json([check_spec(load_spec(path))]))["specs"][0]


def _replay(path: Path) -> list:
    """(claim, mismatches) of every printed counterexample of ``path``."""
    out = []
    for c in _printed(path)["claims"]:
        if c["counterexample"]:
            out.append((c["name"], R.check(path, c["claim"], c["counterexample"])))
    return out


def _document_counterexamples() -> list:
    table = json.loads((DOCS / "normalizers.json").read_text())["data"]["table"]
    return [(key, v["counterexample"]) for key, v in sorted(table.items()) if "counterexample" in v]


@pytest.mark.parametrize("key,ce", _document_counterexamples(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_counterexample_of_the_normalizer_document_replays(key, ce):
    name, prop = key.split("/")
    assert R.check_property(name, prop, ce) == []


def test_the_row_shift_table_lists_the_weight_before_the_shifted_one():
    # sigmoid_logn on the row (2, 1), shift c = -1: p = σ(2 − ln 2) = 0.786986 before the shift
    ce = dict(_document_counterexamples())["sigmoid_logn/shift_invariant"]
    assert ce["compared"] == ["p_ij", "p_ij with c added to every score"]
    assert ce["lhs"] == 0.786986 and ce["enclosures"]["lhs"].startswith("0.786986")
    text = (DOCS / "normalizers.md").read_text()
    assert "| `sigmoid_logn` | — | 0.786986042162 ± 1e-12 vs 0.576116884766 ± 1e-12 |" in text
    assert "the values are $`p_{ij}`$ vs $`p_{ij}`$ with c added to every score" in text


@pytest.mark.parametrize("stem", [pytest.param("sigmoid_builtin", marks=pytest.mark.slow), "softcap_builtin",
                                  "clipped_builtin", "window4_hand", "nm1_document"])
def test_counterexamples_of_every_claim_kind_replay(stem):
    """A few specs by default: normalizer properties with a named parameter and with one whose
    name the shift's clashes with (softcap(c)), a parameter shown as ζ = 1 + ζ', a score compared
    at two distances, a document mask."""
    got = _replay(ROOT / "tests" / "specs" / "adversarial" / f"{stem}.toml")
    assert got and all(m == [] for _, m in got), got


@pytest.mark.slow
@pytest.mark.parametrize("path", _suites(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_counterexample_of_the_suites_replays(path):
    from derive.errors import InputError

    try:
        got = _replay(path)
    except InputError:
        pytest.skip("a spec the suites keep as bad input")
    assert [(name, m) for name, m in got if m] == []


# ---- the replay can fail: a counterexample printed wrong is caught ----------------------------

def _shift_witness():
    return copy.deepcopy(dict(_document_counterexamples())["sigmoid_logn/shift_invariant"])


def test_sides_printed_the_wrong_way_round_do_not_replay():
    w = _shift_witness()
    w["lhs"], w["rhs"] = w["rhs"], w["lhs"]
    w["enclosures"]["lhs"], w["enclosures"]["rhs"] = w["enclosures"]["rhs"], w["enclosures"]["lhs"]
    bad = R.check_property("sigmoid_logn", "shift_invariant", w)
    assert any("outside the printed enclosure" in b for b in bad) and any("is printed" in b for b in bad)


def test_an_input_printed_wrong_does_not_replay():
    w = _shift_witness()
    w["instance"]["c"] = 1  # the shift the values were not computed with
    assert R.check_property("sigmoid_logn", "shift_invariant", w) != []


def test_an_enclosure_that_misses_the_value_does_not_replay():
    w = _shift_witness()
    w["enclosures"]["rhs"] = "0.576116884767 ± 1e-13"  # the value is 0.5761168847658…
    assert R.check_property("sigmoid_logn", "shift_invariant", w) != []


def test_a_claim_counterexample_with_swapped_labels_does_not_replay():
    path = ROOT / "tests" / "specs" / "adversarial" / "window4_hand.toml"
    ce = {"d": 1, "n": 2, "mask": "sliding_window(4)", "indices": {"i": 1, "j_1": 1, "j_2": 2}, "values": {"s": 0},
          "original": 0.0, "changed": 0.5, "enclosures": {"lhs": "0", "rhs": "0.5", "difference": "-0.5", "bits": 64},
          "compared": ["score at the nearer key j_1", "score at the farther key j_2"]}
    assert R.check(path, "decreasing_in_distance", ce) == []
    # the enclosures as decreasing_in_distance printed them before: the violation, not the sides
    ce["enclosures"] = {"lhs": "0.5", "rhs": "0", "difference": "0.5", "bits": 64}
    assert len(R.check(path, "decreasing_in_distance", ce)) == 3


def test_the_parser_reads_the_spec_language_as_specified():
    with R.mp.workdps(30):
        ev = lambda text, **names: R.Expr({k: R.mp.mpf(v) for k, v in names.items()}).eval(R.parse(text))  # noqa: E731
        assert ev("-x**2", x=3) == -9  # ** binds tighter than unary minus
        assert ev("2**3**2") == 512  # ** is right-associative
        assert ev("1 - 2 - 3") == -4 and ev("8 / 4 / 2") == 1
        assert ev("2**-400 * 2**400") == 1
        assert abs(ev("1e-300 * 10**300") - 1) < 1e-25


# the classification witnesses of docs/qk-bias.json: each term, written by hand, at the two keys
# (or query rows) the witness names; the first value is the term at the first index
QK_TERMS = {
    r"\langle b_{Q}, k^{0}_{j} \rangle": ("dot(b_Q, k0)", "j"),
    r"\langle q^{0}_{i}, k^{0}_{j} \rangle": ("dot(q0, k0)", "j"),
    r"\frac{\langle q^{0}_{i}, b_{K} \rangle}{\sqrt{d}}": ("dot(q0, b_K) / sqrt(d)", "i"),
    r"\frac{\langle b_{Q}, k^{0}_{j} \rangle}{\sqrt{d}}": ("dot(b_Q, k0) / sqrt(d)", "j"),
    r"\frac{\langle q^{0}_{i}, \delta_{j} \rangle}{\sqrt{d}}": ("dot(q0, delta) / sqrt(d)", "j"),
}


def test_every_counterexample_of_the_qk_bias_document_replays():
    steps = [s for s in json.loads((DOCS / "qk-bias.json").read_text())["steps"] if s.get("witness")]
    assert {s["statement"] for s in steps} <= set(QK_TERMS) and len(steps) == 5
    with R.mp.workdps(40):
        for s in steps:
            w, (text, moving) = s["witness"], QK_TERMS[s["statement"]]
            inst, idx = w["instance"], w["indices"]
            names = {"d": R.mp.mpf(inst["d"])}
            sides = []
            for k in (1, 2):
                row = idx.get("i", 1) if moving == "j" else idx[f"i_{k}"]
                key = idx[f"j_{k}"] if moving == "j" else 1
                for name, v in inst.items():
                    if name in ("d", "n"):
                        continue
                    val, short = R.number(v), name.replace("^", "")
                    per_row = isinstance(v[0], list)
                    names[short] = val[(row if short.startswith("q") else key) - 1] if per_row else val
                sides.append(R.Expr(names).eval(R.parse(text)))
            assert R.compare(sides, {**w, "original": w["lhs"], "changed": w["rhs"],
                                     "compared": [f"the term at {moving}_1", f"the term at {moving}_2"]}) == [], s["name"]
