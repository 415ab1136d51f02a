"""The authoring API: a derivation document is a list of checked blocks.

A module in ``proofs/`` defines ``document() -> Document`` and builds it from prose,
equations, chains of equalities, classifications, tables and figures. Every equation is
proved symbolically *when it is added* (after unfolding named notation) and then
cross-checked numerically; a step that does not verify raises
:class:`~derive.errors.StepFailed` naming the step and a numeric witness, so nothing
unproved can reach a rendered document.

Example::

    >>> import sympy as sp
    >>> from derive.document.api import Document
    >>> x = sp.Symbol("x", real=True)
    >>> doc = Document("demo", "Demo")
    >>> step = doc.equation(sp.exp(x + 1), sp.E * sp.exp(x), why="exp(a+b) = exp(a)·exp(b)")
    >>> step.verdict.status
    'proved'
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import sympy as sp

from derive.crosscheck.check import CheckResult, cross_check
from derive.document.notation import unfold
from derive.errors import StepFailed
from derive.prove.equality import prove_equal
from derive.prove.rowconst import Classification, classify
from derive.prove.verdict import PROVED, REFUTED, Verdict
from derive.settings import DEFAULT, Settings

__all__ = ["Classified", "Document", "Equation", "ExampleCheck", "Figure", "Prose", "Refutation", "Section", "Table"]


@dataclass
class Section:
    title: str
    kind: str = "section"
    anchor: str = ""  # an id other documents and tables can link to: [text](#anchor)
    level: int = 2  # 2 = section, 3 = subsection


@dataclass
class Prose:
    text: str
    kind: str = "prose"


@dataclass
class Equation:
    name: str
    lhs: sp.Expr
    rhs: sp.Expr
    why: str
    verdict: Verdict
    check: CheckResult | None
    relation: str = "="
    kind: str = "equation"
    where: sp.Basic | None = None  # the range the statement is cross-checked on (e.g. a ≤ b)


@dataclass
class Refutation:
    """``lhs ≠ rhs``: a claimed identity (typically a faulty form) and its certified counterexample."""

    name: str
    lhs: sp.Expr
    rhs: sp.Expr
    why: str
    verdict: Verdict
    kind: str = "refutation"
    assume: dict = field(default_factory=dict)  # the specialization the counterexample was searched in


@dataclass
class Chain:
    name: str
    exprs: list[sp.Expr]
    whys: list[str]
    verdicts: list[Verdict]
    check: CheckResult | None
    kind: str = "chain"


@dataclass
class Classified:
    name: str
    rows: list[tuple[str, Classification]]
    index: sp.Symbol
    why: str
    kind: str = "classification"


@dataclass
class Table:
    headers: list[str]
    rows: list[list]
    caption: str = ""
    kind: str = "table"


@dataclass
class Figure:
    slug: str
    caption: str
    draw: Callable
    kind: str = "figure"


@dataclass
class ExampleCheck:
    """A check on concrete numbers (a worked example), independent of the symbolic engine."""

    name: str
    passed: bool
    max_abs_error: float  # measured; not printed (see derive.crosscheck.check)
    tolerance: float
    detail: str = ""

    def as_json(self) -> dict:
        return {
            "name": self.name,
            "kind": "example",
            "verdict": "passed" if self.passed else "failed",
            "examples": 1,
            "tolerance": {"rel": self.tolerance, "abs": self.tolerance},
            "detail": self.detail,
        }


@dataclass
class Document:
    slug: str
    title: str
    summary: str = ""
    cfg: Settings = DEFAULT
    blocks: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    data: dict = field(default_factory=dict)
    source: str = ""  # the module it was built from, set by the build
    timings: list = field(default_factory=list)  # (step, proof seconds, check seconds); never rendered

    # -- structure -------------------------------------------------------------------
    def section(self, title: str, anchor: str = "", level: int = 2) -> None:
        """A heading; ``anchor`` makes it a link target (``[text](#anchor)`` in prose and cells)."""
        self.blocks.append(Section(title, anchor=anchor, level=level))

    def prose(self, text: str) -> None:
        """A paragraph; ``$…$`` marks inline math, ``**…**`` bold, `` `…` `` code."""
        self.blocks.append(Prose(text.strip()))

    def table(self, headers: Sequence[str], rows: Sequence[Sequence], caption: str = "") -> None:
        """A table; a cell is text, or a SymPy expression rendered as math."""
        self.blocks.append(Table(list(headers), [list(r) for r in rows], caption))

    def figure(self, slug: str, draw: Callable, caption: str) -> None:
        """``draw(ax)`` draws on a matplotlib axes; saved as SVG (docs/) and PDF (build/)."""
        self.blocks.append(Figure(f"{self.slug}-{slug}", caption, draw))

    def record(self, key: str, value) -> None:
        """Data for the JSON output (inputs, scores, weights …)."""
        self.data[key] = value

    # -- checked steps -------------------------------------------------------------------
    def equation(self, lhs, rhs, *, why: str, name: str | None = None, check: bool = True,
                 assume: dict | None = None, where: sp.Basic | None = None) -> Equation:
        """``lhs = rhs``: proved symbolically, then cross-checked numerically.

        ``assume`` substitutes values before proving and checking (e.g. ``{M[i, 1]: 1}``:
        key 1 is allowed); they are part of the statement and shown with it. ``where`` is a
        condition (e.g. ``a <= b``) the statement is meant for: the proof holds without it,
        and the cross-check draws only instances that satisfy it (shown with the check).
        """
        name = name or f"step-{self._count('equation') + 1}"
        t0 = time.perf_counter()
        verdict = self._prove(name, lhs, rhs, assume)
        t1 = time.perf_counter()
        result = self._cross_check(name, lhs, rhs, assume, where) if check else None
        self.timings.append((name, t1 - t0, time.perf_counter() - t1))
        step = Equation(name, lhs, rhs, why, verdict, result, where=where)
        self.blocks.append(step)
        return step

    def chain(self, exprs: Sequence, whys: Sequence[str], *, name: str | None = None,
              assume: dict | None = None) -> Chain:
        """e₀ = e₁ = … = eₖ, each link proved; the ends are cross-checked."""
        if len(whys) != len(exprs) - 1:
            raise ValueError("a chain of k+1 expressions needs k justifications")
        name = name or f"chain-{self._count('chain') + 1}"
        t0 = time.perf_counter()
        links = enumerate(zip(exprs, exprs[1:]))
        verdicts = [self._prove(f"{name} (link {k + 1})", a, b, assume) for k, (a, b) in links]
        t1 = time.perf_counter()
        result = self._cross_check(name, exprs[0], exprs[-1], assume)
        self.timings.append((name, t1 - t0, time.perf_counter() - t1))
        step = Chain(name, list(exprs), list(whys), verdicts, result)
        self.blocks.append(step)
        return step

    def refutation(self, lhs, rhs, *, why: str, name: str, fixed: dict | None = None,
                   assume: dict | None = None, max_d: int | None = None, max_n: int | None = None) -> Refutation:
        """``lhs ≠ rhs``, shown by the simplest certified counterexample (ball arithmetic).

        For a faulty form next to the correct one: the build stops if the two are in fact
        equal or no certified counterexample is found. ``fixed`` binds index symbols for
        the search (e.g. the ends of a tile), ``assume`` substitutes values first.
        """
        from derive.crosscheck.witness import find_witness

        t0 = time.perf_counter()
        a, b = unfold(sp.sympify(lhs)), unfold(sp.sympify(rhs))
        if assume:
            a, b = a.subs(assume), b.subs(assume)
        sizes = {k: v for k, v in (("max_d", max_d), ("max_n", max_n)) if v is not None}
        witness = find_witness(a, b, fixed=fixed, cfg=self.cfg, **sizes)
        if witness is None:
            raise StepFailed(f"{self.slug}: refutation {name!r} has no certified counterexample")
        verdict = Verdict(REFUTED, "a certified counterexample", method="ball arithmetic", witness=witness)
        self.timings.append((name, time.perf_counter() - t0, 0.0))
        step = Refutation(name, lhs, rhs, why, verdict, assume=dict(assume or {}))
        self.blocks.append(step)
        return step

    def classify(self, rows: Sequence[tuple[str, sp.Expr]], index: sp.Symbol, *, why: str,
                 name: str | None = None, expect: Sequence[str] | None = None) -> Classified:
        """Classify each term as constant in ``index`` (proved) or dependent (witness).

        ``expect`` lists the classification the author states for each row; a mismatch or an
        undecided row stops the build.
        """
        name = name or f"classification-{self._count('classification') + 1}"
        t0 = time.perf_counter()
        out = []
        for k, (label, expr) in enumerate(rows):
            c = classify(unfold(expr), index, self.cfg)
            if c.verdict.status not in (PROVED, REFUTED):
                raise StepFailed(f"{self.slug}: {name}: could not classify {label}: {c.verdict.reason}")
            if expect is not None and c.label != expect[k]:
                raise StepFailed(f"{self.slug}: {name}: {label} is {c.label}, not {expect[k]}")
            out.append((label, c))
        self.timings.append((name, time.perf_counter() - t0, 0.0))
        step = Classified(name, out, index, why)
        self.blocks.append(step)
        return step

    def example_check(self, name: str, got: Sequence[float], expected: Sequence[float],
                      tol: float | None = None, detail: str = "") -> ExampleCheck:
        tol = self.cfg.rtol if tol is None else tol
        err = max((abs(float(a) - float(b)) for a, b in zip(got, expected)), default=0.0)
        ok = len(got) == len(expected) and all(
            abs(float(a) - float(b)) <= tol + tol * max(abs(float(a)), abs(float(b))) for a, b in zip(got, expected))
        result = ExampleCheck(name, ok, err, tol, detail)
        if not ok:
            raise StepFailed(f"{self.slug}: example check {name!r} failed: got {list(got)}, expected {list(expected)}")
        self.checks.append(result)
        return result

    # -- internals -------------------------------------------------------------------
    def _count(self, kind: str) -> int:
        return sum(1 for b in self.blocks if b.kind == kind)

    def _prove(self, name: str, lhs, rhs, assume) -> Verdict:
        a, b = unfold(sp.sympify(lhs)), unfold(sp.sympify(rhs))
        if assume:
            a, b = a.subs(assume), b.subs(assume)
        verdict = prove_equal(a, b, cfg=self.cfg)
        if verdict.status != PROVED:
            witness = {k: v for k, v in (verdict.witness or {}).items() if not k.startswith("_")}
            raise StepFailed(f"{self.slug}: step {name!r} is {verdict.status}: {verdict.reason}"
                             + (f"; witness {witness}" if witness else ""))
        return verdict

    def _cross_check(self, name: str, lhs, rhs, assume, where=None) -> CheckResult:
        a, b = unfold(sp.sympify(lhs)), unfold(sp.sympify(rhs))
        if assume:
            a, b = a.subs(assume), b.subs(assume)
        result = cross_check(name, a, b, self.cfg, where=where)
        if not result.passed:
            raise StepFailed(f"{self.slug}: step {name!r} was proved but fails its numeric cross-check; "
                             f"witness {result.witness}")
        self.checks.append(result)
        return result
