"""The floating-point formats' facts (derive.floats.FORMATS) against torch.finfo, an independent
source (numpy's finfo is where three of them are read from; bfloat16's are computed from its
layout), and rounding to each format against torch's conversion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from derive.floats import FORMATS, round_to

torch = pytest.importorskip("torch", reason="torch is the independent source of the formats' facts")


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_formats_facts_are_torchs(name):
    f, t = FORMATS[name], torch.finfo(getattr(torch, name))
    assert (f.eps, f.tiny, f.max) == (t.eps, t.tiny, t.max)
    assert f.smallest_subnormal == t.smallest_normal * 2.0 ** (1 - f.precision)
    assert f.precision == {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}[name]
    assert f.digits == {"float64": 17, "float32": 9, "float16": 5, "bfloat16": 4}[name]
    # `digits` significant digits print every number of the format distinctly: the two neighbours of 1
    below, above = 1.0 - f.eps / 2, 1.0 + f.eps
    assert float(f"{below:.{f.digits - 1}e}") != float(f"{1.0:.{f.digits - 1}e}") != float(f"{above:.{f.digits - 1}e}")


@pytest.mark.parametrize("name", list(FORMATS))
def test_rounding_to_a_format_is_torchs(name):
    rng = np.random.default_rng(7)
    f = FORMATS[name]
    x = np.concatenate([rng.normal(size=200) * 10.0 ** rng.integers(-8, 8, size=200),
                        [f.max, -f.max, f.tiny, f.smallest_subnormal, f.smallest_subnormal / 2, 1 + f.eps / 2,
                         math.inf, -math.inf, 0.0]])
    expected = torch.tensor(x, dtype=torch.float64).to(getattr(torch, name)).to(torch.float64).numpy()
    np.testing.assert_array_equal(round_to(x, name), expected)
