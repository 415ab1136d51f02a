"""Shared test helpers: a tool that CI must have makes its tests fail, not skip, in CI."""

from __future__ import annotations

import collections
import contextlib
import importlib
import io
import os
import shutil

import pytest

IN_CI = os.environ.get("CI") == "true"

# Triton reads TRITON_INTERPRET when it is first imported (its own @jit helpers are built then),
# and torch may import it on its own (flex_attention, inductor) long before the Triton zoo's
# tests run. The test session runs Triton kernels only under the CPU interpreter, so it is set
# before anything can import triton; tests that need it unset say so (monkeypatch).
os.environ.setdefault("TRITON_INTERPRET", "1")
# `derive check` prints GitHub annotations by default inside a GitHub Actions job; the tests pin
# the format they expect, and those that test the default set GITHUB_ACTIONS themselves.
os.environ.pop("GITHUB_ACTIONS", None)


def require_tool(name: str) -> str:
    """Path of ``name``; skip without it locally, fail without it in CI."""
    path = shutil.which(name)
    if path is None:
        if IN_CI:
            pytest.fail(f"{name} is required in CI (CI=true) but is not installed")
        pytest.skip(f"{name} is not installed")
    return path


def require_module(name: str, why: str):
    """The module ``name``; skip without it locally, fail without it in CI (CI=true)."""
    if IN_CI:
        try:
            return importlib.import_module(name)
        except ImportError as exc:
            pytest.fail(f"{name} is required in CI (CI=true) but cannot be imported: {exc}")
    return pytest.importorskip(name, reason=f"{name} is not installed: {why}")


def jsonschema():
    """jsonschema (a test extra), which validates the reports against their schemas: skip without
    it locally, saying how to install it; fail without it in CI."""
    return require_module("jsonschema", "install the test extra: pip install 'derive[test]'")


def run_derive(*argv: str, cwd=None) -> tuple[int, str, str]:
    """``derive ARGV`` run in this process from ``cwd``: (exit code, stdout, stderr).

    It calls ``derive.cli.main``, what ``python -m derive`` runs, and so spares a test a Python
    start and derive's imports (about 1.5 s of CPU a call); an exception it lets through fails the
    test, as a traceback on stderr would. Tests of the command as a process (its entry point, its
    environment) run it with subprocess."""
    from derive.cli import main

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        if cwd is not None:
            mp.chdir(cwd)
        mp.delenv("GITHUB_ACTIONS", raising=False)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="also run tests marked slow (always on when CI=true)")


# The files that cost the most CPU (benchmarks/bench_tests.py lists them), costliest first. Each file
# runs in one worker (--dist loadfile), so a long file handed out last keeps one worker busy while the
# others are idle: these start first, the others follow by their number of tests (pytest-xdist's own
# order, switched off in pyproject.toml so that this one holds).
FIRST = ("test_impl_kernels.py", "test_docs_current.py", "test_impl_cases.py", "test_impl_zoo.py",
         "test_impl_contract.py", "test_soundness.py", "test_adversarial_corpus.py")


def schedule(items) -> None:
    """Order ``items`` file by file: the files of FIRST in its order, then the others by their number
    of tests, most first; within a file, the order of collection."""
    files = [item.nodeid.split("::")[0] for item in items]
    count = collections.Counter(files)

    def rank(path: str) -> tuple:
        name = path.rsplit("/", 1)[-1]
        return (FIRST.index(name) if name in FIRST else len(FIRST), -count[path], path)

    order = {path: rank(path) for path in count}
    items[:] = [item for _, item in sorted(zip(files, items), key=lambda pair: order[pair[0]])]


def pytest_collection_modifyitems(config, items):
    schedule(items)
    if IN_CI or config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow (CI runs it)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
