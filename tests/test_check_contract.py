"""The spec form of the issue is a contract: the file exactly as written must work."""

from __future__ import annotations

from pathlib import Path

from derive.claims.run import check_spec
from derive.cli import main
from derive.spec import load_spec, parse_spec

SPECS = Path(__file__).resolve().parent / "specs"


def test_issue_example_works_as_written():
    spec = load_spec(SPECS / "issue_example.toml")
    assert spec.normalizer == "softmax" and spec.mask == "causal" and spec.value_src == "v + b_v"
    verdicts = {c.name: c.verdict for c in check_spec(spec).claims}
    # RoPE after the bias rotates b_k by R(j − i): the K-bias is not redundant here
    assert verdicts == {"k_bias_redundant": "refuted", "q_bias_matters": "proved"}


def test_defaults_and_every_kind():
    spec = parse_spec('name = "x"\nscore = "dot(q + a + w, k + e) + s * f(i - j) + dot(g(k), a)"\n'
                      '[symbols]\na = "vector"\nw = "query"\ne = "key"\ns = "scalar"\nf = "function"\n'
                      'g = "function"\n[claims]\nc1 = "invariant(w)"\nc2 = "depends(g)"\n'
                      'c3 = "row_constant(\'dot(w, a) + s\')"\nc4 = "output_invariant(s)"\n', "x.toml")
    assert spec.normalizer == "softmax" and spec.mask == "none" and spec.value_src == "v"
    verdicts = {c.name: c.verdict for c in check_spec(spec).claims}
    assert verdicts == {"c1": "refuted", "c2": "proved", "c3": "proved", "c4": "refuted"}


def test_sink_normalizer_and_no_claims(tmp_path, capsys):
    p = tmp_path / "s.toml"
    p.write_text('name = "s"\nscore = "dot(q, k)"\nnormalizer = "sink(z)"\n[symbols]\nz = "scalar"\n')
    assert main(["check", str(p)]) == 0  # no claims: nothing refuted
    p.write_text('name = "s"\nscore = "dot(q, k)"\nnormalizer = "sink(zz)"\n[symbols]\nz = "scalar"\n')
    assert main(["check", str(p)]) == 2
    assert "unknown name 'zz': declare it under [symbols]; did you mean 'z'?" in capsys.readouterr().err


def test_diff_markdown(tmp_path, capsys):
    old, new = tmp_path / "a.toml", tmp_path / "b.toml"
    old.write_text('name = "a"\nscore = "dot(q, k + b)"\n[symbols]\nb = "vector"\n[claims]\nx = "invariant(b)"\n')
    new.write_text('name = "b"\nscore = "dot(q, k + b)"\nnormalizer = "softmax1"\n[symbols]\nb = "vector"\n'
                   '[claims]\nx = "invariant(b)"\ny = "can_abstain"\n')
    assert main(["diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "2 of 2 claims change verdict" in out
    assert "| **`x`** | `invariant(b)` | ✅ proved | ❌ refuted |" in out
    assert "| **`y`** | `can_abstain` | — | ✅ proved |" in out
