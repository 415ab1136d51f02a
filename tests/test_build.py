"""The build: staleness check, failing steps, command line, and the qk-bias document."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from derive.build import build
from derive.cli import main

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"


def test_impl_check_page_shows_a_caught_fault():
    page = (ROOT / "docs" / "impl-check.md").read_text(encoding="utf-8")
    assert "**Verdict: DISAGREES.**" in page
    assert "unshifted +1" in page


@pytest.mark.slow
def test_two_builds_are_byte_identical(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        build([str(ROOT / "proofs" / "qk_bias.py")], docs=out / "docs", out=out / "build", pdf=False,
              log=lambda m: None)
    files = sorted(p.name for p in (a / "docs").iterdir())
    assert files == ["qk-bias-weights.svg", "qk-bias.json", "qk-bias.md"]
    for name in files:
        assert (a / "docs" / name).read_bytes() == (b / "docs" / name).read_bytes(), name
    assert (a / "build" / "qk-bias.tex").read_bytes() == (b / "build" / "qk-bias.tex").read_bytes()


def test_false_step_fails_the_build_with_step_and_witness(tmp_path, capsys):
    code = main(["build", str(DATA / "bad_step.py"), "--docs", str(tmp_path), "--out", str(tmp_path), "--no-pdf"])
    err = capsys.readouterr().err
    assert code == 1
    assert "bad-step: step 'missing cross term' is refuted" in err
    assert "witness" in err and "'d': 1" in err
    assert not list(tmp_path.iterdir()), "nothing may be rendered from a failed derivation"


def test_missing_module_is_a_clean_input_error(capsys):
    code = main(["build", "no/such/module.py"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "derive: error: no/such/module.py: not a Python file; expected a derivation module like proofs/qk_bias.py")


@pytest.mark.slow
def test_check_names_the_stale_file(tmp_path, capsys):
    build([str(ROOT / "proofs" / "qk_bias.py")], docs=tmp_path, out=tmp_path / "b", pdf=False, log=lambda m: None)
    (tmp_path / "qk-bias.md").write_text("edited by hand\n")
    code = main(["build", str(ROOT / "proofs" / "qk_bias.py"), "--check", "--docs", str(tmp_path)])
    assert code == 1
    assert f"stale: {tmp_path / 'qk-bias.md'} differs" in capsys.readouterr().err


def test_python_dash_m_and_version():
    out = subprocess.run([sys.executable, "-m", "derive", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.startswith("derive ")


# ---- the qk-bias document -------------------------------------------------------------

SEED = {
    "no bias": ((0.707107, 0.0, -0.707107), (0.575975, 0.283995, 0.140029)),
    "Q bias": ((0.707107, 0.707107, -0.707107), (0.445808, 0.445808, 0.108383)),
    "K bias": ((2.828427, 2.121320, 1.414214), (0.575975, 0.283995, 0.140029)),
    "both": ((1.414214, 1.414214, 0.0), (0.445808, 0.445808, 0.108383)),
}


@pytest.fixture(scope="module")
def qk_json():
    return json.loads((ROOT / "docs" / "qk-bias.json").read_text())


@pytest.mark.parametrize("condition", list(SEED))
def test_seed_table_values(qk_json, condition):
    got = qk_json["data"]["conditions"][condition]
    scores, weights = SEED[condition]
    assert [round(x, 6) for x in got["scores"]] == [round(x, 6) for x in scores]
    assert [round(x, 6) for x in got["weights"]] == [round(x, 6) for x in weights]


def test_exact_values_are_shown(qk_json):
    assert qk_json["data"]["conditions"]["no bias"]["scores_exact"] == ["sqrt(2)/2", "0", "-sqrt(2)/2"]
    assert qk_json["data"]["conditions"]["K bias"]["scores_exact"] == ["2*sqrt(2)", "3*sqrt(2)/2", "sqrt(2)"]


def test_the_eight_seed_checks_pass(qk_json):
    names = {c["name"]: c for c in qk_json["checks"]}
    for name in ["base scores", "common K shift of scores", "softmax weights preserved", "Q-bias relative change",
                 "both biases", "another query row", "Q-bias no-effect exception", "per-token K shift control"]:
        assert names[name]["verdict"] == "passed", name


def test_every_step_is_proved_and_cross_checked(qk_json):
    steps = qk_json["steps"]
    assert len(steps) >= 15
    for s in steps:
        if s["kind"] == "classification":
            assert s["verdict"] in ("proved", "refuted")
            assert (s["verdict"] == "refuted") == (s["witness"] is not None)
        else:
            assert s["verdict"] == "proved"
    props = [c for c in qk_json["checks"] if c["kind"] == "property"]
    assert props and all(c["examples"] >= 50 and c["verdict"] == "passed" for c in props)
    assert all(c["tolerance"] == {"rel": 1e-12, "abs": 1e-12} for c in props)


def test_classification_of_the_four_terms(qk_json):
    got = {s["name"].split(": ", 1)[1]: s["classification"] for s in qk_json["steps"]
           if s["name"].startswith("row-constant terms")}
    dot = lambda a, b: rf"$\langle {a}, {b} \rangle$"  # the term's label: its pairing, as math
    assert got[dot("q^{0}", "k^{0}")] == "key-dependent" and got[dot("b_Q", "k^{0}")] == "key-dependent"
    assert got[dot("q^{0}", "b_K")] == "row-constant" and got[dot("b_Q", "b_K")] == "row-constant"


def test_prose_contradicting_its_verdict_fails_the_build(tmp_path, capsys):
    code = main(["build", str(DATA / "bad_prose.py"), "--docs", str(tmp_path), "--out", str(tmp_path), "--no-pdf"])
    err = capsys.readouterr().err
    assert code == 1
    assert "bad-prose: the sentence “A common shift survives" in err
    assert "states verdict 'refuted' for 'shift cancels', but its checked verdict is 'proved'" in err
    assert not list(tmp_path.iterdir()), "nothing may be rendered from a document whose prose is false"


def test_prose_references_resolve_or_name_the_sentence():
    import pytest

    from derive import Document
    from derive.errors import InputError, StepFailed

    doc = Document("refs", "References")
    doc.fact("mass range", "proved", value="(0, 1)")
    doc.prose("The mass lies in {value:mass range=(0, 1)}, {verdict:mass range}.")
    assert doc.blocks[-1].text == "The mass lies in (0, 1), proved."
    doc.table(["claim", "verdict"], [["range", "{verdict:mass range=proved}"]], caption="{value:mass range}")
    assert doc.blocks[-1].rows == [["range", "proved"]] and doc.blocks[-1].caption == "(0, 1)"
    assert doc.claim_sentence("mass range", "It is bounded.", "It is not.") == "It is bounded."
    with pytest.raises(StepFailed, match=r"refs: the sentence “The mass lies in .*” states value '\[0, 1\]'"):
        doc.prose("The mass lies in {value:mass range=[0, 1]}.")
    with pytest.raises(InputError, match="refs: the sentence “It is .*” refers to 'no such'"):
        doc.prose("It is {verdict:no such=proved}.")
    doc.fact("open", "undecided")
    with pytest.raises(StepFailed, match="needs 'open' proved or refuted"):
        doc.claim_sentence("open", "Yes.", "No.")
