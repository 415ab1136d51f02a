"""Kernel-shaped functions that misbehave in ways that are not a verdict (exit 2), and one that
needs an environment variable set before it is imported (the hook TRITON_INTERPRET=1 uses)."""

import os
import time

import numpy as np

from tests.zoo.kernels_numpy import sink_online, softmax_online

ENV_AT_IMPORT = os.environ.get("DERIVE_KERNEL_TEST_ENV")


def wrong_out_shape(x, v, block):
    return np.zeros(x.shape)  # the weights, not out


def one_row_only(x, v, block):
    """Written for one row, x (n,) and v (n, dv): on a batch the product broadcasts to the wrong shape."""
    w = np.exp(x - np.max(x, initial=-np.inf))
    return w @ v / w.sum()


def raises_on_empty(x, v, block):
    if x.shape[-1] == 0:
        raise ValueError("no keys")
    return softmax_online(x, v, block)


def sink_ds_per_row(x, v, dout, *, s):
    return np.zeros(x.shape), np.zeros(v.shape), {"s": np.zeros(x.shape[:-1])}


def unknown_param_grad(x, v, dout):
    return np.zeros(x.shape), np.zeros(v.shape), {"tau": 0.0}


def sink_without_s(x, v, block):
    return softmax_online(x, v, block)


def needs_env(x, v, block, *, s):
    if ENV_AT_IMPORT != "1":
        raise RuntimeError("DERIVE_KERNEL_TEST_ENV was not set when the module was imported")
    return sink_online(x, v, block, s=s)


def hangs(x, v, splits):
    time.sleep(60)


def mutates_scores(x, v, block):
    out = softmax_online(x, v, block)
    x[...] = 0.0
    return out


def sink_online_one_ulp_off(x, v, block, *, s):
    out, lse = sink_online(x, v, block, s=s)
    up = np.where(out != 0, np.nextafter(out, np.inf), out)  # 0 stays 0: there it is the masked-row convention
    return up, np.where(np.isfinite(lse), np.nextafter(lse, np.inf), lse)


def sink_online_1e9_off(x, v, block, *, s):
    out, lse = sink_online(x, v, block, s=s)
    return out * (1 + 1e-9), lse
