"""Adversarial specs that once got a wrong verdict from ``derive check``: each pins the verdict
that the claim's definition (docs/spec.md) gives."""

from __future__ import annotations

import importlib.util

import pytest

from derive.claims.run import DEFAULT_CHECK, check_spec
from derive.spec import load_spec
from tests.conftest import IN_CI

MODS = """import torch


def future(b, h, q_idx, kv_idx):
    return kv_idx > q_idx


def causal(b, h, q_idx, kv_idx):
    return kv_idx <= q_idx
"""


def _torch():
    if importlib.util.find_spec("torch") is None:
        if IN_CI:
            pytest.fail("torch is required in CI (CI=true) but is not installed")
        pytest.skip("torch is not installed")


def _check(tmp_path, text: str) -> dict:
    (tmp_path / "mods.py").write_text(MODS)
    (tmp_path / "s.toml").write_text(text)
    return {c.name: c for c in check_spec(load_spec(tmp_path / "s.toml"), DEFAULT_CHECK).claims}


def test_output_shift_is_false_when_a_row_has_no_allowed_key(tmp_path):
    # A row with no allowed key has output 0 whatever the value (docs/spec.md, Masks), so the
    # output is not shifted by b_v there: the last row of a strictly-future mask_mod.
    _torch()
    got = _check(tmp_path, 'name = "s"\nscore = "dot(q, k)/sqrt(d)"\nvalue = "v + b_v"\n'
                           'mask_mod = "mods.py:future"\n[symbols]\nb_v = "vector"\n'
                           '[claims]\nos = "output_shift(b_v)"\n')
    c = got["os"]
    assert c.verdict == "refuted"
    assert c.reason == ("the mask mods.py:future leaves row i = 1 with no allowed key when n = 1; "
                        "the output of such a row is 0, not shifted by b_v")
    assert c.counterexample["n"] == 1 and c.counterexample["values"] == {"b_v": [1]}


def test_output_shift_still_proved_when_every_row_has_a_key(tmp_path):
    _torch()
    got = _check(tmp_path, 'name = "s"\nscore = "dot(q, k)/sqrt(d)"\nvalue = "v + b_v"\n'
                           'mask_mod = "mods.py:causal"\n[symbols]\nb_v = "vector"\n'
                           '[claims]\nos = "output_shift(b_v)"\n')
    assert got["os"].verdict == "proved"


ALIBI = """import torch

slopes = torch.tensor([0.5, -0.25, 1.0])


def alibi(score, b, h, q_idx, kv_idx):
    return score + slopes[h] * (kv_idx - q_idx)
"""


def test_a_declared_name_h_is_not_the_per_head_symbol_of_name(tmp_path):
    # A shared scalar sl_h is not the per-head sl at head h: equivalent(... + sl_h*(j - i)) was
    # proved, for every value of the scalar, because both were the SymPy symbol sl_h.
    from derive.errors import InputError

    (tmp_path / "s.toml").write_text('name = "s"\nscore = "dot(q, k)/sqrt(d) + sl*(j - i)"\n[symbols]\n'
                                     'sl = "per_head"\nsl_h = "scalar"\n[claims]\n'
                                     'eq = \'equivalent("dot(q, k)/sqrt(d) + sl_h*(j - i)")\'\n')
    with pytest.raises(InputError) as exc:
        load_spec(tmp_path / "s.toml")
    assert "key 'symbols.sl_h': 'sl_h' is how the per-head sl at head h is written (sl_h); choose another name" \
        in str(exc.value)


@pytest.mark.slow
def test_a_declared_name_h_is_not_a_captured_per_head_table(tmp_path):
    _torch()
    from derive.errors import InputError

    (tmp_path / "mods.py").write_text(ALIBI)
    (tmp_path / "s.toml").write_text('name = "s"\nscore_mod = "mods.py:alibi"\n[symbols]\nslopes_h = "scalar"\n'
                                     '[claims]\neq = \'equivalent("dot(q, k)/sqrt(d) + slopes_h*(j - i)")\'\n')
    with pytest.raises(InputError) as exc:
        load_spec(tmp_path / "s.toml")
    assert "key 'symbols.slopes_h': 'slopes_h' is how the per-head slopes at head h is written" in str(exc.value)
    # the per-head symbol itself, declared under its own name, is still the captured table
    (tmp_path / "s.toml").write_text('name = "s"\nscore_mod = "mods.py:alibi"\n[symbols]\nslopes = "per_head"\n'
                                     '[claims]\neq = \'equivalent("dot(q, k)/sqrt(d) + slopes*(j - i)")\'\n')
    got = {c.name: c.verdict for c in check_spec(load_spec(tmp_path / "s.toml"), DEFAULT_CHECK).claims}
    assert got == {"eq": "proved"}


HEAD_MASK = """import torch

open_heads = torch.tensor([1.0, 0.0])


def head_mask(b, h, q_idx, kv_idx):
    return (open_heads[h] > 0.5) | (kv_idx < q_idx)
"""


def test_a_row_left_empty_at_one_head_only_is_found(tmp_path):
    # head 0 allows every key; head 1 allows only earlier keys, so its row 1 has none
    _torch()
    (tmp_path / "mods.py").write_text(HEAD_MASK)
    (tmp_path / "s.toml").write_text('name = "s"\nscore = "dot(q, k)/sqrt(d)"\nmask_mod = "mods.py:head_mask"\n'
                                     '[claims]\nws = "weights_sum_to_one"\n')
    c = check_spec(load_spec(tmp_path / "s.toml"), DEFAULT_CHECK).claims[0]
    assert c.verdict == "refuted"
    assert c.reason.startswith("the mask mods.py:head_mask leaves row i = 1 with no allowed key when n = 1 at head 1")
    assert c.counterexample["values"] == {"head": 1}


TABLES = """import torch

zero_slopes = torch.zeros(2)
ones = torch.ones(9)


def zero_head(score, b, h, q_idx, kv_idx):
    return score * zero_slopes[h]


def constant_bias(score, b, h, q_idx, kv_idx):
    return score + ones[q_idx - kv_idx + 4]
"""


@pytest.mark.parametrize("fn, claims", [
    # every head multiplies the score by 0: the weights are uniform, whatever q is
    ("zero_head", {"eq": 'equivalent("0")', "iq": "invariant(q)"}),
    # a bias of 1 on every key is row-constant, and softmax is shift-invariant
    ("constant_bias", {"eq": 'equivalent("dot(q, k)/sqrt(d)")'}),
])
def test_a_counterexample_reads_the_real_captured_entries(tmp_path, fn, claims):
    # These were refuted with an invented table (zero_slopes_h = 1, ones(x) = exp(x)), which is no
    # instance of the model: true claims about the real entries can be undecided, never refuted.
    _torch()
    (tmp_path / "mods.py").write_text(TABLES)
    body = "\n".join(f"{k} = '{v}'" for k, v in claims.items())
    (tmp_path / "s.toml").write_text(f'name = "s"\nscore_mod = "mods.py:{fn}"\n[claims]\n{body}\n')
    got = {c.name: c.verdict for c in check_spec(load_spec(tmp_path / "s.toml"), DEFAULT_CHECK).claims}
    assert "refuted" not in got.values(), got


def test_a_per_head_counterexample_names_its_real_head(tmp_path):
    _torch()
    (tmp_path / "mods.py").write_text(ALIBI)  # slopes 0.5, -0.25, 1.0
    (tmp_path / "s.toml").write_text('name = "s"\nscore_mod = "mods.py:alibi"\n[claims]\n'
                                     'e = \'equivalent("dot(q, k)/sqrt(d)")\'\n')
    c = check_spec(load_spec(tmp_path / "s.toml"), DEFAULT_CHECK).claims[0]
    assert c.verdict == "refuted" and c.counterexample["values"]["head"] in (0, 1, 2)
    assert "slopes_h" not in c.counterexample["values"]  # the real entry of that head, not a drawn one


GATED = """import torch

gate = torch.tensor([0.0, 1.0])
open_heads = torch.tensor([1.0, 0.0])


def gated(score, b, h, q_idx, kv_idx):
    return score * gate[h]


def diagonal_at_head_1(b, h, q_idx, kv_idx):
    return (open_heads[h] > 0.5) | (kv_idx == q_idx)
"""


@pytest.mark.slow
def test_the_score_and_the_mask_of_a_counterexample_are_of_one_head(tmp_path):
    # head 0: score 0 on every key; head 1: the score reads q, but each row allows only j = i, so
    # its one weight is 1. q changes nothing at any head. It was refuted with head 0's mask and
    # head 1's gate, an instance of no head.
    _torch()
    (tmp_path / "mods.py").write_text(GATED)
    (tmp_path / "s.toml").write_text('name = "s"\nscore_mod = "mods.py:gated"\nmask_mod = "mods.py:diagonal_at_head_1"\n'
                                     '[claims]\niq = "invariant(q)"\ne0 = \'equivalent("0")\'\n')
    got = {c.name: c.verdict for c in check_spec(load_spec(tmp_path / "s.toml"), DEFAULT_CHECK).claims}
    assert "refuted" not in got.values(), got
