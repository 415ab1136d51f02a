"""Where each key of a TOML document is written: ``(line, column)``, both 1-based.

``tomllib`` keeps no positions, so this is a small scanner over the TOML text. It knows
what it must skip to find keys reliably: comments, every string form (basic, literal,
multi-line, with escapes), arrays and inline tables over several lines, ``[table]`` and
``[[array]]`` headers, dotted and quoted keys. Keys are tuples of their parts as TOML
reads them (``'"a.b" = 1'`` is the key ``("a.b",)``). The column counts characters.

It runs on documents that ``tomllib`` has accepted; on anything else it stops where it
cannot go on and returns what it found (it never raises).
"""

from __future__ import annotations

import tomllib

__all__ = ["key_positions"]

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


class _Stop(Exception):
    pass


class _Scanner:
    def __init__(self, text: str):
        self.text, self.i, self.line, self.line_start = text, 0, 1, 0
        self.found: dict[tuple[str, ...], tuple[int, int]] = {}

    # -- characters ------------------------------------------------------------------
    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.text[j] if j < len(self.text) else ""

    def advance(self, k: int = 1) -> None:
        for _ in range(k):
            if self.i >= len(self.text):
                raise _Stop
            if self.text[self.i] == "\n":
                self.line, self.line_start = self.line + 1, self.i + 1
            self.i += 1

    def where(self) -> tuple[int, int]:
        return self.line, self.i - self.line_start + 1

    def blank(self, newlines: bool = False) -> None:
        """Skip spaces and tabs (and comments and newlines when ``newlines``)."""
        while True:
            ch = self.peek()
            if ch in (" ", "\t", "\r"):
                self.advance()
            elif ch == "\n" and newlines:
                self.advance()
            elif ch == "#" and newlines:
                self.comment()
            else:
                return

    def comment(self) -> None:
        while self.peek() not in ("", "\n"):
            self.advance()

    # -- strings and keys ------------------------------------------------------------
    def string(self) -> str:
        """Skip the string starting here; return its source text."""
        start, q = self.i, self.peek()
        if self.peek(1) == q and self.peek(2) == q:  # multi-line
            self.advance(3)
            while not (self.peek() == q and self.peek(1) == q and self.peek(2) == q):
                if q == '"' and self.peek() == "\\":
                    self.advance()
                self.advance()
            self.advance(3)
            while self.peek() == q:  # up to two quotes may end the content
                self.advance()
        else:
            self.advance()
            while self.peek() != q:
                if self.peek() in ("", "\n"):
                    raise _Stop
                if q == '"' and self.peek() == "\\":
                    self.advance()
                self.advance()
            self.advance()
        return self.text[start:self.i]

    def key(self) -> list[tuple[str, tuple[int, int]]]:
        """A (dotted) key: each part with its position."""
        parts = []
        while True:
            self.blank()
            pos, ch = self.where(), self.peek()
            if ch in ('"', "'"):
                raw = self.string()
                try:
                    part = next(iter(tomllib.loads(f"{raw} = 0")))
                except tomllib.TOMLDecodeError:
                    raise _Stop from None
            elif ch in _BARE:
                start = self.i
                while self.peek() in _BARE and self.peek():
                    self.advance()
                part = self.text[start:self.i]
            else:
                raise _Stop
            parts.append((part, pos))
            self.blank()
            if self.peek() != ".":
                return parts
            self.advance()

    def record(self, prefix: tuple[str, ...], parts) -> tuple[str, ...]:
        path = prefix
        for part, pos in parts:
            path = (*path, part)
            self.found.setdefault(path, pos)
        return path

    # -- values ----------------------------------------------------------------------
    def value(self, path: tuple[str, ...]) -> None:
        ch = self.peek()
        if ch in ('"', "'"):
            self.string()
        elif ch == "[":
            self.advance()
            self.blank(newlines=True)
            while self.peek() != "]":
                self.value(path)
                self.blank(newlines=True)
                if self.peek() == ",":
                    self.advance()
                    self.blank(newlines=True)
            self.advance()
        elif ch == "{":
            self.advance()
            self.blank()
            while self.peek() != "}":
                self.key_value(path)
                self.blank()
                if self.peek() == ",":
                    self.advance()
                    self.blank()
            self.advance()
        else:  # number, boolean, date: up to a delimiter
            if ch in ("", "\n", ",", "]", "}", "#"):
                raise _Stop
            while self.peek() not in ("", "\n", ",", "]", "}", "#", " ", "\t", "\r"):
                self.advance()
            # a local date-time may hold one space: "1979-05-27 07:32:00"
            if self.peek() == " " and self.peek(1).isdigit() and ":" in self.text[self.i:self.i + 4]:
                self.advance()
                self.value(path)

    def key_value(self, prefix: tuple[str, ...]) -> None:
        path = self.record(prefix, self.key())
        if self.peek() != "=":
            raise _Stop
        self.advance()
        self.blank()
        self.value(path)

    # -- the document ----------------------------------------------------------------
    def document(self) -> None:
        table: tuple[str, ...] = ()
        while True:
            self.blank(newlines=True)
            ch = self.peek()
            if not ch:
                return
            if ch == "[":
                double = self.peek(1) == "["
                self.advance(2 if double else 1)
                table = self.record((), self.key())
                self.advance(2 if double else 1)
            else:
                self.key_value(table)


def key_positions(text: str) -> dict[tuple[str, ...], tuple[int, int]]:
    """Every key of the TOML ``text`` → (line, column) of its first character, 1-based.

    A table's key is where its header names it (or where a dotted key first names it);
    for ``[[array]]`` tables, where the first element's header is.
    """
    scanner = _Scanner(text)
    try:
        scanner.document()
    except _Stop:
        pass
    return scanner.found
