"""``--format sarif``: SARIF 2.1.0 for code-scanning dashboards.

One rule per claim kind (from the claim-kind record, :mod:`derive.spec.claim_kinds`), with a
help text and a link into docs/spec.md. One result per claim that is not proved as expected: a
claim whose verdict is not the expected one is an ``error`` (``warning`` when merely undecided), a
refuted or undecided claim that meets its expectation a ``note``. Each result sits at the claim's
line (from its key to the end of the line), names the file relative to the repository root
(``uriBaseId`` ``%SRCROOT%``), and its message carries the reason and the counterexample (code
scanning shows messages, not ``properties``). With a baseline, each result has a
``baselineState`` (``new``, ``unchanged``, ``updated``) and a claim that was refuted at the
baseline and is not any more (fixed, removed, or its spec deleted) is an ``absent`` result.
Bad input (exit 2) is a run without results whose invocation failed, with one
``toolExecutionNotifications`` entry per error. A claim on which derive's engine failed (the
error outcome, exit 3) is no result either: the invocation failed (``executionSuccessful:
false``, ``exitCode`` 3) and has one notification per such claim, at the claim's line, with
the exception (``exception.kind``, ``exception.message``, and where in derive it was raised).
The output validates against the official schema (``tests/sarif-schema-2.1.0.json``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import quote

from derive.spec import claim_kinds as _kinds
from derive.report.common import claim_level, claim_message, claim_region, repo_path

__all__ = ["SCHEMA_URI", "error_sarif", "rules", "to_sarif"]

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
AUTOMATION_ID = "derive/check/"


def artifact(file: str) -> dict:
    """The artifactLocation of ``file``: relative to ``%SRCROOT%`` (a URI reference, ``%20`` for a
    space); a file outside any repository and the working directory has an absolute ``file:`` URI
    and no base (SARIF 3.4.4)."""
    path = repo_path(file)
    if Path(path).is_absolute():
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(path), "uriBaseId": SRCROOT}


def _docs(version: str) -> str | None:
    """docs/spec.md of this release at the project's home (``derive.__url__``); None without one."""
    from derive import __url__

    return f"{__url__}/blob/v{version}/docs/spec.md" if __url__ else None


def rules(version: str) -> list[dict]:
    out = []
    docs = _docs(version)
    for k in _kinds.KINDS:
        see = (f"See [the claims of the spec language]({docs}#{k.anchor})." if docs else
               f"See the claims of the spec language: docs/spec.md of derive {version}, section Claims.")
        meaning = k.plain()
        says = meaning.removeprefix("(extension) ")
        text = (f"The claim {k.name} of a derive variant spec states that {says}. derive proves it "
                "symbolically (for every d and n) or refutes it with a certified counterexample. "
                f"{k.plain_help()} A claim may state the verdict it expects: "
                "{ claim = \"...\", expect = \"refuted\" }.")
        out.append({"id": k.name, "name": "".join(w.capitalize() for w in k.name.split("_")),
                    "shortDescription": {"text": f"{k.name}: {meaning.removeprefix('(extension) ').split(';')[0]}"},
                    "fullDescription": {"text": f"The claim {k.name}: {meaning}."},
                    **({"helpUri": f"{docs}#{k.anchor}"} if docs else {}),
                    "help": {"text": text, "markdown": f"`{k.usage}`: {k.meaning}.\n\n{k.help}\n\n{see}"},
                    "defaultConfiguration": {"level": "error"}})
    return out


def _kind(result, claim) -> str:
    for c in result.spec.claims:
        if c.name == claim.name:
            return c.kind
    return claim.claim.split("(")[0].strip()


def fingerprint(file: str, name: str, statement: str) -> str:
    return hashlib.sha256(f"{repo_path(file)}\0{name}\0{statement}".encode()).hexdigest()[:32]


def _result(result, claim, level: str, state: str | None = None) -> dict:
    kinds = [k.name for k in _kinds.KINDS]
    kind = _kind(result, claim)
    out = {"ruleId": kind}
    if kind in kinds:
        out["ruleIndex"] = kinds.index(kind)
    out.update({
        "level": level,
        "message": {"text": f"{claim.name} = {claim_message(claim, code='')}"},
        "locations": [{"physicalLocation": {
            "artifactLocation": artifact(result.file),
            "region": claim_region(result, claim.name)}}],
        "partialFingerprints": {"deriveClaim/v1": fingerprint(result.file, claim.name, claim.claim)},
    })
    if state:
        out["baselineState"] = state
    out["properties"] = {"spec": result.name, "claim": claim.name, "statement": claim.claim,
                         "verdict": claim.verdict, "expected": claim.expected,
                         "counterexample": claim.counterexample}
    return out


def _absent(entry: dict) -> dict:
    """A claim refuted at the baseline that no longer exists (removed, or its spec deleted)."""
    kinds = [k.name for k in _kinds.KINDS]
    kind = entry["claim"].split("(")[0].strip()
    out = {"ruleId": kind}
    if kind in kinds:
        out["ruleIndex"] = kinds.index(kind)
    out.update({
        "level": "none",
        "message": {"text": f"{entry['name']} = `{entry['claim']}` was refuted at the baseline and is gone: "
                            f"{entry['why']}"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": quote(entry["file"]), "uriBaseId": SRCROOT}}}],
        "partialFingerprints": {"deriveClaim/v1": hashlib.sha256(
            f"{entry['file']}\0{entry['name']}\0{entry['claim']}".encode()).hexdigest()[:32]},
        "baselineState": "absent",
        "properties": {"claim": entry["name"], "statement": entry["claim"], "verdict": None,
                       "expected": None, "counterexample": None},
    })
    return out


def _document(results: list, invocation: dict) -> str:
    from derive import __url__, __version__

    doc = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "derive", "version": __version__, "semanticVersion": __version__,
                                **({"informationUri": __url__} if __url__ else {}), "rules": rules(__version__)}},
            "automationDetails": {"id": AUTOMATION_ID},
            "invocations": [invocation],
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def to_sarif(results: list, baseline: dict | None = None, gone: list | None = None) -> str:
    """``baseline``: (repository path, claim name) -> the verdict at the baseline (absent: no such
    claim); ``gone``: claims refuted at the baseline that no longer exist (dicts with file, name,
    claim, why)."""
    out, failed = [], []
    for r in results:
        path = repo_path(r.file)
        for c in r.claims:
            if c.is_error:
                failed.append(_engine_failure(r, c))
                continue
            level = claim_level(c)
            before = baseline.get((path, c.name)) if baseline is not None else None
            if level:
                state = None
                if baseline is not None:
                    state = "unchanged" if before == c.verdict else "updated" if before in (
                        "refuted", "undecided") else "new"
                out.append(_result(r, c, level, state))
            elif baseline is not None and before == "refuted":
                out.append(_result(r, c, "none", "absent"))
    out += [_absent(g) for g in gone or ()]
    if failed:
        return _document(out, {"executionSuccessful": False, "exitCode": 3, "toolExecutionNotifications": failed})
    return _document(out, {"executionSuccessful": True})


def _engine_failure(result, claim) -> dict:
    """The notification of a claim on which the engine failed (no verdict, no result)."""
    info = claim.error or {}
    return {"level": "error", "message": {"text": f"{claim.name} = {claim_message(claim, code='')}"},
            "descriptor": {"id": "internal-error"},
            "locations": [{"physicalLocation": {"artifactLocation": artifact(result.file),
                                                "region": claim_region(result, claim.name)}}],
            "exception": {"kind": info.get("type", ""), "message": info.get("message", "")},
            "properties": {"spec": result.name, "claim": claim.name, "statement": claim.claim,
                           "where": info.get("where", "")}}


def error_sarif(problems: list) -> str:
    """Bad input as SARIF: no results, a failed invocation with one notification per error."""
    notes = []
    for file, line, col, msg in problems:
        note = {"level": "error", "message": {"text": msg}, "descriptor": {"id": "input"}}
        if file:
            region = {"startLine": line} if line else {}
            if line and col:
                region["startColumn"] = col
            loc = {"artifactLocation": artifact(file)}
            if region:
                loc["region"] = region
            note["locations"] = [{"physicalLocation": loc}]
        notes.append(note)
    return _document([], {"executionSuccessful": False, "exitCode": 2, "toolExecutionNotifications": notes})
