"""The rules table of docs/spec.md, read off the checker's own list (:data:`derive.replay.rules.RULES`).

    python -m derive.certify.doc    # rewrite the table between its markers in docs/spec.md
"""

from __future__ import annotations

from derive.replay.rules import RULES

__all__ = ["markdown_table"]

START, END = "<!-- rules: generated from derive/replay/rules.py -->\n", "<!-- end of the rules -->"


def markdown_table() -> str:
    """The rules as docs/spec.md lists them."""
    bar = "\\|"
    return "\n".join(["| rule | what it states |", "|---|---|"] +
                     [f"| `{name}` | {text.replace('|', bar)} |" for name, (text, _) in RULES.items()]) + "\n"


if __name__ == "__main__":  # rewrite the rules table of docs/spec.md between its markers
    from pathlib import Path

    path = Path("docs/spec.md")
    text = path.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    path.write_text(head + START + markdown_table() + END + rest.split(END, 1)[1], encoding="utf-8")
