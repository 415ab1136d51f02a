"""The ``derive impl`` report as data, Markdown and JSON (deterministic: no timings)."""

from __future__ import annotations

import functools

import json
import math
from dataclasses import dataclass

import jinja2

from derive.render.markup import plain_math, to_gfm
from derive.render.output import environment

from derive.impl.judge.row import ROW_CLASSES, DtypeResult, Failure
from derive.impl.faults.diagnose import Diagnosis
from derive.impl.judge.classes import RULE, cell
from derive.impl.exact.masked import CONVENTIONS, MaskedRule, is_fully_masked
from derive.impl.numbers import err, jnum as _jnum, num
from derive.floats import FORMATS

__all__ = ["TOLERANCE_RULE", "Report"]

# prose markup (formulas as $…$ math): Markdown shows the math, the terminal reads it aloud
TOLERANCE_RULE = (r"$\lvert y - p \rvert \le \mathrm{abs} + \mathrm{ulps} \cdot \mathrm{eps} \cdot (1 + \kappa) "
                  r"\cdot \lvert p \rvert$, where $p$ is the exact weight of the inputs as rounded to the dtype, "
                  r"eps the dtype's machine epsilon, abs its smallest normal number and "
                  r"$\kappa = 2 \max_j \lvert x_j \rvert + \max_a \lvert a \rvert + (n - 1)$ ($a$ over the "
                  r"normalizer's parameters, the term 0 without them) the condition number of the weight "
                  r"($\lvert x_k \rvert + \max_j \lvert x_j \rvert$ for $\exp(x_k - \max x)$) plus the roundings "
                  r"of a sum of $n$ terms; where the formula's last step is a sum (under min, max, relu or abs) "
                  r"$\lvert p \rvert$ is replaced by the magnitude of its terms, which may cancel (clipped "
                  r"softmax: $\lvert \zeta - \gamma \rvert \, \mathrm{softmax}(x)_k + \lvert \gamma \rvert$). "
                  r"Gradients use the same rule on "
                  r"$\sum_j \lvert c_j J_{jk} \rvert + \lvert p_k \rvert \max_j \lvert c_j \rvert$, and are not "
                  r"compared within rounding of a kink of the formula (relu, abs, max, min: a clip), where the "
                  r"derivative is one-sided. A NaN or inf where "
                  r"$p$ is finite never agrees. Fully masked rows follow the masked-row rule stated with the "
                  r"results.")

# the failing row's table: the columns of x, of the implementation's value and of the exact value
_TABLE_HEAD = {"weight": ("$x_k$", "implementation", "exact"),
               "gradient": ("$x_k$", r"autograd $\partial \langle c, y \rangle / \partial x_k$", r"derived $c^\top J$")}



@dataclass
class Report:
    target: str
    normalizer: str
    title: str
    params: dict
    free_params: tuple
    api: str
    dim: int
    examples: int
    results: list[DtypeResult]
    diagnosis: Diagnosis | None
    keywords: list | None = None  # keywords passed to the function besides the scores
    warnings: list | None = None  # one line each: things the function did that the verdict does not cover
    masked_rule: MaskedRule | None = None  # what the definition gives on a fully masked row
    contract: object = None  # what the function accepts (--assume): inputs outside it were not made
    notes: list | None = None  # one line each: what the contract left out (dtypes)

    def assumed(self) -> str:
        """The contract as the report states it, or ''."""
        if self.contract is None or self.contract.empty:
            return ""
        return "; ".join(self.contract.describe())

    def notes_text(self) -> str:
        return "".join(f"; {n}" for n in self.notes or [])

    def masked_note(self) -> str:
        """The masked-row rule and the convention the implementation was seen using."""
        rule = self.masked_rule
        tested = sum(r.masked_rows for r in self.results)
        if rule is None or not tested:
            return ""
        head = f"Fully masked rows (every score −∞): {self.normalizer} gives {plain_math(rule.says)}"
        if rule.defined and not rule.unless:
            return f"{head}; that value is required, as on any other row ({tested} such rows tested)."
        there = "there"
        if rule.defined:  # a value for some parameter values only
            head = (f"{head}. Where it has a value, that value is required, as on any other row ({tested} such rows "
                    "tested)")
            there = "where it has none"
        seen = {}
        for r in self.results:
            for conv, count in r.conventions.items():
                seen.setdefault(conv, []).append(f"{count} in {r.dtype}")
        accepted = "; ".join(CONVENTIONS.values())
        if not seen:
            return f"{head}. Accepted {there}: {accepted}."
        used = "; ".join(f"{CONVENTIONS[c]} ({', '.join(seen[c])})" for c in CONVENTIONS if c in seen)
        return (f"{head}. Any one of these conventions is accepted {there}: {accepted}. This implementation "
                f"returns {used}: accepted, by convention, not by the definition.")

    @property
    def agrees(self) -> bool:
        return all(r.failure is None for r in self.results)

    @property
    def undecided(self) -> bool:
        """No failure, but some row's exact value was out of reach (not judged either way)."""
        return self.agrees and any(r.verdict == "undecided" for r in self.results)

    @property
    def verdict(self) -> str:
        return "undecided" if self.undecided else "agrees" if self.agrees else "disagrees"

    @property
    def failure(self) -> Failure | None:
        return next((r.failure for r in self.results if r.failure is not None), None)

    def summary(self) -> str:
        dts = ", ".join(r.dtype for r in self.results)
        if self.undecided:
            judged = sum(r.rows for r in self.results)
            return (f"Undecided: {self.target} agrees with {self.normalizer} on the {judged} rows judged, "
                    f"but not every tested row could be judged.{self.undecided_note()}")
        if self.agrees:
            total = sum(r.examples + r.edge_cases for r in self.results)
            return (f"{self.target} agrees with {self.normalizer} on every tested input within the stated "
                    f"tolerance ({total} inputs over {dts}). This is differential testing: evidence, "
                    f"not a proof.{self.undecided_note()}")
        f = self.failure
        if f.what == "complex":
            return (f"{self.target} disagrees with {self.normalizer}: it returns complex numbers, where the "
                    f"weights are real, on the {f.dtype} input below.")
        what = "its gradient" if f.what == "gradient" else "it"
        return (f"{self.target} disagrees with {self.normalizer}: {what} differs from the exact value "
                f"beyond the {f.dtype} tolerance on the input below.")

    def undecided_note(self) -> str:
        """The rows that were not judged because their exact weights could not be evaluated, or ''."""
        note = ""
        counts = [f"{r.undecided_rows} in {r.dtype}" for r in self.results if r.undecided_rows]
        if counts:
            reason = next(r.undecided_reason for r in self.results if r.undecided_rows)
            note += (f" Rows not judged, neither agreeing nor disagreeing ({', '.join(counts)}): could not evaluate "
                     f"the exact weights: {reason}.")
        counts = [f"{r.vacuous_rows} in {r.dtype}" for r in self.results if r.vacuous_rows]
        if counts:
            reason = next(r.vacuous_reason for r in self.results if r.vacuous_rows)
            note += (f" Rows not judged, neither agreeing nor disagreeing ({', '.join(counts)}): {reason}.")
        return note

    def exit_code(self) -> int:
        return 0 if self.verdict == "agrees" else 1

    # ---- JSON --------------------------------------------------------------------------------

    def as_json(self) -> dict:
        f = self.failure
        return {
            "command": "impl",
            "target": self.target,
            "normalizer": self.normalizer,
            "params": {k: _jnum(v) for k, v in sorted(self.params.items())},
            "varied_params": list(self.free_params),
            "api": self.api,
            "dim": self.dim,
            "keywords_passed": list(self.keywords or []),
            "examples": self.examples,
            "verdict": self.verdict,
            "contract": None if self.contract is None or self.contract.empty else self.contract.as_json(),
            "notes": list(self.notes or []),
            "summary": self.summary(),
            "warnings": list(self.warnings or []),
            "fully_masked_rows": None if self.masked_rule is None else {
                "definition": plain_math(self.masked_rule.says), "defined": self.masked_rule.defined,
                "accepted": list(CONVENTIONS) if not self.masked_rule.defined or self.masked_rule.unless else [],
                "note": self.masked_note()},
            "tolerance_rule": plain_math(TOLERANCE_RULE),
            "dtypes": [self._dtype_json(r) for r in self.results],
            "counterexample": None if f is None else self._failure_json(f),
            "diagnosis": None if self.diagnosis is None else self.diagnosis.as_json(),
        }

    def _dtype_json(self, r: DtypeResult) -> dict:
        return {
            "dtype": r.dtype,
            "verdict": r.verdict,
            "hypothesis_inputs": r.examples,
            "edge_cases": r.edge_cases,
            "rows": r.rows,
            "undefined_rows": r.undefined_rows,
            "fully_masked_rows": r.masked_rows,
            "conventions": dict(sorted(r.conventions.items())),
            "max_abs_error": _jnum(float(err(r.max_abs_error)) if math.isfinite(r.max_abs_error) else r.max_abs_error),
            "max_error_over_tolerance": _jnum(float(err(r.max_ratio)) if math.isfinite(r.max_ratio) else r.max_ratio),
            "gradients_checked": r.gradients,
            "gradients": r.gradient_note(),
            "tolerance": r.tolerance.as_json(),
            "classes": {c: ("fails" if c in r.failed_in else "passes" if r.class_inputs.get(c) else "not tested")
                        for c in ROW_CLASSES},
            "class_failures": {c: self._failure_json(fl) for c, fl in r.classes.items()},
            "stopped": r.stopped or None,
        } | ({"undecided_rows": r.undecided_rows, "undecided_reason": r.undecided_reason}
             if r.undecided_rows else {}) | ({"vacuous_rows": r.vacuous_rows, "vacuous_reason": r.vacuous_reason}
                                             if r.vacuous_rows else {})

    def _failure_json(self, f: Failure) -> dict:
        dg = FORMATS[f.dtype].digits
        return {
            "dtype": f.dtype,
            "kind": f.what,
            "source": f.source,
            "input_shape": list(f.shape),
            "row_index": list(f.index),
            "row": [_jnum(v) for v in f.row],
            "params": {k: _jnum(v) for k, v in sorted(f.params.items())},
            "output": [_jnum(v, dg) for v in f.output],
            "exact": [_jnum(v) for v in f.exact],
            "error": [_jnum(float(err(v))) if math.isfinite(v) else num(v) for v in f.errors],
            "allowed": [_jnum(float(err(v))) for v in f.bounds],
            "exact_defined": f.defined,
        }

    def to_json(self) -> str:
        return json.dumps(self.as_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    # ---- Markdown ----------------------------------------------------------------------------

    def to_markdown(self, math: bool = False) -> str:
        """The report as Markdown; ``math=True`` writes its formulas as GitHub math (for a
        document), the default reads them aloud (a terminal shows no math)."""
        f = self.failure
        rows = []
        if f is not None:
            dg = FORMATS[f.dtype].digits
            for k, x in enumerate(f.row):
                rows.append({
                    "k": k, "x": num(x),
                    "y": num(f.output[k], dg) if k < len(f.output) else "",
                    "p": num(f.exact[k]) if k < len(f.exact) else "",
                    "e": err(f.errors[k]) if k < len(f.errors) else "",
                    "b": err(f.bounds[k]) if k < len(f.bounds) else "",
                    "bad": k < len(f.errors) and not f.errors[k] <= f.bounds[k],
                })
        prose = (lambda s: to_gfm(s, inline=True)) if math else plain_math
        head = [prose(h) for h in _TABLE_HEAD["gradient" if f is not None and f.what == "gradient" else "weight"]]
        return _template().render(r=self, f=f, rows=rows, classes=class_lines(self.results), num=num, err=err, rule=prose(TOLERANCE_RULE), head=head,
                                derivation_lines=derivation_lines,
                                accepted="; ".join(CONVENTIONS.values()),
                                frow=", ".join(num(v) for v in f.row) if f else "",
                                fmasked=f is not None and is_fully_masked(f.row),
                                where=_where(f) if f else "",
                                params=", ".join(f"{k} = {num(v)}" for k, v in sorted(self.params.items())),
                                fparams=(", ".join(f"{k} = {num(v)}" for k, v in sorted(f.params.items()))
                                         if f else ""))


def class_lines(results) -> list[str]:
    """Every failure class by dtype: fails (with the failing row) / passes / not tested; shown when one fails."""
    if not any(r.classes for r in results):
        return []
    lines = ["| class | " + " | ".join(r.dtype for r in results) + " |", "|---|" + "---|" * len(results)]
    for cls, title in ROW_CLASSES.items():
        cells = [cell(cls, r.classes, r.failed_in, r.class_inputs, ROW_CLASSES) for r in results]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines.append("")
    if any(set(r.failed_in) - set(r.classes) for r in results):
        lines += [RULE, ""]
    for r in results:
        for cls, fl in r.classes.items():
            lines.append(f"- fails, {ROW_CLASSES[cls]} ({r.dtype}): row `[{', '.join(num(v) for v in fl.row[:8])}"
                         f"{', ...' if len(fl.row) > 8 else ''}]`"
                         + (f" with `{', '.join(f'{k} = {num(v)}' for k, v in sorted(fl.params.items()))}`"
                            if fl.params else "") + f" ({fl.what})")
        if r.stopped:
            lines.append(f"- the check stopped early ({r.dtype}): {r.stopped}; the inputs after it were not tested")
    return lines


def _where(f: Failure) -> str:
    """Where the failing row is: its index when the input has more than one row."""
    if math.prod(f.shape[:-1]) > 1:
        return f"row {list(f.index)} of the input of shape {list(f.shape)}, normalized axis last"
    return f"input shape {list(f.shape)}"


def _status(v: dict) -> str:
    if v["status"] == "refuted":
        w = v["counterexample"]
        given = {**w["instance"], **w["indices"]}
        given.pop("d", None)  # no head dimension in a row of scores
        inst = ", ".join(f"{k} = {json.dumps(given[k], separators=(', ', ': '))}" for k in sorted(given))
        lhs, rhs = (format(float(x), ".6g") if not isinstance(x, list) else x for x in (w["lhs"], w["rhs"]))
        return f"**refuted**: at {inst} the two sides are {lhs} and {rhs}"
    if v["status"] == "proved":
        how = "identical once written out" if v["method"] == "as written" else v["method"]
        return f"**proved** ({how})"
    return f"**undecided** ({v['method']})"


def derivation_lines(d: dict) -> list[str]:
    """The derivation of a matched faulty form, one statement per line."""
    closed, name = d["closed_form"], d["definition"]
    lines = [f"as written, `{d['written']}` = {closed}: {_status(d['written_equals_closed_form'])}"]
    versus = d["closed_form_equals_definition"]
    if closed == name:
        lines.append(f"so the code equals {name} in exact arithmetic: the fault is numerical only")
    else:
        lines.append(f"{closed} = {name}: {_status(versus)}")
    if d["fix_equals_definition"] is not None:
        lines.append(f"the fix, with any shift m, = {name}: {_status(d['fix_equals_definition'])}")
    return lines


@functools.cache
def _template() -> jinja2.Template:
    """``templates/impl-report.md.j2`` (shipped in the package as ``derive/templates``)."""
    return environment(reports=True).get_template("impl-report.md.j2")

