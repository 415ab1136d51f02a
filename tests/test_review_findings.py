"""Reproducers found in review of the document-build speed work (each fails on `merge` as of 2f82482)."""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap

import pytest
import sympy as sp

from derive import shared
from derive.document import pending
from derive.document.api import Document
from derive.render import render_document
from derive.settings import Settings

x = sp.Symbol("x", real=True)
FAST = Settings(examples=8)


@pytest.fixture
def spare_cores(monkeypatch):
    monkeypatch.setattr(shared, "cores", lambda: 2)
    monkeypatch.delenv(shared.ENV, raising=False)


def test_reading_a_defaulted_field_settles_the_step(spare_cores):
    """Verdict.method / .witness and CheckResult.searched / .witness / .atol / .arb_fallbacks have
    class-level defaults, so __getattr__ never runs: the default is returned unsettled."""
    with pending.deferring():
        doc = Document("demo", "Demo", cfg=FAST)
        step = doc.equation(sp.exp(x + 1), sp.E * sp.exp(x), why="exp rule")
        method, searched = step.verdict.method, step.check.searched
        doc.finish()
        assert method == step.verdict.method != ""
        assert searched == step.check.searched != 0


def test_a_chain_rendered_before_finish_shows_its_methods(spare_cores, monkeypatch):
    def build():
        doc = Document("demo", "Demo", cfg=FAST)
        doc.chain([sp.exp(x + 1), sp.E * sp.exp(x), sp.exp(x + 1)], ["exp rule", "back"])
        return doc
    with pending.deferring():
        deferred = render_document(build())  # no finish(): the renderer reads only v.method of a chain
    monkeypatch.setattr(shared, "cores", lambda: 1)
    assert deferred.docs["demo.md"] == render_document(build()).docs["demo.md"]


def test_a_copied_placeholder_can_be_read(spare_cores):
    with pending.deferring():
        doc = Document("demo", "Demo", cfg=FAST)
        step = doc.equation(sp.exp(x + 1), sp.E * sp.exp(x), why="exp rule")
        v = copy.copy(step.verdict)
        assert v.status == "proved"  # RecursionError on merge


def _boom():
    raise ValueError("cannot be rebuilt")


class _Rebuilt:
    def __reduce__(self):
        return (_boom, ())


def test_a_worker_result_that_does_not_unpickle_is_computed_again(spare_cores):
    """The docstring promises that a worker delivering nothing usable means computing in process."""
    with pending.deferring() as d:
        queue: list = []
        step = d.submit(queue, ("demo", "step"), lambda: _Rebuilt())
        got = []
        step.fill = got.append
        pending.settle_all(queue)  # ValueError on merge
        assert len(got) == 1


def test_path_limits_are_taken_at_n_equal_2():
    """path_limit's fast path expands Σ_{t=1}^{n} to two terms but leaves n elsewhere symbolic;
    _certainly_differ then evaluates it at n = 1: two equal limits certified different."""
    from derive.model.attention import M, i, n, t
    from derive.normalizers import limits
    from derive.normalizers.algebra import X
    from derive.normalizers.registry import get

    def W(entry, params, key=None, **_):
        soft = M[i, key] * sp.exp(X[i, key]) / sp.Sum(M[i, t] * sp.exp(X[i, t]), (t, 1, n))
        return soft * (n - 2) + (3 - n) / sp.Integer(2)  # 1/2 for every key when n = 2

    old = limits.weight
    limits.weight = W
    try:
        A, B = (-limits.TAU, -2 * limits.TAU), (-2 * limits.TAU, -limits.TAU)
        la, lb = limits.path_limit(get("softmax"), {}, A), limits.path_limit(get("softmax"), {}, B)
    finally:
        limits.weight = old
    assert la == lb == [sp.Rational(1, 2)] * 2
    assert not limits._certainly_differ(la, lb)


SHARE_HANG = textwrap.dedent("""
    import os, signal, time
    from derive import parallel
    PARENT = os.getpid()
    def compute(k):
        if os.getpid() == PARENT:
            time.sleep(1.0)
            return k
        if k == 2:
            time.sleep(0.3)
            os.kill(os.getpid(), signal.SIGKILL)  # the helper dies while its result is being written
        return b"x" * (10 << 20)
    print(len(parallel.share([0, 1, 2, 3], compute, helpers=1)))
""")


def test_share_returns_when_a_helper_dies_mid_result():
    try:
        out = subprocess.run([sys.executable, "-c", SHARE_HANG], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("parallel.share hangs in Queue.get: the parent holds the queue's write end, so a "
                    "partial message from a killed helper never reaches EOF")
    assert out.stdout.strip() == "4"
