"""Cross-check the derived normalizers against PyTorch's nn.MultiheadAttention.

* ``add_zero_attn=True`` equals the derived softmax₁ attention;
* ``add_bias_kv=True`` equals the learned key/value token form (a query-dependent sink on the
  real keys plus the token's own value);
* with either option the in-projection K bias changes the output; without them it does not.

Needs the optional extra ``derive[torch]``. Without torch these tests skip, except in CI
(``CI=true``), where a missing torch is a failure.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

if os.environ.get("CI") == "true":
    import torch  # CI installs derive[torch]: a missing torch must fail, not skip
else:
    torch = pytest.importorskip(
        "torch", reason="PyTorch not installed: `pip install 'derive[torch]'` (or torch==2.13.0) to run these checks"
    )

from derive.normalizers.registry import get

E, H, L, S = 12, 3, 5, 7
DH = E // H


def _mha(seed: int, **kw):
    torch.manual_seed(seed)
    m = torch.nn.MultiheadAttention(E, H, bias=True, batch_first=True, **kw).double().eval()
    with torch.no_grad():  # non-zero biases everywhere (PyTorch initialises them to 0)
        m.in_proj_bias.normal_()
        m.out_proj.bias.normal_()
    return m


def _inputs(seed: int):
    g = torch.Generator().manual_seed(1000 + seed)
    q = torch.randn(1, L, E, generator=g, dtype=torch.float64)
    kv = torch.randn(1, S, E, generator=g, dtype=torch.float64)
    return q, kv


def _torch_out(m, q, kv) -> np.ndarray:
    with torch.no_grad():
        out, _ = m(q, kv, kv, need_weights=False)
    return out[0].numpy()


def _derived(m, q, kv, normalizer: str) -> np.ndarray:
    """Attention written from the derivation, with the registry's stable implementations."""
    w = m.in_proj_weight.detach().numpy()
    b = m.in_proj_bias.detach().numpy()
    x, y = q[0].numpy(), kv[0].numpy()
    Q = x @ w[:E].T + b[:E]
    K = y @ w[E : 2 * E].T + b[E : 2 * E]
    V = y @ w[2 * E :].T + b[2 * E :]
    heads = []
    for h in range(H):
        sl = slice(h * DH, (h + 1) * DH)
        scores = Q[:, sl] @ K[:, sl].T / np.sqrt(DH)
        if normalizer == "bias_kv":
            kstar = m.bias_k.detach().numpy()[0, 0, sl]
            vstar = m.bias_v.detach().numpy()[0, 0, sl]
            s_star = Q[:, sl] @ kstar / np.sqrt(DH)  # query-dependent: one sink logit per row
            p = get("bias_kv").stable(scores, s_star=s_star)
            own = 1 - p.sum(axis=-1, keepdims=True)  # e^{s*}/(e^{s*} + Σ e^{x}): the token's weight
            heads.append(p @ V[:, sl] + own * vstar)
        else:
            heads.append(get(normalizer).stable(scores) @ V[:, sl])
    out = np.concatenate(heads, axis=-1)
    return out @ m.out_proj.weight.detach().numpy().T + m.out_proj.bias.detach().numpy()


@pytest.mark.parametrize("seed", range(5))
def test_add_zero_attn_is_softmax1(seed):
    m = _mha(seed, add_zero_attn=True)
    q, kv = _inputs(seed)
    assert np.allclose(_torch_out(m, q, kv), _derived(m, q, kv, "softmax1"), rtol=1e-10, atol=1e-12)
    assert np.allclose(_torch_out(m, q, kv), _derived(m, q, kv, "zero_token"), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_add_bias_kv_is_the_learned_token_form(seed):
    m = _mha(seed, add_bias_kv=True)
    q, kv = _inputs(seed)
    assert np.allclose(_torch_out(m, q, kv), _derived(m, q, kv, "bias_kv"), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_plain_mha_is_softmax(seed):
    m = _mha(seed)
    q, kv = _inputs(seed)
    assert np.allclose(_torch_out(m, q, kv), _derived(m, q, kv, "softmax"), rtol=1e-10, atol=1e-12)


def _k_bias_change(**kw) -> float:
    m = _mha(7, **kw)
    q, kv = _inputs(7)
    before = _torch_out(m, q, kv)
    with torch.no_grad():
        m.in_proj_bias[E : 2 * E] += 3 * torch.randn(E, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    return float(np.max(np.abs(_torch_out(m, q, kv) - before)))


def test_k_bias_is_redundant_without_extra_tokens():
    assert _k_bias_change() < 1e-10


@pytest.mark.parametrize("option", ["add_zero_attn", "add_bias_kv"])
def test_k_bias_matters_with_extra_tokens(option):
    assert _k_bias_change(**{option: True}) > 1e-3


def test_layernorm_of_zero_is_beta():
    ln = torch.nn.LayerNorm(E).double()
    with torch.no_grad():
        ln.bias.normal_()
        ln.weight.normal_()
    out = ln(torch.zeros(1, E, dtype=torch.float64))
    assert torch.allclose(out[0], ln.bias)
    assert out.abs().max() > 0  # the "zero token" is no longer zero after a LayerNorm
