"""The notation sheet, printed once (docs/notation.md): every symbol the documents share, with its
one meaning, read off :mod:`derive.render.notation` — the table the LaTeX printer and the templates
use too. The other documents link here and define only what is their own."""

from __future__ import annotations

from derive.document.api import Document
from derive.render.notation import GROUPS, RETIRED, SHEET


def document() -> Document:
    doc = Document(
        "notation",
        "Notation",
        summary=(
            "Every derivation document writes its quantities with the symbols below, each with one meaning. The "
            "sheet is data (`derive/render/notation.py`): the printer that writes every formula of every document "
            "takes an engine symbol's spelling from it, and a test fails when a document uses a spelling the sheet "
            "has retired. A document defines, where it uses them, only the symbols that are its own."
        ),
    )
    doc.section("The symbols", anchor="notation")
    for group in GROUPS:
        doc.section(group, level=3)
        doc.table(["symbol", "meaning"], [[f"${s.latex}$", s.meaning] for s in SHEET if s.group == group])
    doc.section("Spellings retired", anchor="retired", level=3)
    doc.prose("Earlier versions of the documents wrote some quantities otherwise; they are written as on the right "
              "now, and nowhere as on the left:")
    doc.table(["retired", "now"], [[f"${old}$", f"${new}$"] for old, new in RETIRED.items()])
    return doc
