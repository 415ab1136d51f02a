"""Tokenizer and Pratt parser for the spec expression language.

Whitelist only: numbers, names, ``+ - * / **``, comparisons (``< <= > >= == !=``, which
only a normalizer's reduction condition accepts), parentheses, commas and calls. The result
is an AST whose nodes carry their 1-based column in the source string; nothing is ever
evaluated as Python. Size limits bound the length, the node count, the nesting depth and
the exponents, so a hostile spec cannot make the engine hang.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from derive.errors import InputError

__all__ = ["COMPARISONS", "LIMITS", "Binary", "Call", "ExprError", "Name", "Node", "Num", "Unary", "parse", "walk"]

LIMITS = {"length": 1000, "nodes": 400, "depth": 40, "exponent": 8, "digits": 12, "value_digits": 400}
"""``exponent``: |e| of ``x ** e`` for a symbolic base, where expansion can blow up;
``digits``: digits of a number as written (its mantissa); ``value_digits``: digits of an
exact constant's numerator and denominator (``1e-30``, ``2 ** 400``)."""


class ExprError(InputError):
    """An error inside one expression: ``column`` is 1-based in that expression."""

    def __init__(self, message: str, column: int, quiet: bool = False):
        super().__init__(message)
        self.message, self.column = message, column
        self.quiet = quiet  # a consequence of an error already reported: not shown again


@dataclass(frozen=True)
class Num:
    text: str
    col: int


@dataclass(frozen=True)
class Name:
    id: str
    col: int


@dataclass(frozen=True)
class Unary:
    op: str
    operand: Node
    col: int


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node
    col: int


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple
    col: int


Node = Num | Name | Unary | Binary | Call

_NUM = r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"  # 2, 0.5, 1e-30, 2.5E3
_TOKEN = re.compile(rf"\s*(?:(?P<num>{_NUM})|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>\*\*|[<>!=]=|[-+*/(),<>]))")
# Comparisons bind loosest; only a normalizer's reduction condition (``t > j``) accepts one.
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
_BINARY = {"+": 10, "-": 10, "*": 20, "/": 20, "**": 40, **dict.fromkeys(COMPARISONS, 5)}
_UNARY_POWER = 30


@dataclass(frozen=True)
class Token:
    kind: str  # num | name | op | end
    text: str
    col: int


def tokenize(src: str) -> list[Token]:
    if len(src) > LIMITS["length"]:
        raise ExprError(f"expression too long ({len(src)} characters; the limit is {LIMITS['length']})", 1)
    out, pos = [], 0
    while pos < len(src):
        if src[pos:].strip() == "":
            break
        m = _TOKEN.match(src, pos)
        if not m:
            bad = pos + len(src[pos:]) - len(src[pos:].lstrip())
            raise ExprError(f"unexpected character {src[bad]!r}", bad + 1)
        kind = m.lastgroup
        text = m.group(kind)
        col = m.start(kind) + 1
        if kind == "num":
            _check_number(text, col)
        out.append(Token(kind, text, col))
        pos = m.end()
    out.append(Token("end", "", len(src) + 1))
    return out


def _check_number(text: str, col: int) -> None:
    mantissa, _, exp = text.lower().partition("e")
    if len(mantissa.replace(".", "")) > LIMITS["digits"]:
        raise ExprError(f"number {text[:20]}… has too many digits (limit {LIMITS['digits']})", col)
    if exp and abs(int(exp)) > LIMITS["value_digits"]:
        raise ExprError(f"number {text[:30]} is too large or too small (limit 1e±{LIMITS['value_digits']})", col)


class _Parser:
    def __init__(self, src: str):
        self.toks = tokenize(src)
        self.k = 0
        self.nodes = 0

    def peek(self) -> Token:
        return self.toks[self.k]

    def next(self) -> Token:
        tok = self.toks[self.k]
        self.k += 1
        return tok

    def expect(self, text: str) -> Token:
        tok = self.next()
        if tok.text != text:
            raise ExprError(f"expected {text!r}, found {_show(tok)}", tok.col)
        return tok

    def count(self, col: int, depth: int):
        self.nodes += 1
        if self.nodes > LIMITS["nodes"]:
            raise ExprError(f"expression too large (more than {LIMITS['nodes']} nodes)", col)
        if depth > LIMITS["depth"]:
            raise ExprError(f"expression nested too deeply (more than {LIMITS['depth']} levels)", col)

    def expr(self, power: int = 0, depth: int = 0) -> Node:
        left = self.prefix(depth)
        while True:
            tok = self.peek()
            bp = _BINARY.get(tok.text) if tok.kind == "op" else None
            if bp is None or bp <= power:
                break
            self.next()
            self.count(tok.col, depth)
            # ** is right-associative: its right operand may contain another **
            right = self.expr(bp - 1 if tok.text == "**" else bp, depth + 1)
            left = Binary(tok.text, left, right, tok.col)
        return left

    def prefix(self, depth: int) -> Node:
        tok = self.next()
        self.count(tok.col, depth)
        if tok.kind == "num":
            return Num(tok.text, tok.col)
        if tok.kind == "name":
            if self.peek().text == "(":
                self.next()
                args = []
                if self.peek().text != ")":
                    args.append(self.expr(0, depth + 1))
                    while self.peek().text == ",":
                        self.next()
                        args.append(self.expr(0, depth + 1))
                self.expect(")")
                return Call(tok.text, tuple(args), tok.col)
            return Name(tok.text, tok.col)
        if tok.text in ("-", "+"):
            operand = self.expr(_UNARY_POWER, depth + 1)
            return operand if tok.text == "+" else Unary("-", operand, tok.col)
        if tok.text == "(":
            inner = self.expr(0, depth + 1)
            self.expect(")")
            return inner
        raise ExprError(f"expected a number, a name or '(', found {_show(tok)}", tok.col)


def _show(tok: Token) -> str:
    return "the end of the expression" if tok.kind == "end" else repr(tok.text)


def parse(src: str) -> Node:
    """Parse ``src`` into an AST, or raise :class:`ExprError` with a column."""
    if not isinstance(src, str):
        raise ExprError("expected a string", 1)
    p = _Parser(src)
    if p.peek().kind == "end":
        raise ExprError("empty expression", 1)
    node = p.expr()
    tok = p.peek()
    if tok.kind != "end":
        raise ExprError(f"unexpected {_show(tok)} after a complete expression", tok.col)
    return node


def walk(node: Node):
    """Every node of the tree, parents first."""
    yield node
    if isinstance(node, Unary):
        yield from walk(node.operand)
    elif isinstance(node, Binary):
        yield from walk(node.left)
        yield from walk(node.right)
    elif isinstance(node, Call):
        for a in node.args:
            yield from walk(a)
