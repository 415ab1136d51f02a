"""``derive check``, ``diff`` and ``examples`` end to end: formats, exit codes, golden files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from derive.cli import main
from tests.conftest import run_derive

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SPEC = "tests/specs/golden.toml"


def _run(*argv) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "derive", *argv], cwd=ROOT, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout


def _run_here(*argv) -> tuple[int, str]:
    """``_run`` in this process (``derive.cli.main``): no Python start, no imports again."""
    code, out, _ = run_derive(*argv, cwd=ROOT)
    return code, out


@pytest.fixture(scope="module")
def outputs():
    """The report in each format: the Markdown one from ``python -m derive`` as a process, the others
    from the same command run in this process (test_deterministic runs the JSON one again as a
    process, under another hash seed, and compares)."""
    return {"md": _run("check", SPEC, "--format", "md"),
            **{fmt: _run_here("check", SPEC, "--format", fmt) for fmt in ("json", "tex", "github", "sarif")}}


@pytest.mark.parametrize("fmt", ["md", "json", "github", "sarif"])
def test_golden(outputs, fmt):
    code, text = outputs[fmt]
    assert code == 1  # k_bias_redundant is refuted
    expected = (GOLDEN / f"check_report.{fmt}").read_text(encoding="utf-8")
    assert text == expected, "regenerate with: python tests/regen_golden.py"


def test_deterministic(outputs):
    assert _run("check", SPEC, "--format", "json") == outputs["json"]


def test_json_schema(outputs):
    doc = json.loads(outputs["json"][1])
    assert set(doc) == {"version", "schema", "counts", "not_as_expected", "specs"}
    assert doc["counts"] == {"claims": 5, "proved": 4, "refuted": 1, "undecided": 0, "error": 0}
    assert doc["not_as_expected"] == 1  # k_bias_redundant expects proved (the default) and is refuted
    (spec,) = doc["specs"]
    assert {"file", "name", "counts", "claims"} <= set(spec)
    assert spec["counts"] == doc["counts"]
    verdicts = {c["name"]: c["verdict"] for c in spec["claims"]}
    assert verdicts == {"k_bias_redundant": "refuted", "q_bias_matters": "proved", "v_bias_shifts_output": "proved",
                        "rotation_cancels": "proved", "shift_invariant": "proved"}
    for c in spec["claims"]:
        assert set(c) >= {"name", "claim", "verdict", "reason", "counterexample", "steps"}
        if c["verdict"] == "refuted" and c["claim"].startswith("invariant"):
            ce = c["counterexample"]
            assert ce["d"] <= 3 and ce["n"] <= 3 and ce["original"] != ce["changed"]
            assert len(ce["row_original"]) == ce["n"] and ce["row_original"] != ce["row_changed"]
        if c["name"] == "rotation_cancels":  # the expression at j and at j' is one expression: nothing to compare
            assert c["cross_check"] is None
            assert any("not run (both sides are one expression" in s["text"] for s in c["steps"])
        elif c["verdict"] == "proved" and c["claim"].startswith(("invariant", "output", "row_constant", "equiv")):
            assert c["cross_check"]["verdict"] == "passed" and c["steps"]


def validate_report(doc: dict) -> None:
    """``doc`` against the JSON Schema of the report (tests/check-report-schema.json, docs/spec.md)."""
    from tests.conftest import jsonschema

    schema = json.loads((ROOT / "tests" / "check-report-schema.json").read_text(encoding="utf-8"))
    cls = jsonschema().validators.validator_for(schema)
    cls.check_schema(schema)
    errors = sorted(cls(schema).iter_errors(doc), key=str)
    assert not errors, [e.message for e in errors[:5]]


def test_json_report_validates_against_its_json_schema(outputs):
    doc = json.loads(outputs["json"][1])
    validate_report(doc)
    assert doc["specs"][0]["traced"] == []  # a hand-written spec
    bad = json.loads(outputs["json"][1])
    bad["specs"][0]["traced"] = [{"key": "score_mod"}]
    with pytest.raises(AssertionError):
        validate_report(bad)


def test_md_is_a_pr_comment(outputs):
    text = outputs["md"][1]
    assert text.startswith("5 claims: 4 proved, 1 refuted, 0 undecided\n\n")
    assert "| Claim | Statement | Verdict | Reason |" in text
    assert text.count("<details>") == text.count("</details>") == 5
    assert "❌ refuted" in text and "✅ proved" in text


def test_tex_output(outputs, tmp_path):
    _, text = outputs["tex"]
    assert text.startswith("\\documentclass") and text.rstrip().endswith("\\end{document}")


def test_exit_codes_and_output_file(tmp_path):
    ok = tmp_path / "ok.toml"
    ok.write_text('name = "ok"\nscore = "dot(q, k + b)"\n[symbols]\nb = "vector"\n[claims]\nc = "invariant(b)"\n')
    out = tmp_path / "r.json"
    assert main(["check", str(ok), "--format", "json", "--output", str(out)]) == 0
    assert json.loads(out.read_text())["specs"][0]["claims"][0]["verdict"] == "proved"


def test_diff(tmp_path, capsys):
    old = tmp_path / "old.toml"
    new = tmp_path / "new.toml"
    body = '[symbols]\nb_q = "vector"\nb_k = "vector"\n[claims]\nk = "invariant(b_k)"\nq = "depends(b_q)"\n'
    old.write_text('name = "v1"\nscore = "dot(q + b_q, k + b_k)"\n' + body)
    new.write_text('name = "v2"\nscore = "dot(rope(q + b_q, i), rope(k + b_k, j))"\n' + body)
    assert main(["diff", str(old), str(new), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["counts"]["new"] == {"claims": 2, "proved": 1, "refuted": 1, "undecided": 0, "error": 0}
    assert doc["counts"]["old"]["refuted"] == 0
    rows = {r["name"]: r for r in doc["claims"]}
    assert rows["k"]["old"] == "proved" and rows["k"]["new"] == "refuted" and rows["k"]["changed"]
    assert not rows["q"]["changed"]
    assert main(["diff", str(old), str(old)]) == 0
    capsys.readouterr()
    assert main(["diff", str(old), str(new)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "2 claims: 1 proved, 1 refuted, 0 undecided (before: 2 claims: 2 proved, 0 refuted, 0 undecided)"
    assert lines[2] == f"### derive diff: v1 (`{old}`) → v2 (`{new}`)"


def test_examples_lists_the_atlas(capsys):
    assert main(["examples", "--paths"]) == 0
    paths = capsys.readouterr().out.split()
    assert len(paths) >= 12 and all(Path(p).exists() for p in paths)


@pytest.mark.slow
def test_time_limit_gives_undecided_not_a_hang(tmp_path):
    spec = tmp_path / "slow.toml"
    spec.write_text('name = "s"\nscore = "(dot(q + a + b + c, k + a + b + c) + dot(q, a) + dot(k, b)) ** 8"\n'
                    '[symbols]\na = "vector"\nb = "vector"\nc = "vector"\n[claims]\nx = "invariant(a)"\n')
    import time

    t0 = time.time()
    code, out = _run("check", str(spec), "--format", "json", "--time-limit", "0.5")
    assert time.time() - t0 < 30
    assert code == 1
    assert json.loads(out)["specs"][0]["claims"][0]["verdict"] in ("undecided", "refuted")


@pytest.mark.latex
def test_tex_compiles(outputs, tmp_path):
    import shutil

    if not shutil.which("pdflatex"):
        if os.environ.get("CI") == "true":
            pytest.fail("pdflatex is required in CI")
        pytest.skip("pdflatex not installed")
    (tmp_path / "r.tex").write_text(outputs["tex"][1], encoding="utf-8")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "r.tex"], cwd=tmp_path,
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]
