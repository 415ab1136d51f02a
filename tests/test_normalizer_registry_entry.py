"""A normalizer added as ONE registry entry (its formula) gets everything else with no other edit:
``derive check`` of a spec naming it, the row and kernel forms of ``derive impl`` (it is of the
softmax family), fault diagnosis, the masked-row rule and its property table."""

from __future__ import annotations

import sympy as sp
import pytest

from derive.impl.api import check_implementation
from derive.normalizers.registry import REGISTRY, from_formula

NAME = "logit_a"
ZOO = "tests/zoo/"


@pytest.fixture
def entry(monkeypatch):
    e = from_formula(NAME, "softmax with a learned extra logit a", "exp(x_j) / (exp(a) + sum_t(exp(x_t)))",
                     params=("a",), domain={"a": sp.Symbol("a", real=True)}, sample={"a": 1},
                     ref_defaults={"a": 0.0})
    monkeypatch.setitem(REGISTRY, NAME, e)
    return e


def _module(tmp_path):
    f = tmp_path / "impls.py"
    f.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(__import__('pathlib').Path(ZOO).resolve())!r})\n"
        "import kernels_numpy as K, sink_numpy as S\n"
        "def row(x, *, a):\n    return S.sink(x, a)\n"
        "def row_scaled(x, *, a):\n    return S.sink_scaled(x, a)\n"
        "def online(x, v, block, *, a):\n    return K.sink_online(x, v, block, s=a)\n"
        "def online_extra_per_tile(x, v, block, *, a):\n    return K.sink_online_extra_per_tile(x, v, block, s=a)\n")
    return str(f)


FAST = {"dtypes": ("float64",), "examples": 15}


def test_derive_check_knows_the_new_entry(entry):
    from derive.claims.run import check_spec
    from derive.spec.load import parse_spec

    spec = parse_spec(f'name = "x"\nscore = "dot(q, k)"\nnormalizer = "{NAME}(a0)"\n[symbols]\na0 = "scalar"\n'
                      '[claims]\nshift = "shift_invariant"\nabst = "can_abstain"\nsum1 = "weights_sum_to_one"\n')
    got = {c.name: c.verdict for c in check_spec(spec).claims}
    assert got == {"shift": "refuted", "abst": "proved", "sum1": "refuted"}


def test_row_form_and_fault_diagnosis(entry, tmp_path):
    mod = _module(tmp_path)
    good = check_implementation(f"{mod}:row", NAME, **FAST)
    assert good.exit_code() == 0
    assert good.masked_rule.defined and "$e^{a}$" in good.masked_rule.says
    bad = check_implementation(f"{mod}:row_scaled", NAME, **FAST)
    assert bad.exit_code() == 1
    assert [m.name for m in bad.diagnosis.matched] == ["extra-logit-scaled"]


@pytest.mark.slow
def test_kernel_forms(entry, tmp_path):
    mod = _module(tmp_path)
    good = check_implementation(f"{mod}:online", NAME, form="online", dtypes=("float64",), examples=5)
    assert good.exit_code() == 0
    bad = check_implementation(f"{mod}:online_extra_per_tile", NAME, form="online", dtypes=("float64",), examples=5)
    assert bad.exit_code() == 1


def test_property_table_and_family(entry):
    from derive.commands.normalizer import table
    from derive.normalizers.family import kernel_form

    assert kernel_form(entry).checked and kernel_form(entry).logit == "a"
    t = table(entry, {}, 20.0)
    verdicts = {r["property"]: r["verdict"] for r in t["properties"]}
    assert verdicts["shift_invariant"] == "refuted" and verdicts["can_abstain"] == "proved"
    assert verdicts["weights_sum_to_one"] == "refuted"
    assert t["softmax_family"] == {"member": True, "extra_logit": "a", "kernel_forms": ["online", "split", "backward"],
                                   "why_not": "", "ratio": ""}


def test_a_spec_names_the_new_entry_s_parameter(entry):
    from derive.claims.variant import Variant
    from derive.spec.load import parse_spec

    spec = parse_spec(f'name = "x"\nscore = "dot(q, k)"\nnormalizer = "{NAME}(a0)"\n[symbols]\na0 = "scalar"\n')
    assert spec.norm_params() == {"a": "a0"}
    assert Variant(spec).params == {"a": sp.Symbol("a0", real=True)}


@pytest.mark.slow
def test_impl_as_a_spec_file(tmp_path):
    """``--as FILE.toml``: a spec's formula of the softmax family gets the kernel forms, with its
    extra logit read off the formula; any other says why it has none."""
    spec = tmp_path / "mysink.toml"
    spec.write_text('name = "x"\nscore = "dot(q, k)"\n[normalizer]\nname = "mysink"\n'
                    'weight = "exp(x_j) / (exp(s2) + sum_t(exp(x_t)))"\n[symbols]\ns2 = "scalar"\n')
    code = tmp_path / "k.py"
    code.write_text("import sys\n"
                    f"sys.path.insert(0, {str(__import__('pathlib').Path(ZOO).resolve())!r})\n"
                    "import kernels_numpy as K\n"
                    "def online(x, v, block, *, s2):\n    return K.sink_online(x, v, block, s=s2)\n"
                    "def online_bad(x, v, block, *, s2):\n    return K.sink_online_extra_per_tile(x, v, block, s=s2)\n"
                    "def plain(x, v, block):\n    return K.softmax_online(x, v, block)\n"
                    "def back(x, v, dout):\n    import numpy as np\n    return np.zeros_like(x), np.zeros_like(v)\n")
    good = check_implementation(f"{code}:online", str(spec), form="online", dtypes=("float64",), examples=5)
    assert good.exit_code() == 0
    bad = check_implementation(f"{code}:online_bad", str(spec), form="online", dtypes=("float64",), examples=5)
    assert bad.exit_code() == 1
    other = tmp_path / "pick.toml"
    other.write_text('name = "x"\nscore = "dot(q, k)"\n[normalizer]\nname = "pick"\n'
                     'weight = "relu(exp(x_j) - 1) / (sum_t(abs(exp(x_t) - 1)) + 1)"\n')
    from derive.errors import InputError

    # a ratio of row sums (softpick's form): its online form is checked (softmax's kernel is not it) …
    plain = check_implementation(f"{code}:plain", str(other), form="online", dtypes=("float64",), examples=5)
    assert plain.exit_code() == 1
    # … its backward is not
    with pytest.raises(InputError) as err:
        check_implementation(f"{code}:back", str(other), form="backward", dtypes=("float64",), examples=5)
    assert "pick is a ratio of row sums, whose online and split forms are checked" in str(err.value), str(err.value)
