"""Equation checks in worker processes (derive.document.pending): same document, same failures.

A build of one document on spare cores proves and cross-checks its equations and chains in
forked workers while ``document()`` goes on; these tests force that mode (two cores, no
parallel build) and compare it with the immediate mode of a test or a library call.
"""

from __future__ import annotations

import multiprocessing
import os
import textwrap
from pathlib import Path

import pytest
import sympy as sp

from derive import shared
from derive.build import build, load_document
from derive.crosscheck.check import CheckResult
from derive.document import pending
from derive.document.api import Document
from derive.errors import StepFailed
from derive.prove.verdict import Verdict
from derive.render import render_document
from derive.settings import Settings

DATA = Path(__file__).parent / "data"
FAST = Settings(examples=8)
x = sp.Symbol("x", real=True)

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")


@pytest.fixture
def spare_cores(monkeypatch):
    """A document alone on two cores, whatever the machine: its steps are deferred."""
    monkeypatch.setattr(shared, "cores", lambda: 2)
    monkeypatch.delenv(shared.ENV, raising=False)
    steps = []
    real = pending.Step.__init__

    def counting(self, *a, **k):
        steps.append(1)
        real(self, *a, **k)
    monkeypatch.setattr(pending.Step, "__init__", counting)
    return steps


@pytest.fixture
def one_core(monkeypatch):
    monkeypatch.setattr(shared, "cores", lambda: 1)


def _checks(doc) -> list:
    return [c.as_json() for c in doc.checks]


def test_outside_a_build_nothing_is_deferred():
    doc = Document("demo", "Demo", cfg=FAST)
    step = doc.equation(sp.exp(x + 1), sp.E * sp.exp(x), why="exp rule")
    assert pending.active() is None
    assert type(step.verdict) is Verdict and type(step.check) is CheckResult
    assert doc.timings[0][1] is not None


def test_no_deferral_beside_other_documents_or_on_one_core(monkeypatch, tmp_path):
    monkeypatch.setattr(shared, "cores", lambda: 2)
    monkeypatch.setenv(shared.ENV, str(tmp_path))
    with pending.deferring() as deferral:
        assert deferral is None and pending.active() is None
    monkeypatch.delenv(shared.ENV)
    monkeypatch.setattr(shared, "cores", lambda: 1)
    with pending.deferring() as deferral:
        assert deferral is None


def test_deferred_and_immediate_builds_give_the_same_document(spare_cores, monkeypatch):
    deferred = load_document(DATA / "demo.py")
    assert len(spare_cores) == 2  # the equation and the chain went to the workers
    monkeypatch.setattr(shared, "cores", lambda: 1)
    immediate = load_document(DATA / "demo.py")
    assert len(spare_cores) == 2
    assert render_document(deferred) == render_document(immediate)
    assert _checks(deferred) == _checks(immediate)
    assert [t[0] for t in deferred.timings] == [t[0] for t in immediate.timings]
    assert all(t[1] is not None and t[2] is not None for t in deferred.timings)
    for a, b in zip(deferred.blocks, immediate.blocks):
        assert type(a) is type(b)
        if a.kind == "equation":
            assert type(a.verdict) is Verdict and a.verdict == b.verdict
            assert a.check is deferred.checks[0]  # the same object: the renderer numbers checks by identity
        if a.kind == "chain":
            assert a.verdicts == b.verdicts


def _module(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "deferred_doc.py"
    path.write_text(textwrap.dedent('''
        import sympy as sp
        from derive import Document
        from derive.settings import Settings

        x = sp.Symbol("x", real=True)


        def document():
            doc = Document("deferred", "Deferred", cfg=Settings(examples=8))
    ''') + textwrap.indent(textwrap.dedent(body), "    ") + "    return doc\n")
    return path


FALSE_STEP = '''
doc.equation(sp.exp(x + 1), sp.E * sp.exp(x), name="true step", why="exp rule")
doc.equation(sp.exp(2 * x), sp.exp(x) + sp.exp(x), name="wrong step", why="deliberately false")
doc.prose("The step is {verdict:wrong step=proved}.")
doc.equation(sp.exp(x) * 2, sp.exp(x), name="second wrong step", why="also false")
'''


def _failure(path: Path, tmp_path: Path) -> str:
    with pytest.raises(StepFailed) as info:
        build([str(path)], docs=tmp_path / "d", out=tmp_path / "b", pdf=False, log=lambda m: None, jobs=1)
    assert not (tmp_path / "d").exists()  # nothing written, the prose "proved" included
    return str(info.value)


def test_a_false_step_fails_a_deferred_build_with_its_name_and_message(spare_cores, monkeypatch, tmp_path):
    path = _module(tmp_path, FALSE_STEP)
    deferred = _failure(path, tmp_path)
    assert len(spare_cores) == 3  # the prose stating "proved" was written before the proof failed
    assert deferred.startswith("deferred: step 'wrong step' is ")  # the first failing step, in document order
    monkeypatch.setattr(shared, "cores", lambda: 1)
    assert _failure(path, tmp_path) == deferred  # the message of the immediate mode


def test_a_failed_cross_check_is_raised_by_name(spare_cores, tmp_path, monkeypatch):
    import derive.document.api as api

    def failing(name, a, b, cfg, where=None):
        return CheckResult(name, False, 1, 1.0, 1.0, cfg.rtol, witness={"x": 1})
    monkeypatch.setattr(api, "cross_check", failing)  # the workers fork after this: they fail too
    path = _module(tmp_path, 'doc.equation(sp.exp(x + 1), sp.E * sp.exp(x), name="checked", why="exp rule")\n')
    message = _failure(path, tmp_path)
    assert message == ("deferred: step 'checked' was proved but fails its numeric cross-check; "
                       "witness {'x': 1}")


def test_reading_a_deferred_result_settles_it(spare_cores):
    with pending.deferring():
        doc = Document("demo", "Demo", cfg=FAST)
        step = doc.equation(sp.exp(x + 1), sp.E * sp.exp(x), why="exp rule", name="exp rule")
        assert len(spare_cores) == 1 and type(step.verdict) is not Verdict
        assert doc.checks[0].name == "exp rule"  # known at once: filtering checks by name does not wait
        assert doc.timings == [("exp rule", None, None)]
        assert step.verdict.status == "proved"  # read: settled
        assert type(step.verdict) is Verdict and type(step.check) is CheckResult
        assert doc.timings[0][1] is not None and not doc._pending


def test_rendering_settles_pending_steps_or_fails(spare_cores):
    with pending.deferring():
        doc = Document("demo", "Demo", cfg=FAST)
        doc.equation(sp.exp(x + 1), sp.E * sp.exp(x), why="exp rule", name="exp rule")
        rendered = render_document(doc)  # no finish(): the renderer's reads settle the step
    immediate = Document("demo", "Demo", cfg=FAST)
    immediate.equation(sp.exp(x + 1), sp.E * sp.exp(x), why="exp rule", name="exp rule")
    assert rendered == render_document(immediate)
    with pytest.raises(StepFailed, match="'wrong'"):
        with pending.deferring():
            doc = Document("demo", "Demo", cfg=FAST)
            doc.equation(sp.exp(2 * x), 2 * sp.exp(x), why="false", name="wrong")
            render_document(doc)


def test_a_worker_that_cannot_start_means_computing_in_process(spare_cores, monkeypatch):
    def no_fork(*a, **k):
        raise OSError("no processes")
    monkeypatch.setattr(pending, "_fork", no_fork)
    with pending.deferring() as deferral:
        doc = Document("demo", "Demo", cfg=FAST)
        step = doc.equation(sp.exp(x + 1), sp.E * sp.exp(x), why="exp rule")
        assert deferral.broken and not spare_cores  # computed at once, as without workers
        assert type(step.verdict) is Verdict and type(step.check) is CheckResult
        doc.equation(sp.exp(x), sp.exp(x), why="same")
        assert not spare_cores and len(doc.checks) == 2


def test_a_worker_that_dies_is_replaced_by_the_computation_in_process(spare_cores, monkeypatch):
    monkeypatch.setattr(pending, "_worker", lambda conn, *a: os._exit(3))  # sends nothing
    with pending.deferring():
        doc = Document("demo", "Demo", cfg=FAST)
        step = doc.equation(sp.exp(x + 1), sp.E * sp.exp(x), why="exp rule")
        assert len(spare_cores) == 1
        doc.finish()
        assert step.verdict.status == "proved" and doc.checks[0] is step.check and step.check.passed


def test_a_step_failing_in_its_worker_is_computed_again_for_its_message(spare_cores, monkeypatch):
    calls = []
    import derive.document.api as api

    real = api._check_step

    def counted(*args):
        calls.append(os.getpid())
        return real(*args)
    monkeypatch.setattr(api, "_check_step", counted)
    with pytest.raises(StepFailed, match="step 'wrong' is refuted"):
        with pending.deferring():
            doc = Document("demo", "Demo", cfg=FAST)
            doc.equation(sp.exp(2 * x), 2 * sp.exp(x), why="false", name="wrong")
            assert calls == []  # not in this process yet
            doc.finish()
    assert calls == [os.getpid()]  # once here, after the worker failed


def test_an_unevaluated_statement_reaches_the_worker_unchanged(spare_cores):
    product = sp.Mul(sp.exp(x), sp.exp(x), evaluate=False)  # pickled, it would come back as exp(2x)
    immediate = Document("demo", "Demo", cfg=FAST).equation(product, sp.exp(2 * x), why="exp rule")
    with pending.deferring():
        doc = Document("demo", "Demo", cfg=FAST)
        step = doc.equation(product, sp.exp(2 * x), why="exp rule")
        assert len(spare_cores) == 1
        doc.finish()
    assert step.verdict == immediate.verdict and step.verdict.method == immediate.verdict.method


def test_an_earlier_deferred_failure_wins_over_a_later_immediate_one(spare_cores, tmp_path):
    path = _module(tmp_path, '''
doc.equation(sp.exp(2 * x), sp.exp(x) + sp.exp(x), name="wrong step", why="deliberately false")
doc.example_check("later failure", [1.0], [2.0])
''')
    message = _failure(path, tmp_path)
    assert len(spare_cores) == 1 and message.startswith("deferred: step 'wrong step' is ")
