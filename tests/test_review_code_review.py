"""Review of derive in code review: cases a team meets in its own repository (--baseline, formats)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from derive.cli import main

GOOD = 'name = "good"\nscore = "dot(q, k + b)"\n[symbols]\nb = "vector"\n[claims]\nkb = "invariant(b)"\n'
BAD = 'name = "bad"\nscore = "dot(q + b, k)"\n[symbols]\nb = "vector"\n[claims]\nqb = "invariant(b)"\n'


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(repo), "PATH": "/usr/bin:/bin"})


def _repo(tmp_path, files: dict) -> None:
    tmp_path.mkdir(parents=True, exist_ok=True)
    _git(tmp_path, "init", "-q", "-b", "main")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")


def test_baseline_reads_files_that_git_archive_would_leave_out(tmp_path, capsys):
    """export-ignore (common for tests/ in .gitattributes) must not hide a spec at REF: the
    spec was there, unchanged, so nothing changed."""
    _repo(tmp_path, {".gitattributes": "/tests export-ignore\n", "tests/v.derive.toml": BAD})
    code = main(["check", "--baseline", "HEAD", str(tmp_path / "tests" / "v.derive.toml"), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert report["specs"][0]["at_ref"] == "present"
    assert report["specs"][0]["changes"] == []
    assert code == 0


def test_cache_key_follows_local_imports_of_a_modifier(tmp_path):
    """mods.py imports helper.py (the modifier's directory is on the tracer's path): a change of
    helper.py changes the verdict, so it must change the key (else REF reuses today's result)."""
    from derive.claims.baseline import cache_key
    from derive.spec.inputs import inputs

    (tmp_path / "helper.py").write_text("def bias(kv):\n    return 0 * kv\n", encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.inner import c\n", encoding="utf-8")
    (tmp_path / "pkg" / "inner.py").write_text("c = 0\n", encoding="utf-8")
    (tmp_path / "mods.py").write_text("from helper import bias\nimport pkg.inner\nimport os\n\n"
                                      "def score_mod(score, b, h, q_idx, kv_idx):\n"
                                      "    return score + bias(kv_idx)\n", encoding="utf-8")
    spec = tmp_path / "m.derive.toml"
    spec.write_text('name = "m"\nscore_mod = "mods.py:score_mod"\n[claims]\n', encoding="utf-8")
    assert [p.name for p in inputs(spec)] == ["mods.py", "helper.py", "__init__.py", "inner.py"]
    before = cache_key(spec)
    (tmp_path / "helper.py").write_text("def bias(kv):\n    return kv\n", encoding="utf-8")
    changed = cache_key(spec)
    (tmp_path / "pkg" / "inner.py").write_text("c = 1\n", encoding="utf-8")
    assert len({before, changed, cache_key(spec)}) == 3


def test_deleted_specs_are_found_in_each_repository(tmp_path, capsys):
    """Files of two repositories at once: a deleted spec (a plain .toml beside a given one) is
    reported in the repository it was deleted from, whatever the order of the given files."""
    for name in ("a", "b"):
        _repo(tmp_path / name, {f"specs{name}/keep.toml": GOOD, f"specs{name}/gone.toml": BAD})
        (tmp_path / name / f"specs{name}" / "gone.toml").unlink()
    files = [str(tmp_path / n / f"specs{n}" / "keep.toml") for n in ("a", "b")]
    for order in (files, files[::-1]):
        code = main(["check", "--baseline", "HEAD", *order, "--format", "json"])
        report = json.loads(capsys.readouterr().out)
        deleted = sorted(s["file"] for s in report["specs"] if s["at_ref"] == "deleted")
        assert deleted == ["specsa/gone.toml", "specsb/gone.toml"]
        assert code == 0


def test_action_reports_bad_inputs_in_its_formats(tmp_path):
    """A misspelled fail-on or a baseline that looks like an option: exit 2 with an annotation
    and a SARIF file (upload-sarif runs after a failed check), not argparse's usage on stderr."""
    from tests.conftest import jsonschema
    from tests.test_code_review import ROOT, _run_action_script

    schema = json.loads((ROOT / "tests" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    _repo(tmp_path / "work", {"v.derive.toml": GOOD})
    for inputs, message in (({"fail_on": "Refuted"}, "--fail-on: expected one of undecided, refuted, got 'Refuted'"),
                            ({"baseline": "-x"}, "--baseline: '-x' is not a git revision")):
        proc, summary = _run_action_script(tmp_path, "*.derive.toml", **inputs)
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == f"::error title=derive%3A bad input::{message}\n"
        assert message in summary
        sarif = json.loads(Path(proc.outputs["sarif"]).read_text(encoding="utf-8"))
        jsonschema().validate(sarif, schema)
        (note,) = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        assert note["message"]["text"] == message
        Path(proc.outputs["sarif"]).unlink()


def test_a_spec_invalid_at_ref_is_named_by_ref_not_by_a_temporary_directory(tmp_path, capsys):
    """A spec at the repository root that was not valid at REF (its other file was missing): the
    note names REF's tree, never the temporary directory REF was read into (byte-identical output)."""
    spec = 'name = "r"\nscore = "dot(q, k + b)"\n[symbols]\nb = "vector"\n[claims]\neq = \'equivalent_to("o.derive.toml")\'\n'
    _repo(tmp_path, {"r.derive.toml": spec})
    (tmp_path / "o.derive.toml").write_text(GOOD, encoding="utf-8")
    code = main(["check", "--baseline", "HEAD", str(tmp_path / "r.derive.toml"), "--format", "json"])
    (entry,) = json.loads(capsys.readouterr().out)["specs"]
    assert entry["at_ref"] == "invalid"
    assert entry["note"] == ("HEAD:r.derive.toml: key 'claims.eq': equivalent_to: no file o.derive.toml "
                             "(looked in HEAD:)")
    assert code == 0


def test_a_spec_moved_and_rewritten_is_compared_with_its_old_self(tmp_path, capsys):
    """Moved to another directory and rewritten beyond git's rename detection: still the same
    spec (same name), so its refuted claim is unchanged, not a new refutation; not reported deleted."""
    _repo(tmp_path, {"old/v.derive.toml": BAD})
    (tmp_path / "old" / "v.derive.toml").unlink()
    (tmp_path / "new").mkdir()
    rewritten = ('# The query bias matters: a statement kept on purpose.\nname = "bad"\n\nscore = "dot(q + b, k)"\n'
                 '\n[symbols]\n# a vector\nb = "vector"\n\n[claims]\n# false\nqb = "invariant(b)"\n'
                 'qb_matters = "depends(b)"\n')
    (tmp_path / "new" / "w.derive.toml").write_text(rewritten, encoding="utf-8")
    code = main(["check", "--baseline", "HEAD", str(tmp_path / "new" / "w.derive.toml"), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    (entry,) = report["specs"]
    assert (entry["at_ref"], entry["renamed_from"]) == ("present", "old/v.derive.toml")
    assert [(c["name"], c["status"]) for c in entry["changes"]] == [("qb_matters", "proved")]
    assert report["gone"] == [] and code == 0


def test_sarif_names_a_file_outside_any_repository_by_an_absolute_uri(tmp_path, monkeypatch, capsys):
    """Outside a repository and the working directory there is no %SRCROOT% to be relative to: the
    location is a file: URI without uriBaseId (an absolute path under %SRCROOT% would resolve wrong)."""
    from tests.conftest import jsonschema
    from tests.test_code_review import ROOT

    spec = tmp_path / "out side" / "v.derive.toml"
    spec.parent.mkdir()
    spec.write_text(BAD, encoding="utf-8")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    assert main(["check", str(spec), "--format", "sarif"]) == 1
    doc = json.loads(capsys.readouterr().out)
    jsonschema().validate(doc, json.loads((ROOT / "tests" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")))
    (result,) = doc["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": spec.as_uri()}
    assert "%20" in spec.as_uri()


# -- review sees every change: what a spec reads, the hook, deletions, regressions, errors once --

A_EQ = 'name = "a"\nscore = "dot(q, k) / sqrt(d)"\n[claims]\nsame = \'equivalent_to("b.derive.toml")\'\n'
B_SAME = 'name = "b"\nscore = "dot(q, k) / sqrt(d) + 7"\n'
B_OTHER = 'name = "b"\nscore = "dot(q, k)"\n'
FLEX = 'name = "f"\nscore_mod = "mods/alibi.py:score_mod"\n[claims]\neq = \'equivalent_to("b.derive.toml")\'\n'
MODS = "from helper import slope\n\ndef score_mod(score, b, h, q_idx, kv_idx):\n    return score - slope * (q_idx - kv_idx)\n"


def _tree(root: Path, files: dict) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def test_list_inputs_names_what_each_spec_reads(tmp_path):
    from tests.conftest import run_derive

    _repo(tmp_path, {"specs/a.derive.toml": A_EQ, "specs/b.derive.toml": B_SAME, "specs/f.derive.toml": FLEX,
                     "specs/mods/alibi.py": MODS, "specs/mods/helper.py": "slope = 0.5\n",
                     "specs/c.derive.toml": GOOD})
    code, out, err = run_derive("check", "--list-inputs", "specs/a.derive.toml", "specs/f.derive.toml",
                                "specs/c.derive.toml", cwd=tmp_path)
    assert (code, err) == (0, "")
    assert out == ("specs/a.derive.toml\n  specs/b.derive.toml\n"
                   "specs/f.derive.toml\n  specs/mods/alibi.py\n  specs/mods/helper.py\n  specs/b.derive.toml\n"
                   "specs/c.derive.toml\n")
    code, out, _ = run_derive("check", "--list-inputs", "--format", "json", "a.derive.toml", cwd=tmp_path / "specs")
    assert json.loads(out) == {"specs": [{"file": "specs/a.derive.toml", "inputs": ["specs/b.derive.toml"]}]}
    # which specs read a file: --changed selects them
    code, out, _ = run_derive("check", "--changed", "--list-inputs", "specs/mods/helper.py", cwd=tmp_path)
    assert out == "specs/f.derive.toml\n  specs/mods/alibi.py\n  specs/mods/helper.py\n  specs/b.derive.toml\n"
    code, out, _ = run_derive("check", "--changed", "--list-inputs", "specs/b.derive.toml", cwd=tmp_path)
    assert [line for line in out.splitlines() if not line.startswith(" ")] == \
        ["specs/a.derive.toml", "specs/b.derive.toml", "specs/f.derive.toml"]
    code, out, err = run_derive("check", "--list-inputs", "specs/nope.derive.toml", cwd=tmp_path)
    assert (code, out, err) == (2, "", "derive: error: specs/nope.derive.toml: no such file\n")


@pytest.mark.slow  # three checks, about 2 s of CPU (--list-inputs --changed covers the selection by default)
def test_changed_checks_the_specs_that_read_a_changed_file(tmp_path):
    """A commit that changes only b.derive.toml (the other side of a's equivalent_to): a is
    checked, and refuted now; c, which reads nothing changed, is not checked."""
    from tests.conftest import run_derive

    _repo(tmp_path, {"a.derive.toml": A_EQ, "b.derive.toml": B_SAME, "c.derive.toml": GOOD, "notes.toml": "x = 1\n"})
    code, out, _ = run_derive("check", "--changed", "b.derive.toml", "--format", "json", cwd=tmp_path)
    assert code == 0
    assert [s["file"] for s in json.loads(out)["specs"]] == ["a.derive.toml", "b.derive.toml"]
    (tmp_path / "b.derive.toml").write_text(B_OTHER, encoding="utf-8")
    code, out, _ = run_derive("check", "--changed", "b.derive.toml", "--format", "github", cwd=tmp_path)
    assert code == 1 and out.startswith("::error file=a.derive.toml,line=4,col=1,title=same is refuted::")
    code, out, err = run_derive("check", "--changed", "notes.toml", "README.md", cwd=tmp_path)
    assert (code, err) == (0, "") and out.startswith("0 claims: 0 proved, 0 refuted, 0 undecided\n\n<sub>")


@pytest.mark.slow  # a child process of derive (about 2 s of CPU)
def test_the_pre_commit_hook_runs_when_only_a_referenced_file_changes(tmp_path):
    """The derive-check hook's files pattern takes specs, other .toml files and Python modules, and
    its entry checks the specs that read them (run as pre-commit runs it: entry + file names)."""
    import re
    import shlex
    import sys

    import yaml

    from tests.test_code_review import ROOT, _env

    (hook,) = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
               if h["id"] == "derive-check"]
    for name in ("specs/x.derive.toml", "specs/other.toml", "specs/mods/alibi.py"):
        assert re.search(hook["files"], name), name
    assert not re.search(hook["files"], "README.md")
    _repo(tmp_path, {"a.derive.toml": A_EQ, "b.derive.toml": B_OTHER})
    argv = [sys.executable, "-m", "derive", *shlex.split(hook["entry"])[1:], "b.derive.toml"]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False,
                          env=_env(GITHUB_ACTIONS="false"))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("1 claim: 0 proved, 1 refuted, 0 undecided\n")


def test_a_pull_request_that_deletes_the_last_spec_reports_the_deletion(tmp_path, capsys):
    _repo(tmp_path, {"specs/v.derive.toml": BAD})
    _git(tmp_path, "rm", "-q", "specs/v.derive.toml")
    _git(tmp_path, "commit", "-qm", "delete")
    from tests.conftest import run_derive

    code, out, err = run_derive("check", "--baseline", "HEAD~1", "--format", "json", cwd=tmp_path)
    assert (code, err) == (0, "")
    doc = json.loads(out)
    (spec,) = doc["specs"]
    assert (spec["file"], spec["at_ref"]) == ("specs/v.derive.toml", "deleted")
    assert [(c["name"], c["status"], c["old"]) for c in spec["changes"]] == [("qb", "removed", "refuted")]
    assert doc["gone"] == [{"file": "specs/v.derive.toml", "name": "qb", "claim": "invariant(b)",
                            "why": "its spec file was deleted"}]
    code, out, _ = run_derive("check", "--baseline", "HEAD~1", cwd=tmp_path)
    assert code == 0 and "deleted since `HEAD~1`: every claim is removed." in out
    code, out, err = run_derive("check", cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == ("derive: error: derive check: no spec file given (FILE..., or --baseline REF alone for the specs "
                   "deleted since REF)\n")


@pytest.mark.slow  # a child process of derive (about 2 s of CPU)
def test_the_action_reports_a_deletion_when_no_spec_is_left(tmp_path):
    from tests.test_code_review import _run_action_script

    _repo(tmp_path / "work", {"specs/v.derive.toml": BAD})
    _git(tmp_path / "work", "rm", "-q", "specs/v.derive.toml")
    _git(tmp_path / "work", "commit", "-qm", "delete")
    proc, summary = _run_action_script(tmp_path, "**/*.derive.toml", baseline="HEAD~1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == ("0 claims: 0 proved, 0 refuted, 0 undecided; 1 changed since HEAD~1; No claim is "
                           "unchanged since HEAD~1.\n")
    assert "#### bad (`specs/v.derive.toml`)" in summary and "| `qb` | `invariant(b)` | claim removed |" in summary
    proc, _ = _run_action_script(tmp_path, "**/*.derive.toml")
    assert proc.returncode == 1 and proc.stdout == "::error title=derive::no spec file matches: **/*.derive.toml\n"


EXPECT_REFUTED = 'name = "e"\nscore = "{score}"\n[symbols]\nb = "vector"\n[claims]\nkb = {{ claim = "invariant(b)", expect = "refuted" }}\n'


def test_an_expected_refutation_that_flips_to_proved_is_a_regression(tmp_path):
    """At REF the claim is refuted, as it expects; now it is proved: a regression (exit 1), in
    every format, never "fixed"."""
    from tests.conftest import run_derive

    _repo(tmp_path, {"e.derive.toml": EXPECT_REFUTED.format(score="dot(q + b, k)")})
    (tmp_path / "e.derive.toml").write_text(EXPECT_REFUTED.format(score="dot(q, k + b)"), encoding="utf-8")
    code, out, _ = run_derive("check", "--baseline", "HEAD", "e.derive.toml", "--format", "json", cwd=tmp_path)
    assert code == 1
    (change,) = json.loads(out)["specs"][0]["changes"]
    assert (change["status"], change["old"], change["new"], change["fails"]) == ("regressed", "refuted", "proved", True)
    code, out, _ = run_derive("check", "--baseline", "HEAD", "e.derive.toml", cwd=tmp_path)
    assert code == 1 and "| `kb` | `invariant(b)` | regression: no longer as expected | ❌ refuted | ✅ proved " \
                         "(expected refuted, got proved) |" in out
    assert "fixed" not in out
    code, out, _ = run_derive("check", "--baseline", "HEAD", "e.derive.toml", "--format", "github", cwd=tmp_path)
    assert code == 1 and out.startswith("::error file=e.derive.toml,line=6,col=1,title=kb%3A expected refuted%2C got "
                                        "proved::`invariant(b)` is proved (expected refuted, got proved) (was refuted "
                                        "at HEAD): ")


def test_an_engine_error_under_a_baseline_is_listed_and_exits_3(tmp_path, monkeypatch):
    from derive.claims.provers import PROVERS
    from tests.conftest import run_derive

    _repo(tmp_path, {"v.derive.toml": BAD})

    def raising(ctx, claim):
        raise RuntimeError("injected")

    monkeypatch.setitem(PROVERS, "invariant", raising)
    code, out, _ = run_derive("check", "--baseline", "HEAD", "v.derive.toml", "--format", "json", cwd=tmp_path)
    assert code == 3
    (change,) = json.loads(out)["specs"][0]["changes"]
    assert (change["status"], change["old"], change["new"]) == ("error", "error", "error")
    assert change["error"]["type"] == "RuntimeError" and change["fails"]
    code, out, _ = run_derive("check", "--baseline", "HEAD", "v.derive.toml", "--format", "github", cwd=tmp_path)
    assert code == 3 and out.startswith("::error file=v.derive.toml,line=6,col=1,title=qb%3A internal error::")
    from tests.test_check_formats import _validate

    code, out, _ = run_derive("check", "--baseline", "HEAD", "v.derive.toml", "--format", "sarif", cwd=tmp_path)
    (inv,) = _validate(out)["runs"][0]["invocations"]
    assert code == 3 and inv["executionSuccessful"] is False and inv["exitCode"] == 3
    assert [n["exception"]["kind"] for n in inv["toolExecutionNotifications"]] == ["RuntimeError"]


BAD_INPUT = 'name = "x"\nscore = "dot(q, kk)"\n[claims]\nc = "invariant(zz)"\n'


def test_bad_input_under_format_github_is_printed_once(tmp_path):
    """The annotations go to standard output and nothing to standard error (a job's log shows both
    streams); with --output, or in another format, the plain lines go to standard error."""
    from tests.conftest import run_derive

    (tmp_path / "x.derive.toml").write_text(BAD_INPUT, encoding="utf-8")
    code, out, err = run_derive("check", "x.derive.toml", "--format", "github", cwd=tmp_path)
    assert (code, err) == (2, "")
    assert out == ("::error file=x.derive.toml,line=2,col=1,title=derive%3A bad input::x.derive.toml: key 'score', "
                   "column 8: unknown name 'kk': declare it under [symbols]; did you mean 'k'?\n"
                   "::error file=x.derive.toml,line=4,col=1,title=derive%3A bad input::x.derive.toml: key 'claims.c', "
                   "column 11: unknown name 'zz': declare it under [symbols]\n")
    code, out, err = run_derive("check", "x.derive.toml", "--format", "github", "--output", "r.txt", cwd=tmp_path)
    assert (code, out) == (2, "") and len(err.splitlines()) == 2 and err.startswith("derive: error: x.derive.toml:")
    assert (tmp_path / "r.txt").read_text(encoding="utf-8").count("::error ") == 2
    code, out, err = run_derive("check", "x.derive.toml", "--format", "md", cwd=tmp_path)
    assert (code, out) == (2, "") and len(err.splitlines()) == 2
    code, out, err = run_derive("check", "x.derive.toml", "--format", "github", "--fail-on", "nope", cwd=tmp_path)
    assert (code, err) == (2, "")
    assert out == "::error title=derive%3A bad input::--fail-on: expected one of undecided, refuted, got 'nope'\n"
    code, out, err = run_derive("check", "x.derive.toml", "--format", "github", "--time-limit", "x", cwd=tmp_path)
    assert code == 2 and out.count("::error ") == 1 and "invalid float value" in out
    assert err.startswith("usage: derive check") and "error:" not in err
