"""Bad input (exit 2) as data: the loader's one-line errors read back into (file, line, column,
message), so the structured formats can report them where they are (an ``::error`` annotation,
a SARIF notification) and the job summary can list them.

An error line is ``FILE: key 'KEY', column C: WHAT`` or ``FILE: WHAT`` (docs/spec.md, "Errors"), or
a line naming no file (``--baseline: …``). The line and column are those of KEY in FILE.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["markdown", "problems"]

_LINE = re.compile(r"(?P<file>[^\n]+?\.(?:toml|py)): (?:key '(?P<key>[^']*)'(?:, column \d+)?: )?(?P<msg>.*)\Z")


_TOML_AT = re.compile(r"\(at line (\d+), column (\d+)\)")


def _position(file: str, key: str | None) -> tuple[int | None, int | None]:
    if key is None:
        return None, None
    from derive.spec.positions import key_positions

    try:
        positions = key_positions(Path(file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None, None
    parts = key.split(".")
    while parts:  # the key itself, else the nearest table that holds it
        where = positions.get(tuple(parts))
        if where:
            return where
        if len(parts) > 1 and tuple(parts[:1]) + (".".join(parts[1:]),) in positions:
            return positions[tuple(parts[:1]) + (".".join(parts[1:]),)]
        parts.pop()
    return None, None


def problems(text: str) -> list[tuple[str | None, int | None, int | None, str]]:
    """(file, line, column, the whole error line) for each line of an input error."""
    out = []
    for line in text.splitlines() or [""]:
        m = _LINE.match(line)
        if m and Path(m.group("file")).is_file():
            where = _position(m.group("file"), m.group("key"))
            toml = _TOML_AT.search(m.group("msg")) if m.group("key") is None else None
            if toml:  # malformed TOML: tomllib names the line and column
                where = (int(toml.group(1)), int(toml.group(2)))
            out.append((m.group("file"), *where, line))
        else:
            out.append((None, None, None, line))
    return out


def markdown(found: list) -> str:
    """The job summary of a run stopped by bad input."""
    from derive.report.common import repo_path

    lines = [f"### derive check: bad input ({len(found)} error{'' if len(found) == 1 else 's'}, exit 2)", ""]
    for file, line, _col, msg in found:
        where = f"`{repo_path(file)}`" + (f", line {line}" if line else "") + ": " if file else ""
        lines.append(f"- {where}{msg}".replace("\n", " "))
    return "\n".join(lines) + "\n\n"
