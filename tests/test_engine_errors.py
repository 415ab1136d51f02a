"""An engine error is its own outcome, never a verdict.

An exception is injected into every prover (each claim kind of the claim-kind record, at the
boundary and deep inside SymPy while the prover runs), into every normalizer property check
(each entry of the property registry) and into each evaluator (the float backend of the numeric
cross-check, the ball backend of the counterexample search and certification, the exact ball
evaluation of ``derive impl``); the claim, the table row or the command ends in the error
outcome (exit 3), with the exception named, never in proved, refuted or undecided. The
injection points are read from the registries, so a new claim kind or property is covered
as it is added.
"""

from __future__ import annotations

import json
import re
import sys

import pytest
import sympy as sp
from sympy.core.mul import Mul

from derive.claims import normalizer as claims_normalizer
from derive.claims.provers import PROVERS
from derive.claims.run import check_spec
from derive.cli import main
from derive.normalizers import properties
from derive.spec import load_spec
from derive.spec.claim_kinds import KINDS

SPEC = """name = "{name}"
score = "dot(q, k + b_{tag}) / sqrt(d) - m_{tag} * (i - j)"
value = "v + b_{tag}"
mask = "causal"

[symbols]
b_{tag} = "vector"
m_{tag} = "scalar positive"

[claims]
c = '{claim}'
"""

OTHER = """name = "other"
score = "dot(q, k) / sqrt(d) - 2 * (i - j)"
mask = "causal"
"""


def claim_of(kind, tag: str) -> str:
    """The claim of ``kind`` written as its usage says, on this spec's names."""
    return (kind.usage.replace("NAME", f"b_{tag}").replace('"EXPR"', f'"dot(q, k + b_{tag}) / sqrt(d)"')
            .replace('"OTHER.toml"', '"other.toml"'))


def spec_for(tmp_path, kind, tag: str, fresh_normalizer: bool = False):
    """The spec of one claim of ``kind``; ``fresh_normalizer``: with a normalizer of its own (a
    parameter named after ``tag``), so that no cache of an earlier check in this process (the
    properties of softmax, say) answers the claim without running its prover's SymPy again."""
    (tmp_path / "other.toml").write_text(OTHER)
    path = tmp_path / "s.toml"
    text = SPEC.format(name=f"injected {tag}", tag=tag, claim=claim_of(kind, tag))
    if fresh_normalizer:
        text = text.replace("[symbols]\n", f'[normalizer]\nname = "scaled {tag}"\nweight = "exp(a_{tag} * x_j) / '
                                           f'sum_t(exp(a_{tag} * x_t))"\n\n[symbols]\na_{tag} = "scalar positive"\n')
    path.write_text(text)
    return path


def _fresh(monkeypatch):
    """The caches that would answer a claim without running its prover again."""
    monkeypatch.setattr(claims_normalizer, "_CACHE", {})
    monkeypatch.setattr(properties, "_CACHE", {})


class Injected(RuntimeError):
    pass


def _error(result, message: str):
    (c,) = result.claims
    assert c.verdict == "error", (c.verdict, c.reason)
    assert c.error["type"] == "Injected" and c.error["message"] == message
    assert c.reason.startswith(f"internal error: Injected: {message} (at derive/")
    assert c.reason.endswith("this is a fault in derive, not in the input: please report it")
    assert not c.as_expected and c.fails("refuted") and c.counterexample is None
    return c


KIND_NAMES = [k.name for k in KINDS]


@pytest.mark.parametrize("kind", KINDS, ids=KIND_NAMES)
def test_an_exception_from_a_prover_is_the_error_outcome(tmp_path, monkeypatch, kind):
    path = spec_for(tmp_path, kind, kind.name)

    def raising(ctx, claim):
        raise Injected("from the prover")

    monkeypatch.setitem(PROVERS, kind.name, raising)
    c = _error(check_spec(load_spec(path)), "from the prover")
    assert c.error["where"].startswith("derive/claims/run.py:")


@pytest.mark.parametrize("kind", KINDS, ids=KIND_NAMES)
def test_an_exception_deep_in_sympy_inside_a_prover_is_the_error_outcome(tmp_path, monkeypatch, kind):
    """SymPy's Mul.flatten raises while the prover runs (armed only then): whatever route the
    prover was on, and whatever handler lies between, the claim ends in an error."""
    path = spec_for(tmp_path, kind, f"deep_{kind.name}", fresh_normalizer=True)
    spec = load_spec(path)
    _fresh(monkeypatch)
    real, armed, calls = PROVERS[kind.name], [False], [0]
    flatten = Mul.flatten.__func__

    def flattening(cls, seq):
        if armed[0]:
            calls[0] += 1
            raise Injected("deep in SymPy")
        return flatten(cls, seq)

    def prover(ctx, claim):
        armed[0] = True
        try:
            return real(ctx, claim)
        finally:
            armed[0] = False

    monkeypatch.setattr(Mul, "flatten", classmethod(flattening))
    monkeypatch.setitem(PROVERS, kind.name, prover)
    c = _error(check_spec(spec), "deep in SymPy")
    assert calls[0] >= 1
    assert not c.error["where"].startswith("derive/claims/run.py:")  # raised inside the prover's route


PROPERTY_NAMES = list(properties.PROPERTIES)


@pytest.mark.parametrize("prop", PROPERTY_NAMES)
def test_an_exception_in_a_property_check_is_an_error_row_of_the_table(monkeypatch, prop):
    from derive.commands.normalizer import markdown, table
    from derive.normalizers.registry import get

    _fresh(monkeypatch)
    title = properties.PROPERTIES[prop].title

    def raising(entry, params):
        raise Injected(f"in the {prop} check")

    monkeypatch.setitem(properties.PROPERTIES, prop, properties.Property(title, raising))
    rows = {r["property"]: r for r in table(get("sigmoid"), {}, 20.0)["properties"]}
    assert rows[prop]["verdict"] == "error"
    assert rows[prop]["error"]["type"] == "Injected" and rows[prop]["error"]["message"] == f"in the {prop} check"
    assert rows[prop]["reason"].startswith(f"internal error: Injected: in the {prop} check (at derive/")
    # the other properties that do not read this one keep their verdicts
    assert rows["shift_invariant" if prop != "shift_invariant" else "weights_sum_to_one"]["verdict"] in (
        "proved", "refuted", "undecided", "error")
    assert f"💥 internal error | ? | internal error: Injected: in the {prop} check" in markdown(
        {"normalizer": "sigmoid", "formula": "", "properties": list(rows.values()),
         "softmax_family": {"member": True, "extra_logit": None}, "fully_masked_row": {"gives": ""}})


@pytest.mark.parametrize("prop", claims_normalizer.PROPERTIES)
def test_an_exception_in_a_property_check_is_the_error_outcome_of_its_claim(tmp_path, monkeypatch, prop):
    kind = next(k for k in KINDS if k.name == prop)  # the claim kind of the same name reads the property
    path = spec_for(tmp_path, kind, f"prop_{prop}")
    _fresh(monkeypatch)
    title = properties.PROPERTIES[prop].title

    def raising(entry, params):
        raise Injected(f"in the {prop} check")

    monkeypatch.setitem(properties.PROPERTIES, prop, properties.Property(title, raising))
    _error(check_spec(load_spec(path)), f"in the {prop} check")


def test_derive_normalizer_exits_3_on_an_engine_error(monkeypatch, capsys):
    title = properties.PROPERTIES["can_abstain"].title

    def raising(entry, params):
        raise AttributeError("'Mul' object has no attribute 'function'")

    _fresh(monkeypatch)
    monkeypatch.setitem(properties.PROPERTIES, "can_abstain", properties.Property(title, raising))
    assert main(["normalizer", "softmax1", "--format", "json"]) == 3
    rows = {r["property"]: r for r in json.loads(capsys.readouterr().out)["properties"]}
    assert rows["can_abstain"]["verdict"] == "error"
    assert rows["can_abstain"]["error"]["type"] == "AttributeError"
    assert rows["shift_invariant"]["verdict"] == "refuted" and rows["shift_invariant"]["error"] is None


# -- the evaluators ---------------------------------------------------------------------------

def _evaluator(monkeypatch, mode: str, calls: list):
    """derive's one evaluator (derive.crosscheck.evaluate), raising in backend ``mode``."""
    from derive.crosscheck import evaluate as ev

    run = ev._Eval.run

    def running(self, e, env):
        if self.mode == mode:
            calls.append(mode)
            raise Injected(f"in the {mode} evaluator")
        return run(self, e, env)

    monkeypatch.setattr(ev._Eval, "run", running)


PROVED = """name = "proved {tag}"
score = "dot(q, k + b_{tag}) / sqrt(d)"

[symbols]
b_{tag} = "vector"

[claims]
c = "depends(q)"
"""

REFUTED = """name = "refuted {tag}"
score = "dot(q + b_{tag}, k) / sqrt(d)"

[symbols]
b_{tag} = "vector"

[claims]
c = "invariant(b_{tag})"
"""


def test_an_exception_in_the_cross_check_after_a_proof_is_the_error_outcome(tmp_path, monkeypatch):
    """The proof went through; the numeric cross-check that follows it raises: not "proved
    (cross-check not run)" but an error."""
    path = tmp_path / "p.toml"
    path.write_text(PROVED.format(tag="float").replace('"depends(q)"', '"invariant(b_float)"'))
    spec = load_spec(path)
    calls: list = []
    _evaluator(monkeypatch, "float", calls)
    c = _error(check_spec(spec), "in the float evaluator")
    assert calls and "cross-check" not in c.reason


def test_an_exception_in_the_counterexample_search_is_the_error_outcome(tmp_path, monkeypatch):
    """The claim is false; the ball evaluation that certifies counterexamples raises: not
    "undecided: no proof and no counterexample were found" but an error."""
    path = tmp_path / "r.toml"
    path.write_text(REFUTED.format(tag="arb"))
    spec = load_spec(path)
    calls: list = []
    _evaluator(monkeypatch, "arb", calls)
    _error(check_spec(spec), "in the arb evaluator")
    assert calls


@pytest.mark.parametrize("fmt", ["md", "json", "github", "sarif", "tex"])
def test_derive_check_exits_3_and_every_format_shows_the_error(tmp_path, monkeypatch, capsys, fmt):
    path = tmp_path / "r.toml"
    path.write_text(REFUTED.format(tag=f"fmt_{fmt}"))
    _evaluator(monkeypatch, "arb", [])
    assert main(["check", str(path), "--format", fmt]) == 3
    out, err = capsys.readouterr()
    assert err == ""
    line = re.escape("internal error: Injected: in the arb evaluator (at ")
    if fmt == "json":
        from tests.test_check_cli import validate_report

        doc = json.loads(out)
        validate_report(doc)  # tests/check-report-schema.json: an error claim has its error, and nothing else
        assert doc["counts"] == {"claims": 1, "proved": 0, "refuted": 0, "undecided": 0, "error": 1, "replayed": 0}
        (claim,) = doc["specs"][0]["claims"]
        assert claim["verdict"] == "error" and claim["error"]["type"] == "Injected"
        assert re.match(line, claim["reason"])
    elif fmt == "sarif":
        from tests.test_check_formats import _validate

        run = _validate(out)["runs"][0]  # the official SARIF 2.1.0 schema
        (inv,) = run["invocations"]
        assert inv["executionSuccessful"] is False and inv["exitCode"] == 3 and run["results"] == []
        (note,) = inv["toolExecutionNotifications"]
        assert note["exception"] == {"kind": "Injected", "message": "in the arb evaluator"}
        assert note["descriptor"] == {"id": "internal-error"} and note["level"] == "error"
        assert note["locations"][0]["physicalLocation"]["region"]["startLine"] == 8
    elif fmt == "github":
        first, summary = out.splitlines()
        assert re.fullmatch(r"::error file=.*r\.toml,line=8,col=1,title=c%3A internal error::`invariant\(b_fmt_github\)` "
                            r"has no verdict: " + line + r".*please report it", first)
        assert summary == "1 claim: 0 proved, 0 refuted, 0 undecided, 1 internal error"
    elif fmt == "md":
        assert out.startswith("1 claim: 0 proved, 0 refuted, 0 undecided, 1 internal error\n")
        assert "| 💥 internal error | internal error: Injected: in the arb evaluator" in out
        assert "**No verdict:** internal error: Injected" in out
        assert "💥 internal error: derive's own engine failed on the claim" in out
    else:
        assert "& internal error \\\\" in out and "internal error: Injected: in the arb evaluator" in out


def test_derive_impl_exits_3_when_the_exact_evaluation_raises(monkeypatch, capsys):
    """The exact ball evaluation of a weight formula (derive.normalizers.exact.adaptive, wherever
    it was imported) raises while derive impl checks a function: exit 3, no report."""
    from derive.impl.judge.row import Checker
    from derive.normalizers import exact

    real, armed, run = exact.adaptive, [False], Checker.run

    def adaptive(evaluate):
        if armed[0]:
            raise Injected("in the exact evaluation")
        return real(evaluate)

    def checking(self, *args, **kwargs):  # armed while the check runs (loading the spec evaluates too)
        armed[0] = True
        try:
            return run(self, *args, **kwargs)
        finally:
            armed[0] = False

    monkeypatch.setattr(Checker, "run", checking)
    for module in [m for name, m in sys.modules.items() if name.startswith("derive.") and m is not None]:
        if getattr(module, "adaptive", None) is real:
            monkeypatch.setattr(module, "adaptive", adaptive)
    code = main(["impl", "tests/zoo/softmax1_numpy.py:softmax1", "--as", "tests/normalizer_specs/softmax1.toml",
                 "--dtype", "float64", "--examples", "5"])
    out, err = capsys.readouterr()
    assert (code, out) == (3, "")
    assert re.match(r"derive: tests/zoo/softmax1_numpy.py:softmax1 as softmax1 \(float64\): internal error: "
                    r"Injected: in the exact evaluation \(at derive/", err), err


def test_a_flow_control_exception_of_derive_raised_out_of_place_is_an_error(tmp_path, monkeypatch):
    """derive uses KeyError (its caches), StopIteration (generators) and its own Undecidable
    (masks) for flow; one raised where no handler expects it is an engine fault."""
    from derive.model.masks import Undecidable

    for k, exc in enumerate((KeyError("a cache miss"), StopIteration(), Undecidable("a mask"))):
        path = tmp_path / f"f{k}.toml"
        path.write_text(REFUTED.format(tag=f"flow{k}"))
        spec = load_spec(path)

        def raising(self, e, env, exc=exc):
            raise exc

        with monkeypatch.context() as m:
            from derive.crosscheck import evaluate as ev

            m.setattr(ev._Eval, "run", raising)
            (c,) = check_spec(spec).claims
        assert c.verdict == "error" and c.error["type"] == type(exc).__name__, (c.verdict, c.reason)


def test_the_injection_covers_every_registry_entry():
    """A check that cannot fail is a defect: the parametrisations above are the registries."""
    assert KIND_NAMES == [k.name for k in KINDS] and len(KIND_NAMES) >= 12
    assert PROPERTY_NAMES == list(properties.PROPERTIES) and len(PROPERTY_NAMES) >= 14
    assert set(claims_normalizer.PROPERTIES) <= set(KIND_NAMES) & set(PROPERTY_NAMES)
    assert sp.Mul.flatten.__func__ is Mul.flatten.__func__


def test_an_engine_failure_outside_any_claim_exits_3_with_the_traceback(monkeypatch, capsys):
    """Loading a spec evaluates its weight exactly (somewhere defined?): an engine exception there
    is no claim's, and the command ends with exit 3, the one-line description and the traceback."""
    from derive.normalizers import formula

    def adaptive(evaluate):
        raise Injected("while loading")

    monkeypatch.setattr(formula, "adaptive", adaptive)
    assert main(["check", "tests/normalizer_specs/softmax1.toml"]) == 3
    out, err = capsys.readouterr()
    first, second = err.splitlines()[:2]
    assert out == ""
    assert re.fullmatch(r"derive: internal error: Injected: while loading \(at derive/normalizers/formula\.py:\d+ "
                        r"in _softmax\); this is a fault in derive, not in the input: please report it", first)
    assert second == "the traceback, for the report:" and err.rstrip().endswith("Injected: while loading")


# -- the other commands and the test helpers ------------------------------------------------------

def test_derive_diff_exits_3_when_a_claim_of_either_spec_is_an_error(tmp_path, monkeypatch, capsys):
    old, new = tmp_path / "old.toml", tmp_path / "new.toml"
    old.write_text(REFUTED.format(tag="diff"), encoding="utf-8")
    new.write_text(REFUTED.format(tag="diff").replace('"invariant(b_diff)"', '"depends(b_diff)"'), encoding="utf-8")
    real = PROVERS["invariant"]

    def raising(ctx, claim):
        raise Injected("in diff")

    monkeypatch.setitem(PROVERS, "invariant", raising)
    assert main(["diff", str(old), str(new)]) == 3
    out = capsys.readouterr().out
    # OLD's invariant is an error; NEW's depends (which calls the invariant prover directly) is proved
    assert out.startswith("1 claim: 1 proved, 0 refuted, 0 undecided; 1 of 1 proof replayed (before: 1 claim: 0 proved, 0 refuted, "
                          "0 undecided, 1 internal error)\n")
    assert "| **`c`** | `depends(b_diff)` | 💥 internal error | ✅ proved |" in out
    monkeypatch.setitem(PROVERS, "invariant", real)
    assert main(["diff", str(old), str(old), "--format", "json"]) == 0


def test_assert_claims_raises_the_engine_error_never_a_pass(tmp_path, monkeypatch):
    from derive.errors import InternalError
    from derive.testing import assert_claims

    path = tmp_path / "v.derive.toml"
    path.write_text(REFUTED.format(tag="assert").replace('c = "invariant(b_assert)"',
                                                         'c = { claim = "invariant(b_assert)", expect = "undecided" }'),
                    encoding="utf-8")

    def raising(ctx, claim):
        raise Injected("in a test suite")

    monkeypatch.setitem(PROVERS, "invariant", raising)
    with pytest.raises(InternalError, match=r"the engine failed on 1 claim:\n  c = 'invariant\(b_assert\)': internal "
                                            r"error: Injected: in a test suite \(at derive/") as info:
        assert_claims(path, allow={"c": "undecided"})
    assert isinstance(info.value.__cause__, Injected)


@pytest.mark.slow
def test_the_pytest_plugin_fails_an_engine_error_with_the_exception(tmp_path):
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    (tmp_path / "conftest.py").write_text(
        "from derive.claims.provers import PROVERS\n\n\ndef _raising(ctx, claim):\n"
        "    raise RuntimeError('injected into the plugin')\n\n\nPROVERS['invariant'] = _raising\n", encoding="utf-8")
    (tmp_path / "v.derive.toml").write_text(
        REFUTED.format(tag="plugin").replace('c = "invariant(b_plugin)"',
                                             'c = { claim = "invariant(b_plugin)", expect = "undecided" }\n'
                                             'd = "depends(q)"'), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "derive.pytest_plugin", "-q", "-p", "no:cacheprovider",
                           str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(root), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout + proc.stderr
    assert "RuntimeError: injected into the plugin" in proc.stdout
    assert "derive.errors.InternalError: c = 'invariant(b_plugin)': internal error: RuntimeError: injected" in proc.stdout


STEP = """from derive import Document, Dot, VectorBase, vectors
from derive.model.attention import i, j

q, k = VectorBase("q"), VectorBase("k")
b, = vectors("b")


def document():
    doc = Document("{slug}", "One step")
    doc.equation(Dot(q[i], k[j] + b), Dot(q[i], k[j]) + Dot(q[i], b), name="bilinear", why="linearity")
    return doc
"""


def test_a_build_stops_on_an_engine_error_with_its_own_message_not_a_failed_step(tmp_path, monkeypatch):
    """An exception of derive's engine in a step is exit 3 with its description, never "step failed";
    an exception the module's own code raises is bad input (exit 2), naming the module's line."""
    from derive.document import api
    from tests.conftest import run_derive

    (tmp_path / "proofs").mkdir()
    (tmp_path / "proofs" / "step.py").write_text(STEP.replace("{slug}", "step"), encoding="utf-8")
    (tmp_path / "proofs" / "own.py").write_text("def document():\n    return 1 / 0\n", encoding="utf-8")

    def raising(a, b, cfg=None):
        raise Injected("in a step")

    monkeypatch.setattr(api, "prove_equal", raising)
    code, _, err = run_derive("build", "--no-pdf", "--jobs", "1", "proofs/step.py", cwd=tmp_path)
    assert code == 3 and "step failed" not in err
    assert re.search(r"^derive: building proofs/step\.py: internal error: Injected: in a step \(at "
                     r"derive/document/api\.py:\d+ in _prove\); this is a fault in derive, not in the input: please "
                     r"report it$", err, re.MULTILINE), err
    code, _, err = run_derive("build", "--no-pdf", "--jobs", "1", "proofs/own.py", cwd=tmp_path)
    assert code == 2 and err.endswith("derive: error: proofs/own.py, line 2: the module raised ZeroDivisionError: "
                                      "division by zero\n"), err
