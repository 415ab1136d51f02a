"""The kernel-form check: calls of the fixed list and the search, and the comparison of every
output with the exact definition (:mod:`derive.impl.forms.kernel` states the method)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from derive.errors import InputError
from derive.impl.judge.counterexample import Counterexample
from derive.impl.judge.classes import admitted, prepare, record_call, verdict
from derive.impl.cases.rows import param_strategy, search
from derive.impl.exact.reference import ExactRow, digest, kernel_row, ratio_row
from derive.impl.cases.kernel import (DV, HEADS, LONG_DV, LONG_ROWS, SEARCH_EXAMPLES, SETS_PER_PARTITION,
                                       SINK_VALUES, blocks, dout_row, kernel_cases, lengths, rows_of, split_counts,
                                       values)
from derive.impl.numbers import agree, agree_all, scaled, jnum, listed, round_to, shortest
from derive.impl.run.target import ImplRaised
from derive.impl.exact.tolerance import Tolerance, kappa, kappas
from derive.normalizers.family import kernel_form, kernel_sigma, logit_slope

__all__ = ["Call", "KernelChecker", "KernelFailure", "KernelResult"]

INF = math.inf
_TOKENS = itertools.count()  # names of shared value arrays (Call.vtoken), unique in this process
MASKED_LSE = -1e4  # an lse at or below this on a fully masked row: a large finite mask value plus log n


@dataclass
class Call:
    form: str
    x: np.ndarray  # (R, n), rounded to the dtype
    v: np.ndarray  # (R, n, DV)
    third: object  # block, splits or dout (R, DV)
    params: dict  # rounded to the dtype
    sigma: object  # the extra logit: a float or None; per head, a tuple of them
    lead: tuple = ()  # the leading shape the rows are passed in
    heads: int = 0  # 0: parameters passed as scalars; H: as arrays (H,) along the last leading axis
    vkeys: dict = field(default_factory=dict, repr=False, compare=False)  # row → digest of its values
    exacts: dict = field(default_factory=dict, repr=False, compare=False)  # row → its ExactRow (KernelChecker.exact)
    passing: tuple = field(default=(), repr=False, compare=False)  # (outputs, tolerance, KernelChecker.passing_rows's)
    vtoken: int | None = None  # names v (read-only) for the worker, which keeps it: the calls on it send it once
    masked: np.ndarray | None = None  # (R, n): keys passed as the contract's finite mask value (−∞ to the definition)

    def scores(self, r: int) -> list:
        """Row r as the definition sees it: −∞ where the contract passed a masked key as a finite
        value (``finite-scores``, as in the row form), else as passed."""
        x = self.x[r] if self.masked is None else np.where(self.masked[r], -math.inf, self.x[r])
        return x.tolist()

    def vkey(self, r: int) -> bytes:
        """The digest of row r's values (:func:`derive.impl.exact.reference.digest`), computed once."""
        if r not in self.vkeys:
            self.vkeys[r] = digest(self.v[r])
        return self.vkeys[r]

    def row_sigma(self, r: int):
        """The extra logit of flat row r (row-major over ``lead``: its head is r mod H)."""
        return self.sigma[r % self.heads] if self.heads else self.sigma

    @property
    def dv(self) -> int:
        return self.v.shape[-1]

    def row_params(self, r: int) -> dict:
        return {k: float(v[r % self.heads]) if self.heads else v for k, v in self.params.items()}

    def args(self):
        shape = self.lead + (self.x.shape[-1],)
        third = self.third.reshape(self.lead + (self.dv,)) if isinstance(self.third, np.ndarray) else self.third
        return self.x.reshape(shape), self.v.reshape(shape + (self.dv,)), third

    def describe(self) -> str:
        what = {"online": "block", "split": "splits"}.get(self.form)
        bits = [f"scores of shape {list(self.lead + (self.x.shape[-1],))}"]
        if self.dv != DV:
            bits.append(f"head dimension {self.dv}")
        if what:
            bits.append(f"{what} = {self.third}")
        bits += [f"{k} = {listed(v, shortest) + ' (one per head)' if self.heads else shortest(v)}"
                 for k, v in sorted(self.params.items())]
        return ", ".join(bits)


@dataclass(kw_only=True)
class KernelFailure(Counterexample):
    """A counterexample of a kernel form (``what``: out | lse | dx | dv | d<param> | nan)."""

    form: str
    call: Call
    row: int  # index of the failing row among the call's rows (-1: the whole call, a parameter gradient)

    def as_json(self) -> dict:
        r = self.row
        return {"dtype": self.dtype, "form": self.form, "what": self.what, "call": self.call.describe(),
                "third": self.call.third if not isinstance(self.call.third, np.ndarray) else None,
                "params": {k: [jnum(a) for a in v] if self.call.heads else jnum(v)
                           for k, v in sorted(self.call.params.items())},
                "row": None if r < 0 else [jnum(x) for x in self.call.x[r]],
                "values": None if r < 0 else [[jnum(a) for a in t] for t in self.call.v[r]],
                "output": [jnum(a) for a in self.output], "exact": [jnum(a) for a in self.exact],
                "errors": [jnum(a) for a in self.errors], "bounds": [jnum(a) for a in self.bounds]}


@dataclass
class KernelResult:
    dtype: str
    tolerance: Tolerance
    calls: int = 0
    rows: int = 0
    undefined_rows: int = 0
    max_ratio: float = 0.0
    returned: str = ""  # what the function returned, e.g. "out, lse"
    failure: KernelFailure | None = None
    searched: int = 0  # Hypothesis examples run after the fixed list
    source: str = ""  # where the failure was found: fixed list | search
    conventions: dict = field(default_factory=dict)  # fully masked rows of no value: convention → rows
    plus_inf_lse: int = 0  # rows whose lse of log 0 (−∞) was returned as +∞
    block_ignored: list = field(default_factory=list)  # lengths whose output did not change with the block
    classes: dict = field(default_factory=dict)  # failure class → its first (smallest) failure
    class_rows: dict = field(default_factory=dict)  # class → rows judged (a row counts in each class)
    class_unjudged: dict = field(default_factory=dict)  # class → rows whose bound could not fail
    failed_in: dict = field(default_factory=dict)  # failure class → the class its first failing row is filed under
    stopped: str = ""  # the function raised on a later input after a failure: the list stopped there
    vacuous_rows: int = 0  # passing rows whose bound could not fail (Tolerance.vacuous): not judged
    vacuous_reason: str = ""  # why, for the first of them
    ran: dict = field(default_factory=lambda: {"keys": set(), "parts": set(), "dv": set(), "rows": 0})

    @property
    def verdict(self) -> str:
        """disagrees (a failure), undecided (none, but a class had no row whose comparison could fail), or
        agrees (:func:`derive.impl.judge.classes.verdict`)."""
        return verdict(self.failure is not None, self.class_rows, self.class_unjudged)

    def note_call(self, call) -> None:
        """What a call run had (its row length, tile size or split count, value dimension, rows)."""
        n = call.x.shape[1]
        self.ran["keys"].add(n)
        if call.form in ("online", "split") and ((call.third < n) if call.form == "online" else call.third >= 2):
            self.ran["parts"].add(int(call.third))
        self.ran["dv"].add(call.dv)
        self.ran["rows"] = max(self.ran["rows"], call.x.shape[0])

    def ran_line(self, form: str) -> str:
        """One sentence: what ran, read off the calls."""
        keys, parts = sorted(self.ran["keys"]), sorted(self.ran["parts"])
        unit = {"online": "keys", "split": "splits"}.get(form)
        span = (", ".join(map(str, parts)) + f" {unit}" if len(parts) <= 8 else
                f"{parts[0]} to {parts[-1]} {unit} ({len(parts)} sizes)")
        bits = [f"rows of up to {max(keys, default=0)} keys ({len([n for n in keys if n])} lengths)"]
        if form == "online":
            bits.append(f"tiles of {span} below the row length" if parts else "no tile size below the row length")
        elif form == "split":
            bits.append(span if parts else "no split count of 2 or more")
        bits += ["value dimensions " + ", ".join(map(str, sorted(self.ran["dv"]))),
                 f"up to {self.ran['rows']} rows per call"]
        return "; ".join(bits)



@dataclass
class KernelChecker:
    norm: object
    target: object
    form: str
    lse: str
    dps: int
    fixed_params: dict = field(default_factory=dict)
    free_params: tuple = ()
    per_head: bool = False  # parameters passed as arrays of shape (H,), one per head
    thin: bool = False  # the interpreter list (the target runs under Triton's CPU interpreter), else the full one
    param_grad: bool = True  # a backward must return every parameter's gradient (--no-param-grad: not checked)
    contract: object = None  # what the kernel accepts (derive.impl.cases.contract), tested inside
    _cache: dict = field(default_factory=dict)

    def sigma(self, params: dict):
        return kernel_sigma(self.norm, params)

    @property
    def ratio(self):
        """The normalizer's ratio of row sums when it is not of the softmax family
        (:func:`derive.normalizers.family.row_ratio`): then ``out`` alone is compared, with the
        definition's exact weights, and an lse returned is not (it has no convention there)."""
        facts = kernel_form(self.norm)
        return None if facts.checked else facts.ratio

    def slope(self, p: str, params: dict) -> float:
        """∂σ/∂p at ``params``: what the gradient of the extra logit is multiplied by in p's."""
        return logit_slope(self.norm, p, params)

    def param_sets(self) -> list[dict]:
        if not self.free_params:
            return [dict(self.fixed_params)]
        if self.ratio is not None:  # no extra logit to sweep: the parameters' own edge values, in their domain
            from derive.impl.cases.rows import param_sets

            return [{**self.fixed_params, **c} for c in param_sets(self.norm, self.free_params, "edge")]
        values = SINK_VALUES if self.contract is None else self.contract.sink_values(SINK_VALUES)
        return [{**self.fixed_params, **{p: s for p in self.free_params}} for s in values]

    def _sets_for(self, sets: list, cursor: int, count: int = 0) -> list:
        """The parameter sets one partition is run with: every one in the full list and for the
        backward form (no partition), else ``SETS_PER_PARTITION`` of them, taken in turn from a
        cursor that runs through ``sets`` across the whole list (each length sees every sink
        value). With ``count``: exactly that many, in turn (the heads of a per-head call)."""
        if not count and (not self.thin or self.form == "backward" or len(sets) <= SETS_PER_PARTITION):
            return sets
        return [sets[(cursor + j) % len(sets)] for j in range(count or SETS_PER_PARTITION)]

    def make_call(self, x, v, third, chosen: list, dtype: str, k: int = 0, memo: dict | None = None) -> Call:
        """A call on the rows ``x`` (R, n), ``v`` (R, n, dv): ``third`` a block or split count, or
        for the backward form the index of the cotangent (:func:`dout_row`). Scalar parameters:
        one parameter set, rows passed as (R, n), (1, R, n) or (2, R/2, n) by ``k`` (a batch of two:
        a kernel that reads batch 0 for every batch fails). Per head: one set per head,
        the rows passed as (R, H, n) (each row once per head, made the head's own: scores rolled by h,
        values negated for odd h) with each parameter an array (H,). ``memo``: shared by the calls
        made on the same ``x`` and ``v`` (read-only), which keeps what is derived from them once:
        the rows made per head, the digests of the value rows."""
        shared, memo = memo is not None, {} if memo is None else memo
        rounded = [{key: float(round_to(val, dtype)) for key, val in c.items()} for c in chosen]
        if self.per_head:
            H = len(rounded)
            if ("heads", H) not in memo:
                xh, vh = np.repeat(x, H, axis=0), np.repeat(v, H, axis=0)
                for r in range(xh.shape[0]):  # each head its own row: head h has the keys' scores rolled by h and,
                    h = r % H  # for odd h, the values negated (a kernel reading another head's x or v must fail)
                    xh[r], vh[r] = np.roll(xh[r], h), (-vh[r] if h % 2 else vh[r])
                xh.flags.writeable = vh.flags.writeable = False
                memo[("heads", H)] = (xh, vh, {})
            x, v, vkeys = memo[("heads", H)]
            params = {key: np.array([c[key] for c in rounded]) for key in rounded[0]}
            sigma, lead = tuple(self.sigma(c) for c in rounded), (x.shape[0] // H, H)
        else:
            vkeys = memo.setdefault("vkeys", {})
            params, sigma = rounded[0], self.sigma(rounded[0])
            R = x.shape[0]
            lead = [(R,), (1, R), (2, R // 2)][k % 3] if R % 2 == 0 else [(R,), (1, R)][k % 2]
        if self.form == "backward":
            dv = v.shape[-1]
            third = round_to(np.stack([dout_row(r, third, dv) for r in range(x.shape[0])]).reshape(-1, dv), dtype)
        call = Call(self.form, x, v, third, params, sigma, lead, len(rounded) if self.per_head else 0, vkeys)
        if shared:  # the values are shared by several calls (and read-only): name them
            call.vtoken = memo.setdefault(("token", self.per_head and len(rounded)), next(_TOKENS))
        return call

    def calls(self, dtype: str):
        """Every call of the check, simplest first: the short lengths with every partition (and,
        in the full list, every sink value), then the long rows (n = 200, 1024, 1025) with the real
        tile sizes, split counts and head dimensions, a sink value each in turn."""
        sets, cursor = self.param_sets(), 0
        for n in lengths(self.thin):
            rows = rows_of(n)
            long = n in LONG_ROWS
            x = round_to(np.array(rows, dtype=np.float64).reshape(len(rows), n), dtype)
            thirds = {"online": blocks, "split": split_counts}.get(
                self.form, lambda n, thin: [0] if n in LONG_ROWS else [0, 1])(n, self.thin)
            x.flags.writeable = False
            shared: dict = {}  # head dimension → (the values, read-only, and the memo of make_call): made once
            for k, third in enumerate(thirds):
                dv = LONG_DV[k % len(LONG_DV)] if long else DV
                if dv not in shared:
                    v = round_to(np.stack([values(n, r, dv) for r in range(len(rows))]).reshape(len(rows), n, dv),
                                 dtype)
                    v.flags.writeable = False
                    shared[dv] = (v, {})
                v, memo = shared[dv]
                if self.per_head:  # the sink values side by side, as heads: in turn, every one (full list)
                    for _ in range(1 if self.thin or long else -(-len(sets) // HEADS)):
                        yield self.make_call(x, v, third, self._sets_for(sets, cursor, HEADS), dtype, k, memo)
                        cursor += HEADS
                    continue
                chosen = [sets[cursor % len(sets)]] if long else self._sets_for(sets, cursor)
                for params in chosen:
                    yield self.make_call(x, v, third, [params], dtype, k, memo)
                cursor += SETS_PER_PARTITION

    def exact(self, call: Call, r: int) -> ExactRow:
        if r in call.exacts:
            return call.exacts[r]
        call.exacts[r] = self._exact(call, r)
        return call.exacts[r]

    def _exact(self, call: Call, r: int) -> ExactRow:
        g = call.third[r] if isinstance(call.third, np.ndarray) else None
        key = (tuple(call.scores(r)), call.vkey(r), call.row_sigma(r), None if g is None else g.tobytes())
        if self.ratio is not None:  # no extra logit: the parameters themselves tell the rows apart
            key += tuple(sorted(call.row_params(r).items()))
        if key not in self._cache and self.ratio is not None:
            self._cache[key] = self._ratio_exact(call.scores(r), call.v[r], call.row_params(r))
        if key not in self._cache:
            self._cache[key] = kernel_row(call.scores(r), call.v[r], call.row_sigma(r),
                                         None if g is None else g.tolist(), self.dps, call.dv, call.vkey(r))
        return self._cache[key]

    def _ratio_exact(self, row, v, params: dict) -> ExactRow:
        return ratio_row(self.norm, row, v, params, self.dps)

    def run_call(self, call: Call, dtype: str) -> dict:
        x, v, third = call.args()
        got = self.target.kcall(self.form, x, v, third, call.params, dtype,
                                None if call.vtoken is None else (call.vtoken, v.shape))  # as passed: its layout
        R, n = call.x.shape
        out = {}
        for name, arr in got.items():
            if name in ("out", "dv"):
                out[name] = arr.reshape((R, n, call.dv) if name == "dv" else (R, call.dv))
            elif name in ("lse", "dx"):
                out[name] = arr.reshape(R, n) if name == "dx" else arr.reshape(R)
            else:
                out[name] = arr
        return out

    def uniform(self, call: Call, r: int) -> ExactRow | None:
        """The definition on row r with every score 0 (the uniform convention of a fully masked
        row: a large finite mask value makes the scores equal); None for a row of no key."""
        n = call.x.shape[1]
        if n == 0:
            return None
        g = call.third[r] if isinstance(call.third, np.ndarray) else None
        key = ("uniform", n, call.vkey(r), None if g is None else g.tobytes())
        if self.ratio is not None:
            key += tuple(sorted(call.row_params(r).items()))
        if key not in self._cache and self.ratio is not None:
            self._cache[key] = self._ratio_exact([0.0] * n, call.v[r], call.row_params(r))
        if key not in self._cache:
            self._cache[key] = kernel_row([0.0] * n, call.v[r], None, None if g is None else g.tolist(), self.dps,
                                         call.dv, call.vkey(r))
        return self._cache[key]

    def masked_convention(self, call: Call, got: dict, r: int, tol: Tolerance) -> tuple[str | None, str]:
        """On a row where the definition has no value (every key masked, no extra logit): the
        convention the outputs follow (:data:`derive.impl.exact.masked.CONVENTIONS`: nan, zeros or
        uniform, the same for out, lse, dx and dv), or (None, the output that follows none)."""
        names = ("out",) if self.form != "backward" else ("dx", "dv")
        ys = {k: np.ravel(got[k][r]).astype(np.float64) for k in names}
        flat = np.concatenate(list(ys.values()))
        if flat.size == 0 or np.all(flat == 0):
            conv = "zeros"
        elif np.all(np.isnan(flat)):
            conv = "nan"
        else:
            uni, conv = self.uniform(call, r), "uniform"
            kap = kappa([0.0] * call.x.shape[1], {})
            for k in names:
                ref = {"out": (uni.out, uni.out_scale), "dx": (uni.dx, uni.dx_scale),
                       "dv": (np.ravel(uni.dv), np.ravel(uni.dv_scale))}[k] if uni is not None else None
                if ref is None or not all(agree(float(y), float(p), tol.bound(m, kap))[0]
                                          for y, p, m in zip(ys[k], ref[0], ref[1])):
                    return None, k
        if "lse" in got:
            y = float(got["lse"][r])
            if not (math.isinf(y) or math.isnan(y) or y <= MASKED_LSE):
                return None, "lse"
        return conv, ""

    def passing_rows(self, call: Call, got: dict, tol: Tolerance):
        """For every row of ``call``: whether each of its checks in :meth:`compare` passes, the
        largest error/bound ratio they have, and the row's κ; computed once for ``got``, on all the
        rows at once, entry by entry with the same operations as the loop of :meth:`compare`."""
        if call.passing and call.passing[0] is got and call.passing[1] == tol:
            return call.passing[2]
        R = call.x.shape[0]
        x = call.x if call.masked is None else np.where(call.masked, -math.inf, call.x)  # call.scores, every row
        kaps = kappas(x, [{k: val for k, val in call.row_params(r).items() if math.isfinite(val)} for r in range(R)])
        exs = [self.exact(call, r) for r in range(R)]
        fine = [r for r in range(R) if exs[r].defined]
        passed, ratios = np.zeros(R, dtype=bool), np.zeros(R)
        if fine:
            checks = []  # (returned (rows, k), exact, magnitudes) over the defined rows
            if self.form in ("online", "split"):
                checks.append((got["out"][fine], [exs[r].out for r in fine], [exs[r].out_scale for r in fine]))
                if "lse" in got:
                    p = np.array([exs[r].lse[self.lse] for r in fine])
                    y = got["lse"][fine].astype(np.float64)
                    skip = (p == -INF) & (y == INF)  # +∞ for log 0: accepted with a note, not compared
                    checks.append((np.where(skip, 0.0, y)[:, None], np.where(skip, 0.0, p)[:, None],
                                   np.maximum(1.0, np.abs(p))[:, None]))
            else:
                checks.append((got["dx"][fine], [exs[r].dx for r in fine], [exs[r].dx_scale for r in fine]))
                checks.append((got["dv"][fine].reshape(len(fine), -1), [np.ravel(exs[r].dv) for r in fine],
                               [np.ravel(exs[r].dv_scale) for r in fine]))
            factor = tol.rel * (1.0 + np.array([kaps[r] for r in fine]))[:, None]
            ok_rows, top = np.ones(len(fine), dtype=bool), np.zeros(len(fine))
            for y, p, scales in checks:
                y, p = np.asarray(y, dtype=np.float64), np.asarray(p, dtype=np.float64)
                bounds = tol.abs + scaled(factor, np.abs(np.asarray(scales, dtype=np.float64)))
                ok, errs = agree_all(y, p, bounds)
                ok, errs = ok.reshape(y.shape), errs.reshape(y.shape)
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    ratio = np.where(np.isfinite(errs) & (bounds > 0), errs / bounds, 0.0)
                ok_rows &= ok.all(axis=1)
                if ratio.shape[1]:
                    top = np.maximum(top, ratio.max(axis=1))
            passed[fine], ratios[fine] = ok_rows, top
        call.passing = (got, tol, (passed, ratios.tolist(), kaps))
        return call.passing[2]

    def compare(self, call: Call, got: dict, tol: Tolerance, result: KernelResult | None,
                start: int = 0) -> KernelFailure | None:
        """The first entry of ``got`` from row ``start`` on (then, from row 0 only, a parameter's
        gradient) that disagrees with the definition, or None. One rule for
        every output (out, lse, dx, dv and a parameter's gradient): where the exact value is finite
        the entry must be finite and within the tolerance; where it is ±∞ (an lse of log 0) it must
        be that infinity (+∞ for −∞ accepted with a note: FlashAttention's convention); a row where
        the definition has no value follows one fully-masked-row convention, noted."""
        R = call.x.shape[0]

        def fail(what, r, y, p, errs, bounds):
            return KernelFailure(dtype=tol.dtype, form=self.form, what=what, call=call, row=r,
                                 output=[float(a) for a in y], exact=[float(a) for a in p], errors=errs, bounds=bounds)

        slots = call.heads or 1  # a parameter's gradient: one entry per head, or one for every row
        # per parameter p: the sum over rows of ∂σ/∂p · ∂L/∂σ (the chain rule; ∂σ/∂p = 1 for a sink logit s)
        ds_total = {p: [0.0] * slots for p in self.norm.params}
        ds_scale = {p: [0.0] * slots for p in self.norm.params}
        ds_defined = [True] * slots

        def add_ds(r, ex, kap):
            for p in self.norm.params:
                k = self.slope(p, call.row_params(r))
                ds_total[p][r % slots] += k * ex.ds
                ds_scale[p][r % slots] += abs(k) * (1.0 + kap) * ex.ds_scale
        passed, ratios, kaps = self.passing_rows(call, got, tol)
        for r in range(start, R):
            ex = self.exact(call, r)
            kap = kaps[r]
            if result is not None:
                result.rows += 1
                result.undefined_rows += not ex.defined
            if ex.defined and passed[r]:  # every check of the row passes (as the loop below would find)
                if result is not None:
                    result.max_ratio = max(result.max_ratio, ratios[r])
                    if self.form != "backward" and "lse" in got and ex.lse[self.lse] == -INF \
                            and float(got["lse"][r]) == INF:
                        result.plus_inf_lse += 1
                if self.form == "backward":
                    add_ds(r, ex, kap)
                continue
            if not ex.defined:
                ds_defined[r % slots] = False
                conv, bad = self.masked_convention(call, got, r, tol)
                if conv is None:
                    y = np.ravel(got[bad][r])
                    if bad == "lse":  # no weights, but an lse: log 0 = −∞ (no extra logit), not "no value"
                        return fail(bad, r, y, [ex.lse[self.lse]], [INF], [0.0])
                    return fail(bad, r, y, [math.nan] * len(y), [INF] * len(y), [math.nan] * len(y))
                if result is not None:
                    result.conventions[conv] = result.conventions.get(conv, 0) + 1
                    if "lse" in got and float(got["lse"][r]) == INF:
                        result.plus_inf_lse += 1
                continue
            checks = []
            if self.form in ("online", "split"):
                checks.append(("out", got["out"][r], ex.out, ex.out_scale))
                if "lse" in got:
                    p, y = ex.lse[self.lse], float(got["lse"][r])
                    if p == -INF and y == INF:
                        if result is not None:
                            result.plus_inf_lse += 1
                    else:
                        checks.append(("lse", [y], [p], [max(1.0, abs(p))]))
            else:
                checks.append(("dx", got["dx"][r], ex.dx, ex.dx_scale))
                checks.append(("dv", np.ravel(got["dv"][r]), np.ravel(ex.dv), np.ravel(ex.dv_scale)))
                add_ds(r, ex, kap)
            for what, y, p, scales in checks:
                bounds = tol.abs + scaled(tol.rel * (1.0 + kap), np.abs(np.asarray(scales, dtype=np.float64).ravel()))
                ok, errs = agree_all(y, p, bounds)
                if result is not None:
                    keep = np.isfinite(errs) & (bounds > 0)
                    if keep.any():
                        with np.errstate(over="ignore"):
                            result.max_ratio = max(result.max_ratio, float(np.max(errs[keep] / bounds[keep])))
                if not ok.all():
                    return fail(what, r, np.ravel(y), np.ravel(p), errs.tolist(), bounds.tolist())
        if self.form == "backward" and start == 0:
            for name in self.norm.params:
                key = "d" + name
                if key not in got:
                    if self.param_grad:
                        return fail(key, -1, [], ds_total[name], [INF] * slots,
                                    [tol.abs + tol.rel * m for m in ds_scale[name]])
                    continue
                arr = got[key]
                if call.heads and arr.shape != (call.heads,):
                    raise InputError(f"{self.target.name} returned the gradient of {name} with shape "
                                     f"{list(arr.shape)}; {name} was passed per head with shape [{call.heads}] "
                                     f"(scores of shape {list(call.lead + (call.x.shape[-1],))}), so its gradient "
                                     f"has shape [{call.heads}]: entry h is the sum over the rows of head h")
                if not call.heads and arr.shape != ():
                    raise InputError(f"{self.target.name} returned the gradient of {name} with shape "
                                     f"{list(arr.shape)}; {name} was passed as a scalar shared by every row, so "
                                     f"its gradient is a scalar (the sum over rows)")
                ys = [float(a) for a in np.ravel(arr)]
                bounds = [tol.abs + tol.rel * m for m in ds_scale[name]]
                # a head with a row of no value: its gradient is NaN (0/0 there) or the sum over the other rows
                res = [agree(y, p, b) if ok or not math.isnan(y) else (True, 0.0)
                       for y, p, b, ok in zip(ys, ds_total[name], bounds, ds_defined)]
                for (_, err), bound in zip(res, bounds):
                    if result is not None and math.isfinite(err) and bound > 0:
                        result.max_ratio = max(result.max_ratio, err / bound)
                if not all(ok for ok, _ in res):
                    return fail(key, -1, ys, ds_total[name], [e for _, e in res], bounds)
        return None

    def search(self, tol: Tolerance, result: KernelResult, budget: int) -> None:
        """After the fixed list: Hypothesis (:func:`derive.impl.cases.rows.search`) draws a length n ≤
        SEARCH_MAX_N, one to three rows of scores (any entry −∞, or the whole row), a tile size or
        split count and the parameter values (the sink: a value of the fixed list or any in its
        range; per head, one each), and shrinks a failing case to the simplest one."""
        dtype, aborted = tol.dtype, []

        def as_call(case) -> Call:
            rows, third, sets = case
            n = len(rows[0])
            x = round_to(np.array(rows, dtype=np.float64).reshape(len(rows), n), dtype)
            dv = DV if n <= 64 else LONG_DV[0]
            v = round_to(np.stack([values(n, r, dv) for r in range(len(rows))]).reshape(len(rows), n, dv), dtype)
            return self.make_call(x, v, third, [{**self.fixed_params, **c} for c in sets], dtype, len(rows) + 1)

        def fails(case) -> bool:
            if aborted:
                return False
            result.searched += 1
            call = prepare(self, as_call(case), dtype)
            if call is None:
                return False  # outside the contract
            result.note_call(call)
            try:
                return self.compare(call, self.run_call(call, dtype), tol, None) is not None
            except ImplRaised:
                return True  # shrunk like a failure; the call below raises it on the simplest case
            except InputError as exc:  # the worker is gone, or bad output: no more calls
                aborted.append(exc)
                return False

        # short rows with the budget, then long rows (65 to 1100 keys) with a quarter of it, at least one
        for long, count in ((False, budget), (True, max(1, budget // 4))):
            free = {p: param_strategy(self.norm, p) for p in self.free_params}
            found = search(kernel_cases(self.form, free, HEADS if self.per_head else 1, long,
                                        SINK_VALUES if self.ratio is None else ()), fails, count)
            if aborted:
                raise aborted[0]
            if found is not None:
                call = prepare(self, as_call(found), dtype)
                record_call(self, call, self.run_call(call, dtype), tol, result, "search")
                return

    def run(self, tol: Tolerance, examples: int = SEARCH_EXAMPLES) -> KernelResult:
        result = KernelResult(tol.dtype, tol)
        by_block: dict = {}  # (n, parameters, dv) → {block: the bytes of out}: is the block really used?
        for call in admitted(self, self.calls(tol.dtype), tol.dtype):
            try:
                got = self.run_call(call, tol.dtype)
            except ImplRaised as exc:  # after a failure the verdict stands: say where the list stopped
                if result.failure is None:
                    raise
                result.stopped = f"it raised {exc} on {call.describe()}"
                break
            if self.ratio is not None:
                got.pop("lse", None)  # no lse convention for a ratio of row sums: out alone is compared
            result.calls += 1
            result.note_call(call)
            n = call.x.shape[1]
            if self.form == "online" and n > 16 and call.third < n:
                key = (n, repr(sorted((k, np.asarray(v).tobytes()) for k, v in call.params.items())), call.dv)
                by_block.setdefault(key, {})[call.third] = got["out"].tobytes()
            names = sorted(got)
            result.returned = result.returned or ", ".join(
                [k for k in ("out", "lse", "dx", "dv") if k in got] + [k for k in names if k.startswith("d")
                                                                          and k not in ("dx", "dv")])
            if self.form == "backward":
                unknown = [k[1:] for k in got if k not in ("dx", "dv") and k[1:] not in self.norm.params]
                if unknown:
                    raise InputError(f"{self.target.name} returned a gradient for {unknown[0]!r}, which is not a "
                                     f"parameter of {self.norm.name} (its parameters: "
                                     f"{', '.join(self.norm.params) or 'none'})")
            if self.ratio is None and self.lse != "natural" and self.form != "backward" and "lse" not in got:
                raise InputError(f"--lse {self.lse} was given but {self.target.name} returns out only, "
                                 f"not (out, lse)")
            record_call(self, call, got, tol, result)  # every failing row, filed by class
        same: dict = {}  # n → whether every parameter set gave the same bits at every block
        for key, outs in by_block.items():
            if len(outs) >= 3:
                same[key[0]] = same.get(key[0], True) and len(set(outs.values())) == 1
        result.block_ignored = sorted(n for n, ok in same.items() if ok)
        if examples > 0 and result.failure is None:
            self.search(tol, result, examples)
        return result

