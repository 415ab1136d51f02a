"""The attention form's report as data, Markdown and JSON (deterministic: no timings)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from derive.impl.cases.attention import CLASSES
from derive.impl.judge.attention import Failure, _n
from derive.impl.judge.classes import RULE, cell, overall, status, unjudged_classes

__all__ = ["AttentionReport", "class_table"]


@dataclass
class AttentionReport:
    target: str
    normalizer: str
    title: str
    layout: str
    out_layout: str
    api: str
    roles: dict
    stated: list  # what the user stated about the kernel (causal, start_q, scale, ...)
    contract: object
    skipped: dict
    results: list
    backward: bool
    notes: list = field(default_factory=list)
    examples: int = 0  # the search's budget of drawn calls per dtype

    @property
    def agrees(self) -> bool:
        """No failure and every tested row judged (a row whose comparison cannot fail is not)."""
        return self.verdict == "agrees"

    @property
    def verdict(self) -> str:
        return overall(r.verdict for r in self.results)

    def exit_code(self) -> int:
        return 0 if self.agrees else 1

    def as_json(self) -> dict:
        return {
            "target": self.target, "normalizer": self.normalizer, "form": "attention", "layout": self.layout,
            "out_layout": self.out_layout, "api": self.api, "keywords": dict(sorted(self.roles.items())),
            "stated": list(self.stated), "contract": self.contract.as_json(), "backward": self.backward,
            "examples": self.examples,
            "agrees": self.agrees, "verdict": self.verdict,
            "results": [{"dtype": r.dtype, "cases": r.cases, "rows": r.rows, "returned": r.returned,
                         "searched": r.searched, "verdict": r.verdict, "coverage": r.coverage.as_json()}
                        | ({"vacuous_rows": r.vacuous_rows, "vacuous_reason": r.vacuous_reason}
                           if r.vacuous_rows else {}) | {
                         "classes": {cls: status(cls, r.failures, r.failed_in, r.per_class).replace(
                                             "fails-with", "fails") for cls in CLASSES},
                         "fail_with": {c: f for c, f in r.failed_in.items() if c not in r.failures},
                         "failures": {cls: f.as_json() for cls, f in r.failures.items()}} for r in self.results],
            "not_tested": dict(sorted(self.skipped.items())), "notes": list(self.notes),
        }

    def to_json(self) -> str:
        return json.dumps(self.as_json(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"

    def to_markdown(self, math: bool = False) -> str:
        del math
        kws = ", ".join(f"{name}=… ({role})" for role, name in sorted(self.roles.items()) if role != "module")
        first = "module, " if "module" in self.roles else ""  # derive's module: derive.impl.run.roles.MODULE
        lines = [f"### derive impl --form attention: `{self.target}` as {self.title}", "",
                 f"Called as `fn({first}q, k, v{', ' + kws if kws else ''})` ({self.api}); layout {self.layout}"
                 + (f", out in {self.out_layout}" if self.out_layout != self.layout else "")
                 + ("; gradients by torch autograd" if self.backward else "") + "."]
        if self.stated:
            lines.append("Stated about the kernel: " + "; ".join(self.stated) + ".")
        assumed = self.contract.describe()
        lines.append("Assumed (contract): " + ("; ".join(assumed) if assumed else "nothing") + ".")
        lines.append("")
        lines.append(f"The fixed list, then (when it passes) a search of {self.examples} drawn calls per dtype "
                     f"(Hypothesis, derandomized, shrunk) inside the contract." if self.examples else
                     "The fixed list only (--examples 0: no search).")
        lines.append("")
        lines.append("| dtype | cases | rows | searched | returned | result |")
        lines.append("|---|---:|---:|---:|---|---|")
        for r in self.results:
            lines.append(f"| {r.dtype} | {r.cases} | {r.rows} | {r.searched} | {r.returned} | "
                         f"{r.verdict if r.verdict == 'agrees' else '**' + r.verdict + '**'} |")
        lines.append("")
        ran = {r.dtype: r.coverage.line() for r in self.results}
        if len(set(ran.values())) == 1 and len(ran) > 1:
            ran = {"every dtype": next(iter(ran.values()))}
        for dtype, line in ran.items():
            lines.append(f"What ran ({dtype}): {line}.")
        lines.append("")
        lines.extend(class_table(self.results, self.skipped))
        for r in self.results:
            for cls, f in r.failures.items():
                lines.extend(_failure_lines(r.dtype, f))
        own = sorted({c for r in self.results for c in r.failures}, key=list(CLASSES).index)
        also = sorted({c for r in self.results for c in r.failed_in} - set(own), key=list(CLASSES).index)
        undecided = next((r for r in self.results if r.verdict == "undecided"), None)
        unjudged = ", ".join(f"{r.vacuous_rows} rows in {r.dtype}" for r in self.results if r.vacuous_rows)
        lines.append("**Verdict: " + ("agrees** on every tested class (evidence, not a proof)." + (
            f" Rows not judged, neither agreeing nor disagreeing ({unjudged}): "
            f"{next(r.vacuous_reason for r in self.results if r.vacuous_rows)}; every class has judged rows."
            if unjudged else "") if self.agrees else
                                      f"undecided**: no tested class fails, but in {undecided.dtype} no row of "
                                      + "; ".join(CLASSES[c] for c in unjudged_classes(undecided.class_rows,
                                                                                       undecided.class_unjudged))
                                      + " could be judged ("
                                      + ", ".join(f"{r.vacuous_rows} rows in {r.dtype}" for r in self.results
                                                  if r.vacuous_rows)
                                      + f"): {undecided.vacuous_reason}." if undecided is not None
                                      and self.verdict == "undecided" else
                                      "disagrees**: it fails on " + "; ".join(CLASSES[c] for c in own)
                                      + (" (its failing inputs also belong to " + "; ".join(CLASSES[c] for c in also)
                                         + ")" if also else "") + "."))
        for note in self.notes:
            lines.append("")
            lines.append(f"Note: {note}")
        return "\n".join(lines).rstrip() + "\n"


def class_table(results, skipped) -> list[str]:
    lines = ["| class | " + " | ".join(r.dtype for r in results) + " |",
             "|---|" + "---|" * len(results)]
    for cls, title in CLASSES.items():
        cells = [cell(cls, r.failures, r.failed_in, r.per_class, CLASSES) for r in results]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines.append("")
    if any(set(r.failed_in) - set(r.failures) for r in results):
        lines += [RULE, ""]
    for cls, why in skipped.items():
        lines.append(f"- not tested, {CLASSES[cls]}: {why}")
    if skipped:
        lines.append("")
    return lines


def _failure_lines(dtype: str, f: Failure) -> list[str]:
    where = ", ".join(f"{a} = {b}" for a, b in zip(("b", "h", "i", "j") if f.what == "weights" else
                                                  ("b", "h", "i", "c") if f.what not in ("dk", "dv", "dsinks")
                                                  else (("h",) if f.what == "dsinks" else ("b", "h", "j", "c")),
                                                  f.where))
    found = ("Smallest counterexample" if f.source == "fixed list" else
             "Counterexample found by the search (the simplest call Hypothesis shrank it to)")
    lines = [f"#### Fails: {CLASSES[f.cls]} ({dtype})", "",
             f"{found}: {f.case.describe()}.", ""]
    if f.what in ("raised", "crashed"):  # no output to compare: what happened is the failure
        lines += [f"- the kernel raised `{f.note}`" if f.what == "raised" else f"- the kernel crashed: {f.note}", ""]
        return lines
    lines.append(f"- {f.what} at {where}: returned `{_n(f.output[0])}`, exact `{_n(f.exact[0])}`, error "
                 f"`{_n(f.errors[0])}` (allowed `{_n(f.bounds[0])}`)")
    for fault in f.faults:
        lines.append(f"- matches the known fault **{fault.title}**: {fault.does}; it computes {fault.computes}. "
                     f"Fix: {fault.fix}")
    if f.row:
        shown = ", ".join(_n(x) for x in f.row[:12]) + (", ..." if len(f.row) > 12 else "")
        lines.append(f"- the row's scores scale·q·k + mask: `[{shown}]`")
    if f.note:
        lines.append(f"- {f.note}")
    lines.append("")
    return lines


