"""``derive impl --form online|split|backward``: checking kernel-shaped code.

A kernel-shaped function takes the scores ``x`` (..., n) (−inf marks a masked key), the
values ``v`` (..., n, dv) and a third argument, and the normalizer's parameters as keywords:

* ``online``: ``fn(x, v, block, **params)`` streams the keys in tiles of ``block`` keys and
  returns ``out`` (..., dv) or ``(out, lse)``;
* ``split``: ``fn(x, v, splits, **params)`` cuts the keys into ``splits`` contiguous chunks
  (``numpy.array_split`` order: some empty when splits > n, some with every key masked),
  reduces each and merges them; returns ``out`` or ``(out, lse)``;
* ``backward``: ``fn(x, v, dout, **params)`` returns ``(dx, dv)`` or ``(dx, dv, dparams)``,
  ``dparams`` a dict keyed by parameter name, each gradient shaped like the parameter as
  passed (a scalar sink shared by every row: the sum over rows).

The exact definition, for one row with extra logit σ (a sink s, 0 for softmax₁ and the zero
token, none for softmax) and extra value 0, is evaluated with mpmath (``Settings.mp_dps``
digits) on the inputs as rounded to the dtype:

    out = Σ_t e^{x_t} v_t / (e^σ + Σ_t e^{x_t}),   lse = log(e^σ + Σ_t e^{x_t}),
    dx_t = P_t (⟨g, v_t⟩ − D),  dv_t = P_t g,  ds = −P_σ D  (P = e^{· − lse}, D = ⟨g, out⟩).

Inputs are a fixed, deterministic adversarial list, simplest first (so the first failure is a
small counterexample): n = 0, 1, 2, 3, 5, 8, 17, 40, 64 keys; ties, a running maximum that grows
in every tile, a first tile or split with every key masked, fully masked rows, scores up to
±1e4. Every row of a length goes in one call, as (R, n) or (1, R, n). The partitions and sink
values come in two sizes (:data:`FIXED_LISTS`), chosen by where the target runs:

* the full list (numpy, torch, and Triton on a GPU): tiles of 1, 2, 3, 16 and 32 keys, n and
  n + 1 (one tile); 1, 2, 3, 8, n, n + 1 and 2n + 3 splits (empty splits); every sink logit 0,
  1.5, −2, 30, −30, −∞, 1e4 on every tile size and split count (crossed);
* the interpreter list, when the child reports that triton is loaded with its CPU interpreter on
  (``TRITON_INTERPRET=1``: ``--triton-interpret``, or set by :mod:`derive.impl.triton_env` when
  the target imports triton and there is no CUDA device): the same sizes cut to at most
  ``MAX_PARTS`` tiles or splits per row (the smallest block that keeps to it stands in for the
  smaller ones; ``MAX_PARTS`` splits for longer rows; 8 splits from n = 8 on), and the sink values
  spread over the partitions, ``SETS_PER_PARTITION`` per tile size or split count in turn: the
  interpreter runs one program per row, one after the other, and pays milliseconds per row and
  per tile.

After the fixed list, a derandomized Hypothesis search
(:func:`derive.impl.inputs.search`, the same as the row form's; ``SEARCH_EXAMPLES`` examples,
a count) draws partitions the list lacks, rows and sink values, and shrinks a failing case.
Agreement means agreement on every tested input: evidence, not a proof.

With ``per_head`` the parameters are arrays (H,) along the last leading axis, the rows passed
as (R, H, n) with ``HEADS`` sink values side by side, taken in turn: in the full list
⌈7/HEADS⌉ calls per tile size, split count or cotangent, so each meets every sink value; in
the interpreter list one. A gradient must have shape (H,), entry h the sum over the rows of
head h.

Tolerance (as for the row form, stated in ulps and absolutely): an entry y agrees with the
exact value p when |y − p| ≤ abs + ulps·eps·(1 + κ)·m, with κ the condition of the row
(:func:`derive.impl.tolerance.kappa`) and m the magnitude of the terms that make up p:
Σ_t P_t |v_tk| for ``out``, max(1, |lse|) for ``lse``, P_t(Σ_k |g_k v_tk| + Σ_k |g_k| m_k) for
``dx``, P_t |g_k| for ``dv`` and the sum over rows of P_σ Σ_k |g_k| m_k for ``ds``. Where the
definition has no value (softmax, every key masked: 0/0) ``out`` may be 0 or NaN and the
gradients 0 or NaN; an ``lse`` of log 0 may be −∞ or +∞ (FlashAttention's convention).

On disagreement the function is run on a few probe inputs and compared with every known
kernel fault of its form (:data:`derive.kernels.faults.FAULTS`, run by the numeric kernels
of :mod:`derive.kernels.numeric` with the fault's switch): a fault *matches* when the
function agrees with the faulty kernel on every probe row and the faulty kernel differs from
the definition on at least one.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import mpmath
import numpy as np

from hypothesis import strategies as st

from derive.errors import InputError
from derive.impl.inputs import _entry, _param, search
from derive.impl.target import ImplRaised, shown
from derive.impl.tolerance import Tolerance, kappa
from derive.kernels import numeric
from derive.kernels.faults import FAULTS as KERNEL_FAULTS
from derive.kernels.forms import NO_FORM, NOT_CHECKED
from derive.render.markup import plain_math, to_gfm

__all__ = ["EXTRA_LOGIT", "FORMS", "LSE_CONVENTIONS", "KernelChecker", "KernelReport", "check_kernel"]

INF = math.inf
FORMS = ("online", "split", "backward")
LSE_CONVENTIONS = ("natural", "base2", "kv-only")
LOG2E = 1.0 / math.log(2.0)

# normalizer → its extra logit: None (none), a number, or the name of the parameter
EXTRA_LOGIT: dict[str, object] = {"softmax": None, "softmax1": 0.0, "zero_token": 0.0, "sink": "s"}
SINK_VALUES = (0.0, 1.5, -2.0, 30.0, -30.0, -INF, 1e4)
# the interpreter list only (a target run by Triton's CPU interpreter, which pays milliseconds per program
# and per tile): sink values per tile size or split count, spread over the partitions rather than crossed
# with them, and tiles or splits per row
SETS_PER_PARTITION = 1
MAX_PARTS = 17
HEADS = 2  # per-head parameters (--per-head): heads per call, each with its own sink value
# which fixed list a check used (KernelChecker.thin), in the report's words
FIXED_LISTS = {
    "full": "the full list, every tile size (1, 2, 3, 16, 32, n and n + 1 keys) and split count (1, 2, 3, 8, "
            "n, n + 1 and 2n + 3) with every sink value",
    "interpreter": f"the interpreter list (the target runs under Triton's CPU interpreter), at most {MAX_PARTS} "
                   f"tiles or splits per row and the sink values spread over the tile sizes and split counts, "
                   f"{SETS_PER_PARTITION} per partition in turn",
}
SEARCH_EXAMPLES = 20  # Hypothesis examples per dtype after the fixed list (a count; --examples sets it)
SEARCH_MAX_N = 12  # keys per searched row (split, backward)
SEARCH_MAX_BLOCK, SEARCH_MAX_TILES = 6, 4  # online: tiles of 1 to 6 keys, up to 3 full ones and a partial one
DV = 3

# rows per length, simplest first
ROWS: dict[int, tuple[tuple[float, ...], ...]] = {
    0: ((),),
    1: ((0.0,), (1.0,), (-INF,), (1e4,)),
    2: ((0.0, 0.0), (1.0, 3.0), (3.0, 1.0), (-INF, 2.0), (-INF, -INF), (1e4, -1e4)),
    3: ((1.0, 1.0, 1.0), (2.0, -1.0, 0.5), (-INF, -INF, 1.0), (1e4, 0.0, -1e4), (-1e4, -1e4, -INF)),
    5: ((-2.0, -1.0, 0.0, 1.0, 2.0), (0.0, 0.0, 5.0, 5.0, -INF), (-INF, -INF, -INF, 1.0, 2.0),
        (30.0, 20.0, -INF, 25.0, 40.0), (-INF,) * 5),
    8: ((7.25, -3.5, 0.125, 9.0, -0.0625, 1.0, 2.0, -8.0), tuple(4.0 * k for k in range(8)),
        (-100.0, -INF, -INF, -INF, 100.0, 99.0, 100.0, -100.0), (1e3, 0.0, -1e3, 5.0, 5.0, 5.0, 5.0, 5.0)),
    17: (tuple(round(8.0 * k / 17 + 0.25 * math.sin(k), 6) for k in range(17)),
         tuple(-INF if k < 8 else float(k % 5) for k in range(17))),
    40: (tuple(round(-4.0 + 8.0 * k / 40 + 0.25 * math.sin(k), 6) for k in range(40)),
         tuple(-INF if k % 16 < 8 else round(20.0 + math.cos(k), 6) for k in range(40))),
    64: (tuple(round(30.0 * math.sin(1.7 * k) * math.cos(0.3 * k), 6) for k in range(64)),
         tuple(-INF if 16 <= k < 48 else round(0.5 * k - 10.0, 6) for k in range(64))),
}


def values(n: int, r: int) -> np.ndarray:
    """The values of row r: v[t, k] = ((3(t + r) + 5k) mod 7 − 3)/2 + k, exact in every dtype."""
    t = np.arange(n)[:, None] + r
    k = np.arange(DV)[None, :]
    return ((3 * t + 5 * k) % 7 - 3) / 2.0 + k


def dout_row(r: int, k: int = 0) -> np.ndarray:
    """The cotangent of row r in the k-th backward call (not constant: ⟨g, v_t⟩ varies with t)."""
    base = np.array([1.0, -0.5, 2.0]) if k == 0 else np.array([-3.0, 0.25, 1.5])
    return base * (1.0 + (r % 3) / 2.0)


def blocks(n: int, thin: bool = False) -> list[int]:
    """Tile sizes for rows of n keys: one key, a few, 16 and 32, one tile (n, n + 1). ``thin``
    (the interpreter list): at most MAX_PARTS tiles, the smallest block that keeps to it standing
    in for the smaller ones."""
    fit = -(-n // MAX_PARTS) if n and thin else 1
    return sorted({b for b in (1, 2, 3, 16, 32, n, n + 1) if fit <= b <= n + 1} | {fit})


def split_counts(n: int, thin: bool = False) -> list[int]:
    """Split counts for rows of n keys: 1, 2, 3, 8, a key per split, empty splits (n + 1, 2n + 3).
    ``thin`` (the interpreter list): at most MAX_PARTS splits (MAX_PARTS itself for longer rows),
    8 once n ≥ 8."""
    if not thin:
        return sorted({s for s in (1, 2, 3, 8, n, n + 1, 2 * n + 3) if s >= 1})
    return sorted({s for s in (1, 2, 3, n, n + 1, 2 * n + 3) if 1 <= s <= MAX_PARTS}
                  | ({8} if n >= 8 else set()) | ({MAX_PARTS} if n > MAX_PARTS else set()))


# ---------------------------------------------------------------------------------------------
# the exact definition


@dataclass
class ExactRow:
    defined: bool
    out: list[float]
    out_scale: list[float]
    lse: dict  # convention → float (−inf for log 0)
    dx: list[float] = field(default_factory=list)
    dx_scale: list[float] = field(default_factory=list)
    dv: list[list[float]] = field(default_factory=list)
    dv_scale: list[list[float]] = field(default_factory=list)
    ds: float = 0.0
    ds_scale: float = 0.0


def exact_row(row, v, sigma, g, dps: int) -> ExactRow:
    """The definition at ``dps`` digits for one row (scores ``row``, values ``v``, extra logit ``sigma``)."""
    with mpmath.workdps(dps):
        e = [mpmath.exp(mpmath.mpf(x)) if x != -INF else mpmath.mpf(0) for x in row]
        es = mpmath.mpf(0) if sigma is None or sigma == -INF else mpmath.exp(mpmath.mpf(sigma))
        kv = mpmath.fsum(e)
        den = kv + es
        logs = {"natural": mpmath.log(den) if den > 0 else None, "kv-only": mpmath.log(kv) if kv > 0 else None}
        lse = {"natural": -INF if logs["natural"] is None else float(logs["natural"]),
               "kv-only": -INF if logs["kv-only"] is None else float(logs["kv-only"])}
        lse["base2"] = -INF if logs["natural"] is None else float(logs["natural"] / mpmath.log(2))
        if den == 0:
            return ExactRow(False, [math.nan] * DV, [0.0] * DV, lse)
        vm = [[mpmath.mpf(float(a)) for a in r] for r in v]
        p = [q / den for q in e]
        out = [mpmath.fsum(p[t] * vm[t][k] for t in range(len(row))) for k in range(DV)]
        scale = [mpmath.fsum(p[t] * abs(vm[t][k]) for t in range(len(row))) for k in range(DV)]
        res = ExactRow(True, [float(o) for o in out], [float(s) for s in scale], lse)
        if g is not None:
            gm = [mpmath.mpf(float(a)) for a in g]
            D = mpmath.fsum(gm[k] * out[k] for k in range(DV))
            gs = mpmath.fsum(abs(gm[k]) * scale[k] for k in range(DV))
            res.dx = [float(p[t] * (mpmath.fsum(gm[k] * vm[t][k] for k in range(DV)) - D)) for t in range(len(row))]
            res.dx_scale = [float(p[t] * (mpmath.fsum(abs(gm[k] * vm[t][k]) for k in range(DV)) + gs))
                            for t in range(len(row))]
            res.dv = [[float(p[t] * gm[k]) for k in range(DV)] for t in range(len(row))]
            res.dv_scale = [[abs(x) for x in r] for r in res.dv]
            ps = es / den
            res.ds, res.ds_scale = float(-ps * D), float(ps * gs)
        return res


# ---------------------------------------------------------------------------------------------
# one call: inputs, outputs, comparison


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

    def row_sigma(self, r: int):
        """The extra logit of flat row r (row-major over ``lead``: its head is r mod H)."""
        return self.sigma[r % self.heads] if self.heads else self.sigma

    def row_params(self, r: int) -> dict:
        return {k: float(v[r % self.heads]) if self.heads else v for k, v in self.params.items()}

    def args(self):
        shape = self.lead + (self.x.shape[-1],)
        third = self.third.reshape(self.lead + (DV,)) if isinstance(self.third, np.ndarray) else self.third
        return self.x.reshape(shape), self.v.reshape(shape + (DV,)), third

    def describe(self) -> str:
        what = {"online": "block", "split": "splits"}.get(self.form)
        bits = [f"scores of shape {list(self.lead + (self.x.shape[-1],))}"]
        if what:
            bits.append(f"{what} = {self.third}")
        bits += [f"{k} = {_list(v, _num) + ' (one per head)' if self.heads else _num(v)}"
                 for k, v in sorted(self.params.items())]
        return ", ".join(bits)


@dataclass
class KernelFailure:
    dtype: str
    form: str
    what: str  # out | lse | dx | dv | d<param> | nan
    call: Call
    row: int  # index of the failing row among the call's rows (-1: the whole call, a parameter gradient)
    output: list
    exact: list
    errors: list
    bounds: list

    def as_json(self) -> dict:
        r = self.row
        return {"dtype": self.dtype, "form": self.form, "what": self.what, "call": self.call.describe(),
                "third": self.call.third if not isinstance(self.call.third, np.ndarray) else None,
                "params": {k: [_jnum(a) for a in v] if self.call.heads else _jnum(v)
                           for k, v in sorted(self.call.params.items())},
                "row": None if r < 0 else [_jnum(x) for x in self.call.x[r]],
                "values": None if r < 0 else [[_jnum(a) for a in t] for t in self.call.v[r]],
                "output": [_jnum(a) for a in self.output], "exact": [_jnum(a) for a in self.exact],
                "errors": [_jnum(a) for a in self.errors], "bounds": [_jnum(a) for a in self.bounds]}


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


def _num(v: float) -> str:
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return repr(float(v))


def _tex_num(v: float) -> str:
    """A parameter value as math source: ``-2.0`` → ``-2``, ``-inf`` → ``-\\infty``."""
    v = float(v)
    if math.isinf(v):
        return r"\infty" if v > 0 else r"-\infty"
    return format(v, "g") if v == int(v) and abs(v) < 1e15 else repr(v)


def _err(v: float) -> str:
    return format(v, ".3e") if math.isfinite(v) else _num(float(v))


def _list(xs, fmt) -> str:
    return "[" + ", ".join(fmt(float(a)) for a in xs) + "]"


def _jnum(v):
    v = float(v)
    return _num(v) if not math.isfinite(v) else float(format(v, ".17g"))


def _round(a, dtype: str):
    if dtype == "bfloat16":
        import torch

        return torch.tensor(np.asarray(a, dtype=np.float64), dtype=torch.bfloat16).to(torch.float64).numpy()
    return np.asarray(a, dtype=np.float64).astype(dtype).astype(np.float64)


def _agree(y: float, p: float, bound: float) -> tuple[bool, float]:
    if math.isinf(p) or math.isnan(p):
        return (y == p or (math.isnan(p) and math.isnan(y))), (0.0 if y == p else INF)
    if not math.isfinite(y):
        return False, INF
    err = abs(y - p)
    return err <= bound, err


def _zero_or_nan(ys) -> bool:
    ys = [float(y) for y in np.ravel(ys)]
    return all(y == 0 for y in ys) or all(math.isnan(y) for y in ys)


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
    _cache: dict = field(default_factory=dict)

    def sigma(self, params: dict):
        extra = EXTRA_LOGIT[self.norm.name]
        return params[extra] if isinstance(extra, str) else extra

    def param_sets(self) -> list[dict]:
        if not self.free_params:
            return [dict(self.fixed_params)]
        return [{**self.fixed_params, **{p: s for p in self.free_params}} for s in SINK_VALUES]

    def _sets_for(self, sets: list, cursor: int, count: int = 0) -> list:
        """The parameter sets one partition is run with: every one in the full list and for the
        backward form (no partition), else ``SETS_PER_PARTITION`` of them, taken in turn from a
        cursor that runs through ``sets`` across the whole list (each length sees every sink
        value). With ``count``: exactly that many, in turn (the heads of a per-head call)."""
        if not count and (not self.thin or self.form == "backward" or len(sets) <= SETS_PER_PARTITION):
            return sets
        return [sets[(cursor + j) % len(sets)] for j in range(count or SETS_PER_PARTITION)]

    def make_call(self, x, v, third, chosen: list, dtype: str, k: int = 0) -> Call:
        """A call on the rows ``x`` (R, n), ``v`` (R, n, DV): ``third`` a block or split count, or
        for the backward form the index of the cotangent (:func:`dout_row`). Scalar parameters:
        one parameter set, rows passed as (R, n) or (1, R, n) by ``k``. Per head: one set per head,
        the rows passed as (R, H, n) (each row once per head, made the head's own: scores rolled by h,
        values negated for odd h) with each parameter an array (H,)."""
        rounded = [{key: float(_round(val, dtype)) for key, val in c.items()} for c in chosen]
        if self.per_head:
            H = len(rounded)
            x, v = np.repeat(x, H, axis=0), np.repeat(v, H, axis=0)
            for r in range(x.shape[0]):  # each head its own row: head h has the keys' scores rolled by h and,
                h = r % H  # for odd h, the values negated (a kernel reading another head's x or v must fail)
                x[r], v[r] = np.roll(x[r], h), (-v[r] if h % 2 else v[r])
            params = {key: np.array([c[key] for c in rounded]) for key in rounded[0]}
            sigma, lead = tuple(self.sigma(c) for c in rounded), (x.shape[0] // H, H)
        else:
            params, sigma = rounded[0], self.sigma(rounded[0])
            lead = (1, x.shape[0]) if k % 2 else (x.shape[0],)  # batch and head axes, alternately
        if self.form == "backward":
            third = _round(np.stack([dout_row(r, third) for r in range(x.shape[0])]).reshape(-1, DV), dtype)
        return Call(self.form, x, v, third, params, sigma, lead, len(rounded) if self.per_head else 0)

    def calls(self, dtype: str):
        """Every call of the check, simplest first."""
        sets, cursor = self.param_sets(), 0
        for n in sorted(ROWS):
            rows = ROWS[n]
            x = _round(np.array(rows, dtype=np.float64).reshape(len(rows), n), dtype)
            v = _round(np.stack([values(n, r) for r in range(len(rows))]).reshape(len(rows), n, DV), dtype)
            thirds = {"online": blocks, "split": split_counts}.get(self.form, lambda *_: [0, 1])(n, self.thin)
            for k, third in enumerate(thirds):
                if self.per_head:  # the sink values side by side, as heads: in turn, every one (full list)
                    for _ in range(1 if self.thin else -(-len(sets) // HEADS)):
                        yield self.make_call(x, v, third, self._sets_for(sets, cursor, HEADS), dtype, k)
                        cursor += HEADS
                    continue
                for params in self._sets_for(sets, cursor):
                    yield self.make_call(x, v, third, [params], dtype, k)
                cursor += SETS_PER_PARTITION

    def exact(self, call: Call, r: int) -> ExactRow:
        g = call.third[r] if isinstance(call.third, np.ndarray) else None
        key = (tuple(call.x[r].tolist()), call.v[r].tobytes(), call.row_sigma(r), None if g is None else g.tobytes())
        if key not in self._cache:
            self._cache[key] = exact_row(call.x[r].tolist(), call.v[r].tolist(), call.row_sigma(r),
                                         None if g is None else g.tolist(), self.dps)
        return self._cache[key]

    def run_call(self, call: Call, dtype: str) -> dict:
        x, v, third = call.args()
        got = self.target.kcall(self.form, x, v, third, call.params, dtype)
        R, n = call.x.shape
        out = {}
        for name, arr in got.items():
            if name in ("out", "dv"):
                out[name] = arr.reshape((R, n, DV) if name == "dv" else (R, DV))
            elif name in ("lse", "dx"):
                out[name] = arr.reshape(R, n) if name == "dx" else arr.reshape(R)
            else:
                out[name] = arr
        return out

    def compare(self, call: Call, got: dict, tol: Tolerance, result: KernelResult | None) -> KernelFailure | None:
        R = call.x.shape[0]

        def fail(what, r, y, p, errs, bounds):
            return KernelFailure(tol.dtype, self.form, what, call, r, [float(a) for a in y], [float(a) for a in p],
                                 errs, bounds)

        slots = call.heads or 1  # a parameter's gradient: one entry per head, or one for every row
        ds_total, ds_scale, ds_defined = [0.0] * slots, [0.0] * slots, [True] * slots
        for r in range(R):
            row = call.x[r].tolist()
            ex = self.exact(call, r)
            kap = kappa(row, {k: val for k, val in call.row_params(r).items() if math.isfinite(val)})
            if result is not None:
                result.rows += 1
                result.undefined_rows += not ex.defined
            checks = []
            if self.form in ("online", "split"):
                if ex.defined:
                    checks.append(("out", got["out"][r], ex.out, ex.out_scale))
                elif not _zero_or_nan(got["out"][r]):
                    return fail("out", r, got["out"][r], ex.out, [INF] * DV, [math.nan] * DV)
                if "lse" in got:
                    p = ex.lse[self.lse]
                    y = float(got["lse"][r])
                    if p == -INF:
                        if not (math.isinf(y) or (not ex.defined and math.isnan(y))):
                            return fail("lse", r, [y], [p], [INF], [0.0])
                    else:
                        checks.append(("lse", [y], [p], [max(1.0, abs(p))]))
            else:
                if not ex.defined:
                    ds_defined[r % slots] = False
                    if not (_zero_or_nan(got["dx"][r]) and _zero_or_nan(got["dv"][r])):
                        which = "dx" if not _zero_or_nan(got["dx"][r]) else "dv"
                        y = np.ravel(got[which][r])
                        return fail(which, r, y, [math.nan] * len(y), [INF] * len(y), [math.nan] * len(y))
                    continue
                checks.append(("dx", got["dx"][r], ex.dx, ex.dx_scale))
                checks.append(("dv", np.ravel(got["dv"][r]), np.ravel(ex.dv), np.ravel(ex.dv_scale)))
                ds_total[r % slots] += ex.ds
                ds_scale[r % slots] += (1.0 + kap) * ex.ds_scale
            for what, y, p, scales in checks:
                bounds = [tol.bound(m, kap) for m in scales]
                res = [_agree(float(a), float(b), c) for a, b, c in zip(y, p, bounds)]
                if result is not None:
                    for (_, e), b in zip(res, bounds):
                        if math.isfinite(e) and b > 0:
                            result.max_ratio = max(result.max_ratio, e / b)
                if not all(ok for ok, _ in res):
                    return fail(what, r, y, p, [e for _, e in res], bounds)
        if self.form == "backward":
            for name in self.norm.params:
                key = "d" + name
                if key not in got:
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
                bounds = [tol.abs + tol.rel * m for m in ds_scale]
                res = [_agree(y, p, b) if ok else (True, 0.0)
                       for y, p, b, ok in zip(ys, ds_total, bounds, ds_defined)]
                for (_, err), bound in zip(res, bounds):
                    if result is not None and math.isfinite(err) and bound > 0:
                        result.max_ratio = max(result.max_ratio, err / bound)
                if not all(ok for ok, _ in res):
                    return fail(key, -1, ys, ds_total, [e for _, e in res], bounds)
        return None

    def search(self, tol: Tolerance, result: KernelResult, budget: int) -> None:
        """After the fixed list: Hypothesis (:func:`derive.impl.inputs.search`) draws a length n ≤
        SEARCH_MAX_N, one to three rows of scores (any entry −∞, or the whole row), a tile size or
        split count and the parameter values (the sink: a value of the fixed list or any in its
        range; per head, one each), and shrinks a failing case to the simplest one."""
        dtype, aborted = tol.dtype, []

        def as_call(case) -> Call:
            rows, third, sets = case
            n = len(rows[0])
            x = _round(np.array(rows, dtype=np.float64).reshape(len(rows), n), dtype)
            v = _round(np.stack([values(n, r) for r in range(len(rows))]).reshape(len(rows), n, DV), dtype)
            return self.make_call(x, v, third, [{**self.fixed_params, **c} for c in sets], dtype, len(rows) + 1)

        def fails(case) -> bool:
            if aborted:
                return False
            result.searched += 1
            call = as_call(case)
            try:
                return self.compare(call, self.run_call(call, dtype), tol, None) is not None
            except ImplRaised:
                return True  # shrunk like a failure; the call below raises it on the simplest case
            except InputError as exc:  # the worker is gone, or bad output: no more calls
                aborted.append(exc)
                return False

        found = search(_kernel_cases(self.form, self.free_params, HEADS if self.per_head else 1), fails, budget)
        if aborted:
            raise aborted[0]
        if found is not None:
            call = as_call(found)
            result.failure = self.compare(call, self.run_call(call, dtype), tol, result)
            result.source = "search"

    def run(self, tol: Tolerance, examples: int = SEARCH_EXAMPLES) -> KernelResult:
        result = KernelResult(tol.dtype, tol)
        for call in self.calls(tol.dtype):
            got = self.run_call(call, tol.dtype)
            result.calls += 1
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
            if self.lse != "natural" and self.form != "backward" and "lse" not in got:
                raise InputError(f"--lse {self.lse} was given but {self.target.name} returns out only, "
                                 f"not (out, lse)")
            fail = self.compare(call, got, tol, result)
            if fail is not None:
                result.failure, result.source = fail, "fixed list"
                return result
        if examples > 0:
            self.search(tol, result, examples)
        return result


@st.composite
def _kernel_cases(draw, form: str, free: tuple, sets: int):
    """(rows of scores, block | splits | cotangent index, parameter sets), simplest first."""
    if form == "online":  # the partition first: full tiles of `block` keys and a partial last one
        third = draw(st.integers(1, SEARCH_MAX_BLOCK))
        n = third * draw(st.integers(0, SEARCH_MAX_TILES - 1)) + draw(st.integers(0, third - 1))
    elif form == "split":
        n, third = draw(st.integers(0, SEARCH_MAX_N)), draw(st.integers(1, 8))
    else:
        n, third = draw(st.integers(0, SEARCH_MAX_N)), draw(st.integers(0, 1))
    rows = [draw(st.one_of(st.lists(_entry(True), min_size=n, max_size=n), st.just([-INF] * n)))
            for _ in range(draw(st.integers(1, 3)))]
    value = {p: st.one_of(st.sampled_from(SINK_VALUES), _param(p)) for p in free}
    return rows, third, [{p: draw(value[p]) for p in free} for _ in range(sets)]


# ---------------------------------------------------------------------------------------------
# diagnosis: the known kernel faults, run by derive.kernels.numeric on the same inputs

FORM_FAULTS: dict[str, tuple[str, ...]] = {
    "online": ("extra_per_tile", "missing_log2e", "scale_on_extra", "softmax1_unshifted_one", "acc_not_rescaled",
               "sum_not_rescaled"),
    "split": ("extra_per_tile", "seeded_twice_empty_split", "nan_empty_split"),
    "backward": ("kv_only_lse_backward", "sink_grad_missing", "sink_grad_sign"),
}
_BY_KEY = {f.key: f for f in KERNEL_FAULTS}
assert all(k in _BY_KEY for keys in FORM_FAULTS.values() for k in keys)
_SCALES = (2, 4, 8, 16, 32, 64, 128, 256)  # head dimensions d of a scale 1/√d


def _variants(form: str, key: str) -> list[dict]:
    """Keyword sets of the numeric kernel that realize fault ``key`` (base 2 or e, the scale)."""
    if form == "split" and key == "extra_per_tile":  # seeded per split: the empty ones too, or not
        return [{}, {"empty_too": True}]
    if form == "split" and key == "seeded_twice_empty_split":  # a fully masked split, too
        return [{}, {"masked_too": True}]
    if form != "online":
        return [{}]
    if key == "missing_log2e":
        return [{"base2": True}]
    if key == "scale_on_extra":
        return [{"base2": b, "scale": 1.0 / math.sqrt(d)} for d in _SCALES for b in (True, False)]
    if key in ("acc_not_rescaled", "sum_not_rescaled"):  # the extra logit seeded, or added at finalization
        return [{"base2": b, "finalize": f} for f in (False, True) for b in (True, False)]
    if key == "extra_per_tile":  # a row of no key: 0 (guarded), or 0/0 as a real per-tile kernel has it
        return [{"base2": b, "no_tile_nan": nan} for nan in (False, True) for b in (True, False)]
    return [{"base2": True}, {"base2": False}]


def _finalized(x, v, block, sigma, base2, fault):
    """A kernel that streams the keys without the extra logit and adds it once at finalization
    (forms.finalize_extra): the numeric kernel's KV-only (out, lse) merged with (0, σ)."""
    o, lse = numeric.online(x, v, block, None, base2=base2, fault=fault)
    if sigma is None:
        return o
    top = max(lse, sigma)
    if top == -INF:
        return o
    a, b = math.exp(lse - top), math.exp(sigma - top)
    return o * (a / (a + b))


def faulty_outputs(form: str, key: str | None, call: Call, variant: dict) -> dict:
    """The numeric kernel (with fault ``key``, or none) on every row of ``call``."""
    R, n = call.x.shape
    outs, dxs, dvs, ds = [], [], [], np.zeros(call.heads or 1)
    for r in range(R):
        x, v, sigma = call.x[r], call.v[r], call.row_sigma(r)
        with np.errstate(all="ignore"):
            if form == "online":
                scale = variant.get("scale", 1.0)
                if variant.get("finalize"):
                    outs.append(_finalized(x, v, call.third, sigma, variant.get("base2", True), key))
                else:
                    o, _ = numeric.online(x / scale, v, call.third, sigma, scale=scale,
                                          base2=variant.get("base2", True), fault=key,
                                          no_tile_nan=variant.get("no_tile_nan", False))
                    outs.append(o)
            elif form == "split":
                o, _ = numeric.split(x, v, call.third, sigma, fault=key, **variant)
                outs.append(o)
            else:
                dx, dv, dsr = numeric.backward(x, v, call.third[r], sigma, fault=key)
                dxs.append(dx)
                dvs.append(dv)
                ds[r % len(ds)] += 0.0 if dsr is None else dsr
    if form == "backward":
        return {"dx": np.array(dxs).reshape(R, n), "dv": np.array(dvs).reshape(R, n, DV), "ds": ds}
    return {"out": np.array(outs).reshape(R, DV)}


def _same(got: dict, ref: dict, checker: KernelChecker, call: Call, tol: Tolerance, lenient: bool = False) -> bool:
    """Every compared entry of ``got`` equals ``ref`` within the check's tolerance (scaled by both).

    With ``lenient``, rows where ``ref`` is not finite are skipped: there the faulty kernel's
    0/0 (e.g. P = e^{x − lse} with lse = −∞) may be guarded or not, a detail the fault is not about."""
    R = call.x.shape[0]
    for r in range(R):
        ex = checker.exact(call, r)
        if not ex.defined:
            continue
        if lenient and not all(np.all(np.isfinite(np.asarray(ref[k][r]))) for k in ("out", "dx", "dv") if k in ref):
            continue
        kap = kappa(call.x[r].tolist(), {k: val for k, val in call.row_params(r).items() if math.isfinite(val)})
        pairs = []
        if checker.form in ("online", "split"):
            pairs.append((got["out"][r], ref["out"][r], ex.out_scale))
        else:
            pairs.append((got["dx"][r], ref["dx"][r], ex.dx_scale))
            pairs.append((np.ravel(got["dv"][r]), np.ravel(ref["dv"][r]), np.ravel(ex.dv_scale)))
        for ys, ps, scales in pairs:
            for y, p, m in zip(ys, ps, scales):
                y, p = float(y), float(p)
                if math.isnan(p) or math.isnan(y):
                    if not (math.isnan(p) and math.isnan(y)):
                        return False
                    continue
                if not math.isfinite(p) or not math.isfinite(y):
                    if y != p:
                        return False
                    continue
                if abs(y - p) > tol.bound(max(m, abs(p)), kap):
                    return False
    if checker.form == "backward" and "ds" in ref:
        name = next((p for p in checker.norm.params), None)
        if name is not None and "d" + name in got and all(checker.exact(call, r).defined for r in range(R)):
            ys, ps = np.ravel(got["d" + name]), np.ravel(ref["ds"])
            if ys.shape != ps.shape:
                return False
            kap = max(kappa(call.x[r].tolist(), {}) for r in range(R)) + max(
                (abs(val) for val in np.ravel(list(call.params.values())) if math.isfinite(val)), default=0.0)
            for h, (y, p) in enumerate(zip(ys, ps)):
                scale = sum(checker.exact(call, r).ds_scale for r in range(h, R, len(ps))) + abs(p)
                if not math.isfinite(y) or abs(y - p) > tol.abs + tol.rel * (1 + kap) * scale:
                    return False
    return True


def _probe_calls(checker: KernelChecker, failure: KernelFailure) -> list[Call]:
    """The failing call, then calls that tell the faults apart (several tiles, a growing maximum,
    empty and fully masked splits, each with the failing parameters and with a sink of 1.5)."""
    dtype, call = failure.dtype, failure.call
    heads = [call.row_params(h) for h in range(call.heads or 1)]  # the failing parameter sets
    params_list = [heads]
    if checker.free_params:
        params_list.append([{**c, **{p: 1.5 for p in checker.free_params}} for c in heads])
    out = [failure.call]
    for n, rows in ((5, ((-2.0, -1.0, 0.0, 1.0, 2.0), (-INF, -INF, -INF, 1.0, 2.0), (3.0, 1.0, 4.0, 1.0, 5.0))),
                    (8, (tuple(4.0 * k for k in range(8)), (7.25, -3.5, 0.125, 9.0, -0.0625, 1.0, 2.0, -8.0)))):
        x = _round(np.array(rows), dtype)
        v = _round(np.stack([values(n, r) for r in range(len(rows))]), dtype)
        thirds = {"online": [1, 2], "split": [3, 2 * n + 3], "backward": [0]}[checker.form]
        for chosen in params_list:
            for third in thirds:
                out.append(checker.make_call(x, v, third, chosen, dtype))
    return out


@dataclass
class KernelDiagnosis:
    matched: list = field(default_factory=list)
    pattern: list = field(default_factory=list)
    probes: int = 0

    def as_json(self) -> dict:
        return {"matched": self.matched, "pattern": self.pattern, "probes": self.probes}


def diagnose(checker: KernelChecker, failure: KernelFailure, tol: Tolerance) -> KernelDiagnosis:
    calls = _probe_calls(checker, failure)
    seen = []
    for call in calls:
        try:
            seen.append((call, checker.run_call(call, tol.dtype)))
        except ImplRaised:
            continue
    diag = KernelDiagnosis(probes=sum(c.x.shape[0] for c, _ in seen))
    for key in FORM_FAULTS[checker.form]:
        for variant in _variants(checker.form, key):
            differs, same = False, True
            for call, got in seen:
                ref = faulty_outputs(checker.form, key, call, variant)
                exact = faulty_outputs(checker.form, None, call, {})
                if not _same(ref, exact, checker, call, tol):
                    differs = True
                if not _same(got, ref, checker, call, tol, lenient=key != "nan_empty_split"):
                    same = False
                    break
            if same and differs:
                f = _BY_KEY[key]
                entry = {"name": key, "title": f.title, "does": f.does, "computes": f.computes, "fix": f.fix}
                if "scale" in variant:
                    d = round(1.0 / variant["scale"] ** 2)
                    entry["computes"] += f" (here with the scale 1/√{d})"
                diag.matched.append(entry)
                break
    if not diag.matched:
        diag.pattern = _pattern(checker, failure, seen, tol)
    return diag


def _lse_matches(checker, seen, conv: str, tol: Tolerance) -> bool:
    """The returned lse is the ``conv`` log-sum-exp on every probe row (−∞ where that is log 0)."""
    compared = 0
    for call, got in seen:
        if "lse" not in got:
            return False
        for r in range(call.x.shape[0]):
            p, y = checker.exact(call, r).lse[conv], float(got["lse"][r])
            if math.isinf(p):
                if not math.isinf(y):
                    return False
                continue
            kap = kappa(call.x[r].tolist(), {k: val for k, val in call.row_params(r).items() if math.isfinite(val)})
            if not math.isfinite(y) or abs(y - p) > tol.bound(max(1.0, abs(p)), kap):
                return False
            compared += 1
    return compared > 0


def _pattern(checker, failure, seen, tol) -> list[str]:
    lines = []
    if failure.what == "lse":
        for conv in LSE_CONVENTIONS:
            if conv != checker.lse and _lse_matches(checker, seen, conv, tol):
                flag = "the default" if conv == "natural" else f"--lse {conv}"
                lines.append(f"The lse returned is the {conv} log-sum-exp ({_CONV_WORDS[conv]}) on every probe "
                             f"row, not the {checker.lse} one: if that is the convention meant, check it with "
                             f"{flag}.")
                break
    bad = [v for v in np.ravel(failure.output) if not math.isfinite(v)]
    if bad and failure.what != "lse":
        lines.append("It returns NaN or ±inf where the definition is finite.")
    if not lines:
        lines.append(f"No known kernel fault of the {checker.form} form matches (tried: "
                     f"{', '.join(FORM_FAULTS[checker.form])}): it disagrees on {failure.what} "
                     f"({failure.call.describe()}).")
    return lines


KERNEL_TOLERANCE_RULE = (  # prose markup: the document shows the math, the terminal reads it aloud
    r"$\lvert y - p \rvert \le \mathrm{abs} + \mathrm{ulps} \cdot \mathrm{eps} \cdot (1 + \kappa) \cdot m$ per "
    r"entry, with the ulps, eps and abs of the dtype as for the row form, "
    r"$\kappa = 2 \max_t \lvert x_t \rvert + \lvert s \rvert + (n - 1)$ (the $\lvert s \rvert$ term with a "
    r"sink only) the condition of the row, and $m$ the magnitude of the terms that make up $p$: "
    r"$\sum_t P_t \lvert v_{tk} \rvert$ for out, $\max(1, \lvert \mathrm{lse} \rvert)$ for lse, "
    r"$P_t (\sum_k \lvert g_k v_{tk} \rvert + \sum_k \lvert g_k \rvert m_k)$ for dx, "
    r"$P_t \lvert g_k \rvert$ for dv, and "
    r"$\sum_{\mathrm{rows}} (1 + \kappa) P_s \sum_k \lvert g_k \rvert m_k$ for a shared sink's ds "
    r"($P$ the exact weights, $g = \mathrm{dout}$). Where the definition has no value (softmax with every "
    r"key masked: $0/0$), out and the gradients may be 0 or NaN; an lse of $\log 0$ may be $-\infty$ "
    r"or $+\infty$.")

_CONV_WORDS = {"natural": "ln(e^σ + Σ e^x)", "base2": "log₂(e^σ + Σ e^x)",
               "kv-only": "ln Σ e^x, without the extra logit"}


# ---------------------------------------------------------------------------------------------
# the report


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

    @property
    def failure(self) -> KernelFailure | None:
        return next((r.failure for r in self.results if r.failure is not None), None)

    @property
    def agrees(self) -> bool:
        return self.failure is None

    def exit_code(self) -> int:
        return 0 if self.agrees else 1

    def as_json(self) -> dict:
        return {
            "target": self.target, "normalizer": self.normalizer, "form": self.form, "lse": self.lse,
            "api": self.api, "params": {k: _jnum(v) for k, v in sorted(self.params.items())},
            "free_params": list(self.free_params), "agrees": self.agrees, "per_head": self.per_head,
            "fixed_list": self.fixed_list,
            "results": [{"dtype": r.dtype, "tolerance": r.tolerance.as_json(), "calls": r.calls, "rows": r.rows,
                         "searched": r.searched, "source": r.source or None,
                         "undefined_rows": r.undefined_rows, "returned": r.returned,
                         "max_ratio": float(f"{r.max_ratio:.3e}") if r.failure is None else None,
                         "failure": None if r.failure is None else r.failure.as_json()} for r in self.results],
            "diagnosis": None if self.diagnosis is None else self.diagnosis.as_json(),
            "notes": list(self.notes),
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
            values = ", ".join(_tex_num(s) for s in SINK_VALUES)
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
            verdict = "**disagrees**" if r.failure else "agrees"
            lines.append(f"| {r.dtype} | {r.calls} | {r.rows} | {r.searched} | {r.returned} | {verdict} |")
        lines.append("")
        f = self.failure
        if f is None:
            lines.append("**Verdict: agrees** with the exact definition on every tested input, the fixed list "
                         "and the searched cases (evidence, not a proof). Tolerance: " + prose(KERNEL_TOLERANCE_RULE)
                         + " Here "
                         + "; ".join(f"{r.dtype}: {r.tolerance.ulps} ulps, abs {r.tolerance.abs:.3e}"
                                     for r in self.results) + ".")
            undefined = sum(r.undefined_rows for r in self.results)
            if undefined:
                lines.append("")
                lines.append(f"{undefined} rows had every key masked and no extra logit, where {self.normalizer} "
                             "has no value (0/0): out 0 or NaN (and gradients 0 or NaN) were accepted there.")
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
                    head = f" (head {h}: " + ", ".join(f"{k} = {_num(v)}" for k, v in
                                                    sorted(f.call.row_params(f.row).items())) + ")"
                lines.append(f"- failing row {f.row}{head}: x = {shown(f.call.x[f.row])}")
                lines.append(f"- its values v = [{', '.join(_list(t, _num) for t in f.call.v[f.row])}]")
                if self.form == "backward":
                    lines.append(f"- dout = {_list(f.call.third[f.row], _num)}")
            if f.row < 0:
                lines.append(f"- scores x (every row) = [{', '.join(_list(r, _num) for r in f.call.x)}]")
                if self.form == "backward":
                    lines.append(f"- dout (every row) = [{', '.join(_list(r, _num) for r in f.call.third)}]")
            lines.append(f"- {f.what} returned: {_list(f.output, _num)}")
            lines.append(f"- exact: {_list(f.exact, _num)}")
            lines.append(f"- error: {_list(f.errors, _err)} (allowed: {_list(f.bounds, _err)})")
            lines.append("")
            d = self.diagnosis
            if d is not None and d.matched:
                for m in d.matched:
                    lines.append(f"**Known kernel fault: {m['title']}** (`{m['name']}`, matched on {d.probes} "
                                 f"probe rows).")
                    lines.append(f"- What the faulty kernel does: {m['does']}.")
                    lines.append(f"- What it computes instead: {m['computes']}.")
                    lines.append(f"- Fix: {m['fix']}.")
                    lines.append("")
            elif d is not None:
                lines.extend(d.pattern)
                lines.append("")
        for note in self.notes:
            lines.append(f"Note: {note}")
        return "\n".join(lines).rstrip() + "\n"


def check_kernel(target, norm, tols, params: dict, form: str, lse: str, cfg, per_head: bool = False,
                 examples: int = SEARCH_EXAMPLES, contract=None) -> KernelReport:
    """The kernel-form check of a loaded target (see :func:`derive.impl.api.check_implementation`)."""
    if norm.name not in EXTRA_LOGIT:
        why = NOT_CHECKED.get(norm.name) or NO_FORM.get(norm.name)
        why = plain_math(why) if why else why  # the texts are prose markup; this is a terminal line
        raise InputError(f"--form {form} supports the normalizers {', '.join(EXTRA_LOGIT)}; "
                         f"{norm.name} has no kernel form checked here" + (f": {why}" if why else ""))
    fixed, free = {}, []
    for p in norm.params:
        if p not in target.param_kws:
            raise InputError(f"normalizer {norm.name!r} needs its parameter {p}, which {target.name} does not take "
                             f"as a keyword: declare it (e.g. `def fn(x, v, {'dout' if form == 'backward' else 'block'}"
                             f", *, {p})`)")
        if p in params:
            value = float(params[p])
            if math.isnan(value) or value == INF:
                raise InputError(f"parameter {p} must be a number or -inf, got {params[p]!r}")
            fixed[p] = value
        else:
            free.append(p)
    if per_head and not norm.params:
        raise InputError(f"--per-head passes the normalizer's parameters per head; {norm.name} has none")
    checker = KernelChecker(norm, target, form, lse, cfg.mp_dps, fixed, tuple(free), per_head,
                            thin=target.triton_interpreter)
    results, diagnosis = [], None
    for tol in tols:
        try:
            result = checker.run(tol, examples)
        except ImplRaised as exc:
            raise InputError(f"{target.name} raised {exc} on a valid {tol.dtype} input in {form} form "
                             f"(scores of shape {list(exc.shape)}: {exc.values})") from None
        results.append(result)
        if result.failure is not None and diagnosis is None:
            diagnosis = diagnose(checker, result.failure, tol)
    notes = []
    if target.mutates:
        notes.append("the function modifies one of its input arrays in place (x, v or dout changed): callers "
                     "that reuse them will see them changed")
    if form == "backward" and norm.params and results and not any(
            "d" + p in (r.returned or "") for r in results for p in norm.params):
        notes.append(f"the function returns no gradient for {', '.join(norm.params)} (no dparams dict): "
                     f"that gradient was not checked")
    return KernelReport(target=target.name, normalizer=norm.name, title=norm.title, form=form, lse=lse,
                        api=target.api, params=fixed, free_params=tuple(free), results=results,
                        diagnosis=diagnosis, notes=notes, per_head=per_head,
                        fixed_list="interpreter" if checker.thin else "full")
