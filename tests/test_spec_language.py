"""The spec language as users write it (issue 8): names the engine uses internally are free
for users, numbers in scientific notation and numeric powers, signed scalars, every error of
a file at once, nowhere-real arguments, and bias_kv / sigmoid with one meaning."""

from __future__ import annotations

import sympy as sp
import pytest

from derive.claims.run import check_spec
from derive.claims.show import apart, latex, text
from derive.claims.variant import Variant
from derive.cli import main
from derive.errors import InputError
from derive.model import attention as A
from derive.spec import parse_spec
from derive.language.parser import ExprError, parse
from derive.language.translate import bindings, translate


def verdicts(src: str) -> dict:
    return {c.name: c.verdict for c in check_spec(parse_spec(src, "x.toml")).claims}


def results(src: str) -> dict:
    return {c.name: c for c in check_spec(parse_spec(src, "x.toml")).claims}


def value(src: str, symbols: dict | None = None):
    return translate(parse(src), bindings(symbols or {"x": "scalar"}))[0]


def run_error(tmp_path, capsys, text_: str) -> list[str]:
    path = tmp_path / "bad.toml"
    path.write_text(text_)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert all(line.startswith(f"derive: error: {path}: ") for line in lines), err
    return [line[len(f"derive: error: {path}: "):] for line in lines]


# ---- numbers ----------------------------------------------------------------------------


def test_scientific_notation_is_exact():
    assert value("1e-30") == sp.Rational(1, 10**30)
    assert value("2.5E3") == 2500
    assert value("1.5e+2") == 150
    assert value("3e0 * x") == 3 * sp.Symbol("x", real=True)


def test_numeric_powers_are_exact_and_cheap():
    assert value("10**30") == 10**30
    assert value("2**400") == 2**400
    assert value("2**-400") == sp.Rational(1, 2**400)
    assert value("(1/2)**100") == sp.Rational(1, 2**100)
    assert value("x**8") == sp.Symbol("x", real=True) ** 8


@pytest.mark.parametrize("src, col, msg", [
    ("2**2000", 2, "the constant is too large: it would have about 603 digits (limit 400)"),
    ("1e5**100", 4, "the constant is too large: it would have about 500 digits (limit 400)"),
    ("1e401", 1, "number 1e401 is too large or too small (limit 1e±400)"),
    ("x**9", 4, "exponent 9 too large (limit ±8 for a base that is not a number)"),
    ("2**1e3", 4, "the exponent must be an integer literal (use sqrt for roots)"),
    ("1234567890123e2", 1, "number 1234567890123e2… has too many digits (limit 12)"),
])
def test_number_limits_are_pinned(src, col, msg):
    with pytest.raises(ExprError) as exc:
        value(src)
    assert (exc.value.column, exc.value.message) == (col, msg)


def test_huge_constants_in_claims():
    src = ('name = "c"\nscore = "dot(q, k) / sqrt(d) + 10**30 * dot(q, b)"\n[symbols]\nb = "vector"\n'
           '[claims]\nk_shift = \'equivalent("dot(q, k) / sqrt(d) + 2**400 + 1e-30")\'\n'
           'rc = \'row_constant("2**400 * dot(q, b)")\'\nb = "invariant(b)"\n')
    assert verdicts(src) == {"k_shift": "proved", "rc": "proved", "b": "proved"}


# ---- signed scalars ---------------------------------------------------------------------


@pytest.mark.parametrize("kind, positive, negative, nonzero", [
    ("scalar", None, None, None),
    ("scalar positive", True, False, True),
    ("scalar negative", False, True, True),
    ("scalar nonzero", None, None, True),
])
def test_scalar_assumptions_are_on_the_symbol_and_on_fresh_copies(kind, positive, negative, nonzero):
    spec = parse_spec(f'name = "a"\nscore = "dot(q, k) * t"\n[symbols]\nt = "{kind}"\n', "a.toml")
    for rename in ({}, {"t": "t'"}):
        sym = Variant(spec, rename).binds["t"].obj
        assert sym.name == rename.get("t", "t") and sym.is_real
        assert (sym.is_positive, sym.is_negative, sym.is_nonzero) == (positive, negative, nonzero)


def test_extra_spaces_in_a_kind_are_accepted():
    spec = parse_spec('name = "a"\nscore = "dot(q, k) * t"\n[symbols]\nt = " scalar   positive "\n', "a.toml")
    assert spec.symbols == {"t": "scalar positive"}


def test_provers_use_the_sign():
    # sqrt(t**2) is t exactly when t > 0; for a plain scalar it is |t|, and t = -1 refutes
    base = 'name = "a"\nscore = "dot(q, k) * sqrt(t**2)"\n[symbols]\nt = "{}"\n[claims]\ne = \'equivalent("dot(q, k) * t")\'\n'
    assert verdicts(base.format("scalar positive")) == {"e": "proved"}
    assert verdicts(base.format("scalar")) == {"e": "refuted"}


# ---- names the engine uses internally are free --------------------------------------------


INTERNAL_NAMES = '''name = "internal names"
score = "dot(q, k + b_k) / (t * sqrt(d)) + u"
value = "v + M"
[symbols]
t = "scalar nonzero"
u = "scalar"
b_k = "vector"
M = "vector"
j_1 = "scalar"
j_2 = "scalar"
[claims]
k_bias = "invariant(b_k)"
t_matters = "depends(t)"
u_cancels = "invariant(u)"
m_shifts = "output_shift(M)"
rc = 'row_constant("dot(q, b_k) / t + j_1 * j_2")'
rc_no = 'row_constant("dot(k, b_k) * j_1")'
'''


def test_internal_names_are_usable():
    res = results(INTERNAL_NAMES)
    # a row-constant shift (⟨q, b_k⟩/(t√d) and u) cancels under softmax; t scales the scores
    assert {k: c.verdict for k, c in res.items()} == {
        "k_bias": "proved", "t_matters": "proved", "u_cancels": "proved", "m_shifts": "proved",
        "rc": "proved", "rc_no": "refuted"}
    # row_constant's two keys are named apart from the spec's j_1 and j_2
    ce = res["rc_no"].counterexample
    assert set(ce["indices"]) == {"j_3", "j_4"} and "j_1" in ce["values"]
    assert ce["compared"] == ["EXPR at key j_3", "EXPR at key j_4"]


def test_internal_objects_never_equal_a_declared_symbol():
    spec = parse_spec(INTERNAL_NAMES, "x.toml")
    binds = Variant(spec).binds
    assert binds["t"].obj != A.t and binds["u"].obj != A.u and binds["M"].obj != A.M
    # a key-kind M is a family of vectors, never the mask
    spec = parse_spec('name = "m"\nscore = "dot(q, M)"\n[symbols]\nM = "key"\n', "m.toml")
    assert Variant(spec).binds["M"].obj != A.M


def test_reports_show_the_bound_variables_apart_from_declared_names():
    spec = parse_spec(INTERNAL_NAMES, "x.toml")
    w = Variant(spec).output()
    plain = latex(w)
    # the default rendering: Σ_u next to the user's u, M_{i,t} next to the user's M and t
    assert r"\sum_{t=1}^{n}" in plain and r"\sum_{u=1}^{n}" in plain and "{M}_{i,t}" in plain
    with apart(A.display_apart(set(spec.symbols))):
        shown, flat = latex(w), text(w)
    assert r"\sum_{\tau=1}^{n}" in shown and r"\sum_{\omega=1}^{n}" in shown and r"{\mathbb{M}}_{i,\tau}" in shown
    assert "(τ, 1, n)" in flat and "(ω, 1, n)" in flat and "𝕄[i,τ]" in flat
    assert r"\sum_{t=" not in shown and r"\sum_{u=" not in shown and "{M}_{i," not in shown
    assert latex(w) == plain  # outside the check, nothing is renamed


def test_no_display_change_without_a_collision():
    assert A.display_apart({"b_k", "s"}) == {}


# ---- bias_kv: s*_i = ⟨q_i, k*⟩/√d and v* in the output -------------------------------------


BIAS_KV = '''name = "learned key/value token"
score = "dot(q, k + b_k) / sqrt(d)"
normalizer = "bias_kv(k_star, v_star)"
value = "v + b_v"
[symbols]
b_k = "vector"
b_v = "vector"
k_star = "vector"
v_star = "vector"
[claims]
k_bias = "invariant(b_k)"
v_star_in_output = "output_invariant(v_star)"
v_star_not_in_weights = "invariant(v_star)"
k_star_matters = "depends(k_star)"
v_bias = "output_shift(b_v)"
shift = "shift_invariant"
'''


def test_bias_kv_follows_its_definition():
    # b_k shifts every real score by ⟨q_i, b_k⟩/√d but not s*_i = ⟨q_i, k*⟩/√d: not redundant;
    # v* is mixed into the output with weight e^{s*}/(e^{s*} + Σ e^{x_t}) > 0, not into the
    # weights; k* changes s*; the real keys' weights sum to < 1, so b_v is scaled.
    assert verdicts(BIAS_KV) == {
        "k_bias": "refuted", "v_star_in_output": "refuted", "v_star_not_in_weights": "proved",
        "k_star_matters": "proved", "v_bias": "refuted", "shift": "refuted"}


def test_bias_kv_score_depends_on_the_query():
    # no q in the score: only s*_i = ⟨q_i, k*⟩/√d brings q in (a free s* would prove this)
    src = ('name = "kv"\nscore = "dot(k, w)"\nnormalizer = "bias_kv(k_star, v_star)"\n[symbols]\n'
           'w = "vector"\nk_star = "vector"\nv_star = "vector"\n[claims]\nq = "invariant(q)"\n')
    assert verdicts(src) == {"q": "refuted"}


def test_bias_kv_output_formula():
    spec = parse_spec(BIAS_KV, "kv.toml")
    var = Variant(spec)
    q, kstar, vstar = var.binds["q"].obj[A.i], var.binds["k_star"].obj, var.binds["v_star"].obj
    from derive.model.vectors import Dot

    s_star = Dot(q, kstar) / sp.sqrt(A.d)
    assert var.params == {"s_star": s_star} and var.extra == vstar
    den = sp.exp(s_star) + A.row_sum(lambda x: sp.exp(var.score(x)))
    assert var.output() == A.mixed_output(var.weight, var.value) + sp.exp(s_star) / den * vstar


def test_bias_kv_value_that_is_the_v_bias_shifts_the_output():
    # v* = b_v: out = Σ p_j (v_j + b_v) + p* b_v = Σ p_j v_j + b_v since Σ p_j + p* = 1
    src = BIAS_KV.replace("bias_kv(k_star, v_star)", "bias_kv(k_star, b_v)")
    src = src.split("[claims]")[0] + '[claims]\nv_bias = "output_shift(b_v)"\n'
    assert verdicts(src)["v_bias"] in ("proved", "undecided")  # never refuted: it is true


# ---- sigmoid: its bias is the user's when named, its own otherwise --------------------------


def test_sigmoid_unnamed_bias_does_not_collide_with_a_user_b():
    src = ('name = "sg"\nscore = "dot(q, k) / sqrt(d) + b"\nnormalizer = "sigmoid"\n[symbols]\nb = "scalar"\n'
           '[claims]\nb_matters = "depends(b)"\nb_inv = "invariant(b)"\n')
    res = results(src)
    assert res["b_matters"].verdict == "proved" and res["b_inv"].verdict == "refuted"
    values = res["b_inv"].counterexample["values"]
    assert "b" in values and "b'" in values and "sigmoid.b" in values  # listed as the sigmoid's bias
    var = Variant(parse_spec(src, "sg.toml"))
    assert var.params["b"] == sp.Symbol("sigmoid.b", real=True) != var.binds["b"].obj
    assert latex(var.params["b"]) == r"b_{\mathrm{sigmoid}}"


def test_sigmoid_named_bias():
    src = ('name = "sg"\nscore = "dot(q, k + b_k) / sqrt(d)"\nnormalizer = "sigmoid(b0)"\n[symbols]\n'
           'b0 = "scalar"\nb_k = "vector"\n[claims]\nb0 = "depends(b0)"\nk = "invariant(b_k)"\n'
           's = "shift_invariant"\n')
    assert verdicts(src) == {"b0": "proved", "k": "refuted", "s": "refuted"}
    spec = parse_spec(src, "sg.toml")
    assert spec.normalizer_text == "sigmoid(b0)" and Variant(spec).params["b"] == sp.Symbol("b0", real=True)


# ---- errors: the unknown-name message, every error at once ---------------------------------


def test_unknown_name_without_a_near_name(tmp_path, capsys):
    got = run_error(tmp_path, capsys, 'name = "x"\nscore = "dot(q, k) + w"\n')
    assert got == ["key 'score', column 13: unknown name 'w': declare it under [symbols]"]


def test_unknown_name_with_a_near_name(tmp_path, capsys):
    got = run_error(tmp_path, capsys, 'name = "x"\nscore = "dot(q, k) + alpha1"\n[symbols]\nalpha = "scalar"\n')
    assert got == ["key 'score', column 13: unknown name 'alpha1': declare it under [symbols]; did you mean 'alpha'?"]


def test_every_error_of_a_file_at_once(tmp_path, capsys):
    got = run_error(tmp_path, capsys, '''name = "x"
score = "dot(q, k) + w + bb"
value = "v + c"
normalizer = "sink(z)"
mask = "casual"
colour = "red"
[symbols]
b = "vectr"
bb = "scalar"
[claims]
one = "invariant(b)"
two = "invarient(bb)"
three = 'row_constant("dot(q, k) * b")'
''')
    assert got == [
        "key 'colour': unknown key (expected one of name, description, score, score_mod, score2, normalizer, mask, "
        "mask_mod, value, symbols, claims)",
        "key 'symbols.b': unknown kind 'vectr'; did you mean 'vector'? (expected one of vector, query, key, "
        "scalar, scalar positive, scalar negative, scalar nonzero, per_head, per_head positive, per_head negative, "
        "function)",
        "key 'score', column 13: unknown name 'w': declare it under [symbols]",
        "key 'value', column 5: unknown name 'c': declare it under [symbols]",
        "key 'normalizer', column 6: unknown name 'z': declare it under [symbols]",
        "key 'mask': unknown mask 'casual'; did you mean 'causal'? (expected none, causal, sliding_window(W), causal_window(W), prefix_lm(P) or document(IDS))",
        "key 'claims.two', column 1: unknown claim 'invarient'; did you mean 'invariant'? (expected one of "
        "invariant, depends, output_invariant, output_shift, row_constant, equivalent, shift_invariant, "
        "can_abstain, weights_sum_to_one, decreasing_in_distance, equivalent_to, mask_equivalent)",
    ]  # the uses of the wrongly declared b (claims one and three) are not reported again


def test_errors_of_every_file(tmp_path, capsys):
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text('name = "a"\nscore = "w"\n')
    b.write_text('name = "b"\nscore = "dot(q, k)"\nmask = "x"\n')
    assert main(["check", str(a), str(b)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"derive: error: {a}: key 'score', column 1: unknown name 'w': declare it under [symbols]",
        f"derive: error: {b}: key 'mask': unknown mask 'x' (expected none, causal, sliding_window(W), causal_window(W), prefix_lm(P) or document(IDS))",
    ]


def test_parse_spec_raises_one_error_with_one_line_per_error():
    with pytest.raises(InputError) as exc:
        parse_spec('score = "w"\n', "f.toml")
    assert str(exc.value).split("\n") == [
        "f.toml: missing required key 'name'",
        "f.toml: key 'score', column 1: unknown name 'w': declare it under [symbols]",
    ]


NORM = 'name = "x"\nscore = "dot(q, k)"\nnormalizer = "{}"\n[symbols]\nz = "scalar"\nkv = "vector"\n'


@pytest.mark.parametrize("norm, message", [
    ("sink", "key 'normalizer': sink needs the sink logit (a declared scalar): sink(NAME)"),
    ("sink(kv)", "key 'normalizer', column 6: the sink logit 'kv' must be a scalar, not a vector"),
    ("sink(z, z)", "key 'normalizer': sink needs the sink logit (a declared scalar): sink(NAME)"),
    ("sigmoid(kv)", "key 'normalizer', column 9: the sigmoid bias 'kv' must be a scalar, not a vector"),
    ("sigmoid(zz)", "key 'normalizer', column 9: unknown name 'zz': declare it under [symbols]; did you mean 'z'?"),
    ("bias_kv", "key 'normalizer': bias_kv needs the learned key k* (a declared vector) and the learned value v* "
                "(a declared vector): bias_kv(K_STAR, V_STAR)"),
    ("bias_kv(kv)", "key 'normalizer': bias_kv needs the learned key k* (a declared vector) and the learned "
                    "value v* (a declared vector): bias_kv(K_STAR, V_STAR)"),
    ("bias_kv(kv, z)", "key 'normalizer', column 13: the learned value v* 'z' must be a vector, not a scalar"),
    ("softmax(z)", "key 'normalizer', column 9: softmax takes no argument"),
    ("sink(1)", "key 'normalizer', column 6: the sink logit must be a name, got '1'"),
])
def test_normalizer_arguments_are_pinned(tmp_path, capsys, norm, message):
    assert run_error(tmp_path, capsys, NORM.format(norm)) == [message]


@pytest.mark.parametrize("decl, message", [
    ('exp = "scalar"', "key 'symbols.exp': 'exp' is a built-in function; choose another name"),
    ('t = "scalar positve"', "key 'symbols.t': unknown kind 'scalar positve'; did you mean 'scalar positive'?"),
])
def test_symbol_declarations_are_pinned(tmp_path, capsys, decl, message):
    got = run_error(tmp_path, capsys, f'name = "x"\nscore = "dot(q, k)"\n[symbols]\n{decl}\n')
    assert len(got) == 1 and got[0].startswith(message), got


# ---- nowhere-real arguments ----------------------------------------------------------------


@pytest.mark.parametrize("score, message", [
    ("sqrt(-d)", "key 'score', column 1: sqrt() of an argument that is negative for every value: "
                 "the expression is nowhere real"),
    ("dot(q, k) + log(-1 - dot(k, k))", "key 'score', column 13: log() of an argument that is ≤ 0 for every "
                                        "value: the expression is nowhere real"),
    ("dot(q, k) * sqrt(-1 - x**2)", "key 'score', column 13: sqrt() of an argument that is negative for every "
                                    "value: the expression is nowhere real"),
    ("log(-p * exp(x))", "key 'score', column 1: log() of an argument that is ≤ 0 for every value: "
                         "the expression is nowhere real"),
    ("log(-abs(x))", "key 'score', column 1: log() of an argument that is ≤ 0 for every value: "
                     "the expression is nowhere real"),
    ("sqrt(-2)", "key 'score', column 1: sqrt() of an argument that is negative for every value: "
                 "the expression is nowhere real"),
    ("log(0)", "key 'score', column 1: log() of an argument that is ≤ 0 for every value: "
               "the expression is nowhere real"),
])
def test_nowhere_real_is_bad_input(tmp_path, capsys, score, message):
    text_ = f'name = "x"\nscore = "{score}"\n[symbols]\nx = "scalar"\np = "scalar positive"\n'
    assert run_error(tmp_path, capsys, text_) == [message]


@pytest.mark.parametrize("score", [
    "sqrt(x)", "log(dot(k, k))", "log(d - 1)", "sqrt(dot(q, k))", "log(x**2)", "sqrt(0)", "log(exp(x))",
    "sqrt(-x)", "log(-m)", "sqrt(-n + 3)",
])
def test_arguments_real_somewhere_are_accepted(score):
    parse_spec(f'name = "x"\nscore = "{score}"\n[symbols]\nx = "scalar"\nm = "scalar negative"\n', "x.toml")


def test_a_counterexample_must_respect_the_declared_signs():
    from derive.claims.core import respects_signs

    p, m, z = sp.Symbol("p", positive=True), sp.Symbol("m", negative=True), sp.Symbol("z", nonzero=True)
    x = sp.Symbol("x", real=True)
    assert respects_signs({p: 1.0, m: -0.5, z: -2.0, x: 0.0})
    assert not respects_signs({p: 0.0}) and not respects_signs({m: 1.0}) and not respects_signs({z: 0.0})
    g = sp.Symbol("clipped.gamma'", nonnegative=True)
    assert respects_signs({g: 0.0}) and not respects_signs({g: -1.0})


def test_a_claim_true_for_positive_scalars_is_never_refuted():
    # t·|x| = |t·x| for t > 0 only: with t declared positive no counterexample may use t ≤ 0
    src = ('name = "a"\nscore = "dot(q, k) * t * abs(x)"\n[symbols]\nt = "scalar {}"\nx = "scalar"\n'
           '[claims]\ne = \'equivalent("dot(q, k) * abs(t * x)")\'\n')
    assert verdicts(src.format("positive")) == {"e": "proved"}
    # for t < 0 the claim is false (the scores change sign); a counterexample with t ≥ 0 is
    # discarded, so until the search draws values of the declared sign it may stay undecided
    res = results(src.format("negative"))["e"]
    assert res.verdict in ("refuted", "undecided")
    if res.verdict == "refuted":
        assert res.counterexample["values"]["t"] < 0


def test_scientific_notation_tokens_and_columns():
    from derive.language.parser import Binary, Name, Num

    assert parse("1e-30 + 2.5E3*x") == Binary(
        "+", Num("1e-30", 1), Binary("*", Num("2.5E3", 9), Name("x", 15), 14), 7)
    with pytest.raises(ExprError) as exc:
        parse("2e")  # no exponent digits: the number 2, then the name e
    assert (exc.value.column, exc.value.message) == (2, "unexpected 'e' after a complete expression")


def test_tex_report_spells_the_names_shown_apart():
    from derive.render.markup import tex_text  # the check report's LaTeX filter

    assert tex_text("Sum(x_τ, (τ, 1, n)) 𝕄[i,ω]") == r"Sum(x\_$\tau$, ($\tau$, 1, n)) $\mathbb{M}$[i,$\omega$]"


def test_property_counterexample_lists_its_mask_apart_from_a_declared_M():
    src = ('name = "m"\nscore = "dot(q, k + M)"\nnormalizer = "softmax1"\n[symbols]\nM = "vector"\n'
           '[claims]\nsi = "shift_invariant"\n')
    values = results(src)["si"].counterexample["values"]
    assert "𝕄" in values and "M" not in values
    plain = results(src.replace("M", "B"))["si"].counterexample["values"]
    assert "M" in plain and "𝕄" not in plain


@pytest.mark.parametrize("lines, message", [
    ('value = "v * sqrt(-d)"', "key 'value', column 5: sqrt() of an argument that is negative for every value: "
                               "the expression is nowhere real"),
    ("[claims]\nc = 'equivalent(\"dot(q, k) + log(-n)\")'",
     "key 'claims.c', column 25: log() of an argument that is ≤ 0 for every value: the expression is nowhere real"),
    ("[claims]\nc = 'row_constant(\"sqrt(-p * p)\")'",
     "key 'claims.c', column 15: sqrt() of an argument that is negative for every value: "
     "the expression is nowhere real"),
])
def test_nowhere_real_names_key_and_column(tmp_path, capsys, lines, message):
    text_ = f'name = "x"\nscore = "dot(q, k)"\n{lines}\n'
    if "[claims]" in lines:
        text_ = f'name = "x"\nscore = "dot(q, k)"\n[symbols]\np = "scalar nonzero"\n{lines}\n'
    assert run_error(tmp_path, capsys, text_) == [message]


def test_registry_parameters_never_equal_declared_names():
    src = 'name = "c"\nscore = "dot(q, k) * zeta + c_cap"\nnormalizer = "{}"\n[symbols]\nzeta = "scalar"\nc_cap = "scalar"\n'
    clipped = Variant(parse_spec(src.format("clipped"), "c.toml"))
    assert clipped.params["zeta"] == 1 + sp.Symbol("clipped.zeta'", nonnegative=True)
    assert clipped.binds["zeta"].obj not in clipped.params["zeta"].free_symbols
    softcap = Variant(parse_spec(src.format("softcap"), "c.toml"))
    assert softcap.params["c"] == sp.Symbol("softcap.c_cap", positive=True) != softcap.binds["c_cap"].obj
