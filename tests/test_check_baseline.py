"""``derive check --baseline REF``: only what changed since REF, read with git show, each text proved once."""

from __future__ import annotations

import json
import subprocess

import pytest

import derive.claims.run as run_module
from derive.cli import main

BODY = '[symbols]\nb_q = "vector"\nb_k = "vector"\n[claims]\nflips = "invariant(b_k)"\nfixed = "depends(b_k)"\nsame = "depends(b_q)"\n'
OLD = 'name = "v"\nscore = "dot(q + b_q, k + b_k)"\n' + BODY
NEW = 'name = "v"\nscore = "dot(rope(q + b_q, i), rope(k + b_k, j))"\n' + BODY
STILL = 'name = "w"\nscore = "dot(q, k + b)"\n[symbols]\nb = "vector"\n[claims]\nc = "invariant(b)"\n'


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(repo), "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("repo")
    _git(repo, "init", "-q", "-b", "main")
    (repo / "specs").mkdir()
    (repo / "specs" / "v.derive.toml").write_text(OLD, encoding="utf-8")
    (repo / "specs" / "w.derive.toml").write_text(STILL, encoding="utf-8")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "old")
    (repo / "specs" / "v.derive.toml").write_text(NEW, encoding="utf-8")
    (repo / "specs" / "new.derive.toml").write_text(STILL.replace('"w"', '"n"'), encoding="utf-8")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "new")
    return repo


@pytest.fixture(scope="module")
def checked(repo):
    """Every format once; the number of specs proved."""
    calls = []
    real = run_module.check_spec

    def counting(spec, *a, **k):
        calls.append(spec.file)
        return real(spec, *a, **k)

    mp = pytest.MonkeyPatch()
    mp.setattr(run_module, "check_spec", counting)
    out = {}
    files = [str(repo / "specs" / f) for f in ("v.derive.toml", "w.derive.toml", "new.derive.toml")]
    try:
        for fmt in ("json", "md", "github", "sarif"):
            calls.clear()
            path = repo / f"report.{fmt}"
            code = main(["check", "--baseline", "HEAD~1", *files, "--format", fmt, "--output", str(path)])
            out[fmt] = (code, path.read_text(encoding="utf-8"))
            out["proved " + fmt] = list(calls)
    finally:
        mp.undo()
    return out


@pytest.mark.slow
def test_only_changes_are_reported(checked, repo):
    code, text = checked["json"]
    assert code == 1  # a new refutation
    doc = json.loads(text)
    assert doc["baseline"] == "HEAD~1"
    v, w, n = doc["specs"]
    assert [(c["name"], c["status"], c["old"], c["new"]) for c in v["changes"]] == [
        ("flips", "refuted", "proved", "refuted"), ("fixed", "fixed", "refuted", "proved")]
    assert v["at_ref"] == "present" and v["unchanged"] == {"claims": 1, "proved": 1, "refuted": 0, "undecided": 0, "error": 0}
    assert v["changes"][0]["counterexample"]["d"] >= 1
    assert w["changes"] == [] and w["at_ref"] == "present"
    assert n["at_ref"] == "absent" and [c["status"] for c in n["changes"]] == ["proved"]
    assert doc["unchanged"] == {"claims": 2, "proved": 2, "refuted": 0, "undecided": 0, "error": 0}
    assert doc["counts"] == {"claims": 5, "proved": 4, "refuted": 1, "undecided": 0, "error": 0, "replayed": 3}


def test_unchanged_text_is_not_proved_again(checked, repo):
    # v twice (two texts), w once (same text at HEAD~1), new once (its text equals no other)
    assert sorted(p.rsplit("/", 1)[-1] for p in checked["proved json"]) == [
        "new.derive.toml", "v.derive.toml", "v.derive.toml", "w.derive.toml"]


def test_markdown(checked, repo):
    code, text = checked["md"]
    lines = text.splitlines()
    assert code == 1
    assert lines[0] == "5 claims: 4 proved, 1 refuted, 0 undecided; 3 of 4 proofs replayed"
    assert lines[2] == "### derive check against `HEAD~1`: 3 claims changed"
    assert "| `flips` | `invariant(b_k)` | new refutation | ✅ proved | ❌ refuted |" in text
    assert "| `fixed` | `depends(b_k)` | fixed | ❌ refuted | ✅ proved |" in text
    assert "`same`" not in text and "#### w " not in text
    assert "not at `HEAD~1`: every claim is new." in text
    assert "Unchanged since `HEAD~1`: 2 claims: 2 proved, 0 refuted, 0 undecided." in text


def test_github(checked, repo):
    code, text = checked["github"]
    lines = text.splitlines()
    assert code == 1
    assert lines[0].startswith("::error file=specs/v.derive.toml,line=7,col=1,title=flips is refuted::"
                               "`invariant(b_k)` is refuted (was proved at HEAD~1): ")
    assert lines[1].startswith("::notice file=specs/v.derive.toml,line=8,col=1,title=fixed is proved (not replayed)::")
    assert lines[2] == ("5 claims: 4 proved, 1 refuted, 0 undecided; 3 of 4 proofs replayed; 3 changed since HEAD~1; "
                        "Unchanged since HEAD~1: 2 claims: 2 proved, 0 refuted, 0 undecided.")


def test_sarif(checked):
    from tests.test_check_formats import _validate

    doc = _validate(checked["sarif"][1])
    states = [(r["properties"]["claim"], r["baselineState"]) for r in doc["runs"][0]["results"]]
    assert states == [("flips", "new"), ("fixed", "absent")]


def test_no_new_refutation_exits_0(repo, capsys):
    w = str(repo / "specs" / "w.derive.toml")
    assert main(["check", "--baseline", "HEAD~1", w, "--format", "github"]) == 0
    assert capsys.readouterr().out.endswith("; 0 changed since HEAD~1; Unchanged since HEAD~1: "
                                            "1 claim: 1 proved, 0 refuted, 0 undecided.\n")


@pytest.mark.parametrize("ref, message", [
    ("nosuchref", "--baseline: unknown revision 'nosuchref' (in the repository of "),
    ("--output=x", "--baseline: '--output=x' is not a git revision"),
])
def test_bad_revision_is_input_error(repo, capsys, ref, message):
    w = str(repo / "specs" / "w.derive.toml")
    assert main(["check", f"--baseline={ref}", w]) == 2
    err = capsys.readouterr().err
    assert err.startswith("derive: error: " + message) and err.count("\n") == 1


def test_not_a_repository(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(STILL, encoding="utf-8")
    assert main(["check", "--baseline", "HEAD", str(spec)]) == 2
    assert capsys.readouterr().err == f"derive: error: --baseline: {spec} is not in a git repository\n"


def test_tex_with_baseline_is_refused(repo, capsys):
    assert main(["check", "--baseline", "HEAD", str(repo / "specs" / "w.derive.toml"), "--format", "tex"]) == 2
    assert "--baseline works with --format md, json, github or sarif" in capsys.readouterr().err
