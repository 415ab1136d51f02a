"""Bad input: one line naming the file, the key and the column; exit code 2; no traceback."""

from __future__ import annotations

import pytest

from derive.cli import main

BASE = '''name = "t"
score = "dot(rope(q + b_q, i), rope(k + b_k, j)) / sqrt(d)"
normalizer = "softmax"
mask = "causal"
value = "v + b_v"
[symbols]
b_q = "vector"
b_k = "vector"
b_v = "vector"
s = "scalar"
[claims]
k = "invariant(b_k)"
'''

CASES = [
    ("name = \"t\"", "name == \"t\"", "malformed TOML: Invalid value (at line 1, column 7)"),
    ("mask =", "masc =", "key 'masc': unknown key; did you mean 'mask'?"),
    ("/ sqrt(d)", "/ sqr(d)", "key 'score', column 43: unknown function 'sqr'; did you mean 'sqrt'?"),
    ("k + b_k, j", "k + b_kk, j", "key 'score', column 32: unknown name 'b_kk': declare it under [symbols]; did you mean 'b_k'?"),
    ("k + b_k, j", "k * b_k, j", "key 'score', column 30: cannot multiply two vectors: use dot(a, b)"),
    ("/ sqrt(d)\"", "/ sqrt(d) + q\"", "key 'score', column 51: cannot add a vector to a scalar"),
    ("score = \"dot(rope(q + b_q, i), rope(k + b_k, j)) / sqrt(d)\"", "score = \"q + b_q\"",
     "key 'score', column 1: the expression is a vector, but a scalar is needed"),
    ("\"v + b_v\"", "\"dot(v, b_v)\"", "key 'value', column 1: the expression is a scalar, but a vector is needed"),
    ("\"softmax\"", "\"softmx\"", "key 'normalizer': unknown normalizer 'softmx'; did you mean 'softmax'?"),
    ("\"softmax\"", "\"sink(b_q)\"", "key 'normalizer', column 6: the sink logit 'b_q' must be a scalar"),
    ("\"causal\"", "\"casual\"", "key 'mask': unknown mask 'casual'; did you mean 'causal'?"),
    ("\"invariant(b_k)\"", "\"invariant(b_kx)\"", "key 'claims.k', column 11: unknown name 'b_kx': declare it under [symbols]; did you mean 'b_k'?"),
    ("\"invariant(b_k)\"", "\"invarient(b_k)\"", "key 'claims.k', column 1: unknown claim 'invarient'; did you mean 'invariant'?"),
    ("\"invariant(b_k)\"", "'row_constant(\"dot(q, kk)\")'", "key 'claims.k', column 22: unknown name 'kk': declare it under [symbols]; did you mean 'k'?"),
    ("\"invariant(b_k)\"", "\"invariant(d)\"", "key 'claims.k', column 11: 'd' is the dimension and cannot be varied"),
    ("\"invariant(b_k)\"", "\"output_shift(s)\"",
     "key 'claims.k', column 14: output_shift needs a shared vector (kind \"vector\"); 's' is a scalar"),
    ("\"invariant(b_k)\"", "\"shift_invariant(b_k)\"", "key 'claims.k', column 17: shift_invariant takes no argument"),
    ("b_q = \"vector\"", "b_q = \"vectr\"", "key 'symbols.b_q': unknown kind 'vectr'; did you mean 'vector'?"),
    ("b_q = \"vector\"", "b_q = \"vector\"\nq = \"vector\"", "key 'symbols.q': 'q' is predeclared"),
    ("/ sqrt(d)", "/ sqrt(d) ** 100", "key 'score', column 54: exponent 100 too large"),
    ("/ sqrt(d)", "/ sqrt(d) ** b_q", "key 'score', column 54: the exponent must be an integer literal"),
    ("/ sqrt(d)", "/ (d - d)", "key 'score', column 41: division by zero"),
    ("/ sqrt(d)", "/ dot(q)", "key 'score', column 43: dot() takes 2 arguments, got 1"),
    ("/ sqrt(d)", "/ sqrt(b_q)", "key 'score', column 48: sqrt() needs a scalar, got a vector"),
    ("/ sqrt(d)", "/ s(d)", "key 'score', column 43: 's' is a scalar, not a function"),
    ("/ sqrt(d)", "/ __import__(d)", "key 'score', column 43: unknown function '__import__'"),
    ("/ sqrt(d)", "/ sqrt(d); import os", "key 'score', column 50: unexpected character ';'"),
]


@pytest.mark.parametrize("old, new, message", CASES)
def test_pinned_error(tmp_path, capsys, old, new, message):
    assert old in BASE
    path = tmp_path / "bad.toml"
    path.write_text(BASE.replace(old, new, 1))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"derive: error: {path}: ")
    assert message in err, err
    assert "Traceback" not in err


def test_missing_file_and_key(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope.toml")]) == 2
    assert "cannot read" in capsys.readouterr().err
    p = tmp_path / "x.toml"
    p.write_text('name = "x"\n')
    assert main(["check", str(p)]) == 2
    assert "missing required key 'score'" in capsys.readouterr().err


def test_good_base_is_accepted(tmp_path):
    from derive.spec import load_spec

    p = tmp_path / "ok.toml"
    p.write_text(BASE)
    assert load_spec(p).claims[0].kind == "invariant"
