"""FlexAttention modifiers without torch: the JSON tree → SymPy whitelist, masks as data,
the spec keys, and the message when torch is missing."""

from __future__ import annotations

import pytest
import sympy as sp

from derive.errors import InputError
from derive.model.masks import indicator, mask_side, parse_mask
from derive.flex.trace import parse_ref
from derive.flex.tree import HEAD, SCORE, TreeError, build
from derive.model.attention import i, j
from derive.prove.verdict import PROVED, UNDECIDED
from derive.spec.load import parse_spec


def tree(nodes, out, tables=None):
    return {"nodes": nodes, "out": {"n": out}, "tables": tables or {}, "line": 3}


ARGS = [{"op": "arg", "args": [{"name": n}], "line": None} for n in ("score", "b", "h", "q_idx", "kv_idx")]


def test_alibi_tree_becomes_a_per_head_symbol_with_the_sign_of_its_data():
    nodes = ARGS + [
        {"op": "table", "args": [{"name": "slopes"}], "line": 5},
        {"op": "getitem", "args": [{"n": 5}, {"n": 2}], "line": 6},
        {"op": "sub", "args": [{"n": 4}, {"n": 3}], "line": 6},
        {"op": "mul", "args": [{"n": 6}, {"n": 7}], "line": 6},
        {"op": "add", "args": [{"n": 0}, {"n": 8}], "line": 7},
    ]
    built = build(tree(nodes, 9, {"slopes": {"shape": [2], "values": [[1, 2], [1, 4]]}}), "score")
    slope = sp.Symbol("slopes_h", real=True, positive=True)
    assert built.expr == SCORE + slope * (j - i)
    assert built.per_head == {slope: [sp.Rational(1, 2), sp.Rational(1, 4)]}


@pytest.mark.parametrize("nodes, out, kind, message", [
    (ARGS + [{"op": "floor", "args": [{"n": 0}], "line": 4}], 5, "score", "the operation 'floor' is not supported"),
    (ARGS + [{"op": "add", "args": [{"n": 0}, {"n": 1}], "line": 4}], 5, "score",
     "the batch index b is not supported"),
    (ARGS + [{"op": "div", "args": [{"n": 0}, {"int": 0}], "line": 4}], 5, "score", "division by zero"),
    (ARGS + [{"op": "ge", "args": [{"n": 3}, {"n": 4}], "line": 4}], 5, "score",
     "a score_mod must return a number, got a boolean"),
    (ARGS + [{"op": "add", "args": [{"n": 3}, {"n": 4}], "line": 4}], 5, "mask", "a mask_mod must return a boolean"),
    (ARGS + [{"op": "add", "args": [{"n": 0}, {"inf": -1}], "line": 4}], 5, "score",
     "an infinite constant: a score_mod that returns −inf masks keys; write the condition as a mask_mod instead"),
    (ARGS + [{"op": "and", "args": [{"n": 3}, {"n": 4}], "line": 4}], 5, "score",
     "& needs two booleans (bitwise integer operations are not supported)"),
    (ARGS + [{"op": "add", "args": [{"n": 0}, {"n": 99}], "line": 4}], 5, "score", "malformed tree"),
    (ARGS + [{"op": "add", "args": [{"n": 0}, {"code": "__import__('os')"}], "line": 4}], 5, "score",
     "malformed tree"),
])
def test_tree_rejections_are_pinned(nodes, out, kind, message):
    with pytest.raises(TreeError) as exc:
        build(tree(nodes, out), kind)
    assert message in exc.value.text


def test_floats_are_exact_and_where_is_piecewise():
    nodes = ARGS + [
        {"op": "gt", "args": [{"n": 3}, {"n": 4}], "line": 4},
        {"op": "mul", "args": [{"n": 0}, {"float": [1, 10]}], "line": 4},
        {"op": "where", "args": [{"n": 5}, {"n": 6}, {"n": 0}], "line": 4},
    ]
    built = build(tree(nodes, 7), "score")
    assert built.expr == sp.Piecewise((SCORE / 10, i > j), (SCORE, True))
    assert HEAD not in built.expr.free_symbols


@pytest.mark.parametrize("text, expected", [
    ("mods.py:alibi", ("mods.py", "alibi", None)),
    ("sub/mods.py:generate_alibi_bias(8)", ("sub/mods.py", "generate_alibi_bias", [8])),
    ("mods.py:doc([0, 0, 1])", ("mods.py", "doc", [[0, 0, 1]])),
])
def test_parse_ref(text, expected):
    assert parse_ref(text) == expected


@pytest.mark.parametrize("text, message", [
    ("alibi", "expected FILE.py:FUNCTION or FILE.py:FACTORY(ARGS), e.g. mods.py:alibi"),
    ("mods.py:f(open('x'))", "the arguments of f(...) must be literals (numbers, strings, lists), got \"open('x')\""),
    ("mods.py:f(n=3)", "cannot read 'f(n=3)': expected NAME or NAME(ARGS) with literal arguments"),
    ("mods.py:1+", "cannot read '1+': expected NAME or NAME(ARGS)"),
])
def test_parse_ref_errors(text, message):
    with pytest.raises(ValueError) as exc:
        parse_ref(text)
    assert str(exc.value) == message


def test_spec_key_errors_before_any_code_runs():
    with pytest.raises(InputError) as exc:
        parse_spec('name = "x"\nscore = "dot(q, k)"\nscore_mod = "mods.py:a"\nmask_mod = "nofile"\n', "f.toml")
    assert str(exc.value) == ("f.toml: key 'score_mod': give either 'score' or 'score_mod', not both\n"
                              "f.toml: key 'mask_mod': expected FILE.py:FUNCTION or FILE.py:FACTORY(ARGS), "
                              "e.g. mods.py:alibi")


def test_no_torch_says_how_to_install(tmp_path, monkeypatch):
    import derive.flex.trace as T

    (tmp_path / "mods.py").write_text("def f(score, b, h, q_idx, kv_idx):\n    return score\n")
    spec = tmp_path / "s.toml"
    spec.write_text('name = "x"\nscore_mod = "mods.py:f"\n')
    real = T.importlib.util.find_spec
    monkeypatch.setattr(T.importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    from derive.spec import load_spec

    with pytest.raises(InputError) as exc:
        load_spec(spec)
    assert str(exc.value) == (f"{spec}: key 'score_mod': tracing a FlexAttention modifier needs torch: "
                              "pip install 'derive[torch]' (or pip install torch)")


def test_missing_modifier_file(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "x"\nscore_mod = "nope.py:f"\n')
    from derive.spec import load_spec

    with pytest.raises(InputError) as exc:
        load_spec(spec)
    assert str(exc.value) == f"{spec}: key 'score_mod': no file nope.py (looked in {tmp_path})"


@pytest.mark.parametrize("text, cond, side", [
    ("none", None, None),
    ("causal", j <= i, "past"),
    ("sliding_window(3)", sp.Abs(i - j) < 3, None),
    ("causal_window(3)", sp.And(j <= i, i - j < 3), "past"),
    ("prefix_lm(2)", sp.Or(j <= 2, j <= i), None),
])
def test_hand_written_masks(text, cond, side):
    m = parse_mask(text)
    assert (m, m.condition, mask_side(m)) == (text, cond, side)


def test_mask_indicator_unfolds_and_or_into_single_comparisons():
    from derive.crosscheck.evaluate import Instance, evaluate

    m = parse_mask("prefix_lm(2)")
    ind = indicator(m.condition)
    table = [[int(evaluate(ind, Instance(d=1, n=4), "float", {i: r, j: c})) for c in range(1, 5)] for r in range(1, 5)]
    assert table == [[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]


@pytest.mark.parametrize("a, b, status", [
    (parse_mask("sliding_window(4)"), parse_mask("sliding_window(4)"), PROVED),
    # |i − j| < 4 and −3 ≤ i − j ≤ 3 allow the same integer offsets
    (parse_mask("sliding_window(4)"), sp.And(i - j <= 3, j - i <= 3), PROVED),
    (parse_mask("sliding_window(4)"), parse_mask("sliding_window(5)"), UNDECIDED),  # no search here
    (parse_mask("causal"), i >= j, PROVED),
])
def test_same_mask(a, b, status):
    from derive.claims.modifiers import same_mask
    from derive.model.masks import Mask

    b = b if isinstance(b, Mask) else Mask("traced", b)
    assert same_mask(a, b)[0] == status


def test_per_head_kind_in_a_hand_written_spec():
    spec = parse_spec('name = "x"\nscore = "dot(q, k) / sqrt(d) - m * abs(i - j)"\n'
                      '[symbols]\nm = "per_head positive"\n')
    from derive.claims.variant import Variant

    assert sp.Symbol("m_h", real=True, positive=True) in Variant(spec).score().free_symbols


def test_decreasing_in_distance_on_hand_written_specs():
    from derive.claims.run import check_spec

    good = parse_spec('name = "a"\nscore = "dot(q, k) / sqrt(d) - m * abs(i - j)"\nmask = "causal"\n'
                      '[symbols]\nm = "per_head positive"\n[claims]\nc = "decreasing_in_distance"\n')
    two_sided = parse_spec('name = "b"\nscore = "dot(q, k) / sqrt(d) - m * abs(i - j)"\nmask = "sliding_window(3)"\n'
                           '[symbols]\nm = "scalar positive"\n[claims]\nc = "decreasing_in_distance"\n')
    bad = parse_spec('name = "c"\nscore = "dot(q, k) / sqrt(d) + m * (i - j)"\nmask = "sliding_window(3)"\n'
                     '[symbols]\nm = "scalar positive"\n[claims]\nc = "decreasing_in_distance"\n')
    assert check_spec(good).claims[0].verdict == "proved"
    assert check_spec(two_sided).claims[0].verdict == "proved"
    res = check_spec(bad).claims[0]
    assert res.verdict == "refuted"
    ce = res.counterexample
    # certified: both keys allowed, j_1 no farther than j_2, and the farther key scores higher
    i0, j1, j2 = ce["indices"]["i"], ce["indices"]["j_1"], ce["indices"]["j_2"]
    assert abs(i0 - j1) <= abs(i0 - j2) < 3 and ce["changed"] > ce["original"]


@pytest.mark.parametrize("mask, expr, verdict", [
    ("causal", "abs(i - j) + j", "proved"),  # i on every allowed key j ≤ i, not constant beyond
    ("none", "abs(i - j) + j", "refuted"),
    ("causal_window(1)", "j", "proved"),  # one allowed key per row
    ("sliding_window(2)", "j", "refuted"),
    ("prefix_lm(2)", "i", "proved"),
])
def test_row_constant_is_over_the_allowed_keys(mask, expr, verdict):
    from derive.claims.run import check_spec

    spec = parse_spec(f'name = "x"\nscore = "dot(q, k) / sqrt(d)"\nmask = "{mask}"\n'
                      f'[claims]\nc = "row_constant(\'{expr}\')"\n')
    res = check_spec(spec).claims[0]
    assert res.verdict == verdict, res.reason
    if verdict == "refuted":
        ce = res.counterexample
        assert ce["original"] != ce["changed"]


def test_a_jump_between_pieces_is_not_proved_by_the_derivative():
    """Each piece of the score is constant in the distance (derivative 0), but the far piece is
    higher: never proved, refuted with both keys allowed."""
    from derive.claims.run import check_spec
    from derive.model.masks import Mask
    from derive.flex.spec import Flex
    from derive.flex.tree import Built

    spec = parse_spec('name = "x"\nscore = "dot(q, k) / sqrt(d)"\nmask = "causal"\n'
                      '[claims]\nc = "decreasing_in_distance"\n')
    jump = Built(SCORE + sp.Piecewise((0, i - j < 2), (10, True)))
    import dataclasses

    spec = dataclasses.replace(spec, flex=Flex(score=jump), mask=Mask("causal", j <= i))
    res = check_spec(spec).claims[0]
    assert res.verdict == "refuted"
    assert res.counterexample["changed"] - res.counterexample["original"] == 10


def test_the_head_is_predeclared():
    from derive.claims.run import check_spec

    spec = parse_spec('name = "x"\nscore = "dot(q, k) / sqrt(d) - exp(-h) * abs(i - j)"\nmask = "causal"\n'
                      '[claims]\nc = "decreasing_in_distance"\n')
    assert check_spec(spec).claims[0].verdict == "proved"
    with pytest.raises(InputError) as exc:
        parse_spec('name = "x"\nscore = "dot(q, k)"\n[symbols]\nh = "scalar"\n', "f.toml")
    assert str(exc.value) == "f.toml: key 'symbols.h': 'h' is predeclared (head); choose another name"


def test_the_other_spec_of_equivalent_to_must_exist(tmp_path):
    from derive.spec import load_spec

    spec = tmp_path / "s.toml"
    spec.write_text('name = "x"\nscore = "dot(q, k)"\n[claims]\nc = \'equivalent_to("nope.toml")\'\n'
                    'm = "mask_equivalent(nope.toml)"\n')
    with pytest.raises(InputError) as exc:
        load_spec(spec)
    assert str(exc.value) == (
        f"{spec}: key 'claims.m', column 17: mask_equivalent needs a quoted file name: "
        "mask_equivalent(\"OTHER.toml\")\n"
        f"{spec}: key 'claims.c': equivalent_to: no file nope.toml (looked in {tmp_path})")


def test_check_help_says_that_tracing_runs_user_code():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "derive", "check", "--help"], capture_output=True, text=True,
                         check=True).stdout
    flat = " ".join(out.split())
    assert "A spec with score_mod or mask_mod (a FlexAttention modifier, FILE.py:FUNCTION) RUNS that Python code" in flat
    assert "--timeout SECONDS" in flat and "pip install 'derive[torch]'" in flat


@pytest.mark.parametrize("text", ["none", "causal", "sliding_window(3)", "prefix_lm(2)", "document(ids)"])
def test_masks_pickle_with_their_condition(text):
    import pickle

    m = parse_mask(text)
    back = pickle.loads(pickle.dumps(m))
    assert (back, back.condition) == (m, m.condition)


def test_window_offsets_are_all_the_allowed_distances_or_none():
    """A mask that allows distances 0, 1 and every distance from 100 on is not a window of {0, 1}:
    enumerating offsets up to a limit would prove row-constant terms that change at distance 100."""
    import sympy as sp

    from derive.claims.modifiers import _offsets
    from derive.model.attention import i, j

    assert _offsets(sp.And(j <= i, i - j < 4), "past", None) == [0, 1, 2, 3]
    assert _offsets(sp.And(j <= i, sp.Or(i - j <= 1, i - j >= 100)), "past", None) is None
    assert _offsets(sp.And(j <= i, i - j <= 64), "past", None) is None  # reaches the limit: not enumerated


def _doc_spec(tmp_path, score, claims, extra=""):
    (tmp_path / "none.toml").write_text('name = "none"\nscore = "dot(q, k) / sqrt(d)"\n')
    (tmp_path / "causal.toml").write_text('name = "causal"\nscore = "dot(q, k) / sqrt(d)"\nmask = "causal"\n')
    path = tmp_path / "doc.toml"
    path.write_text(f'name = "doc"\nscore = "{score}"\nmask = "document(ids)"\n[claims]\n{claims}{extra}')
    from derive.spec import load_spec

    return load_spec(path)


def _same_doc(ids, a, b) -> bool:
    return ids[a - 1] == ids[b - 1]  # positions are 1-based, IDS of the 0-based position t − 1


def test_a_false_claim_over_a_document_mask_has_a_certified_document_id_vector(tmp_path):
    from derive.claims.run import check_spec

    spec = _doc_spec(tmp_path, "dot(q, k) / sqrt(d) + b * (j - i)",
                     "dec = 'decreasing_in_distance'\nrc = 'row_constant(\"i - j\")'\nrci = 'row_constant(\"i\")'\n"
                     "mask = 'mask_equivalent(\"none.toml\")'\neq = 'equivalent_to(\"causal.toml\")'\n",
                     '[symbols]\nb = "scalar positive"\n')
    got = {c.name: c for c in check_spec(spec).claims}
    assert {k: c.verdict for k, c in got.items()} == {"dec": "refuted", "rc": "refuted", "rci": "proved",
                                                     "mask": "refuted", "eq": "refuted"}
    for c in got.values():
        ce = c.counterexample
        if ce is None:
            continue
        ids, n, idx = ce["values"]["ids"], ce["n"], ce["indices"]
        assert len(ids) == n and all(x in (0, 1, 2) for x in ids), c.name
        assert ce["enclosures"]["bits"] >= 64 and ce["original"] != ce["changed"]
        assert str(ce["mask"]).startswith("document(ids)")
    # replay each against the definition of the mask: IDS(i − 1) = IDS(j − 1)
    ce = got["dec"].counterexample
    i0, j1, j2, b = ce["indices"]["i"], ce["indices"]["j_1"], ce["indices"]["j_2"], ce["values"]["b"]
    assert _same_doc(ce["values"]["ids"], i0, j1) and _same_doc(ce["values"]["ids"], i0, j2)
    assert abs(i0 - j1) <= abs(i0 - j2) and b * (j2 - i0) > b * (j1 - i0)
    ce = got["rc"].counterexample
    i0, j1, j2 = ce["indices"]["i"], ce["indices"]["j_1"], ce["indices"]["j_2"]
    assert _same_doc(ce["values"]["ids"], i0, j1) and _same_doc(ce["values"]["ids"], i0, j2) and j1 != j2
    assert (ce["original"], ce["changed"]) == (i0 - j1, i0 - j2)
    ce = got["mask"].counterexample
    assert not _same_doc(ce["values"]["ids"], ce["indices"]["i"], ce["indices"]["j"])
    assert (ce["original"], ce["changed"]) == (0.0, 1.0)
    ce = got["eq"].counterexample  # a key after the query in the same document: causal hides it
    ids, i0 = ce["values"]["ids"], ce["indices"]["i"]
    assert any(_same_doc(ids, i0, t) for t in range(i0 + 1, ce["n"] + 1))


def test_label_vectors_shrink_and_describe_one_id_per_position():
    from derive.crosscheck.witness import find_witness
    from derive.model.masks import labelled

    f = sp.Function("ids", real=True)
    same = labelled(sp.Piecewise((1, sp.Eq(f(i - 1), f(j - 1))), (0, True)))
    wit = find_witness(same, sp.S.One)
    assert wit is not None and len(wit["instance"]["ids"]) == wit["instance"]["n"] == 2
    ids = wit["instance"]["ids"]
    assert not _same_doc(ids, wit["indices"]["i"], wit["indices"]["j"]) and sorted(ids) == [0, 1]


def test_a_three_index_table_is_an_opaque_function_and_its_lookup_reads_the_real_entries():
    from derive.model.tables import concrete_data
    from derive.flex.tree import BATCH, PerHead

    values = [[k, 1] for k in range(8)]  # bias[h, q, kv] = 4h + 2q + kv
    for idx, name, expect in (([{"n": 2}, {"n": 3}, {"n": 4}], "bias_h", lambda f: f(i - 1, j - 1)),
                              ([{"n": 1}, {"n": 2}, {"n": 4}], "bias", lambda f: f(BATCH, HEAD, j - 1))):
        nodes = ARGS + [
            {"op": "table", "args": [{"name": "bias"}], "line": 5},
            {"op": "getitem", "args": [{"n": 5}, {"tuple": idx}], "line": 6},
            {"op": "add", "args": [{"n": 0}, {"n": 6}], "line": 6},
        ]
        built = build(tree(nodes, 7, {"bias": {"shape": [2, 2, 2], "values": values}}), "score")
        assert built.expr == SCORE + expect(sp.Function(name, real=True))
        data = {**built.functions, **built.per_head_functions}
        if name == "bias_h":
            assert isinstance(data[name], PerHead) and data[name] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
            got = concrete_data(built.expr, data, 1).xreplace({SCORE: 0, i: 2, j: 1})
            assert got == 4 + 2 + 0
        else:  # b = 0 (the batch the real entries are read at), head 1, key 2
            got = concrete_data(built.expr, data, 1).xreplace({SCORE: 0, i: 1, j: 2})
            assert got == 0 + 2 + 1


def test_a_function_used_as_document_ids_and_in_the_score_gets_no_inconsistent_counterexample():
    """The score's ids(j) and the mask's ids are one function: both read the one drawn label
    vector (a polynomial for the score and labels for the mask would be two functions for one
    name), so the counterexample lists the ids once and no function stand-in for them."""
    from derive.claims.run import check_spec

    spec = parse_spec('name = "x"\nscore = "dot(q, k) / sqrt(d) + ids(j)"\nmask = "document(ids)"\n'
                      '[symbols]\nids = "function"\n[claims]\nc = "equivalent(\'dot(q, k) / sqrt(d)\')"\n')
    (res,) = check_spec(spec).claims
    ce = res.counterexample
    assert res.verdict == "refuted" and ce["functions"] is None and len(ce["values"]["ids"]) == ce["n"]
    # replayed by hand: row i, the keys with the query's id, the score plus ids of the key's position j
    import math

    ids, i = ce["values"]["ids"], ce["indices"]["i"]
    keys = [k for k in range(1, ce["n"] + 1) if ids[k - 1] == ids[i - 1]]
    scores = {k: ids[k] if k < len(ids) else None for k in keys}
    assert None not in scores.values()
    total = sum(math.exp(s) for s in scores.values())
    assert abs(math.exp(scores[ce["indices"]["j"]]) / total - ce["original"]) < 1e-5
    assert abs(1 / len(keys) - ce["changed"]) < 1e-5
