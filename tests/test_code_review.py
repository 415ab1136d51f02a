"""derive in code review: the GitHub Action (actionlint, its script), the pre-commit hooks (try-repo)."""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import require_tool

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))

GOOD = 'name = "good"\nscore = "dot(q, k + b)"\n[symbols]\nb = "vector"\n[claims]\nkey_bias_redundant = "invariant(b)"\n'
BAD = ('name = "bad"\nscore = "dot(q + b_q, k + b_k)"\n[symbols]\nb_q = "vector"\nb_k = "vector"\n'
       '[claims]\n# a claim that is false\nq_bias_redundant = "invariant(b_q)"\n')
PINNED = f"uses: OWNER/derive@v{__import__('derive').__version__}"  # the README's example pins a release
BAD_ANNOTATION = "::error file=bad.derive.toml,line=8,col=1,title=q_bias_redundant is refuted::`invariant(b_q)` is refuted: "


def _env(**extra) -> dict:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(ROOT)}
    for key in [k for k in env if k.startswith("GIT_")]:
        del env[key]
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    env.update(extra)
    return env


def _tool(name: str) -> str:
    local = BIN / name
    return str(local) if local.exists() else require_tool(name)


def _readme_block(marker: str) -> str:
    blocks = re.findall(r"```yaml\n(.*?)```", README, re.DOTALL)
    (block,) = [b for b in blocks if b.startswith(marker)]
    return block


# -- the Action ----------------------------------------------------------------------------


def _action_as_workflow() -> dict:
    """The composite action's steps as a reusable workflow, so that actionlint checks their
    expressions and (with shellcheck) their scripts."""
    inputs = {name: {"type": "string", "required": False, "default": spec["default"]}
              for name, spec in ACTION["inputs"].items()}
    return {"name": "action steps", "on": {"workflow_call": {"inputs": inputs}},
            "jobs": {"steps": {"runs-on": "ubuntu-latest", "steps": copy.deepcopy(ACTION["runs"]["steps"])}}}


def _actionlint(tmp_path, workflows: dict[str, str]) -> subprocess.CompletedProcess:
    actionlint = _tool("actionlint")
    _tool("shellcheck")  # actionlint checks `run:` scripts only when shellcheck is on PATH
    repo = tmp_path / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    shutil.copy(ROOT / "action.yml", repo / "action.yml")
    for name, text in workflows.items():
        (repo / ".github" / "workflows" / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=_env())
    return subprocess.run([actionlint, "-no-color"], cwd=repo, capture_output=True, text=True, check=False,
                          env=_env())


def test_action_metadata():
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {"files", "baseline", "fail-on"}
    # one default for fail-on: the action passes none unless asked, so derive check's own applies
    assert ACTION["inputs"]["fail-on"]["default"] == ""
    assert 'if [ -n "$DERIVE_FAIL_ON" ]' in ACTION["runs"]["steps"][-1]["run"]
    assert ACTION["outputs"]["sarif"]["value"] == "${{ steps.check.outputs.sarif }}"
    script = ACTION["runs"]["steps"][-1]["run"]
    assert "--format github" in script and '--summary "$GITHUB_STEP_SUMMARY"' in script
    (cache,) = [s for s in ACTION["runs"]["steps"] if s.get("uses", "").startswith("actions/cache@")]
    assert "steps.version.outputs.version" in cache["with"]["key"]
    (install,) = [s for s in ACTION["runs"]["steps"] if s.get("name") == "Install derive"]
    assert install["env"]["PIP_CACHE_DIR"] == cache["with"]["path"]


def test_readme_pins_a_release():
    from derive import __version__

    assert "OWNER/derive@main" not in README and "rev: main" not in README
    assert f"uses: OWNER/derive@v{__version__}" in README and f"rev: v{__version__}" in README


def test_action_version_step_reads_derive_version(tmp_path):
    from derive import __version__

    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == "version"]
    out = tmp_path / "output"
    subprocess.run(["bash", "-c", step["run"]], check=True, env=_env(GITHUB_ACTION_PATH=str(ROOT),
                                                                       GITHUB_OUTPUT=str(out)))
    assert out.read_text(encoding="utf-8") == f"version={__version__}\n"


def test_actionlint_clean(tmp_path):
    """The README's workflow (using this action from the repository root, so actionlint checks
    its inputs against action.yml) and the action's own steps pass actionlint and shellcheck."""
    readme = _readme_block("# .github/workflows/derive.yml").replace(PINNED, "uses: ./")
    assert "uses: ./" in readme
    steps = yaml.safe_dump(_action_as_workflow(), sort_keys=False)
    proc = _actionlint(tmp_path, {"derive.yml": readme, "action-steps.yml": steps})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_would_catch_a_mistake(tmp_path):
    """The check above is real: a misspelled input and a script error are reported."""
    readme = _readme_block("# .github/workflows/derive.yml").replace(PINNED, "uses: ./")
    wf = _action_as_workflow()
    wf["jobs"]["steps"]["steps"][-1]["run"] += 'echo $undefined_var"\n'
    proc = _actionlint(tmp_path, {"derive.yml": readme.replace("fail-on:", "fail_on:"),
                                  "action-steps.yml": yaml.safe_dump(wf, sort_keys=False)})
    assert proc.returncode == 1
    assert 'input "fail_on" is not defined in action' in proc.stdout
    assert "shellcheck reported issue" in proc.stdout


def _run_action_script(tmp_path, files: str, baseline: str = "", fail_on: str = ""):
    """The action's check step under bash, with a stand-in runner: derive from this checkout."""
    runner = tmp_path / "runner"
    (runner / "derive-venv" / "bin").mkdir(parents=True, exist_ok=True)
    shim = runner / "derive-venv" / "bin" / "derive"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m derive "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    for f in (summary, output):
        f.unlink(missing_ok=True)
    script = ACTION["runs"]["steps"][-1]["run"]
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path / "work", capture_output=True, text=True,
                          check=False, env=_env(RUNNER_TEMP=str(runner), GITHUB_STEP_SUMMARY=str(summary),
                                                GITHUB_OUTPUT=str(output), GITHUB_ACTIONS="true",
                                                DERIVE_FILES=files, DERIVE_BASELINE=baseline,
                                                DERIVE_FAIL_ON=fail_on))
    proc.outputs = dict(line.split("=", 1) for line in output.read_text(encoding="utf-8").splitlines()) \
        if output.exists() else {}
    return proc, summary.read_text(encoding="utf-8") if summary.exists() else ""


@pytest.mark.slow
def test_action_script_globs_annotations_summary(tmp_path):
    work = tmp_path / "work"
    (work / "specs" / "deep").mkdir(parents=True)
    (work / "specs" / "good.derive.toml").write_text(GOOD, encoding="utf-8")
    (work / "specs" / "deep" / "bad.derive.toml").write_text(BAD, encoding="utf-8")
    proc, summary = _run_action_script(tmp_path, "specs/**/*.derive.toml\n  no-match-*.toml")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith(BAD_ANNOTATION.replace("file=bad", "file=specs/deep/bad"))
    assert proc.stdout.endswith("\n2 claims: 1 proved, 1 refuted, 0 undecided; 1 of 1 proof replayed\n")
    assert summary.startswith("2 claims: 1 proved, 1 refuted, 0 undecided; 1 of 1 proof replayed\n")
    sarif = json.loads(Path(proc.outputs["sarif"]).read_text(encoding="utf-8"))
    assert [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]] \
        == ["specs/deep/bad.derive.toml"]
    # overlapping patterns: each spec once
    proc, _ = _run_action_script(tmp_path, "specs/**/*.derive.toml specs/deep/*.toml ./specs/good.derive.toml")
    assert proc.stdout.endswith("\n2 claims: 1 proved, 1 refuted, 0 undecided; 1 of 1 proof replayed\n")
    proc, _ = _run_action_script(tmp_path, "specs/good.derive.toml")
    assert proc.returncode == 0, proc.stderr
    proc, _ = _run_action_script(tmp_path, "nothing/*.toml")
    assert proc.returncode == 1
    assert proc.stdout == "::error title=derive::no spec file matches: nothing/*.toml\n"


# -- pre-commit ----------------------------------------------------------------------------


def test_hooks_manifest_is_valid():
    proc = subprocess.run([_tool("pre-commit"), "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")],
                          capture_output=True, text=True, check=False, env=_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert set(hooks) == {"derive-check", "derive-docs"}
    assert re.search(hooks["derive-check"]["files"], "specs/x.derive.toml")
    assert re.search(hooks["derive-check"]["files"], "specs/mods.py")  # a file a spec reads
    assert not re.search(hooks["derive-check"]["files"], "README.md")
    assert hooks["derive-check"]["entry"] == "derive check --changed"
    assert hooks["derive-docs"]["pass_filenames"] is False
    config = _readme_block("# .pre-commit-config.yaml")
    assert [h["id"] for h in yaml.safe_load(config)["repos"][0]["hooks"]] == ["derive-check", "derive-docs"]


@pytest.mark.slow
def test_derive_docs_hook_entry(tmp_path):
    """The derive-docs entry, run as pre-commit runs it, in a repository of derivation modules."""
    (hook,) = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
               if h["id"] == "derive-docs"]
    (tmp_path / "proofs").mkdir()
    shutil.copy(ROOT / "tests" / "data" / "demo.py", tmp_path / "proofs" / "demo.py")
    argv = [sys.executable, "-m", "derive", *shlex.split(hook["entry"])[1:]]
    stale = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False, env=_env())
    assert stale.returncode == 1 and "stale: docs/demo.md" in stale.stderr
    subprocess.run([sys.executable, "-m", "derive", "build", "--no-pdf"], cwd=tmp_path, check=True,
                   capture_output=True, env=_env())
    current = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False, env=_env())
    assert current.returncode == 0, current.stderr


def test_derive_docs_hook_in_a_repository_without_derivation_modules(tmp_path):
    """A user's repository with its own docs/ and no proofs/*.py: nothing to check, and it passes."""
    (hook,) = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
               if h["id"] == "derive-docs"]
    assert "only" in hook["description"] and "proofs/*.py" in hook["description"]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# my project\n", encoding="utf-8")
    argv = [sys.executable, "-m", "derive", *shlex.split(hook["entry"])[1:]]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False, env=_env())
    assert proc.returncode == 0 and "stale" not in proc.stderr
    assert "no derivation modules in proofs/ here: nothing to check" in proc.stderr


def test_derive_check_hook_output_is_for_people(tmp_path):
    """The derive-check entry outside GitHub Actions prints Markdown, never workflow commands."""
    (hook,) = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
               if h["id"] == "derive-check"]
    (tmp_path / "bad.derive.toml").write_text(BAD, encoding="utf-8")
    argv = [sys.executable, "-m", "derive", *shlex.split(hook["entry"])[1:], "bad.derive.toml"]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False,
                          env=_env(GITHUB_ACTIONS="false"))
    assert proc.returncode == 1 and proc.stdout.startswith("1 claim: 0 proved, 1 refuted, 0 undecided\n")
    assert "::" not in proc.stdout and "%0A" not in proc.stdout
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False,
                          env=_env(GITHUB_ACTIONS="true"))
    assert proc.stdout.startswith(BAD_ANNOTATION)


@pytest.mark.slow
def test_pre_commit_try_repo(tmp_path):
    """``pre-commit try-repo`` installs this repository into a fresh virtualenv (pip, from the
    package index) and runs derive-check: it passes on the good spec and fails on the bad one."""
    pre_commit = _tool("pre-commit")
    repo = tmp_path / "specs"
    repo.mkdir()
    (repo / "good.derive.toml").write_text(GOOD, encoding="utf-8")
    (repo / "bad.derive.toml").write_text(BAD, encoding="utf-8")
    env = _env(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), GITHUB_ACTIONS="true")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "add", "."], cwd=repo, check=True, env=env)

    def try_repo(spec):
        return subprocess.run([pre_commit, "try-repo", str(ROOT), "derive-check", "--files", spec, "--color", "never"],
                              cwd=repo, capture_output=True, text=True, check=False, env=env, timeout=900)

    good = try_repo("good.derive.toml")
    assert good.returncode == 0, good.stdout + good.stderr
    assert re.search(r"derive check\.+Passed", good.stdout)
    bad = try_repo("bad.derive.toml")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert re.search(r"derive check\.+Failed", bad.stdout)
    assert BAD_ANNOTATION in bad.stdout
    assert "1 claim: 0 proved, 1 refuted, 0 undecided" in bad.stdout


@pytest.mark.slow
def test_build_check_outside_a_repository_checks_derives_own_documents(tmp_path):
    """Without --if-modules, derive build --check in a folder with no proofs/ checks the documents
    derive ships (the wheel's proofs): the leniency is the hook's, not the command's."""
    argv = [sys.executable, "-m", "derive", "build", "--check", "--no-pdf", "--docs", str(ROOT / "docs")]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False, env=_env())
    assert proc.returncode == 0, proc.stderr
    assert "7 documents" in proc.stderr and "nothing to check" not in proc.stderr


def test_the_workflow_and_the_hook_run_on_every_kind_of_file_a_spec_reads(tmp_path):
    """A pull request or a commit that touches only a file a spec reads (the other spec of an
    equivalent_to, a score_mod module, a module it imports) runs the check: the README
    workflow's paths and the hook's files take every file derive.spec.inputs returns."""
    from fnmatch import fnmatch

    from derive.spec.inputs import inputs

    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "alibi.py").write_text("import helper\n", encoding="utf-8")
    (tmp_path / "mods" / "helper.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "hand.toml").write_text('name = "h"\nscore = "dot(q, k)"\n', encoding="utf-8")
    spec = tmp_path / "s.derive.toml"
    spec.write_text('name = "s"\nscore_mod = "mods/alibi.py:f"\n[claims]\ne = \'equivalent_to("hand.toml")\'\n',
                    encoding="utf-8")
    read = [p.relative_to(tmp_path).as_posix() for p in (spec, *inputs(spec))]
    assert read == ["s.derive.toml", "mods/alibi.py", "mods/helper.py", "hand.toml"]
    paths = yaml.safe_load(_readme_block("# .github/workflows/derive.yml"))[True]["pull_request"]["paths"]
    (hook,) = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
               if h["id"] == "derive-check"]
    for name in read:
        assert any(fnmatch(name, p) or fnmatch(name, p.removeprefix("**/")) for p in paths), name
        assert re.search(hook["files"], name), name
