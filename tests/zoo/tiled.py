"""Tiled (flash-style, online) softmax₁ and a softplus shortcut, in numpy.

The tiled code walks a row in blocks, keeping a running maximum m and a running sum l of
exp(x − m). When a later block raises the maximum, l must be rescaled by exp(m_old − m_new);
forgetting it is exact on rows of one block and wrong as soon as a row spans two blocks
with the maximum in a later one, so only rows longer than the block size catch it.
"""

import numpy as np


def _tiled(x, block, rescale):
    x = np.asarray(x)
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty_like(rows)
    with np.errstate(invalid="ignore", over="ignore"):
        for r, row in enumerate(rows):
            m, total = -np.inf, 0.0
            for start in range(0, row.shape[0], block):
                tile = row[start:start + block]
                m_new = max(m, tile.max())
                if m_new == -np.inf:
                    continue
                if rescale:
                    total = total * np.exp(m - m_new) + np.exp(tile - m_new).sum()
                else:
                    total = total + np.exp(tile - m_new).sum()  # BUG: the old sum keeps its old scale
                m = m_new
            top = max(m, 0.0)  # the implicit zero logit joins the maximum
            den = (total * np.exp(m - top) if m > -np.inf else 0.0) + np.exp(-top)
            out[r] = np.exp(row - top) / den
    return out.reshape(x.shape).astype(x.dtype)


def softmax1_tiled_16(x):
    return _tiled(x, 16, True)


def softmax1_tiled_128(x):
    return _tiled(x, 128, True)


def softmax1_tiled_16_no_rescale(x):
    return _tiled(x, 16, False)


def softmax1_tiled_32_no_rescale(x):
    return _tiled(x, 32, False)


def softmax1_tiled_128_no_rescale(x):
    return _tiled(x, 128, False)


def _lse(x):
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def softmax1_softplus_threshold(x):
    """softmax₁(x) = exp(x − softplus(logsumexp x)), with softplus(z) taken as z above 20
    (torch's default threshold): off by e^-z, about 2e-9 at z = 20, which float64 sees."""
    z = _lse(x)
    with np.errstate(over="ignore"):
        soft = np.where(z > 20, z, np.log1p(np.exp(z)))
    return np.exp(x - soft)


def softmax1_softplus(x):
    """The same, with an exact softplus: log(1 + e^z) = logaddexp(0, z)."""
    return np.exp(x - np.logaddexp(0.0, _lse(x)))
