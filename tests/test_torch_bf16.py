"""The float table's bfloat16 column is emulated in numpy; check it against PyTorch's bfloat16."""

from __future__ import annotations

import os

import numpy as np
import pytest

if os.environ.get("CI") == "true":
    import torch
else:
    torch = pytest.importorskip(
        "torch", reason="PyTorch not installed: `pip install 'derive[torch]'` (or torch==2.13.0) to run these checks"
    )

from derive.normalizers.stable import CASES, FORMS, bf16, run_form


def _torch_form(form: str, x, mask) -> np.ndarray:
    bt = torch.bfloat16
    xs = np.where(np.asarray(mask, bool), np.asarray(x, float), -np.inf) if mask is not None else np.asarray(x, float)
    t = torch.tensor(xs, dtype=torch.float32).to(bt)
    one = torch.tensor(1.0, dtype=bt)
    zero = torch.tensor(0.0, dtype=bt)
    if form == "softmax naive":
        e = torch.exp(t)
        out = e / e.sum()
    elif form == "softmax stable":
        m = t.max()
        m = m if torch.isfinite(m) else zero
        e = torch.exp(t - m)
        out = e / e.sum()
    elif form == "softmax₁ naive":
        e = torch.exp(t)
        out = e / (one + e.sum())
    elif form == "softmax₁ faulty":
        e = torch.exp(t - t.max())
        out = e / (one + e.sum())
    else:
        m = torch.maximum(t.max(), zero)
        e = torch.exp(t - m)
        out = e / (torch.exp(zero - m) + e.sum())
    return out.to(torch.float64).numpy()


def test_bf16_rounding_matches_torch():
    rng = np.random.default_rng(0)
    vals = np.concatenate(
        [rng.normal(size=2000) * 10.0 ** rng.integers(-30, 30, size=2000), [0.0, -0.0, np.inf, -np.inf, 3.4e38, 1e-40]]
    ).astype(np.float32)
    ours = bf16(vals)
    theirs = torch.tensor(vals).to(torch.bfloat16).to(torch.float32).numpy()
    assert np.array_equal(ours, theirs)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("case", list(CASES))
def test_emulated_bfloat16_forms_match_torch(form, case):
    x, mask = CASES[case]
    ours = run_form(form, x, mask, "bfloat16")
    theirs = _torch_form(form, x, mask)
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    ok = ~np.isnan(ours)
    assert np.allclose(ours[ok], theirs[ok], rtol=2e-2, atol=1e-2), (ours, theirs)
