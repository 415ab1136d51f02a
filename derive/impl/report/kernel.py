"""The kernel-form report as data, Markdown and JSON (deterministic: no timings)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from derive.impl.judge.classes import class_lines, overall, unjudged_classes
from derive.impl.judge.kernel import KernelFailure
from derive.impl.faults.kernel_diagnose import KERNEL_TOLERANCE_RULE, KernelDiagnosis
from derive.impl.cases.kernel import FIXED_LISTS, HEADS, SINK_VALUES
from derive.impl.numbers import err, jnum, listed, shortest, tex_num
from derive.impl.run.target import shown
from derive.render.markup import plain_math, to_gfm

__all__ = ["KernelReport"]

SHOWN = 16  # entries of a failing row's output printed (a row of 1024 keys: the first 16 and the count)


@dataclass
class KernelReport:
    target: str
    normalizer: str
    title: str
    form: str
    lse: str
    api: str
    params: dict
    free_params: tuple
    results: list
    diagnosis: KernelDiagnosis | None
    notes: list = field(default_factory=list)
    per_head: bool = False
    fixed_list: str = "full"  # a key of FIXED_LISTS
    contract: object = None  # what the kernel accepts (derive.impl.cases.contract)
    varied: tuple = SINK_VALUES  # the fixed list's values of the free parameters (a ratio of row sums: its own)

    @property
    def failure(self) -> KernelFailure | None:
        return next((r.failure for r in self.results if r.failure is not None), None)

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
            "target": self.target, "normalizer": self.normalizer, "form": self.form, "lse": self.lse,
            "api": self.api, "params": {k: jnum(v) for k, v in sorted(self.params.items())},
            "free_params": list(self.free_params), "agrees": self.agrees, "verdict": self.verdict, "per_head": self.per_head,
            "fixed_list": self.fixed_list,
            "results": [{"dtype": r.dtype, "tolerance": r.tolerance.as_json(), "calls": r.calls, "rows": r.rows,
                         "searched": r.searched, "source": r.source or None,
                         "undefined_rows": r.undefined_rows, "returned": r.returned, "verdict": r.verdict,
                         "vacuous_rows": r.vacuous_rows, "vacuous_reason": r.vacuous_reason or None,
                         "max_ratio": float(f"{r.max_ratio:.3e}") if r.failure is None else None,
                         "ran": {"largest_keys": max(r.ran["keys"], default=0), "partitions": sorted(r.ran["parts"]),
                                 "value_dims": sorted(r.ran["dv"]), "most_rows_per_call": r.ran["rows"]},
                         "failure": None if r.failure is None else r.failure.as_json()} for r in self.results],
            "diagnosis": None if self.diagnosis is None else self.diagnosis.as_json(),
            "notes": list(self.notes),
            "contract": None if self.contract is None else self.contract.as_json(),
            "classes": [{"dtype": r.dtype, "fails": {c: f.as_json() for c, f in r.classes.items()},
                         "fail_with": {c: f for c, f in r.failed_in.items() if c not in r.classes},
                         "passes": {c: n for c, n in r.class_rows.items() if c not in r.failed_in}}
                        for r in self.results],
        }

    def to_json(self) -> str:
        return json.dumps(self.as_json(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"

    def to_markdown(self, math: bool = False) -> str:
        """The report as Markdown; ``math=True`` writes its formulas as GitHub math (for a
        document), the default reads them aloud (a terminal shows no math)."""
        prose = (lambda s: to_gfm(s, inline=True)) if math else plain_math
        third = {"online": "block", "split": "splits", "backward": "dout"}[self.form]
        lines = [f"### derive impl --form {self.form}: `{self.target}` as {self.title}", ""]
        sig = ", ".join(["x", "v", third] + [f"{p}=…" for p in sorted(set(self.params) | set(self.free_params))])
        lines.append(f"Called as `fn({sig})` ({self.api}); lse convention: {self.lse}.")
        lines.append(f"Fixed list: {FIXED_LISTS[self.fixed_list]}.")
        if self.free_params:
            values = ", ".join(tex_num(s) for s in self.varied)
            lines.append(prose(f"Varied: ${', '.join(self.free_params)} \\in \\{{{values}\\}}$."))
        if self.per_head:
            names = ", ".join(sorted(set(self.params) | set(self.free_params)))
            lines.append(f"Per head: {names} passed as an array of shape ({HEADS},), one value per head along the "
                         f"last leading axis of x (R, {HEADS}, n); a gradient has shape ({HEADS},), entry h the sum "
                         f"over the rows of head h.")
        lines.append("")
        lines.append("| dtype | calls | rows | searched | returned | result |")
        lines.append("|---|---|---|---|---|---|")
        for r in self.results:
            verdict = r.verdict if r.verdict == "agrees" else f"**{r.verdict}**"
            lines.append(f"| {r.dtype} | {r.calls} | {r.rows} | {r.searched} | {r.returned} | {verdict} |")
        lines.append("")
        ran = {r.dtype: r.ran_line(self.form) for r in self.results}
        if len(set(ran.values())) == 1 and len(ran) > 1:
            ran = {"every dtype": next(iter(ran.values()))}
        for dtype, line in ran.items():
            lines.append(f"What ran ({dtype}): {line}.")
        lines.append("")
        lines.extend(class_lines(self.results, self.contract))  # every failure class, not the first
        f = self.failure
        if f is None and self.verdict == "undecided":
            reason = next(r.vacuous_reason for r in self.results if r.vacuous_rows)
            lines.append("**Verdict: undecided**: no tested input disagrees, but a class had no row that could be "
                         "judged (" + ", ".join(c for r in self.results
                                                for c in unjudged_classes(r.class_rows, r.class_unjudged))
                         + "; not judged: "
                         + ", ".join(f"{r.vacuous_rows} rows in {r.dtype}" for r in self.results if r.vacuous_rows)
                         + f"): {reason}. Tolerance: " + prose(KERNEL_TOLERANCE_RULE))
        elif f is None:
            lines.append("**Verdict: agrees** with the exact definition on every tested input, the fixed list "
                         "and the searched cases (evidence, not a proof). Tolerance: " + prose(KERNEL_TOLERANCE_RULE)
                         + " Here "
                         + "; ".join(f"{r.dtype}: {r.tolerance.ulps} ulps, abs {r.tolerance.abs:.3e}"
                                     for r in self.results) + "." + (
                             " Rows not judged, neither agreeing nor disagreeing ("
                             + ", ".join(f"{r.vacuous_rows} in {r.dtype}" for r in self.results if r.vacuous_rows)
                             + f"): {next(r.vacuous_reason for r in self.results if r.vacuous_rows)}; every class "
                             "has judged rows." if any(r.vacuous_rows for r in self.results) else ""))
        else:
            found = next(r.source for r in self.results if r.failure is f)
            lines.append(f"**Verdict: disagrees** ({f.dtype}, {f.what}) on {f.call.describe()}"
                         + (" (found by the Hypothesis search after the fixed list, shrunk)." if found == "search"
                            else "."))
            lines.append("")
            if f.row >= 0:
                head = ""
                if f.call.heads:
                    h = f.row % f.call.heads
                    head = f" (head {h}: " + ", ".join(f"{k} = {shortest(v)}" for k, v in
                                                    sorted(f.call.row_params(f.row).items())) + ")"
                lines.append(f"- failing row {f.row}{head}: x = {shown(f.call.x[f.row])}")
                keys = f.call.v[f.row]
                more = f", … ({len(keys) - 8} more keys)" if len(keys) > 8 else ""
                lines.append(f"- its values v = [{', '.join(listed(t, shortest, SHOWN) for t in keys[:8])}{more}]")
                if self.form == "backward":
                    lines.append(f"- dout = {listed(f.call.third[f.row], shortest)}")
            if f.row < 0:
                lines.append(f"- scores x (every row) = [{', '.join(shown(r) for r in f.call.x)}]")
                if self.form == "backward":
                    lines.append(f"- dout (every row) = [{', '.join(listed(r, shortest) for r in f.call.third)}]")
            if not f.output:  # a parameter's gradient missing from the returned dict
                lines.append(f"- {f.what} returned: nothing (no {{\"{f.what[1:]}\": …}} in the dparams dict; "
                             f"--no-param-grad leaves this gradient unchecked)")
            else:
                lines.append(f"- {f.what} returned: {listed(f.output, shortest, SHOWN)}")
            lines.append(f"- exact: {listed(f.exact, shortest, SHOWN)}")
            lines.append(f"- error: {listed(f.errors, err, SHOWN)} (allowed: {listed(f.bounds, err, SHOWN)})")
            lines.append("")
            d = self.diagnosis
            if d is not None and d.matched:
                for m in d.matched:
                    lines.append(f"**Known kernel fault: {m.title}** (`{m.name}`, matched on {d.probes} "
                                 f"probe rows).")
                    lines.append(f"- What the faulty kernel does: {m.does}.")
                    lines.append(f"- What it computes instead: {m.computes}.")
                    lines.append(f"- Fix: {m.fix}.")
                    lines.append("")
            elif d is not None:
                lines.extend(d.pattern)
                lines.append("")
        for note in self.notes:
            lines.append(f"Note: {note}")
        return "\n".join(lines).rstrip() + "\n"

