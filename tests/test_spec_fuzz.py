"""Fuzzing: the spec parser and ``derive check`` never raise anything but InputError,
never hang past the time bound, and every verdict is one of the three."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derive.claims.run import DEFAULT_CHECK, check_spec
from derive.errors import InputError
from derive.spec import parse_spec
from derive.language.parser import ExprError, parse

FUZZ = settings(derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))

ATOMS = ["q", "k", "v", "i", "j", "d", "n", "b", "c", "m", "r", "f", "2", "0.5", "0", "x_y"]
FUNCS = ["dot", "sqrt", "exp", "log", "tanh", "abs", "rope", "f", "r", "g"]


@st.composite
def exprs(draw, depth=0):
    if depth > 3 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(ATOMS))
    kind = draw(st.integers(0, 3))
    if kind == 0:
        op = draw(st.sampled_from(["+", "-", "*", "/", "**"]))
        return f"({draw(exprs(depth + 1))} {op} {draw(exprs(depth + 1))})"
    if kind == 1:
        return f"-{draw(exprs(depth + 1))}"
    fn = draw(st.sampled_from(FUNCS))
    args = draw(st.lists(exprs(depth + 1), min_size=1, max_size=2))
    return f"{fn}({', '.join(args)})"


@FUZZ
@given(st.text(alphabet="qkvij+-*/() ,.0123456789abcdfgnorstuxy_$#'\"\\\n", max_size=60))
def test_parser_total_on_junk(src):
    try:
        parse(src)
    except ExprError as exc:
        assert exc.column >= 1 and "\n" not in exc.message


@pytest.mark.slow
@FUZZ
@given(st.text(max_size=300))
def test_spec_loader_total_on_junk(text):
    try:
        parse_spec(text, "fuzz.toml")
    except InputError as exc:
        # every error of the file, one line each, each naming the file
        assert all(line.startswith("fuzz.toml") for line in str(exc).split("\n"))


SYMBOLS = '[symbols]\nb = "vector"\nc = "scalar"\nm = "scalar"\nr = "function"\nf = "function"\n'


@FUZZ
@given(exprs())
def test_translation_total(src):
    text = f'name = "f"\nscore = "{src}"\n{SYMBOLS}'
    try:
        parse_spec(text, "fuzz.toml")
    except InputError as exc:
        # every mistake of the expression (its first, then each undeclared name or unknown
        # function elsewhere in it), one line each, never the same column twice
        lines = str(exc).split("\n")
        assert all(line.startswith("fuzz.toml: key 'score'") for line in lines)
        columns = [line.split("column ")[1].split(":")[0] for line in lines if "column " in line]
        assert len(columns) == len(set(columns))


@st.composite
def scalars(draw, depth=0):
    if depth > 2 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(["i", "j", "d", "n", "c", "m", "2", "0.5"]))
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return f"dot({draw(vectors(depth + 1))}, {draw(vectors(depth + 1))})"
    if kind == 1:
        fn = draw(st.sampled_from(["sqrt", "exp", "log", "tanh", "abs", "r"]))
        return f"{fn}({draw(scalars(depth + 1))})"
    if kind == 2:
        return f"({draw(scalars(depth + 1))}) ** {draw(st.integers(-2, 3))}"
    op = draw(st.sampled_from(["+", "-", "*", "/"]))
    return f"({draw(scalars(depth + 1))} {op} {draw(scalars(depth + 1))})"


@st.composite
def vectors(draw, depth=0):
    if depth > 2 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(["q", "k", "v", "b"]))
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return f"rope({draw(vectors(depth + 1))}, {draw(scalars(depth + 1))})"
    if kind == 1:
        return f"f({draw(vectors(depth + 1))})"
    if kind == 2:
        return f"{draw(scalars(depth + 1))} * {draw(vectors(depth + 1))}"
    return f"({draw(vectors(depth + 1))} {draw(st.sampled_from(['+', '-']))} {draw(vectors(depth + 1))})"


CLAIMS = ["invariant(b)", "depends(c)", "output_invariant(b)", "row_constant('dot(q, b)')",
          "equivalent('dot(q, k)')", "shift_invariant", "weights_sum_to_one"]


CHECKED: list = []


@pytest.mark.slow
@settings(FUZZ, max_examples=12)
@given(scalars(), st.sampled_from(["softmax", "softmax1", "sigmoid"]), st.sampled_from(CLAIMS))
def test_check_on_random_specs(src, norm, claim):
    text = (f'name = "f"\nscore = "dot(q, k + b) + {src}"\nnormalizer = "{norm}"\n{SYMBOLS}'
            f'[claims]\nx = "{claim}"\n')
    try:
        spec = parse_spec(text, "fuzz.toml")
    except InputError:
        return  # e.g. a division by zero found while checking the spec
    CHECKED.append(src)
    t0 = time.time()
    res = check_spec(spec, DEFAULT_CHECK.merge(time_limit=1.0, witness_examples=50, examples=5))
    assert time.time() - t0 < 4 * 1.0 + 10
    assert all(c.verdict in ("proved", "refuted", "undecided") for c in res.claims), \
        [c.reason for c in res.claims if c.is_error]


@pytest.mark.slow
@settings(FUZZ, max_examples=150)
@given(scalars(), st.sampled_from(["softmax", "softmax1", "sigmoid"]), st.sampled_from(CLAIMS))
def test_check_on_random_specs_long(src, norm, claim):
    test_check_on_random_specs.hypothesis.inner_test(src, norm, claim)


@pytest.mark.slow  # counts what the slow test_check_on_random_specs checked, so it runs with it
def test_random_specs_were_mostly_valid():
    assert len(CHECKED) >= 6, CHECKED


HOSTILE = [
    "exp(exp(exp(exp(dot(q, k + b)))))",
    "(dot(q + b, k + b) + dot(q, b) + dot(k, b)) ** 8",
    "((((c ** 8) ** 8) ** 8) ** 8) * dot(q, k + b)",
    "log(log(log(dot(q, k + b)))) + sqrt(sqrt(c - dot(b, b)))",
]


@pytest.mark.slow
@pytest.mark.parametrize("score", HOSTILE)
def test_hostile_specs_stay_within_the_time_bound(score):
    text = (f'name = "h"\nscore = "{score}"\n{SYMBOLS}[claims]\nx = "invariant(b)"\n'
            f'y = "equivalent(\'dot(q, k)\')"\nz = "row_constant(\'{score}\')"\n')
    spec = parse_spec(text, "hostile.toml")
    t0 = time.time()
    res = check_spec(spec, DEFAULT_CHECK.merge(time_limit=1.0))
    # per claim at most a few bounded phases (expand, search, rewrite chain, cross-check)
    assert time.time() - t0 < 3 * (4 * 1.0 + 5)
    assert all(c.verdict in ("proved", "refuted", "undecided") for c in res.claims), \
        [(c.name, c.verdict, c.reason) for c in res.claims]


@settings(FUZZ, max_examples=40)
@given(st.dictionaries(st.sampled_from(["name", "score", "normalizer", "mask", "value", "nme", "claims"]),
                       st.one_of(st.text(max_size=30), st.integers(), st.sampled_from(
                           ["dot(q, k)", "softmax", "sink(s)", "causal", "v + q", "dot(q,", "q"])),
                       max_size=6))
def test_cli_on_random_toml_never_tracebacks(tmp_path_factory, data):
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from derive.cli import main

    lines = []
    for key, value in data.items():
        if isinstance(value, int):
            lines.append(f"{key} = {value}")
        else:
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'{key} = "{escaped}"')
    path = tmp_path_factory.mktemp("fuzz") / "spec.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        code = main(["check", str(path), "--format", "json", "--time-limit", "1"])
    assert code in (0, 1, 2)
    if code == 2:
        lines = err.getvalue().splitlines()
        assert lines and all(line.startswith("derive: error: ") for line in lines)
        assert "Traceback" not in err.getvalue()
