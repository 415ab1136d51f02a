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

Prose that states a verdict or a value refers to the checked result by name, so text and
proof cannot disagree: every step registers its name, and :meth:`Document.fact` registers
any other decided result (a normalizer property, a verdict). In ``prose``, table cells and
captions, ``{verdict:NAME=refuted}`` prints ``refuted`` and stops the build unless NAME's
verdict is *refuted*; ``{value:NAME=(0, 1)}`` does the same for a value;
``{verdict:NAME}`` and ``{value:NAME}`` print the result without stating one.
:meth:`Document.claim_sentence` picks the sentence for the verdict NAME has::

    >>> _ = doc.fact("exp is positive", "proved")
    >>> doc.prose("Positivity is {verdict:exp is positive=proved}.")
    >>> doc.blocks[-1].text
    'Positivity is proved.'
    >>> doc.prose("Positivity is {verdict:exp is positive=refuted}.")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    derive.errors.StepFailed: demo: the sentence “Positivity is {verdict:exp is positive=refuted}.” states verdict 'refuted' for 'exp is positive', but its checked verdict is 'proved'
"""

from __future__ import annotations

import dataclasses
import contextlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import sympy as sp

from derive.crosscheck.check import CheckResult, cross_check, same_computation, tautology_message
from derive.document.notation import unfold
from derive.errors import InputError, StepFailed
from derive.progress import note
from derive.prove.equality import prove_equal
from derive.prove.rowconst import Classification, classify
from derive.prove.verdict import PROVED, REFUTED, Verdict
from derive.settings import DEFAULT, Settings

__all__ = ["Box", "Classified", "Definitions", "Document", "Equation", "ExampleCheck", "Fact", "Figure", "Prose",
           "Refutation", "Section", "Table"]

# A reference from prose to a checked result: {verdict:NAME}, {verdict:NAME=STATUS},
# {value:NAME}, {value:NAME=TEXT}. NAME has no braces, "=" or newline.
_REF = re.compile(r"\{(verdict|value):([^{}=\n]+?)(?:=([^{}\n]*))?\}")
# A citation: {cite:KEY} or {cite:KEY1,KEY2}, keys of derive.references.REFERENCES.
_CITE = re.compile(r"\{cite:([^{}\n]+)\}")
_STEP_KINDS = ("equation", "chain", "refutation", "classification")


@dataclass(frozen=True)
class Fact:
    """A checked result prose may refer to: its verdict (status) and a short value."""

    name: str
    status: str
    value: str = ""


def _as_fact(name: str, result, value: str | None) -> Fact:
    """A Fact from a Derivation, a Verdict, a step, an example check or a status word."""
    if isinstance(result, str):
        status = result
    elif isinstance(result, bool):
        status = "proved" if result else "refuted"
    elif hasattr(result, "verdict") and hasattr(result.verdict, "status"):  # Derivation, Equation
        status = result.verdict.status
        if value is None and hasattr(result, "value_text"):
            value = result.value_text()
    elif hasattr(result, "status"):  # Verdict
        status = result.status
    else:
        raise InputError(f"fact {name!r}: expected a verdict, a derivation, a step or a status word, "
                         f"got {type(result).__name__}")
    return Fact(name, status, "" if value is None else str(value))


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` around [start, end), shortened for an error message."""
    head = max(text.rfind(". ", 0, start), text.rfind("\n", 0, start))
    stop = text.find(". ", end)
    s = text[head + 1 if head >= 0 else 0: stop + 1 if stop >= 0 else len(text)].strip()
    return s if len(s) <= 160 else s[:157] + "…"



@dataclass
class Section:
    title: str
    kind: str = "section"
    anchor: str = ""  # ids other documents and tables can link to, space-separated: [text](#anchor)
    level: int = 2  # 2 = section, 3 = subsection, 4 = subsubsection


@dataclass
class Prose:
    text: str
    kind: str = "prose"


@dataclass
class Box:
    """The start (``open``) or the end of a boxed group of blocks: the results box a document opens
    with (:meth:`Document.results`), or the start of the appendix (``appendix``, no end)."""

    kind: str  # "box" or "appendix"
    title: str
    edge: str = "open"  # open | close


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
class Definitions:
    """Notation: ``name := expression`` pairs, shown as one displayed, aligned block."""

    pairs: list[tuple]
    caption: str = ""
    kind: str = "definitions"


@dataclass
class Figure:
    slug: str
    caption: str
    draw: Callable
    kind: str = "figure"
    drawn: dict | None = field(default=None, repr=False)  # {format: bytes} of the formats drawn so far

    def render(self, fmts: tuple[str, ...] = ("svg", "pdf")) -> dict[str, bytes]:
        """The figure as bytes in each of ``fmts`` (SVG for Markdown, PDF for LaTeX), each drawn once."""
        missing = tuple(f for f in fmts if f not in (self.drawn or {}))
        if missing:
            from derive.render.figures import render_figures

            self.drawn = {**(self.drawn or {}), **render_figures(self.draw, missing)}
        return {f: self.drawn[f] for f in fmts}


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
    rebuild: str = ""  # the command that rebuilds it there, set by the build (derive.build.rebuild_command)
    timings: list = field(default_factory=list)  # (step, proof seconds, check seconds); never rendered
    facts: dict = field(default_factory=dict)  # name → Fact: what prose may refer to; never rendered
    cited: list = field(default_factory=list)  # keys of the works cited, in order of first citation
    decided: dict = field(default_factory=dict)  # status → count of claims decided outside steps (table cells)
    certified: list = field(default_factory=list)  # (name, Seal) of proofs shown outside steps (table cells)

    def __post_init__(self) -> None:
        self.summary = _CITE.sub(self._cite, self.summary)  # a summary may cite; it has no facts yet

    # -- structure -------------------------------------------------------------------
    def section(self, title: str, anchor: str = "", level: int = 2) -> None:
        """A heading; ``anchor`` makes it a link target (``[text](#anchor)`` in prose and cells)."""
        self.blocks.append(Section(title, anchor=anchor, level=level))
        if level <= 2:
            note(self.slug, f"{title} ({len(self.steps())} steps checked so far)")

    def prose(self, text: str) -> None:
        """A paragraph in Markdown: ``$…$`` inline math, ``**…**`` bold, ``*…*`` emphasis,
        `` `…` `` code, ``1.`` numbered steps (see :mod:`derive.render.markup`).

        Pipeline: references are resolved here; at rendering, pseudo-math such as ``e^{−c}``
        is marked as math, then markdown-it-py parses the text for Markdown and LaTeX.

        ``{verdict:NAME=STATUS}`` and ``{value:NAME=TEXT}`` state a checked result (see
        :meth:`fact`): they print it, and the build stops if NAME's result differs.
        """
        self.blocks.append(Prose(self.resolve(text.strip())))

    def table(self, headers: Sequence[str], rows: Sequence[Sequence], caption: str = "") -> None:
        """A table; a cell is text, or a SymPy expression rendered as math.

        Text cells and the caption may refer to checked results as :meth:`prose` does.
        """
        rows = [[self.resolve(c) if isinstance(c, str) else c for c in r] for r in rows]
        self.blocks.append(Table(list(headers), rows, self.resolve(caption)))

    @contextlib.contextmanager
    def results(self, title: str = "Results"):
        """The results box: the blocks added inside ``with doc.results():`` open the document, right
        after its summary, whatever point of the module adds them (so the box can state what the
        steps below proved, by name); set apart in a box."""
        start = len(self.blocks)
        self.blocks.append(Box("box", title, "open"))
        yield
        self.blocks.append(Box("box", title, "close"))
        span = self.blocks[start:]
        del self.blocks[start:]
        self.blocks[0:0] = span

    def appendix(self, title: str = "Appendix") -> None:
        """Everything added after this is reference material: set after the References, in the PDF
        on a new page under an appendix heading; not counted as the document's main text."""
        if any(b.kind == "appendix" for b in self.blocks):
            raise InputError(f"{self.slug}: the appendix is started twice")
        self.blocks.append(Box("appendix", title))

    def check_number(self, name: str) -> int | None:
        """The number of the numeric check of the step ``name`` (as its badge prints it), None
        when the step has none (its two sides are one expression); a name no step has is an error."""
        for b in self.blocks:
            if getattr(b, "name", None) == name and b.kind in _STEP_KINDS:
                check = getattr(b, "check", None)
                return None if check is None else next(k + 1 for k, c in enumerate(self.checks) if c is check)
        for k, c in enumerate(self.checks):
            if getattr(c, "name", None) == name:
                return k + 1
        raise InputError(f"{self.slug}: no step or check is named {name!r}")

    def definitions(self, pairs: Sequence[tuple], caption: str = "") -> None:
        """Notation defined once, as a displayed block ``name := expression`` (not a table of
        inline fractions); the caption may refer to checked results as :meth:`prose` does."""
        self.blocks.append(Definitions([tuple(p) for p in pairs], self.resolve(caption)))

    # -- references from prose to checked results -------------------------------------------
    def fact(self, name: str, result, value: str | None = None) -> Fact:
        """Register a checked result under ``name`` for prose to refer to.

        ``result`` is a :class:`~derive.normalizers.algebra.Derivation` (its verdict and value
        text), a :class:`~derive.prove.verdict.Verdict`, a step, or a status word computed by
        the caller (``"proved"``, ``"refuted"``, ``"passed"`` …); never text typed to match
        the prose. Steps (equations, chains, classifications, example checks) register
        themselves under their own names.
        """
        if name in self.facts:
            raise InputError(f"{self.slug}: the fact {name!r} is defined twice")
        f = _as_fact(name, result, value)
        self.facts[name] = f
        return f

    def resolve(self, text: str) -> str:
        """Replace each ``{verdict:NAME[=STATUS]}`` / ``{value:NAME[=TEXT]}`` by the result,
        and each ``{cite:KEY}`` by the citation (the work is listed under References).

        A stated STATUS or TEXT that NAME's result does not have raises
        :class:`~derive.errors.StepFailed`; an unknown NAME raises
        :class:`~derive.errors.InputError`. Both name the document and the sentence.
        """
        def sub(m: re.Match) -> str:
            kind, name, stated = m.group(1), m.group(2).strip(), m.group(3)
            fact = self.facts.get(name)
            if fact is None:
                known = ", ".join(sorted(self.facts)) or "none"
                raise InputError(f"{self.slug}: the sentence “{_sentence(text, m.start(), m.end())}” refers to "
                                 f"{name!r}, which no step or fact of this document defines (known: {known})")
            actual = fact.status if kind == "verdict" else fact.value
            if stated is not None and stated.strip() != actual:
                raise StepFailed(f"{self.slug}: the sentence “{_sentence(text, m.start(), m.end())}” states "
                                 f"{kind} {stated.strip()!r} for {name!r}, but its checked {kind} is {actual!r}")
            return actual

        return _CITE.sub(self._cite, _REF.sub(sub, text)) if text else text

    def _cite(self, m: re.Match) -> str:
        from derive.references import REFERENCES, citation

        keys = [k.strip() for k in m.group(1).split(",")]
        unknown = [k for k in keys if k not in REFERENCES]
        if unknown:
            raise InputError(f"{self.slug}: the citation {m.group(0)} names {', '.join(map(repr, unknown))}, "
                             f"which derive/references.py does not list")
        self.cited.extend(k for k in keys if k not in self.cited)
        return citation(keys)

    def cite(self, *keys: str) -> str:
        """Cite works by key outside prose (e.g. in a summary): the citation text, recorded."""
        return self.resolve("{cite:" + ",".join(keys) + "}")

    def claim_sentence(self, name: str, if_proved: str, if_refuted: str) -> str:
        """A paragraph chosen by the verdict of ``name``: the text for *proved* or for *refuted*.

        Any other verdict (undecided, failed) stops the build; the chosen text may itself
        refer to results. Returns the text used.
        """
        fact = self.facts.get(name)
        if fact is None:
            raise InputError(f"{self.slug}: the sentence “{if_proved.strip()[:120]}” refers to {name!r}, "
                             "which no step or fact of this document defines")
        chosen = {"proved": if_proved, "passed": if_proved, "refuted": if_refuted}.get(fact.status)
        if chosen is None:
            raise StepFailed(f"{self.slug}: the sentence “{if_proved.strip()[:120]}” needs {name!r} proved or "
                             f"refuted, but its verdict is {fact.status!r}")
        self.prose(chosen)
        return chosen

    def figure(self, slug: str, draw: Callable, caption: str) -> None:
        """``draw(ax)`` draws on a matplotlib axes; saved as SVG (docs/) and PDF (build/)."""
        self.blocks.append(Figure(f"{self.slug}-{slug}", caption, draw))

    def tally(self, statuses) -> None:
        """Count verdicts the page shows that are not steps of its own (a table of decided
        claims), for the build's log: ``statuses`` are verdict status words."""
        for status in statuses:
            self.decided[status] = self.decided.get(status, 0) + 1

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
        Two sides that are one expression after unfolding and ``assume`` stop the build
        (a comparison that cannot fail is no check); ``check=False`` shows such a step with
        its proof and claims no numeric check.
        """
        name = name or f"step-{self._count('equation') + 1}"
        a, b = _statement(lhs, rhs, assume)
        verdicts, result = self._checked_step(name, [(name, a, b)], (a, b) if check else None, where)
        step = Equation(name, lhs, rhs, why, verdicts[0], result, where=where)
        self.blocks.append(step)
        self._register(name, "proved")
        return step

    def chain(self, exprs: Sequence, whys: Sequence[str], *, name: str | None = None,
              assume: dict | None = None) -> Chain:
        """e₀ = e₁ = … = eₖ, each link proved; the ends are cross-checked."""
        if len(whys) != len(exprs) - 1:
            raise ValueError("a chain of k+1 expressions needs k justifications")
        name = name or f"chain-{self._count('chain') + 1}"
        stated = [_statement(a, b, assume) for a, b in zip(exprs, exprs[1:])]
        links = [(f"{name} (link {k + 1})", a, b) for k, (a, b) in enumerate(stated)]
        verdicts, result = self._checked_step(name, links, (stated[0][0], stated[-1][1]))
        step = Chain(name, list(exprs), list(whys), verdicts, result)
        self.blocks.append(step)
        self._register(name, "proved")
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
        self._register(name, "refuted")
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
            if c.verdict.status == PROVED:
                c = replace(c, verdict=_sealed(self.slug, f"{name}: {label}", c.verdict, c.first, c.second))
            if c.verdict.status not in (PROVED, REFUTED):
                raise StepFailed(f"{self.slug}: {name}: could not classify {label}: {c.verdict.reason}")
            if expect is not None and c.label != expect[k]:
                raise StepFailed(f"{self.slug}: {name}: {label} is {c.label}, not {expect[k]}")
            out.append((label, dataclasses.replace(c, expr=expr)))  # shown as written, notation folded
        self.timings.append((name, time.perf_counter() - t0, 0.0))
        step = Classified(name, out, index, why)
        self.blocks.append(step)
        self._register(name, "proved")
        for label, c in out:  # "{verdict:NAME: LABEL=row-constant}"
            self._register(f"{name}: {label}", c.label)
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
        self._register(name, "passed")
        return result

    def certify(self, name: str, verdict) -> None:
        """Count a proof the page shows outside its steps (a table cell, a claim of a report) with
        its certificate: ``verdict`` is a proved :class:`~derive.prove.verdict.Verdict` or a claim
        result, whose seal says whether it replayed."""
        seal = getattr(verdict, "seal", None)
        if seal is not None:
            self.certified.append((name, seal))

    def seals(self) -> list:
        """(name, Seal) of every proof on the page: each proved step (each link of a chain, each
        row-constant classification) and each proof shown outside steps."""
        out = []
        for b in self.steps():
            if b.kind == "equation":
                out.append((b.name, b.verdict.seal))
            elif b.kind == "chain":
                out += [(f"{b.name} (link {k})", v.seal) for k, v in enumerate(b.verdicts, 1)]
            elif b.kind == "classification":
                out += [(f"{b.name}: {label}", c.verdict.seal) for label, c in b.rows if c.verdict.proved]
        return [(name, s) for name, s in out if s is not None] + list(self.certified)

    def steps(self) -> list:
        """The checked steps, in document order: equations, chains, refutations, classifications."""
        return [b for b in self.blocks if b.kind in _STEP_KINDS]

    # -- internals -------------------------------------------------------------------
    def _register(self, name: str, status: str) -> None:
        if name not in self.facts:  # the first step of a name is the one prose refers to
            self.facts[name] = Fact(name, status)

    def _count(self, kind: str) -> int:
        return sum(1 for b in self.blocks if b.kind == kind)

    def _checked_step(self, name: str, links: list, ends: tuple | None, where=None) -> tuple[list, CheckResult | None]:
        """(verdicts, check result) of a step, computed now."""
        verdicts, result, proof_s, check_s = _check_step(self.slug, name, links, ends, where, self.cfg)
        if result is not None:
            self.checks.append(result)
        self.timings.append((name, proof_s, check_s))
        return verdicts, result


def _statement(lhs, rhs, assume) -> tuple[sp.Expr, sp.Expr]:
    """What is proved and checked: both sides with notation unfolded and ``assume`` substituted."""
    a, b = unfold(sp.sympify(lhs)), unfold(sp.sympify(rhs))
    if assume:
        a, b = a.subs(assume), b.subs(assume)
    return a, b


def _check_step(slug: str, name: str, links: list, ends: tuple | None, where, cfg: Settings):
    """Prove each link ``(label, a, b)``, then cross-check ``ends`` (unless None):
    (verdicts, check result, proof seconds, check seconds).

    A link not proved or a failed cross-check raises :class:`~derive.errors.StepFailed`.
    """
    t0 = time.perf_counter()
    verdicts = [_prove(slug, label, a, b, cfg) for label, a, b in links]
    t1 = time.perf_counter()
    result = _cross_check(slug, name, *ends, cfg, where) if ends is not None else None
    return verdicts, result, t1 - t0, time.perf_counter() - t1


def _prove(slug: str, name: str, a, b, cfg: Settings) -> Verdict:
    verdict = prove_equal(a, b, cfg=cfg)
    if verdict.status != PROVED:
        witness = {k: v for k, v in (verdict.witness or {}).items() if not k.startswith("_")}
        raise StepFailed(f"{slug}: step {name!r} is {verdict.status}: {verdict.reason}"
                         + (f"; witness {witness}" if witness else ""))
    return _sealed(slug, name, verdict, a, b)


def _sealed(slug: str, name: str, verdict: Verdict, a, b) -> Verdict:
    """The verdict with its certificate, replayed by the checker alone (:mod:`derive.certify.seal`):
    a proof that does not replay stops the build, as an unproved step does."""
    from derive.certify.seal import REJECTED, identity

    seal = identity(a, b, f"{slug}: {name}")
    if seal.status == REJECTED:
        raise StepFailed(f"{slug}: step {name!r} was proved, but its proof did not replay: {seal.reason}")
    return replace(verdict, seal=seal)


def _cross_check(slug: str, name: str, a, b, cfg: Settings, where=None) -> CheckResult:
    if same_computation(a, b):
        raise StepFailed(f"{slug}: {tautology_message(name)}")
    result = cross_check(name, a, b, cfg, where=where)
    if not result.passed:
        raise StepFailed(f"{slug}: step {name!r} was proved but fails its numeric cross-check; "
                         f"witness {result.witness}")
    return result
