"""The implementation runs in a child process: whatever it does (exit, hang, write to
stdout, return garbage) is bad usage, exit 2 with one pinned line; it never decides the
verdict and never reaches the report on stdout."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from derive.cli import main
from derive.errors import InputError
from derive.impl import check_implementation
from derive.impl.judge.row import Checker
from derive.normalizers.registry import get

H = "tests.zoo.hostile:"
QUICK = ["--dtype", "float64", "--examples", "20"]

HOSTILE = [
    ("tests.zoo.odd:reduces", "tests.zoo.odd:reduces returned a value of type numpy.float64, not an array (numpy array "
                       "or torch tensor) (on a float64 input of shape [1]); no verdict"),
    ("exits_0", "tests.zoo.hostile:exits_0 called sys.exit(0) while being called on the input [0.0, 1.0]: "
                "the check was stopped; no verdict"),
    ("exits_3", "tests.zoo.hostile:exits_3 called sys.exit(3) while being called on the input [0.0, 1.0]: "
                "the check was stopped; no verdict"),
    ("os_exit", "the process running tests.zoo.hostile:os_exit ended with exit status 0 while being called "
                "on the input [0.0, 1.0] (os._exit or a crash); no verdict"),
    ("killed", "the process running tests.zoo.hostile:killed was killed by SIGKILL while being called on "
               "the input [0.0, 1.0]; no verdict"),
    ("exits_on_long_rows", "tests.zoo.hostile:exits_on_long_rows called sys.exit(0) while being called on a "
                           "float64 input of shape ["),
    ("writes_fd1", "tests.zoo.hostile:writes_fd1 wrote to standard output (file descriptor 1) while being "
                   "called on the input [0.0, 1.0]: the report owns standard output; write to stderr "
                   "instead; no verdict"),
    ("returns_list", "tests.zoo.hostile:returns_list returned a value of type list, not an array (numpy "
                     "array or torch tensor) (on a float64 input of shape [1]); no verdict"),
    ("returns_none", "returned a value of type NoneType, not an array"),
    ("returns_strings", "returned a numpy array of dtype <U32, not floating-point weights"),
    ("forges_a_reply", "the process running tests.zoo.hostile:forges_a_reply sent a malformed reply while being "
                       "called on the input [0.0, 1.0] (something wrote to derive's private pipe); no verdict"),
    ("returns_transposed", "returned an array of shape [1, 1] for an input of shape [1]: the weights must "
                           "have the shape of the scores"),
]


def run(capsys, *argv):
    code = main(["impl", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("fmt", ["md", "json"])
@pytest.mark.parametrize("fn,message", HOSTILE)
def test_hostile_function_is_bad_usage_and_never_reaches_stdout(capsys, fn, message, fmt):
    spec = fn if ":" in fn else H + fn
    code, out, err = run(capsys, spec, "--as", "softmax1", *QUICK, "--format", fmt)
    assert (code, out) == (2, "")
    line = err.splitlines()[-1]
    assert line.startswith("derive: error: ")
    assert message in line


def test_a_hanging_function_is_stopped_at_the_timeout(capsys):
    code, out, err = run(capsys, H + "loops", "--as", "softmax1", "--timeout", "1.5", *QUICK)
    assert (code, out) == (2, "")
    assert err == ("derive: error: tests.zoo.hostile:loops did not finish within the timeout of 1.5 s while "
                   "being called on the input [0.0, 1.0]; it was stopped (set --timeout SECONDS); no verdict\n")


@pytest.mark.parametrize("spec,message", [
    ("tests/zoo/exits_at_import.py:softmax1",
     "tests/zoo/exits_at_import.py:softmax1 called sys.exit(0) while being imported"),
    ("tests/zoo/prints_at_import.py:softmax1",
     "tests/zoo/prints_at_import.py:softmax1 wrote to standard output (file descriptor 1) while being imported"),
])
def test_misbehaving_module_at_import(capsys, spec, message):
    code, out, err = run(capsys, spec, "--as", "softmax1", *QUICK)
    assert (code, out) == (2, "")
    assert message in err and err.count("\n") == 1


def test_exit_in_a_subprocess_cli_run_is_exit_2_with_empty_json():
    """The real command line, as a CI gate runs it: sys.exit(0) in the function is not 'agrees'."""
    proc = subprocess.run([sys.executable, "-m", "derive", "impl", H + "exits_on_long_rows", "--as", "softmax1",
                           "--format", "json", *QUICK], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("derive: error: ") and proc.stderr.count("\n") == 1


def test_complex_output_is_a_disagreement_stated_once():
    report = check_implementation(H + "complex_weights", "softmax1", dtypes=("float64",), examples=20)
    assert report.exit_code() == 1
    assert (report.failure.what, report.failure.row, report.failure.output) == ("complex", [0.0], [0.5 + 1e-3j])
    md = report.to_markdown()
    assert md.count("complex numbers") == 1
    assert "| 0 | 0 | 0.5+0.001j | 0.5 | **1.000e-03** |" in md
    assert report.diagnosis is None
    assert json.loads(report.to_json())["counterexample"]["output"] == ["0.5+0.001j"]


def test_mutating_the_input_is_a_one_line_warning():
    report = check_implementation(H + "mutates", "softmax1", dtypes=("float64",), examples=20)
    assert report.agrees
    line = ("the function modifies its input array in place (the scores passed to it changed): callers that "
            "reuse the scores will see them changed")
    assert report.warnings == [line]
    assert f"**Warning:** {line}." in report.to_markdown()
    assert json.loads(report.to_json())["warnings"] == [line]


def test_print_goes_to_stderr_not_the_report(capsys):
    code, out, err = run(capsys, "tests.zoo.odd:chatty", "--as", "softmax1", *QUICK, "--format", "json")
    assert code == 0 and json.loads(out)["verdict"] == "agrees"
    assert "debug: computing softmax1" in err


def test_a_callable_that_cannot_be_pickled_is_bad_usage():
    with pytest.raises(InputError, match=r"^cannot run .*<lambda> in a separate process: it cannot be pickled .*; define it at module level or pass FILE.py:FUNCTION$"):
        check_implementation(lambda x: x, "softmax1", dtypes=("float64",), examples=5)


def test_an_engine_failure_is_never_a_verdict(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(Checker, "_gradient", broken)
    monkeypatch.setattr(Checker, "compare", broken)
    code, out, err = run(capsys, "tests/zoo/softmax1_numpy.py:softmax1", "--as", "softmax1", *QUICK)
    assert (code, out) == (3, "")
    first, rest = err.split("\n", 1)
    assert re.fullmatch(r"derive: tests/zoo/softmax1_numpy.py:softmax1 as softmax1 \(float64\): internal error: "
                        r"ZeroDivisionError: boom \(at derive/impl/[\w/]+\.py:\d+ in \w+\); this is a fault in "
                        r"derive, not in the input: please report it", first), first
    assert rest.startswith("the traceback, for the report:\nTraceback (most recent call last):")




def test_the_worker_process_imports_neither_derive_nor_sympy():
    report = check_implementation(H + "lean_worker", "softmax1", dtypes=("float64",), examples=5)
    assert report.agrees, report.to_markdown()


# -- derive's own documents: one worker for their examples, never one that misbehaved ---------------

from derive.impl.run.target import load, one_worker  # noqa: E402


def _pid(spec):
    target = load(spec, spec, (), -1, "float64")
    pid = target.worker.proc.pid
    target.close()
    return pid


def test_one_worker_serves_checks_in_turn_and_stops_at_the_end():
    with one_worker():
        a, b = _pid("numpy:exp"), _pid("numpy:tanh")
        target = load("numpy:exp", "numpy:exp", (), -1, "float64")
        worker, c = target.worker, target.worker.proc.pid
        target.close()
        assert worker.proc is not None and worker.proc.poll() is None  # idle, still running
    assert a == b == c
    assert worker.proc is None  # stopped at the block's end
    assert _pid("numpy:exp") != _pid("numpy:exp")  # outside the block: a process per check


@pytest.mark.parametrize("fn", ["exits_0", "os_exit", "forges_a_reply", "writes_fd1"])
def test_a_worker_that_misbehaved_is_never_handed_on(fn):
    with one_worker():
        before = _pid("numpy:exp")
        with pytest.raises(InputError):
            check_implementation(H + fn, "softmax", dtypes=("float64",), examples=5)
        after = _pid("numpy:exp")
    assert before != after


def test_a_wrong_shape_stops_the_shared_worker():
    with one_worker():
        before = _pid("numpy:exp")
        with pytest.raises(InputError, match="returned an array of shape"):
            check_implementation(H + "returns_transposed", "softmax", dtypes=("float64",), examples=5)
        after = _pid("numpy:exp")
    assert before != after


def test_a_reply_is_rebuilt_from_dtype_shape_and_bytes_and_nothing_else():
    """The child's reply format: arrays of numbers round-trip bit for bit (any layout, 0-d, empty,
    big-endian); an object dtype, a record, a string, a bad shape, missing or extra bytes are refused."""
    import numpy as np

    from derive.sandbox.child import encode
    from derive.sandbox.process import decode

    arrays = [np.zeros(0), np.array(3.5), np.arange(6.0).reshape(2, 3).T, np.array([1 + 2j]), np.array([True, False]),
              np.zeros((0, 3)), np.arange(12.0).reshape(3, 4)[:, ::2], np.arange(3, dtype=">f8"),
              np.array([np.nan, -np.inf, -0.0])]
    reply = decode(encode(("ok", ["a"], *arrays, {"mutated": False}, None)))
    assert reply[:2] == ("ok", ["a"]) and reply[-2:] == ({"mutated": False}, None)
    for a, b in zip(arrays, reply[2:-2]):
        assert b.dtype == a.dtype and b.shape == a.shape and b.tobytes() == a.tobytes()
        assert b.flags.writeable and b.flags.c_contiguous
    with pytest.raises(ValueError):
        encode(("ok", np.array([object()])))
    for head, tail in [(["|O", [1]], 8), (["<f8", [2]], 8), (["<f8", [1]], 9), (["<f8", [True]], 8), (["V8", [1]], 8),
                       (["i4,i4", [1]], 8), (["<f8", [-1]], 0), (["(2,)f8", [1]], 16), (["U3", [1]], 12),
                       (["<f8", [10**12, 10**12]], 8), (["<f8", 1], 8)]:
        with pytest.raises((ValueError, TypeError)):
            decode(json.dumps(["ok", {"array": head}]).encode() + b"\n" + bytes(tail))
