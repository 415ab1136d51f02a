"""The generated tables of ``docs/spec.md``, a page otherwise written by hand.

Each table sits between two HTML comments and is printed from its record: the claim table from
:data:`derive.spec.claim_kinds.KINDS`, the mask table from :data:`derive.model.masks.FORMS`.
``python -m derive.spec.tables`` rewrites them (in ``docs/spec.md`` or the file named); the tests
fail while the committed page differs from what its records print.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["TABLES", "with_tables"]


def _claims() -> str:
    from derive.spec.claim_kinds import markdown_table

    return markdown_table()


def _masks() -> str:
    from derive.model.masks import table_markdown

    return table_markdown() + "\n"


# (what the table is, the record it comes from, how it is printed)
TABLES: tuple[tuple[str, str, Callable[[], str]], ...] = (
    ("claim table", "derive/spec/claim_kinds.py", _claims),
    ("mask table", "derive/model/masks.py", _masks),
)


def markers(what: str, source: str) -> tuple[str, str]:
    return (f"<!-- {what}: generated from {source} by python -m derive.spec.tables -->",
            f"<!-- end of the {what} -->")


def with_tables(text: str) -> str:
    """``text`` (docs/spec.md) with every generated table between its markers rewritten."""
    for what, source, table in TABLES:
        begin, end = markers(what, source)
        start, stop = text.index(begin) + len(begin), text.index(end)
        text = text[:start] + "\n" + table() + text[stop:]
    return text


if __name__ == "__main__":
    import sys
    from pathlib import Path

    path = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/spec.md")
    path.write_text(with_tables(path.read_text(encoding="utf-8")), encoding="utf-8")
