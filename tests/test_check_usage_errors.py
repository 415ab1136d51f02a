"""A command line that argparse rejects is bad input like any other: exit 2, the usage on stderr,
and for derive check the error also in the format asked for (an annotation, a SARIF run whose
invocation failed, the summary file), so an Action step never sees an empty report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from derive.cli import main
from tests.conftest import jsonschema

SCHEMA = json.loads((Path(__file__).parent / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "ok.derive.toml"
    path.write_text('name = "ok"\nscore = "dot(q, k) / sqrt(d)"\n[claims]\ns = "shift_invariant"\n')
    return str(path)


def test_a_bad_option_value_is_an_annotation_with_format_github(spec, capsys):
    assert main(["check", spec, "--format", "github", "--time-limit", "abc"]) == 2
    out, err = capsys.readouterr()
    assert out == "::error title=derive%3A bad input::derive check: argument --time-limit: invalid float value: 'abc'\n"
    assert err.startswith("usage: derive check ") and "error" not in err  # the annotation says it, once
    assert "usage: derive check" in err


def test_an_unknown_option_is_a_sarif_notification_and_a_summary(spec, tmp_path, capsys):
    summary = tmp_path / "summary.md"
    assert main(["check", spec, "--format=sarif", "--summary", str(summary), "--bogus"]) == 2
    out, err = capsys.readouterr()
    log = json.loads(out)
    jsonschema().validate(log, SCHEMA)
    (inv,) = log["runs"][0]["invocations"]
    assert inv["executionSuccessful"] is False
    assert [n["message"]["text"] for n in inv["toolExecutionNotifications"]] == [
        "derive check: unrecognized arguments: --bogus"]
    assert "unrecognized arguments: --bogus" in summary.read_text(encoding="utf-8")
    assert "derive: error: unrecognized arguments: --bogus" in err


def test_in_a_terminal_a_bad_option_prints_no_annotation(spec, capsys, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    assert main(["check", spec, "--time-limit", "abc"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "::error" not in err and "%0A" not in err
