"""Exact identities that are not the same tree (log(e^x) − x, √(a²) − a for a > 0) are decided:
where the ball of a sum or difference contains 0, SymPy is asked whether the node is
identically 0 (scores arbitrary reals, parameters with the sign of their value). Proved: an
exact 0. Not proved: the row stays undecided and the reason names the node. A difference that
is not identically 0 is never made 0."""

from __future__ import annotations

import mpmath
import pytest

from derive.normalizers.exact import Undecided
from derive.normalizers.exact_zero import proved_zero
from derive.normalizers.formula import compile_weight
from derive.language.parser import parse

HEAD = ("no ball up to 16384 bits of precision encloses the exact value tightly (a difference that cancels to every "
        "digit, or a kink's sign that no precision decides)")


def _ref(text, x, scalars=None, **params):
    with mpmath.workdps(30):
        return compile_weight(text, scalars or {p: {} for p in params}).reference(x, **params)


@pytest.mark.parametrize("text,x,want", [
    ("relu(log(exp(x_j)) - x_j)", [0.3, -1.7], [0, 0]),
    ("relu(log(exp(x_j)) - x_j) * exp(x_j)", [0.3], [0]),
    ("sqrt(x_j**2) - abs(x_j) + sigmoid(x_j)", [0.0], [0.5]),
    ("relu(log(exp(x_j) + exp(2*x_j)) - x_j - log(1 + exp(x_j)))", [0.1, 2.5], [0, 0]),
    ("exp(x_j) * (1 + relu(log(1 + exp(x_j)) - x_j - log(1 + exp(-x_j)))) / sum_t(exp(x_t))", [0.0, 0.0], [0.5, 0.5]),
])
def test_identities_sympy_proves_are_exact_zeros(text, x, want):
    assert _ref(text, x) == want


def test_the_proof_uses_the_sign_of_the_parameter_value():
    text = "relu(sqrt(a**2) - a) * exp(x_j)"
    assert _ref(text, [0.0], a=0.3) == [0]  # a > 0: √(a²) − a = 0, proved
    assert _ref(text, [0.0], a=-0.25) == [0.5]  # a < 0: √(a²) − a = 2|a|, a plain ball
    assert proved_zero(parse("sqrt(a**2) - a"), (("a", 1),))
    assert not proved_zero(parse("sqrt(a**2) - a"), (("a", None),))
    assert not proved_zero(parse("sqrt(a**2) - a"), (("a", -1),))


@pytest.mark.parametrize("text,x,node", [
    ("relu(tanh(x_j) - (exp(2*x_j) - 1)/(exp(2*x_j) + 1))", [0.3],
     "(tanh(x_j)-((exp((2*x_j))-1)/(exp((2*x_j))+1)))"),
    ("relu(relu(tanh(x_j)) - (tanh(x_j) + abs(tanh(x_j)))/2)", [0.3],
     "(relu(tanh(x_j))-((tanh(x_j)+abs(tanh(x_j)))/2))"),
    # |tanh x| − tanh x: 0 at x > 0, not identically
    ("relu(sqrt(tanh(x_j)**2) - tanh(x_j))", [0.3], "(sqrt((tanh(x_j)**2))-tanh(x_j))"),
])
def test_what_sympy_does_not_prove_stays_undecided_with_the_node_named(text, x, node):
    with pytest.raises(Undecided) as e:
        _ref(text, x)
    assert str(e.value) == f"{HEAD}; SymPy does not prove {node} identically 0"


def test_a_dyadic_exact_zero_needs_no_proof():
    assert _ref("relu(relu(x_j) - (x_j + abs(x_j))/2)", [0.3]) == [0]  # every ball exact: 0.3 − 0.3


def test_a_difference_that_is_not_identically_zero_keeps_its_value():
    assert _ref("relu(sqrt(x_j**2) - x_j)", [-1.0]) == [2]
    assert _ref("relu(sqrt(x_j**2) - x_j)", [0.3]) == [0]  # √0.09 is 0.3 exactly: no proof needed
    (v,) = _ref("exp(x_j) - 1", [1e-300])
    assert v != 0 and abs(v - mpmath.mpf(1e-300)) < mpmath.mpf(1e-315)
    assert not proved_zero(parse("exp(x_j) - 1"), ())


def test_derive_impl_judges_a_normalizer_written_as_a_proved_identity(monkeypatch, tmp_path):
    """Weights log(e^x_j) − x_j: exactly 0 on every row, so zeros agree (no row left undecided)
    and a weight of 1e−300 on key 1 disagrees, certified."""
    from derive.impl import check_implementation
    from derive.normalizers.registry import REGISTRY, from_formula

    e = from_formula("null_proved", "zero, as log(exp(x)) - x", "log(exp(x_j)) - x_j")
    monkeypatch.setitem(REGISTRY, e.name, e)
    code = tmp_path / "forms.py"
    code.write_text("import numpy as np\n\ndef zeros(x):\n    return np.zeros_like(x)\n\n"
                    "def tiny(x):\n    y = np.zeros_like(x)\n    y[..., 0] = 1e-300\n    return y\n")
    good = check_implementation(f"{code}:zeros", "null_proved", dtypes=("float64",), examples=5)
    assert good.verdict == "agrees" and good.results[0].undecided_rows == 0
    bad = check_implementation(f"{code}:tiny", "null_proved", dtypes=("float64",), examples=5)
    assert bad.verdict == "disagrees" and bad.failure.exact[0] == 0 and bad.failure.output[0] == 1e-300
