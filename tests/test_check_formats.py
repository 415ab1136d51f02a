"""``derive check --format github|sarif``: annotations at the claim's line, SARIF valid against the official schema.

``tests/sarif-schema-2.1.0.json`` is the OASIS SARIF 2.1.0 schema (errata 01), unchanged, as published
in the OASIS TC's repository (oasis-tcs/sarif-spec, ``sarif-2.1/schema/sarif-schema-2.1.0.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

from derive.claims.result import ClaimResult
from derive.claims.run import SpecResult, summary_line
from derive.cli import main
from derive.report.github import annotations
from derive.spec.claim_kinds import KINDS
from derive.report.sarif import to_sarif
from derive.spec import parse_spec
from derive.spec.load import CLAIM_ARGS
from tests.conftest import jsonschema

RULES = [k.name for k in KINDS]

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "tests" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))

SPEC = '''name = "two claims"
score = "dot(q, k + b)"
[symbols]
b = "vector"
[claims]
# the first claim is on line 7
"fine, really" = "invariant(b)"
  hard = "equivalent('dot(q, k)')"
'''


def _validate(text: str) -> dict:
    doc = json.loads(text)
    cls = jsonschema().validators.validator_for(SCHEMA)
    cls.check_schema(SCHEMA)
    errors = sorted(cls(SCHEMA, format_checker=cls.FORMAT_CHECKER).iter_errors(doc), key=str)
    assert not errors, [e.message for e in errors[:5]]
    return doc


def _result(verdicts) -> SpecResult:
    spec = parse_spec(SPEC, "dir with space/v.derive.toml")
    claims = [ClaimResult(c.name, c.text, v, f"reason, with: 100% {v}\nsecond line",
                          {"d": 1, "n": 2, "mask": "none", "indices": {"i": 1}, "values": {"b": [1]}}
                          if v == "refuted" else None)
              for c, v in zip(spec.claims, verdicts)]
    return SpecResult(spec.file, spec.name, spec, claims)


def test_schema_is_the_official_sarif_2_1_0():
    assert SCHEMA["id"] == "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    assert SCHEMA["properties"]["version"]["enum"] == ["2.1.0"]


def test_golden_sarif_is_valid():
    doc = _validate((ROOT / "tests" / "golden" / "check_report.sarif").read_text(encoding="utf-8"))
    (run,) = doc["runs"]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == list(CLAIM_ARGS) == list(RULES)
    (res,) = run["results"]
    assert res["ruleId"] == "invariant" and res["level"] == "error"
    assert res["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "tests/specs/golden.toml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 11, "startColumn": 1, "endLine": 11, "endColumn": 36}}  # one past the line's end
    assert res["properties"]["counterexample"]["d"] == 2
    assert res["message"]["text"].startswith("k_bias_redundant = invariant(b_k) is refuted: the score changes")
    assert "\ncounterexample: d = 2, n = 2, mask causal, i = 2, j = 1" in res["message"]["text"]


def test_sarif_levels_locations_and_escaping():
    doc = _validate(to_sarif([_result(["refuted", "undecided"])]))
    first, second = doc["runs"][0]["results"]
    assert (first["ruleId"], first["level"]) == ("invariant", "error")
    assert (second["ruleId"], second["level"]) == ("equivalent", "warning")
    assert second["properties"]["counterexample"] is None
    loc = first["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "dir%20with%20space/v.derive.toml"
    assert loc["region"] == {"startLine": 7, "startColumn": 1}  # no such file: no end known
    assert second["locations"][0]["physicalLocation"]["region"] == {"startLine": 8, "startColumn": 3}
    assert _validate(to_sarif([_result(["proved", "proved"])]))["runs"][0]["results"] == []


def test_sarif_baseline_states():
    baseline = {("dir with space/v.derive.toml", "fine, really"): "proved",
                ("dir with space/v.derive.toml", "hard"): "undecided"}
    doc = _validate(to_sarif([_result(["refuted", "undecided"])], baseline))
    assert [r["baselineState"] for r in doc["runs"][0]["results"]] == ["new", "unchanged"]
    fixed = {("dir with space/v.derive.toml", "fine, really"): "refuted"}
    doc = _validate(to_sarif([_result(["proved", "proved"])], fixed))
    (res,) = doc["runs"][0]["results"]
    assert (res["baselineState"], res["level"]) == ("absent", "none")


def test_github_annotations_pinned():
    text = annotations([_result(["refuted", "undecided"])])
    assert text.splitlines() == [
        "::error file=dir with space/v.derive.toml,line=7,col=1,title=fine%2C really is refuted::"
        "`invariant(b)` is refuted: reason, with: 100%25 refuted%0Asecond line%0A"
        "counterexample: d = 1, n = 2, mask none, i = 1; b = [1]",
        "::warning file=dir with space/v.derive.toml,line=8,col=3,title=hard is undecided::"
        "`equivalent('dot(q, k)')` is undecided: reason, with: 100%25 undecided%0Asecond line",
        "2 claims: 0 proved, 1 refuted, 1 undecided",
    ]


def test_golden_github_points_at_the_claim_line():
    text = (ROOT / "tests" / "golden" / "check_report.github").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0].startswith("::error file=tests/specs/golden.toml,line=11,col=1,title=k_bias_redundant is refuted::")
    assert "counterexample: d = 2, n = 2, mask causal, i = 2, j = 1" in lines[0]
    assert lines[-1] == "5 claims: 4 proved, 1 refuted, 0 undecided"
    spec_line = (ROOT / "tests" / "specs" / "golden.toml").read_text(encoding="utf-8").splitlines()[10]
    assert spec_line.startswith("k_bias_redundant =")


def test_summary_line():
    assert summary_line({"claims": 3, "proved": 2, "refuted": 1, "undecided": 0}) == \
        "3 claims: 2 proved, 1 refuted, 0 undecided"
    assert summary_line({"claims": 1, "proved": 1, "refuted": 0, "undecided": 0}) == \
        "1 claim: 1 proved, 0 refuted, 0 undecided"


def test_fail_on():
    from derive.commands.check import failing

    def claims(*pairs):
        return [ClaimResult("c", "can_abstain", v, "", expected=e) for v, e in pairs]

    assert failing(claims(("proved", "proved"), ("undecided", "proved")), "undecided")
    assert not failing(claims(("proved", "proved"), ("undecided", "proved")), "refuted")
    assert failing(claims(("refuted", "proved")), "refuted") and failing(claims(("refuted", "proved")), "undecided")
    # a claim meeting its expectation passes; one missing it fails, whatever the verdict
    assert not failing(claims(("refuted", "refuted"), ("undecided", "undecided")), "undecided")
    assert failing(claims(("proved", "refuted")), "refuted") and failing(claims(("proved", "undecided")), "refuted")
    assert failing(claims(("undecided", "refuted")), "undecided")
    assert not failing(claims(("undecided", "refuted")), "refuted")


def test_summary_file_is_appended(tmp_path, capsys):
    spec = tmp_path / "u.toml"
    spec.write_text('name = "u"\nscore = "dot(q, k)"\n[claims]\nc = "shift_invariant"\n', encoding="utf-8")
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    assert main(["check", str(spec), "--format", "github", "--fail-on", "refuted", "--summary", str(summary)]) == 0
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n1 claim: 1 proved, 0 refuted, 0 undecided\n\n")
    assert "| [`c`](#u-c) | `shift_invariant` | ✅ proved |" in text
    assert capsys.readouterr().out == "1 claim: 1 proved, 0 refuted, 0 undecided\n"


MATH_REASON = r"the score changes by a key-dependent term: $\frac{\langle \Delta b_{q}, k_{j} \rangle}{\sqrt{d}}$"


def _math_result() -> SpecResult:
    spec = parse_spec(SPEC, "v.derive.toml")
    c = spec.claims[0]
    return SpecResult(spec.file, spec.name, spec, [ClaimResult(c.name, c.text, "refuted", MATH_REASON, None)])


def test_a_reason_is_math_in_markdown_and_latex_and_read_aloud_elsewhere():
    from derive.report.render import render

    md = render([_math_result()], "md")
    cell = r"key-dependent term: $`\frac{\langle \Delta b_{q}, k_{j} \rangle}{\sqrt{d}}`$ |"
    assert cell in md and "**Refuted:** the score changes by a " + cell[:-2] + "\n" in md
    assert r"term: $\frac{\langle \Delta b_{q}, k_{j} \rangle}{\sqrt{d}}$" in render([_math_result()], "tex")
    assert json.loads(render([_math_result()], "json"))["specs"][0]["claims"][0]["reason"] == MATH_REASON
    aloud = "the score changes by a key-dependent term: ⟨Δb_q, k_j⟩/√d"
    assert annotations([_math_result()]).splitlines()[0].endswith(f"::`invariant(b)` is refuted: {aloud}")
    sarif = json.loads(to_sarif([_math_result()]))
    assert [r["message"]["text"] for r in sarif["runs"][0]["results"]] == [f"fine, really = invariant(b) is refuted: {aloud}"]


def test_a_long_reason_is_cut_before_a_math_span_never_inside_and_bars_are_escaped():
    from derive.render.markup import plain_math
    from derive.report.render import reason_cell, short_reason

    long = "x " * 60 + r"and then $\lvert a \rvert + \frac{1}{2} + b_{1} + b_{2}$ at the end"
    short = short_reason(long)
    assert short == ("x " * 60).rstrip() + " and then…" and len(plain_math(short)) <= 140
    assert short_reason("y " * 80).endswith("…") and len(short_reason("y " * 80)) == 140
    assert reason_cell(r"term $\lvert a \rvert$ and a | bar") == r"term $`\lvert a \rvert`$ and a \| bar"
    assert reason_cell(r"the part $\left|x\right|$ remains") == r"the part $`\left\|x\right\|`$ remains"
