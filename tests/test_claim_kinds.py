"""The claim-kind record (derive/spec/claim_kinds.py) is the single source: the loader, the provers'
dispatch, the claim table of docs/spec.md and the SARIF rules all come from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from derive.spec import claim_kinds as kinds
from derive.spec.claim_kinds import KINDS, markdown_table
from derive.spec.tables import with_tables

ROOT = Path(__file__).resolve().parent.parent


def test_spec_md_tables_are_the_records():
    """The claim table and the mask table of docs/spec.md are what their records print."""
    text = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    assert with_tables(text) == text, "regenerate: python -m derive.spec.tables"
    assert markdown_table() in text
    from derive.model.masks import table_markdown

    assert table_markdown() in text


def test_loader_sarif_and_provers_follow_the_record():
    from derive.report.sarif import rules
    from derive.spec.load import CLAIM_ARGS

    assert CLAIM_ARGS == {k.name: k.arg for k in KINDS}
    assert [r["id"] for r in rules("0")] == [k.name for k in KINDS]
    from derive.claims.provers import PROVERS

    for k in KINDS:
        assert callable(PROVERS[k.name]), k.name


def test_a_new_kind_is_one_record(monkeypatch, tmp_path):
    """A kind added to the record is parsed, dispatched to its prover and gets a SARIF rule."""
    from derive.claims.result import Outcome
    from derive.claims.run import check_spec
    from derive.report.sarif import rules
    from derive.spec import load_spec

    extra = kinds.ClaimKind("always_proved", None, "a claim for this test", "tests.test_claim_kinds:_prover")
    monkeypatch.setattr(kinds, "KINDS", (*KINDS, extra))
    monkeypatch.setitem(kinds.CLAIM_ARGS, "always_proved", None)
    monkeypatch.setitem(kinds._BY_NAME, "always_proved", extra)
    spec = tmp_path / "x.derive.toml"
    spec.write_text('name = "x"\nscore = "dot(q, k)"\n[claims]\nc = "always_proved"\n', encoding="utf-8")
    (res,) = check_spec(load_spec(spec)).claims
    assert (res.verdict, res.reason) == ("proved", "by the test's prover")
    assert rules("0")[-1]["id"] == "always_proved"
    assert Outcome  # the prover below returns one


def _prover(ctx, claim):
    from derive.claims.result import Outcome

    return Outcome("proved", "by the test's prover")


@pytest.mark.parametrize("kind", [k.name for k in KINDS])
def test_usage_matches_argument(kind):
    k = kinds.by_name(kind)
    assert re.fullmatch(r"[a-z_]+(\((NAME|\"EXPR\"|\"OTHER\.toml\")\))?", k.usage)
