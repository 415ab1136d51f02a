"""The parallel, cached build: same bytes cold, warm and in parallel; keys that move; progress.

A cache may only save time: a warm build writes the bytes a cold one writes, any change to
an input (the module, a library version, derive's sources) gives another key, and
``--check`` never reads the cache.
"""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

import derive.build as b
from derive.build import build, cache_key
from derive.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"


def quiet(_msg):
    pass


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def demo(tmp_path) -> Path:
    """A copy of the demo module in its own folder, so a test may edit it."""
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(DATA / "demo.py", src / "demo.py")
    return src / "demo.py"


def test_cold_and_warm_cache_write_the_same_bytes(tmp_path, demo):
    cache = tmp_path / "cache"
    cold = build([str(demo)], docs=tmp_path / "cold", out=tmp_path / "b1", pdf=False, log=quiet, cache=cache)
    warm = build([str(demo)], docs=tmp_path / "warm", out=tmp_path / "b2", pdf=False, log=quiet, cache=cache)
    none = build([str(demo)], docs=tmp_path / "none", out=tmp_path / "b3", pdf=False, log=quiet)
    assert (cold.cached, warm.cached, none.cached) == (0, 1, 0)
    assert sorted(files(tmp_path / "cold")) == ["demo.json", "demo.md"]
    assert files(tmp_path / "cold") == files(tmp_path / "warm") == files(tmp_path / "none")
    assert files(tmp_path / "b1") == files(tmp_path / "b2") == files(tmp_path / "b3")
    assert [p.suffix for p in cache.iterdir()] == [".pickle"]


def test_the_warm_build_really_reads_the_cache(tmp_path, demo):
    """Planting a result under the key shows the key is what is looked up (and why it must be exact)."""
    cache = tmp_path / "cache"
    build([str(demo)], docs=tmp_path / "d1", out=tmp_path / "b", pdf=False, log=quiet, cache=cache)
    entry = cache / f"{cache_key(demo)}.pickle"
    slug, rendered, steps, checks = pickle.loads(entry.read_bytes())
    rendered.docs["demo.md"] = b"planted\n"
    entry.write_bytes(pickle.dumps((slug, rendered, steps, checks)))
    build([str(demo)], docs=tmp_path / "d2", out=tmp_path / "b", pdf=False, log=quiet, cache=cache)
    assert (tmp_path / "d2" / "demo.md").read_bytes() == b"planted\n"


def test_an_edited_module_misses_the_cache(tmp_path, demo):
    cache = tmp_path / "cache"
    build([str(demo)], docs=tmp_path / "d1", out=tmp_path / "b", pdf=False, log=quiet, cache=cache)
    key = cache_key(demo)
    demo.write_text(demo.read_text().replace("One of each block kind.", "One of each kind of block."))
    assert cache_key(demo) != key
    report = build([str(demo)], docs=tmp_path / "d2", out=tmp_path / "b", pdf=False, log=quiet, cache=cache)
    assert report.cached == 0
    assert b"One of each kind of block." in (tmp_path / "d2" / "demo.md").read_bytes()


def test_where_the_module_is_shown_from_is_part_of_the_key(demo, monkeypatch, tmp_path):
    """The document prints its source path relative to the working directory."""
    key = cache_key(demo)
    monkeypatch.chdir(demo.parent)
    assert cache_key(demo) != key


def test_a_helper_next_to_the_module_is_part_of_the_key(demo):
    key = cache_key(demo)
    (demo.parent / "_helper.py").write_text("X = 1\n")
    assert cache_key(demo) != key


@pytest.mark.parametrize("dist", ["sympy", "numpy", "python-flint", "hypothesis", "jinja2", "derive"])
def test_a_library_version_is_part_of_the_key(demo, monkeypatch, dist):
    key = cache_key(demo)
    real = b.importlib.metadata.version
    monkeypatch.setattr(b.importlib.metadata, "version", lambda d: "0.0.0-other" if d == dist else real(d))
    monkeypatch.setattr(b, "_INPUTS_DIGEST", None)
    assert cache_key(demo) != key


def test_a_derive_source_is_part_of_the_key(demo, monkeypatch, tmp_path):
    key = cache_key(demo)
    package = tmp_path / "pkg"
    shutil.copytree(b._PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(b, "_PACKAGE", package)
    monkeypatch.setattr(b, "_INPUTS_DIGEST", None)
    assert cache_key(demo) == key  # a byte-identical copy: the same key
    target = package / "crosscheck" / "evaluate.py"
    target.write_text(target.read_text() + "\n# edited\n")
    monkeypatch.setattr(b, "_INPUTS_DIGEST", None)
    assert cache_key(demo) != key


def test_a_corrupt_cache_entry_is_rebuilt(tmp_path, demo):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"{cache_key(demo)}.pickle").write_bytes(b"not a pickle")
    report = build([str(demo)], docs=tmp_path / "d", out=tmp_path / "b", pdf=False, log=quiet, cache=cache)
    assert report.cached == 0
    assert (tmp_path / "d" / "demo.md").read_bytes().count(b"# Demo of every block") == 1


def test_check_mode_builds_cold_even_with_a_planted_cache(tmp_path, demo, capsys):
    """--check verifies docs/ against the code, never against a stored result."""
    docs, out = tmp_path / "docs", tmp_path / "out"
    assert main(["build", str(demo), "--docs", str(docs), "--out", str(out), "--no-pdf"]) == 0
    entry = out / "cache" / f"{cache_key(demo)}.pickle"
    slug, rendered, steps, checks = pickle.loads(entry.read_bytes())
    rendered.docs["demo.md"] = b"planted\n"
    entry.write_bytes(pickle.dumps((slug, rendered, steps, checks)))
    (docs / "demo.md").write_bytes(b"planted\n")
    assert main(["build", str(demo), "--docs", str(docs), "--out", str(out), "--check"]) == 1
    assert f"stale: {docs / 'demo.md'}" in capsys.readouterr().err
    # --no-cache ignores the planted entry too
    assert main(["build", str(demo), "--docs", str(docs), "--out", str(out), "--no-pdf", "--no-cache"]) == 0
    assert (docs / "demo.md").read_bytes().count(b"# Demo of every block") == 1


@pytest.mark.slow
def test_parallel_build_writes_what_a_sequential_one_writes_in_module_order(tmp_path, demo, capsys):
    mods = [str(demo), str(ROOT / "proofs" / "impl_check.py"), str(DATA / "demo.py")]
    logs = {}
    for jobs in (1, 2):
        lines = []
        build(mods, docs=tmp_path / f"d{jobs}", out=tmp_path / f"b{jobs}", pdf=False, log=lines.append, jobs=jobs)
        logs[jobs] = [ln.split(":")[0] for ln in lines]
    assert files(tmp_path / "d1") == files(tmp_path / "d2")
    assert logs[1] == logs[2] == ["  demo", "  impl_check", "  demo"]


def test_a_failing_document_in_a_parallel_build_fails_it(tmp_path, capsys):
    code = main(["build", str(DATA / "demo.py"), str(DATA / "bad_step.py"), "--docs", str(tmp_path / "d"),
                 "--out", str(tmp_path / "b"), "--no-pdf", "--jobs", "2"])
    assert code == 1
    assert "bad-step: step 'missing cross term' is refuted" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["demo.json", "demo.md"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_progress_lines_show_while_a_document_builds(tmp_path, capfd, jobs):
    code = main(["build", str(DATA / "demo.py"), str(DATA / "demo.py"), "--docs", str(tmp_path / "d"),
                 "--out", str(tmp_path / "b"), "--no-pdf", "--progress", "--jobs", jobs, "--no-cache"])
    err = capfd.readouterr().err
    assert code == 0
    progress = [ln for ln in err.splitlines() if "steps checked so far" in ln]
    assert progress == ["  demo: Steps (0 steps checked so far)"] * 2
    # each progress line comes before the line that reports its document done
    assert err.index("demo: Steps (0 steps checked so far)") < err.index("steps proved")


def test_progress_is_off_when_asked(tmp_path, capfd):
    assert main(["build", str(DATA / "demo.py"), "--docs", str(tmp_path / "d"), "--out", str(tmp_path / "b"),
                 "--no-pdf", "--no-progress"]) == 0
    assert "steps checked so far" not in capfd.readouterr().err


def test_jobs_must_be_positive(tmp_path, capsys):
    assert main(["build", str(DATA / "demo.py"), "--jobs", "0", "--docs", str(tmp_path)]) == 2
    assert "--jobs 0: expected a whole number ≥ 1" in capsys.readouterr().err


def _compute_once(folder: str, log: str, out) -> None:
    import os
    import time

    from derive import shared

    os.environ[shared.ENV] = folder

    def compute():
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        time.sleep(0.5)
        return {"value": 42}

    out.put(shared.once("the same step", compute))


def test_a_shared_step_is_computed_once_across_processes(tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    log = tmp_path / "computed"
    procs = [ctx.Process(target=_compute_once, args=(str(tmp_path), str(log), out)) for _ in range(3)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join()
    assert results == [{"value": 42}] * 3
    assert len(log.read_text().splitlines()) == 1


def test_without_a_build_a_shared_step_is_just_computed(monkeypatch):
    from derive import shared

    monkeypatch.delenv(shared.ENV, raising=False)
    calls = []
    assert shared.once("k", lambda: calls.append(1) or 7) == 7
    assert shared.once("k", lambda: calls.append(1) or 7) == 7
    assert calls == [1, 1]


def test_the_log_counts_table_claims_a_page_decides_outside_its_steps(demo, tmp_path, capfd):
    """A page whose verdicts sit in a table (the normalizers' comparison) says how many it decided,
    by status; a page without such a table says nothing of them."""
    text = demo.read_text()
    demo.write_text(text.replace('    doc.record("answer", 42)',
                                 '    doc.tally(["proved", "refuted", "proved", "undecided"])\n    doc.record("answer", 42)'))
    assert main(["build", str(demo), "--docs", str(tmp_path / "d"), "--out", str(tmp_path / "b"),
                 "--no-pdf", "--no-cache", "--no-progress"]) == 0
    err = capfd.readouterr().err
    assert "4 table claims decided (2 proved, 1 refuted, 1 undecided)" in err
    assert "1 documents, 3 steps proved or refuted, 4 table claims decided, 3 checks run" in err
    assert main(["build", str(DATA / "demo.py"), "--docs", str(tmp_path / "e"), "--out", str(tmp_path / "c"),
                 "--no-pdf", "--no-cache", "--no-progress"]) == 0
    assert "table claims" not in capfd.readouterr().err
