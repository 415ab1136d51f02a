"""Review of derive in code review: cases a team meets in its own repository (--baseline, formats)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

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
    from derive.claims.baseline import cache_key, dependencies

    (tmp_path / "helper.py").write_text("def bias(kv):\n    return 0 * kv\n", encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.inner import c\n", encoding="utf-8")
    (tmp_path / "pkg" / "inner.py").write_text("c = 0\n", encoding="utf-8")
    (tmp_path / "mods.py").write_text("from helper import bias\nimport pkg.inner\nimport os\n\n"
                                      "def score_mod(score, b, h, q_idx, kv_idx):\n"
                                      "    return score + bias(kv_idx)\n", encoding="utf-8")
    spec = tmp_path / "m.derive.toml"
    spec.write_text('name = "m"\nscore_mod = "mods.py:score_mod"\n[claims]\n', encoding="utf-8")
    assert [p.name for p in dependencies(spec)] == ["mods.py", "helper.py", "__init__.py", "inner.py"]
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
    import jsonschema

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
        jsonschema.validate(sarif, schema)
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
    import jsonschema

    from tests.test_code_review import ROOT

    spec = tmp_path / "out side" / "v.derive.toml"
    spec.parent.mkdir()
    spec.write_text(BAD, encoding="utf-8")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    assert main(["check", str(spec), "--format", "sarif"]) == 1
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, json.loads((ROOT / "tests" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")))
    (result,) = doc["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": spec.as_uri()}
    assert "%20" in spec.as_uri()
