"""``derive check`` as code review runs it, in a temporary git repository: expected verdicts, the
four baseline cases (a change in a referenced file, a rename, a spec that refers to another file,
a deleted spec and a removed claim), paths relative to the repository root from anywhere, bad input
in the format asked for. SARIF is validated against the official 2.1.0 schema."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

import derive
from derive.cli import main
from tests.conftest import run_derive
from tests.test_check_formats import _validate

ROOT = Path(__file__).resolve().parent.parent
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}

# a.derive.toml claims to equal b.derive.toml; b changes its score later
A = 'name = "a"\nscore = "dot(q, k) / sqrt(d)"\n[claims]\nsame = \'equivalent_to("b.derive.toml")\'\n'
B_OLD = 'name = "b"\nscore = "dot(q, k) / sqrt(d) + 7"\n[claims]\nshift = "shift_invariant"\n'
B_NEW = 'name = "b"\nscore = "dot(q, k)"\n[claims]\nshift = "shift_invariant"\n'
KEEP = ('name = "keep"\nscore = "dot(q + b, k)"\n[symbols]\nb = "vector"\n[claims]\n'
        'k_bias_survives = { claim = "invariant(b)", expect = "refuted" }\nshift = "shift_invariant"\n'
        'sums = "weights_sum_to_one"\n')
GONE = 'name = "gone"\nscore = "dot(q + b, k)"\n[symbols]\nb = "vector"\n[claims]\nbad = "invariant(b)"\n'


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env={**ENV, "HOME": str(repo)})


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("review")
    _git(repo, "init", "-q", "-b", "main")
    _write(repo / "specs" / "a.derive.toml", A)
    _write(repo / "specs" / "b.derive.toml", B_OLD)
    _write(repo / "specs" / "old_name.derive.toml", KEEP)
    _write(repo / "specs" / "gone.derive.toml", GONE)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    _write(repo / "specs" / "b.derive.toml", B_NEW)  # only b changes: a's claim becomes refuted
    _git(repo, "mv", "specs/old_name.derive.toml", "specs/new_name.derive.toml")  # renamed, same text
    _git(repo, "rm", "-q", "specs/gone.derive.toml")  # deleted, with a claim refuted at REF
    _git(repo, "commit", "-qam", "two")
    return repo


def _check(repo, *args, cwd=None):
    """``derive check ARGS`` from ``cwd`` (default: the repository), in this process (the command as
    a process is run by test_check_cli's golden tests and test_github_format_only_in_github_actions)."""
    return run_derive("check", *args, cwd=cwd or repo)


SPECS = ["specs/a.derive.toml", "specs/b.derive.toml", "specs/new_name.derive.toml"]


@pytest.fixture(scope="module")
def baseline(repo):
    code, out, err = _check(repo, "--baseline", "HEAD~1", "--format", "json", *SPECS)
    assert err == ""
    return code, json.loads(out)


def test_change_in_a_referenced_file_is_seen(baseline):
    code, doc = baseline
    a = doc["specs"][0]
    assert a["file"] == "specs/a.derive.toml" and a["at_ref"] == "present"
    assert [(c["name"], c["status"], c["old"], c["new"]) for c in a["changes"]] == [
        ("same", "refuted", "proved", "refuted")]
    assert code == 1


def test_rename_is_followed(baseline):
    _, doc = baseline
    keep = doc["specs"][2]
    assert keep["file"] == "specs/new_name.derive.toml"
    assert keep["renamed_from"] == "specs/old_name.derive.toml" and keep["at_ref"] == "present"
    assert keep["changes"] == []
    assert keep["unchanged"] == {"claims": 3, "proved": 2, "refuted": 1, "undecided": 0, "error": 0}


def test_spec_referring_to_another_file_loads_at_ref(baseline):
    _, doc = baseline
    assert [s["at_ref"] for s in doc["specs"][:2]] == ["present", "present"]
    assert doc["specs"][1]["changes"] == []  # b: shift_invariant, proved both times


def test_deleted_spec_and_its_refuted_claim_are_reported(repo, baseline):
    _, doc = baseline
    gone = doc["specs"][3]
    assert (gone["file"], gone["name"], gone["at_ref"]) == ("specs/gone.derive.toml", "gone", "deleted")
    assert [(c["name"], c["status"], c["old"], c["new"]) for c in gone["changes"]] == [
        ("bad", "removed", "refuted", None)]
    assert doc["gone"] == [{"file": "specs/gone.derive.toml", "name": "bad", "claim": "invariant(b)",
                            "why": "its spec file was deleted"}]
    code, out, _ = _check(repo, "--baseline", "HEAD~1", "--format", "sarif", *SPECS)
    results = _validate(out)["runs"][0]["results"]
    absent = [r for r in results if r["baselineState"] == "absent"]
    assert [(r["properties"]["claim"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
            for r in absent] == [("bad", "specs/gone.derive.toml")]
    code, out, _ = _check(repo, "--baseline", "HEAD~1", *SPECS)
    assert "#### gone (`specs/gone.derive.toml`)" in out and "deleted since `HEAD~1`" in out


def test_removed_claim_gets_an_absent_result(tmp_path):
    _git(tmp_path, "init", "-q", "-b", "main")
    _write(tmp_path / "s.derive.toml", GONE + 'sums = "weights_sum_to_one"\n')
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "one")
    _write(tmp_path / "s.derive.toml", GONE.replace('bad = "invariant(b)"\n', "") + 'sums = "weights_sum_to_one"\n')
    code, out, err = _check(tmp_path, "--baseline", "HEAD", "--format", "sarif", "s.derive.toml")
    assert code == 0, err
    (res,) = _validate(out)["runs"][0]["results"]
    assert (res["baselineState"], res["level"], res["properties"]["claim"]) == ("absent", "none", "bad")


def test_expected_refutation_passes_and_a_miss_fails(repo):
    code, out, _ = _check(repo, "specs/new_name.derive.toml", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    claim = doc["specs"][0]["claims"][0]
    assert (claim["verdict"], claim["expected"], claim["as_expected"]) == ("refuted", "refuted", True)
    assert doc["not_as_expected"] == 0
    code, out, _ = _check(repo, "specs/new_name.derive.toml")
    assert code == 0 and out.startswith("3 claims: 2 proved, 1 refuted, 0 undecided; all as expected\n")
    assert "| ❌ refuted (as expected) |" in out
    code, out, _ = _check(repo, "specs/new_name.derive.toml", "--format", "github")
    assert out.splitlines()[0].startswith(
        "::notice file=specs/new_name.derive.toml,line=6,col=1,title=k_bias_survives is refuted (as expected)::")


def test_expectation_missed(tmp_path):
    _write(tmp_path / "m.derive.toml", 'name = "m"\nscore = "dot(q, k)"\n[claims]\n'
                                       'wrong = { claim = "shift_invariant", expect = "refuted" }\n')
    code, out, _ = _check(tmp_path, "m.derive.toml", "--format", "github")
    assert code == 1
    assert out.splitlines()[0].startswith("::error file=m.derive.toml,line=4,col=1,title=wrong%3A expected refuted%2C "
                                          "got proved::`shift_invariant` is proved (expected refuted, got proved): ")
    code, out, _ = _check(tmp_path, "m.derive.toml", "--format", "sarif", "--fail-on", "refuted")
    assert code == 1
    (res,) = _validate(out)["runs"][0]["results"]
    assert res["level"] == "error" and res["properties"]["expected"] == "refuted"
    assert "(expected refuted, got proved)" in res["message"]["text"]


@pytest.mark.parametrize("where, name", [(".", "specs/a.derive.toml"), (".", "./specs/a.derive.toml"),
                                         ("specs", "a.derive.toml"), ("specs", "ABS")])
def test_paths_are_relative_to_the_repository_root(repo, where, name):
    name = str(repo / "specs" / "a.derive.toml") if name == "ABS" else name
    code, out, _ = _check(repo, name, "specs/../specs/b.derive.toml" if where == "." else "b.derive.toml",
                          "--format", "sarif", cwd=repo / where)
    doc = _validate(out)
    locs = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in doc["runs"][0]["results"]]
    assert locs == [{"uri": "specs/a.derive.toml", "uriBaseId": "%SRCROOT%"}]
    prints = {r["partialFingerprints"]["deriveClaim/v1"] for r in doc["runs"][0]["results"]}
    code, out, _ = _check(repo, name, "--format", "github", cwd=repo / where)
    assert out.startswith("::error file=specs/a.derive.toml,line=4,col=1,")
    assert len(prints) == 1 and prints == _FINGERPRINTS.setdefault("a", prints)


_FINGERPRINTS: dict = {}

BAD = ('name = "bad"\nscore = "dot(q + b_q, k) / sqrt(d) + foo(zz)"\n[symbols]\nb_q = "vectr"\n'
       't = "positive scalar"\n[claims]\nk = { claim = "invariant(b_q)", expect = "refutd" }\n')


def test_every_error_at_once(tmp_path):
    _write(tmp_path / "bad.derive.toml", BAD)
    code, out, err = _check(tmp_path, "bad.derive.toml")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "derive: error: bad.derive.toml: key 'symbols.b_q': unknown kind 'vectr'; did you mean 'vector'? (expected "
        "one of vector, query, key, scalar, scalar positive, scalar negative, scalar nonzero, per_head, per_head "
        "positive, per_head negative, function)",
        "derive: error: bad.derive.toml: key 'symbols.t': unknown kind 'positive scalar'; did you mean 'scalar "
        "positive'? (expected one of vector, query, key, scalar, scalar positive, scalar negative, scalar nonzero, "
        "per_head, per_head positive, per_head negative, function)",
        "derive: error: bad.derive.toml: key 'score', column 29: unknown function 'foo'",
        "derive: error: bad.derive.toml: key 'score', column 33: unknown name 'zz': declare it under [symbols]",
        "derive: error: bad.derive.toml: key 'claims.k.expect': expected one of proved, refuted, undecided, got "
        "'refutd'; did you mean 'refuted'?",
    ]


def test_bad_input_in_the_format_asked_for(tmp_path):
    _write(tmp_path / "sub" / "bad.derive.toml", BAD)
    _git(tmp_path, "init", "-q", "-b", "main")
    summary = tmp_path / "summary.md"
    code, out, err = _check(tmp_path, "bad.derive.toml", "--format", "github", "--summary", str(summary),
                            cwd=tmp_path / "sub")
    assert code == 2 and err == ""  # each error once: as an annotation on stdout
    lines = out.splitlines()
    assert len(lines) == 5
    assert lines[0].startswith("::error file=sub/bad.derive.toml,line=4,col=1,title=derive%3A bad input::")
    assert lines[2].startswith("::error file=sub/bad.derive.toml,line=2,col=1,")
    assert summary.read_text(encoding="utf-8").startswith("### derive check: bad input (5 errors, exit 2)\n\n- "
                                                          "`sub/bad.derive.toml`, line 4: ")
    code, out, _ = _check(tmp_path, "bad.derive.toml", "--format", "sarif", cwd=tmp_path / "sub")
    (run,) = _validate(out)["runs"]
    (inv,) = run["invocations"]
    assert code == 2 and run["results"] == [] and inv["executionSuccessful"] is False
    notes = inv["toolExecutionNotifications"]
    assert len(notes) == 5 and notes[2]["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "sub/bad.derive.toml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 2, "startColumn": 1}}


def test_github_format_only_in_github_actions(tmp_path):
    _write(tmp_path / "m.derive.toml", 'name = "m"\nscore = "dot(q, k)"\n[claims]\nbad = "weights_sum_to_one"\n'
                                       'x = "equivalent(\'dot(q, k) + 1\')"\n')
    code, out, _ = _check(tmp_path, "m.derive.toml")
    assert "::" not in out and "%0A" not in out and out.startswith("2 claims: 2 proved")
    proc = subprocess.run([sys.executable, "-m", "derive", "check", "m.derive.toml"], cwd=tmp_path, text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT), "GITHUB_ACTIONS": "true"})
    assert proc.stdout == "2 claims: 2 proved, 0 refuted, 0 undecided\n"


def test_sarif_rules_and_run_details():
    from derive.spec.claim_kinds import KINDS
    from derive.report.sarif import to_sarif

    doc = _validate(to_sarif([]))
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    # no public home declared (derive.__url__ is None): no URL at all, and no placeholder for one
    assert "informationUri" not in driver and "OWNER" not in json.dumps(doc)
    assert [r["id"] for r in driver["rules"]] == [k.name for k in KINDS] and len(KINDS) == 12
    for rule in driver["rules"]:
        assert "helpUri" not in rule and rule["help"]["text"]
        assert rule["help"]["markdown"].endswith("See the claims of the spec language: docs/spec.md of derive "
                                                 f"{derive.__version__}, section Claims.")
        for text in (rule["shortDescription"]["text"], rule["fullDescription"]["text"], rule["help"]["text"]):
            assert not re.search(r"(?<![:\w])(NAME|EXPR|OTHER)\b", text), text
    assert run["automationDetails"] == {"id": "derive/check/"}
    assert run["invocations"] == [{"executionSuccessful": True}]


def test_sarif_links_to_the_project_home_when_it_has_one(monkeypatch):
    from derive.report.sarif import to_sarif

    monkeypatch.setattr(derive, "__url__", "https://example.org/derive")
    driver = _validate(to_sarif([]))["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://example.org/derive"
    docs = f"https://example.org/derive/blob/v{derive.__version__}/docs/spec.md#claims"
    for rule in driver["rules"]:
        assert rule["helpUri"] == docs and rule["help"]["markdown"].endswith(
            f"See [the claims of the spec language]({docs}).")


def test_the_project_home_is_stated_once_in_derive_and_in_pyproject():
    """derive.__url__ and pyproject.toml's [project.urls] Homepage are the same (both absent today)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project.get("urls", {}).get("Homepage") == derive.__url__
    assert project["version"] == derive.__version__


def test_pipe_in_a_claim_name_keeps_the_table(tmp_path):
    _write(tmp_path / "p.derive.toml", 'name = "p"\nscore = "dot(q, k)"\n[claims]\n"a|b" = "weights_sum_to_one"\n')
    code, out, _ = _check(tmp_path, "p.derive.toml")
    row = next(line for line in out.splitlines() if line.startswith("| [`a"))
    assert row.startswith("| [`a\\|b`](#p-a-b) | `weights_sum_to_one` | ✅ proved |")
    assert row.count("|") - row.count("\\|") == 5  # four cells


@pytest.mark.parametrize("args", [["--help"], ["check", "--help"]])
def test_help_imports_nothing_heavy(args):
    code = ("import sys, runpy; sys.argv = ['derive', *sys.argv[1:]]\n"
            "try:\n    runpy.run_module('derive', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('sympy', 'hypothesis', 'flint', 'numpy', 'jinja2') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.splitlines()[-1] == "[]", proc.stderr


def test_malformed_toml_annotation_points_at_the_line(tmp_path):
    _write(tmp_path / "m.derive.toml", 'name = "x"\nscore = \n')
    code, out, err = _check(tmp_path, "m.derive.toml", "--format", "github")
    assert code == 2 and err == ""  # the annotation says it, once
    assert out == ("::error file=m.derive.toml,line=2,col=9,title=derive%3A bad input::"
                   "m.derive.toml: malformed TOML: Invalid value (at line 2, column 9)\n")


def test_each_set_of_inputs_is_proved_once(repo, monkeypatch):
    """The cache is keyed on a spec's text and every file it refers to: a (whose b changed) and b are
    proved at both revisions, the renamed spec with the same text once, the deleted one at REF."""
    import derive.claims.run as run_module

    calls = []
    real = run_module.check_spec

    def counting(spec, *a, **k):
        calls.append(Path(spec.file).name)
        return real(spec, *a, **k)

    monkeypatch.setattr(run_module, "check_spec", counting)
    monkeypatch.chdir(repo)
    assert main(["check", "--baseline", "HEAD~1", "--format", "json", "--output", str(repo / "out.json"), *SPECS]) == 1
    assert sorted(calls) == sorted(["a.derive.toml", "b.derive.toml", "new_name.derive.toml",
                                    "a.derive.toml", "b.derive.toml", "gone.derive.toml"])


def test_help_lines_read_from_source_are_the_commands_help():
    import importlib

    from derive.cli import COMMANDS, _help_line

    for name in COMMANDS:
        assert _help_line(name) == importlib.import_module(f"derive.commands.{name}").HELP != ""


def test_claim_table_errors():
    from derive.errors import InputError
    from derive.spec import parse_spec

    text = ('name = "x"\nscore = "dot(q, k)"\n[claims]\na = { claim = "shift_invariant", expct = "refuted" }\n'
            'b = { expect = "refuted" }\nc = { claim = 3 }\nd = { claim = "shift_invariant", expect = 1 }\n'
            'e = { claim = "invariant(zz)", expect = "undecided" }\n')
    with pytest.raises(InputError) as exc:
        parse_spec(text, "x.toml")
    assert str(exc.value).splitlines() == [
        "x.toml: key 'claims.a.expct': unknown key; did you mean 'expect'? (expected claim or expect)",
        "x.toml: key 'claims.b': missing key 'claim': write { claim = \"CLAIM\", expect = \"refuted\" }",
        "x.toml: key 'claims.c.claim': expected a string or a table { claim = ..., expect = ... }, got int",
        "x.toml: key 'claims.d.expect': expected one of proved, refuted, undecided, got int",
        "x.toml: key 'claims.e.claim', column 11: unknown name 'zz': declare it under [symbols]",
    ]
    spec = parse_spec(text.split("[claims]")[0] + '[claims]\nu = { claim = "can_abstain", expect = "undecided" }\n')
    assert [(c.name, c.kind, c.expect) for c in spec.claims] == [("u", "can_abstain", "undecided")]
