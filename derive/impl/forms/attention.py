"""``derive impl --form attention``: an attention kernel with its real signature.

The function is called as ``fn(q, k, v, **params)`` with q (…, M, d), k (…, N, d) and v
(…, N, dv) in the layout given by ``--layout`` (:mod:`derive.kernels.layouts`), and returns
``out`` (the layout of q with dv) or ``(out, lse)``. The keywords it takes are found in its
signature and matched to their roles by name (:data:`ROLE_NAMES`; ``--kw ROLE=NAME`` names
one explicitly): the softmax scale, a causal flag, an additive mask, the sinks (one logit per
head), the decode offset ``start_q``, a sliding window and a tile size. A role the kernel
does not take is a property of the kernel that the user states (``--causal``, ``--start-q``,
``--window``, ``--scale``), or is not tested (the report says which classes that leaves out).

derive builds q and k that realise its rows of scores exactly (:mod:`derive.impl.cases.attention`) and
compares every output with the exact definition on the arrays actually passed
(:mod:`derive.impl.exact.attention`). It does not stop at the first failure: every case belongs to one
failure class, and the report lists each class that fails with its smallest counterexample,
and the classes that pass. With ``--backward`` (torch functions) the gradients of ⟨out, g⟩ with
respect to q, k, v and the sinks, by torch autograd in the child, are compared as well.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from derive.errors import InputError
from derive.impl.cases.attention import CLASSES, Case, Setup, arrays, case_classes, cases, with_dtype_mask
from derive.impl.cases.attention_search import search_attention
from derive.impl.judge.counterexample import Counterexample
from derive.impl.judge.classes import RULE, cell, file_failure, status
from derive.impl.exact.attention import exact
from derive.impl.run.target import ImplRaised
from derive.kernels.layouts import parse_layout

__all__ = ["ROLE_NAMES", "AttentionReport", "check_attention", "parse_kw"]

INF = math.inf
ROLE_NAMES: dict[str, tuple[str, ...]] = {  # role → the keyword names kernels use for it, in order of preference
    "scale": ("scale", "sm_scale", "softmax_scale", "scaling"),
    "causal": ("causal", "is_causal"),
    "mask": ("mask", "attn_mask", "attention_mask"),
    "sinks": ("sinks", "sink", "s", "S"),
    "start_q": ("start_q", "q_offset", "start_pos"),
    "window": ("window", "sliding_window", "window_size", "bandwidth"),
    "block": ("block", "block_n", "BLOCK_N", "block_size"),
}


def parse_kw(pairs) -> dict:
    """``--kw ROLE=NAME`` items → {role: name}."""
    out = {}
    for pair in pairs or ():
        role, sep, name = str(pair).partition("=")
        role, name = role.strip(), name.strip()
        if not sep or role not in ROLE_NAMES or not name.isidentifier():
            raise InputError(f"--kw {pair!r}: expected ROLE=NAME, ROLE one of {', '.join(ROLE_NAMES)} and NAME the "
                             f"keyword the function takes for it (e.g. --kw scale=softmax_scale)")
        if role in out:
            raise InputError(f"--kw {role} is given twice")
        out[role] = name
    return out


def roles_of(signature, names: dict, target: str) -> dict:
    """{role: keyword} for the keywords the function takes; an unknown required one is an error."""
    if signature is None:
        raise InputError(f"{target} has no inspectable signature; wrap it in a one-line function "
                         f"def fn(q, k, v, *, scale, ...): return {target.split(':')[-1]}(...)")
    params = [(n, kind, has_default) for n, kind, has_default in signature]
    positional = [n for n, kind, _ in params if kind in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
    if len(positional) < 3 and not any(kind == "VAR_POSITIONAL" for _, kind, _ in params):
        raise InputError(f"{target} takes {len(positional)} positional arguments; --form attention calls "
                         f"fn(q, k, v, **params)")
    keywords = {n: has_default for n, kind, has_default in params
                if kind in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY") and n not in positional[:3]}
    varkw = any(kind == "VAR_KEYWORD" for _, kind, _ in params)  # fn(q, k, v, **params)
    out = {}
    for role, choices in ROLE_NAMES.items():
        if role in names:
            if names[role] not in keywords and not varkw:
                raise InputError(f"--kw {role}={names[role]}: {target} takes no keyword {names[role]!r} "
                                 f"(its keywords: {', '.join(keywords) or 'none'})")
            out[role] = names[role]
            continue
        hit = next((n for n in choices if n in keywords), None)
        if hit is None and varkw and role in ("scale", "sinks"):  # **params: what the definition needs, by
            hit = choices[0]  # its first name; the optional features (causal, mask, ...) only by --kw
        if hit is not None:
            out[role] = hit
    unknown = [n for n, has_default in keywords.items() if not has_default and n not in out.values()]
    if unknown:
        raise InputError(f"{target} has a required parameter {unknown[0]!r} that is none of the roles derive passes "
                         f"({', '.join(ROLE_NAMES)}): name its role with --kw ROLE={unknown[0]}, or give it a "
                         f"default")
    return out


@dataclass(kw_only=True)
class Failure(Counterexample):
    """A counterexample of the attention form: one entry (``output``, ``exact``, ``errors`` and
    ``bounds`` of length 1) of ``what`` (out | lse | dq | dk | dv | dsinks) at ``where``."""

    case: Case
    where: tuple  # (b, h, i[, c]) or (h,) for dsinks
    row: list  # the scores of the failing row (for out, lse, dq): x_ij, −inf masked
    note: str = ""
    source: str = "fixed list"  # fixed list | search (Hypothesis, shrunk)

    def as_json(self) -> dict:
        return {"class": self.cls, "case": self.case.describe(), "what": self.what, "where": list(self.where),
                "output": _j(self.output[0]), "exact": _j(self.exact[0]), "error": _j(self.errors[0]),
                "bound": _j(self.bounds[0]), "row": [_j(x) for x in self.row], "note": self.note or None,
                "source": self.source}


def _fail(dtype, case, what, where, y, p, error, bound, row, note="") -> Failure:
    return Failure(dtype=dtype, cls=case.cls, case=case, what=what, where=where, output=[y], exact=[p],
                   errors=[error], bounds=[bound], row=row, note=note)


def _j(v):
    v = float(v)
    return (("inf" if v > 0 else "-inf") if math.isinf(v) else "nan") if not math.isfinite(v) else float(
        format(v, ".17g"))


def _n(v) -> str:
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


@dataclass
class DtypeResult:
    dtype: str
    cases: int = 0
    rows: int = 0
    per_class: dict = field(default_factory=dict)  # class → number of cases of it run (a case counts in each)
    failures: dict = field(default_factory=dict)  # class → the first Failure filed under it (RULE)
    failed_in: dict = field(default_factory=dict)  # class → the class its first failing case is filed under
    returned: str = ""
    stopped: str = ""  # the function raised on a later case after a failure
    searched: int = 0  # calls the search made after the fixed list (with shrinking)
    vacuous_rows: int = 0  # passing rows whose bound could not fail (Tolerance.vacuous): not judged
    vacuous_reason: str = ""  # why, for the first of them

    @property
    def verdict(self) -> str:
        """disagrees (a failure), undecided (none, but some row's comparison could not fail), or agrees."""
        return "disagrees" if self.failures else "undecided" if self.vacuous_rows else "agrees"

    def record(self, case: Case, members: list, fail, rows: int, returned: str, source: str = "fixed list",
               vacuous: tuple = (0, "")):
        """Count a case run in each class it belongs to; file its failure by RULE; count its rows
        not judged (``vacuous``: how many, why)."""
        self.cases += 1
        self.rows += rows - vacuous[0]
        self.vacuous_rows += vacuous[0]
        self.vacuous_reason = self.vacuous_reason or vacuous[1]
        self.returned = self.returned or returned
        for cls in members:
            self.per_class[cls] = self.per_class.get(cls, 0) + 1
        if fail is not None:
            fail.cls, fail.source = members[0], source
            file_failure(self.failures, self.failed_in, members, fail)


def _uniform_ok(y, v, visible) -> bool:
    """y is the mean of v over every key, or over the visible ones (finfo.min masking)."""
    for keys in (np.ones(len(visible), dtype=bool), visible):
        if keys.any() and np.allclose(y, v[keys].mean(axis=0), rtol=1e-2, atol=1e-3):
            return True
    return False


@dataclass
class AttentionChecker:
    target: object
    norm: object
    layout: object
    out_layout: object
    roles: dict
    setup: Setup
    scale: float | None
    mask_value: str
    backward: bool
    dps: int
    api: str | None = None

    def kwargs(self, case: Case, scale: float, mask, sinks) -> dict:
        kw = {}
        r = self.roles
        if "scale" in r:
            kw[r["scale"]] = float(scale)
        if "causal" in r:
            kw[r["causal"]] = bool(case.causal)
        if "mask" in r and mask is not None:
            kw[r["mask"]] = self.layout.mask_to_layout(mask)
        if "sinks" in r and self.setup.extra == "sinks":
            kw[r["sinks"]] = np.array(sinks, dtype=np.float64)
            kw["__sinks__"] = r["sinks"]
        if "start_q" in r:
            kw[r["start_q"]] = int(case.start_q)
        if "window" in r:
            kw[r["window"]] = int(case.window)
        if "block" in r and case.block:
            kw[r["block"]] = int(case.block)
        return kw

    def run_case(self, case: Case, tol, rounder) -> tuple[Failure | None, int, str, tuple]:
        dtype = tol.dtype
        if self.api == "numpy" and not tol.numpy:
            raise InputError(f"dtype {dtype} needs a torch implementation; {self.target.name} takes numpy arrays")
        scale = self.scale if self.scale is not None else 1.0 / math.sqrt(case.D)
        mval = with_dtype_mask(self.mask_value, dtype)
        q, k, v, mask, g = arrays(case, scale, mval, rounder, grad=self.backward)
        sinks = None if case.sinks is None else tuple(float(rounder(np.array(s))) for s in case.sinks)
        L, OL = self.layout, self.out_layout
        out_shape = OL.shape(case.B, case.H, case.M, case.Dv)
        lse_shape = OL.lse_shape(case.B, case.H, case.M)
        cot = None if g is None else OL.to_layout(g)
        reply = self.target.worker.request(
            ("acall", L.to_layout(q), L.to_layout(k), L.to_layout(v), self.kwargs(case, scale, mask, sinks), dtype,
             self.api, cot, out_shape, lse_shape),
            f"being called in attention form on {dtype} inputs ({case.describe()})")
        if reply[0] == "raised":
            raise ImplRaised(reply[1], q)
        if reply[0] == "bad":
            self.target.stop()
            raise InputError(f"{self.target.name} {reply[1]} (in attention form, {dtype}, {case.describe()}); "
                             f"no verdict")
        names = reply[1] if len(reply) >= 2 else None
        if (reply[0] != "ok" or not isinstance(names, list) or len(reply) != 2 + len(names)
                or not all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in reply[2:])):
            self.target.stop()
            raise InputError(f"the process running {self.target.name} sent a malformed reply (something wrote to "
                             f"derive's private pipe); no verdict")
        got = dict(zip(names, reply[2:]))
        api = next(n[4:] for n in names if n.startswith("api:"))
        self.api = self.api or api
        self.target.api = self.api
        if got.pop("mutated", None) is not None:
            self.target.mutates = True
        if self.backward and self.api != "torch":
            raise InputError(f"--backward differentiates the function with torch autograd; {self.target.name} takes "
                             f"numpy arrays")
        ex = exact(q, k, v, scale, mask, case.visible(), sinks, self.dps, g)
        returned = ", ".join(n for n in ("out", "lse", "dq", "dk", "dv", "dsinks") if n in got)
        fail = self.compare(case, got, ex, v, tol)
        vac = ex.defined & (tol.rel * (1.0 + ex.kappa) >= 1.0)  # Tolerance.vacuous, row by row
        first = next(iter(np.argwhere(vac)), None)
        vacuous = (0, "") if fail is not None or first is None else (
            int(vac.sum()), tol.vacuous_reason(float(ex.kappa[tuple(first)])))
        return fail, case.B * case.H * case.M, returned, vacuous

    def compare(self, case: Case, got: dict, ex, v, tol) -> Failure | None:
        OL = self.out_layout
        out = OL.from_layout(got["out"])
        lse = OL.from_layout(got["lse"], "bhn") if "lse" in got else None
        vis = case.visible()
        for b in range(case.B):
            for h in range(case.H):
                for i in range(case.M):
                    row = ex.rows[b, h, i].tolist()
                    kap = ex.kappa[b, h, i]
                    y = out[b, h, i]
                    if not ex.defined[b, h, i]:
                        if not (np.all(y == 0) or np.all(np.isnan(y)) or _uniform_ok(y, v[b, h], vis[i])):
                            return _fail(tol.dtype, case, "out", (b, h, i, 0), y[0], math.nan, INF, math.nan, row,
                                           "every key is masked and there is no extra logit: out may be 0, NaN "
                                           "or the mean of the values")
                    else:
                        for c in range(case.Dv):
                            p, m = ex.out[b, h, i, c], ex.out_scale[b, h, i, c]
                            bound = tol.bound(m, kap)
                            err = abs(y[c] - p) if math.isfinite(y[c]) else INF
                            if not err <= bound:
                                return _fail(tol.dtype, case, "out", (b, h, i, c), y[c], p, err, bound, row)
                    if lse is not None:
                        p, yl = ex.lse[b, h, i], lse[b, h, i]
                        if p == -INF:
                            if not (math.isinf(yl) or math.isnan(yl)):
                                return _fail(tol.dtype, case, "lse", (b, h, i), yl, p, INF, 0.0, row)
                        else:
                            bound = tol.bound(max(1.0, abs(p)), kap)
                            err = abs(yl - p) if math.isfinite(yl) else INF
                            if not err <= bound:
                                return _fail(tol.dtype, case, "lse", (b, h, i), yl, p, err, bound, row)
        if ex.grads is None:
            return None
        return self.compare_grads(case, got, ex, tol)

    def compare_grads(self, case: Case, got: dict, ex, tol) -> Failure | None:
        L = self.layout
        kap_head = ex.kappa.max(axis=2)  # (B, H)
        for name in ("dq", "dk", "dv"):
            value, scale = ex.grads[name]
            y = L.from_layout(got[name]) if name in got else np.zeros_like(value)
            for idx in np.ndindex(value.shape):
                b, h, t = idx[0], idx[1], idx[2]
                if name == "dq" and not ex.defined[b, h, t]:
                    continue
                kap = ex.kappa[b, h, t] if name == "dq" else kap_head[b, h]
                bound = tol.bound(scale[idx], kap)
                err = abs(y[idx] - value[idx]) if math.isfinite(y[idx]) else INF
                if not err <= bound:
                    row = ex.rows[b, h, t].tolist() if name == "dq" else []
                    return _fail(tol.dtype, case, name, idx, y[idx], value[idx], err, bound, row)
        if self.setup.extra == "sinks" and case.sinks is not None:
            value, scale = ex.grads["dsinks"]
            if "dsinks" not in got:
                return _fail(tol.dtype, case, "dsinks", (0,), math.nan, value[0], INF, 0.0, [],
                               "no gradient reached the sinks (autograd gave none)")
            y = np.ravel(got["dsinks"])
            if y.shape != value.shape:
                return _fail(tol.dtype, case, "dsinks", (0,), math.nan, value[0], INF, 0.0, [],
                               f"the sinks' gradient has shape {list(y.shape)}, not [{case.H}]")
            for h in range(case.H):
                if not all(ex.defined[:, h].ravel()):
                    continue
                bound = tol.abs + tol.rel * (1 + kap_head[:, h].max()) * scale[h]
                err = abs(y[h] - value[h]) if math.isfinite(y[h]) else INF
                if not err <= bound:
                    return _fail(tol.dtype, case, "dsinks", (h,), y[h], value[h], err, bound, [])
        return None

    def run(self, tol, rounder, case_list, budget: int = 0) -> DtypeResult:
        """The fixed list, every case; then, when every case passed, ``budget`` searched calls."""
        res = DtypeResult(tol.dtype)
        for case in case_list:
            members = case_classes(case, self.setup)
            if all(cls in res.failed_in for cls in members):
                continue  # every class of it already fails, with a smaller counterexample
            try:
                fail, rows, returned, vacuous = self.run_case(case, tol, rounder)
            except ImplRaised as exc:
                if res.failures:  # after a failure the verdict stands: say where the list stopped
                    res.stopped = f"it raised {exc} on {case.describe()}"
                    break
                raise InputError(f"{self.target.name} raised {exc} on a valid {tol.dtype} input in attention form "
                                 f"({case.describe()})") from None
            res.record(case, members, fail, rows, returned, vacuous=vacuous)
        if budget > 0 and not res.failures and not res.stopped:
            search_attention(self, tol, rounder, res, budget)
        return res


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
        verdicts = [r.verdict for r in self.results]
        return next((v for v in ("disagrees", "undecided") if v in verdicts), "agrees")

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
                         "searched": r.searched, "verdict": r.verdict}
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
        kws = ", ".join(f"{name}=… ({role})" for role, name in sorted(self.roles.items()))
        lines = [f"### derive impl --form attention: `{self.target}` as {self.title}", "",
                 f"Called as `fn(q, k, v{', ' + kws if kws else ''})` ({self.api}); layout {self.layout}"
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
                         f"{'**disagrees**' if r.failures else '**undecided**' if r.vacuous_rows else 'agrees'} |")
        lines.append("")
        lines.extend(class_table(self.results, self.skipped))
        for r in self.results:
            for cls, f in r.failures.items():
                lines.extend(_failure_lines(r.dtype, f))
        own = sorted({c for r in self.results for c in r.failures}, key=list(CLASSES).index)
        also = sorted({c for r in self.results for c in r.failed_in} - set(own), key=list(CLASSES).index)
        undecided = next((r for r in self.results if r.verdict == "undecided"), None)
        lines.append("**Verdict: " + ("agrees** on every tested class (evidence, not a proof)." if self.agrees else
                                      "undecided**: no tested class fails, but not every row could be judged ("
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
    for r in results:
        if r.stopped:
            lines.append(f"- the cases stopped early ({r.dtype}): {r.stopped}; the cases after it were not run")
    if skipped:
        lines.append("")
    return lines


def _failure_lines(dtype: str, f: Failure) -> list[str]:
    where = ", ".join(f"{a} = {b}" for a, b in zip(("b", "h", "i", "c") if f.what not in ("dk", "dv", "dsinks")
                                                  else (("h",) if f.what == "dsinks" else ("b", "h", "j", "c")),
                                                  f.where))
    found = ("Smallest counterexample" if f.source == "fixed list" else
             "Counterexample found by the search (the simplest call Hypothesis shrank it to)")
    lines = [f"#### Fails: {CLASSES[f.cls]} ({dtype})", "",
             f"{found}: {f.case.describe()}.", "",
             f"- {f.what} at {where}: returned `{_n(f.output[0])}`, exact `{_n(f.exact[0])}`, error "
             f"`{_n(f.errors[0])}` (allowed `{_n(f.bounds[0])}`)"]
    if f.row:
        shown = ", ".join(_n(x) for x in f.row[:12]) + (", ..." if len(f.row) > 12 else "")
        lines.append(f"- the row's scores scale·q·k + mask: `[{shown}]`")
    if f.note:
        lines.append(f"- {f.note}")
    lines.append("")
    return lines


def _extra(norm) -> tuple[bool, object]:
    """(supported, the extra logit: None, a number, or "sinks" for a parameter passed per head),
    read off the normalizer's formula: a member of the softmax family with no value of its own
    whose extra logit is none, a number or one parameter."""
    from derive.normalizers.family import kernel_form

    facts = kernel_form(norm)
    if not facts.checked:
        return False, None
    if facts.logit is None or isinstance(facts.logit, float):
        return True, facts.logit
    return (True, "sinks") if isinstance(facts.logit, str) else (False, None)


def _supported() -> list[str]:
    from derive.normalizers.registry import REGISTRY

    return [name for name, entry in REGISTRY.items() if _extra(entry)[0]]


def check_attention(target, norm, tols, cfg, *, layout: str, out_layout: str | None, scale, causal: bool,
                    start_q, window: int, mask_value: str, backward: bool, kw_names: dict, contract,
                    rounder, examples: int = 0, thin: bool = False) -> AttentionReport:
    known, extra = _extra(norm)
    if not known:
        raise InputError(f"--form attention supports the normalizers {', '.join(_supported())}; not {norm.name}")
    L = parse_layout(layout)
    OL = parse_layout(out_layout, "--out-layout") if out_layout else L
    if set(OL.axes) != set(L.axes):
        raise InputError(f"--out-layout {OL.axes} has other axes than --layout {L.axes}")
    roles = roles_of(target.extra.get("signature"), kw_names, target.name)
    if extra != "sinks":
        roles.pop("sinks", None)  # an optional sinks keyword is left at its default
    if extra == "sinks" and "sinks" not in roles:
        raise InputError(f"--as {norm.name} passes one extra logit per head; {target.name} takes no sinks keyword "
                         f"(one of {', '.join(ROLE_NAMES['sinks'])}, or name it with --kw sinks=NAME)")
    if mask_value not in ("-inf", "finfo-min"):
        try:
            value = float(mask_value)
        except ValueError:
            raise InputError(f"--mask-value {mask_value!r}: expected a number, -inf or finfo-min") from None
        if math.isnan(value) or value > 0 or value == INF:
            raise InputError(f"--mask-value {mask_value!r}: a masked key's additive value is negative")
    if contract.finite_scores and float(with_dtype_mask(mask_value, "float64")) == -INF:
        mask_value = "finfo-min"  # the contract: no −∞ reaches the kernel
    if start_q is not None and start_q != "end" and start_q < 0:
        raise InputError(f"--start-q {start_q}: a position is at least 0")
    stated = []
    if causal:
        stated.append("causal" + (" (passed as " + roles["causal"] + "=True)" if "causal" in roles else ""))
    if start_q is not None:
        stated.append(f"queries start at position {'N − M' if start_q == 'end' else start_q}")
    if window:
        stated.append(f"sliding window of {window} keys")
    if scale is not None:
        stated.append(f"scale {scale!r}")
    elif "scale" not in roles:
        stated.append("the kernel's scale is 1/√d")
    if "mask" in roles:
        stated.append(f"masked keys carry {mask_value} in the additive mask")
    setup = Setup(extra=extra, takes=frozenset(roles), causal=causal, start_q=start_q, window=window, thin=thin,
                  has_batch=L.has_batch, has_heads=L.has_heads, contract=contract)
    case_list = cases(setup)
    checker = AttentionChecker(target, norm, L, OL, roles, setup, scale, mask_value, backward, cfg.mp_dps)
    results = []
    notes = []
    for tol in tols:
        if not contract.dtype_ok(tol.dtype):
            notes.append(f"{tol.dtype} was not tested: outside the contract (dtypes {', '.join(contract.dtypes)})")
            continue
        results.append(checker.run(tol, lambda a, d=tol.dtype: rounder(a, d), case_list, examples))
    if not results:
        raise InputError("no dtype of --dtype lies inside the contract: nothing to test")
    if target.mutates:
        notes.append("the function modifies one of its input arrays in place")
    return AttentionReport(target=target.name, normalizer=norm.name, title=norm.title, layout=L.axes,
                           out_layout=OL.axes, api=checker.api or target.api, roles=roles, stated=stated,
                           contract=contract, skipped=dict(setup.skipped), results=results, backward=backward,
                           notes=notes, examples=examples)
