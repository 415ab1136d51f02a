"""``derive impl --form online|split|backward`` on the kernel zoo: every correct kernel-shaped
implementation agrees, every faulty one is caught and diagnosed as the known kernel fault it
has (derive/kernels/faults.py), in numpy and in torch."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from derive.errors import InputError
from derive.impl import check_implementation
from derive.impl.kernel import ROWS, blocks, exact_row, split_counts
from derive.testing import assert_implements

NP = "tests/zoo/kernels_numpy.py:"
TORCH = "tests/zoo/kernels_torch.py:"


def need_torch():
    if os.environ.get("CI") == "true":
        import torch

        return torch
    return pytest.importorskip("torch", reason="the torch half of the kernel zoo needs torch")


CORRECT = [
    ("softmax_online", "softmax", "online", "natural", "out, lse"),
    ("softmax_online_out_only", "softmax", "online", "natural", "out"),
    ("softmax1_online", "softmax1", "online", "natural", "out, lse"),
    ("softmax1_online_base2", "softmax1", "online", "natural", "out, lse"),
    ("softmax1_online", "zero_token", "online", "natural", "out, lse"),
    ("sink_online", "sink", "online", "natural", "out, lse"),
    ("sink_online_base2_lse", "sink", "online", "base2", "out, lse"),
    ("sink_online_kv_lse", "sink", "online", "kv-only", "out, lse"),
    ("softmax_split", "softmax", "split", "natural", "out, lse"),
    ("softmax1_split", "softmax1", "split", "natural", "out, lse"),
    ("sink_split", "sink", "split", "natural", "out, lse"),
    ("softmax_backward", "softmax", "backward", "natural", "dx, dv"),
    ("softmax1_backward", "softmax1", "backward", "natural", "dx, dv"),
    ("sink_backward", "sink", "backward", "natural", "dx, dv, ds"),
]


@pytest.mark.parametrize("fn,norm,form,lse,returned", CORRECT)
def test_correct_numpy_kernels_agree(fn, norm, form, lse, returned):
    report = check_implementation(NP + fn, norm, form=form, lse=lse)
    assert report.agrees, report.to_markdown()
    assert report.exit_code() == 0 and report.diagnosis is None
    assert [r.returned for r in report.results] == [returned, returned]
    assert all(r.calls >= 8 and r.rows >= 40 for r in report.results)


FAULTY = [
    ("sink_online_extra_per_tile", "sink", "online", "extra_per_tile"),
    ("sink_online_missing_log2e", "sink", "online", "missing_log2e"),
    ("sink_online_scale_on_extra", "sink", "online", "scale_on_extra"),
    ("softmax1_online_unshifted_one", "softmax1", "online", "softmax1_unshifted_one"),
    ("softmax_online_acc_not_rescaled", "softmax", "online", "acc_not_rescaled"),
    ("softmax1_online_sum_not_rescaled", "softmax1", "online", "sum_not_rescaled"),
    ("sink_split_extra_per_split", "sink", "split", "extra_per_tile"),
    ("sink_split_seeded_twice", "sink", "split", "seeded_twice_empty_split"),
    ("softmax1_split_nan_empty", "softmax1", "split", "nan_empty_split"),
    ("softmax1_backward_kv_only_lse", "softmax1", "backward", "kv_only_lse_backward"),
    ("sink_backward_grad_missing", "sink", "backward", "sink_grad_missing"),
    ("sink_backward_grad_sign", "sink", "backward", "sink_grad_sign"),
]


@pytest.mark.parametrize("fn,norm,form,fault", FAULTY)
def test_faulty_numpy_kernels_are_caught_and_diagnosed(fn, norm, form, fault):
    from derive.kernels.faults import FAULTS

    report = check_implementation(NP + fn, norm, form=form, dtypes=("float64",))
    assert not report.agrees and report.exit_code() == 1
    assert [m["name"] for m in report.diagnosis.matched] == [fault], report.to_markdown()
    entry = next(f for f in FAULTS if f.key == fault)
    md = report.to_markdown()
    assert f"Fix: {entry.fix}." in md and entry.title in md  # one wording: the fault's own entry
