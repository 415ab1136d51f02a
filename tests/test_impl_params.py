"""Parameters: varied by Hypothesis inside the normalizer's domain when the function takes
them as keywords; a --param the function cannot take is an error."""

from __future__ import annotations

import pytest

from derive.errors import InputError
from derive.impl import check_implementation
from derive.impl.inputs import EDGE_PARAMS, PARAM_RANGES, PROBE_VALUES

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
    assert PARAM_RANGES == {"zeta": (1.0, 5.0), "gamma": (-5.0, 0.0), "c": (0.5, 100.0)}
    for name, (lo, hi) in PARAM_RANGES.items():
        assert all(lo <= v <= hi for v in EDGE_PARAMS[name] + PROBE_VALUES[name])


def test_a_varied_parameter_catches_a_fault_at_its_default():
    report = check_implementation(Z + "sigmoid_bias_sign", "sigmoid", **FAST)
    assert report.failure.params["b"] != 0
    assert [m["name"] for m in report.diagnosis.matched] == ["sigmoid-bias-sign"]


def test_a_param_the_function_does_not_take_is_an_error():
    with pytest.raises(InputError, match=(
            r"^--param s=1.5: tests/zoo/softmax1_numpy.py:softmax1 does not take a keyword argument s, so the "
            r"value cannot be passed to it; give the function a keyword argument s$")):
        check_implementation("tests/zoo/softmax1_numpy.py:softmax1", "sink", params={"s": 1.5}, **FAST)
