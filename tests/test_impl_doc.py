"""``docs/impl-check.md`` is generated; it must equal what the generator renders now."""

from pathlib import Path

from derive.impl.document import render


def test_impl_check_document_is_current():
    committed = Path(__file__).resolve().parent.parent / "docs" / "impl-check.md"
    assert committed.read_text(encoding="utf-8") == render(), (
        "docs/impl-check.md is stale: run python -m derive.impl.document > docs/impl-check.md")
    assert "**Verdict: DISAGREES.**" in committed.read_text(encoding="utf-8")
