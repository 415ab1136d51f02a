"""Review of derive in code review: cases a team meets in its own repository (--baseline, formats)."""

from __future__ import annotations

import json
import subprocess

from derive.cli import main

GOOD = 'name = "good"\nscore = "dot(q, k + b)"\n[symbols]\nb = "vector"\n[claims]\nkb = "invariant(b)"\n'
BAD = 'name = "bad"\nscore = "dot(q + b, k)"\n[symbols]\nb = "vector"\n[claims]\nqb = "invariant(b)"\n'


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(repo), "PATH": "/usr/bin:/bin"})


def _repo(tmp_path, files: dict) -> None:
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
