"""Key positions in the TOML source (derive.spec.positions): every key tomllib reads, found where written."""

from __future__ import annotations

import tomllib
from pathlib import Path

from derive.spec import load_spec
from derive.spec.positions import key_positions

ROOT = Path(__file__).resolve().parent.parent

TRICKY = '''# a comment with name = "not a key" and [claims]
name = "x # not a comment"   # trailing comment
"quoted key" = 'lit\\eral'
'single.quoted' = 1
dotted . part = 2
description = """
multi-line with = signs
[not_a_table]
and "quotes" \\""" inside"""
lit = \'\'\'
k = 'no'
\'\'\'
arr = [
  1, # comment ] inside
  "two]",
  [3, 4],
]
inline = { a = 1, "b c" = { d = 2 } }
when = 1979-05-27 07:32:00
[symbols]
b_k = "vector"   # kind
  b_q="vector"
[ claims ]
k_bias = "invariant(b_k)"
"odd name" = "shift_invariant"
[[runs]]
first = 1
[[runs]]
second = 2
'''


def _keys(data, prefix=()):
    for k, v in data.items():
        yield (*prefix, k)
        if isinstance(v, dict):
            yield from _keys(v, (*prefix, k))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for item in v:
                yield from _keys(item, (*prefix, k))


def test_every_key_is_found_where_written():
    pos = key_positions(TRICKY)
    assert set(pos) == set(_keys(tomllib.loads(TRICKY)))
    lines = TRICKY.splitlines()
    for key, (line, col) in pos.items():
        written = lines[line - 1][col - 1:]
        assert written.startswith((key[-1], f'"{key[-1]}"', f"'{key[-1]}'")), (key, written)
    assert pos[("name",)] == (2, 1)
    assert pos[("quoted key",)] == (3, 1)
    assert pos[("single.quoted",)] == (4, 1)
    assert pos[("dotted", "part")] == (5, 10)
    assert pos[("arr",)] == (13, 1)
    assert pos[("inline", "b c", "d")] == (18, 29)
    assert pos[("symbols", "b_q")] == (22, 3)
    assert pos[("claims",)] == (23, 3)
    assert pos[("claims", "odd name")] == (25, 1)
    assert pos[("runs", "second")] == (29, 1)


def test_never_raises_on_text_tomllib_rejects():
    assert key_positions('a = 1\nb = "unterminated\nc = 3\n') == {("a",): (1, 1), ("b",): (2, 1)}
    assert key_positions("") == {}


def test_spec_keeps_a_position_for_every_key():
    spec = load_spec(ROOT / "tests" / "specs" / "golden.toml")
    assert spec.positions[("score",)] == (2, 1)
    assert spec.positions[("symbols", "b_k")] == (8, 1)
    assert spec.positions[("claims", "k_bias_redundant")] == (11, 1)
    assert spec.positions[("claims", "shift_invariant")] == (15, 1)
