"""Parameters: varied by Hypothesis inside the normalizer's domain when the function takes
them as keywords; a --param the function cannot take is an error."""

from __future__ import annotations

import pytest

from derive.errors import InputError
from derive.impl import check_implementation
import sympy as sp

from derive.normalizers.registry import REGISTRY, get

Z = "tests/zoo/forms.py:"
FAST = {"dtypes": ("float64",), "examples": 30}


@pytest.mark.slow
@pytest.mark.parametrize("fn,norm,varied", [
    ("sigmoid", "sigmoid", ("b",)), ("clipped", "clipped", ("zeta", "gamma")), ("softcap", "softcap", ("c",)),
    ("bias_kv", "bias_kv", ("s_star",)),
])
def test_every_parameter_taken_as_a_keyword_is_varied(fn, norm, varied):
    report = check_implementation(Z + fn, norm, **FAST)
    assert report.agrees, report.to_markdown()
    assert report.free_params == varied
    assert all(f"{p} (varied by Hypothesis)" in report.keywords for p in varied)


def test_varied_parameters_stay_in_the_domain():
    """Every value derive impl tries for a parameter (the ends of its range, its edge and probe
    values) lies in the entry's domain: the domain expression takes it for a value of its own
    symbol that meets that symbol's assumptions (ζ = 1 + ζ' with ζ' ≥ 0, a soft cap c > 0)."""
    assert get("clipped").trial("zeta").low == 1.0 and get("clipped").trial("gamma").high == 0.0
    assert get("softcap").trial("c").low > 0 and get("softpick").trial("eps").low > 0
    for entry in REGISTRY.values():
        for p, dom in entry.symbols().items():
            t = entry.trial(p)
            (sym,) = dom.free_symbols
            for v in (t.low, t.high, *t.edge, *t.probe):
                assert t.low <= v <= t.high, (entry.name, p, v)
                assert sp.solve(sp.Eq(dom, sp.nsimplify(v)), sym), (entry.name, p, v)


def test_a_varied_parameter_catches_a_fault_at_its_default():
    report = check_implementation(Z + "sigmoid_bias_sign", "sigmoid", **FAST)
    assert report.failure.params["b"] != 0
    assert [m.name for m in report.diagnosis.matched] == ["param-sign-flipped"]


def test_a_param_the_function_does_not_take_is_an_error():
    with pytest.raises(InputError, match=(
            r"^--param s=1.5: tests/zoo/softmax1_numpy.py:softmax1 does not take a keyword argument s, so the "
            r"value cannot be passed to it; give the function a keyword argument s$")):
        check_implementation("tests/zoo/softmax1_numpy.py:softmax1", "sink", params={"s": 1.5}, **FAST)
