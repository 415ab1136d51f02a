"""The expression parser: precedence, positions, limits."""

from __future__ import annotations

import pytest

from derive.language.parser import LIMITS, Binary, Call, ExprError, Name, Num, Unary, parse


def test_precedence_and_associativity():
    assert parse("a - b - c") == Binary("-", Binary("-", Name("a", 1), Name("b", 5), 3), Name("c", 9), 7)
    e = parse("-x**2")
    assert isinstance(e, Unary) and isinstance(e.operand, Binary) and e.operand.op == "**"
    e = parse("2**3**2")
    assert e.op == "**" and isinstance(e.right, Binary) and e.right.op == "**"
    e = parse("a + b * c")
    assert e.op == "+" and e.right.op == "*"


def test_calls_and_columns():
    e = parse("dot(rope(q + b_q, i), k) / sqrt(d)")
    assert isinstance(e.left, Call) and e.left.func == "dot" and e.left.col == 1
    assert e.left.args[0].args[0].right == Name("b_q", 14)
    assert parse("1.5") == Num("1.5", 1)


@pytest.mark.parametrize("src, col, msg", [
    ("(a", 3, "expected ')'"),
    ("a b", 3, "unexpected 'b'"),
    ("3 $", 3, "unexpected character '$'"),
    ("", 1, "empty expression"),
    ("a +", 4, "expected a number"),
    ("f(a,)", 5, "expected a number"),
    ("1234567890123", 1, "too many digits"),
])
def test_errors_have_columns(src, col, msg):
    with pytest.raises(ExprError) as exc:
        parse(src)
    assert exc.value.column == col and msg in exc.value.message


def test_limits():
    with pytest.raises(ExprError, match="too long"):
        parse("a+" * LIMITS["length"] + "a")
    with pytest.raises(ExprError, match="nested too deeply"):
        parse("(" * 60 + "a" + ")" * 60)
    with pytest.raises(ExprError, match="too large"):
        parse("+".join(["a"] * 300))
