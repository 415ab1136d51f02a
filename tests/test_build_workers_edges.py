"""Edge cases of the parallel document build: placeholders of deferred steps, helpers that die or
send what does not load, and the fast path of path limits (each of these once failed)."""

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


def test_a_counterexample_value_must_meet_every_assumption_of_its_symbol():
    """Parity and the like count too: 1 is no value for an even symbol."""
    import sympy as sp

    from derive.crosscheck.witness import satisfies

    assert not satisfies(sp.Symbol("k", even=True), 1) and satisfies(sp.Symbol("k", even=True), 2)
    assert not satisfies(sp.Symbol("p", prime=True), 1) and satisfies(sp.Symbol("p", prime=True), 3)
    assert satisfies(sp.Symbol("x", real=True), sp.sqrt(2)) and not satisfies(sp.Symbol("x", positive=True), 0)
    assert not satisfies(sp.Symbol("n", integer=True), sp.Rational(1, 2))


@pytest.mark.slow
def test_a_table_cell_shows_the_same_whether_computed_here_or_sent_back_by_a_helper():
    """A helper sends its cells back pickled, and unpickling rebuilds SymPy objects (an
    unevaluated product comes back evaluated); which cells a helper computes depends on timing,
    so every cell and token-equivalence verdict must show the same after the round trip."""
    import pickle

    from derive.normalizers import equivalences
    from derive.normalizers.properties import PROPERTIES, derive_property
    from derive.normalizers.registry import names
    from derive.render.latex import tex

    def shown(der):
        v = der.verdict
        eq = tuple(tex(e) for e in der.equality) if der.equality is not None else None
        return (v.status, v.reason, v.method, repr(v.witness), der.value_text(), tuple(der.latex_steps()), eq,
                der.claim)

    for name in names():
        for prop in PROPERTIES:
            der = derive_property(name, prop)
            assert shown(pickle.loads(pickle.dumps(der, protocol=pickle.HIGHEST_PROTOCOL))) == shown(der), (name, prop)
    for k in range(len(equivalences.EQUIVALENCES)):
        v = equivalences.decide(k)
        assert repr(pickle.loads(pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL))) == repr(v)


def test_a_task_that_fails_here_is_computed_once_and_its_error_raised(monkeypatch):
    """Only starting helpers may fail quietly (then this process computes everything); an error
    of the computation itself is raised at once, not met a second time first."""
    from derive import parallel

    calls = []

    def compute(task):
        calls.append(task)
        if task == 0:
            raise ValueError("task 0 is wrong")
        return task

    with pytest.raises(ValueError, match="task 0 is wrong"):
        parallel.share([0, 1, 2], compute, 1)
    assert calls.count(0) == 1

    def no_fork(*a, **k):
        raise OSError("no processes")

    monkeypatch.setattr(parallel, "fork", no_fork)
    assert parallel.share(list(range(5)), lambda t: t * 2, 1) == [0, 2, 4, 6, 8]
