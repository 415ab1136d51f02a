"""The fixed inputs of ``derive impl --form attention``, one failure class at a time.

Every case adds one feature to the simplest call (one batch, one head, a few queries and keys
with dense small-integer q and k): that feature is its class (:data:`CLASSES`), so a kernel
that fails only on batch > 1, or only after its eighth row, fails in that class and passes the
others. Cases come simplest first within a class, so the first failing case of a class is its
smallest counterexample.

q and k are exact: small integers (dense cases), or, to realise given rows of scores x_i (the
*realised* cases, ties and scores up to ±1e4), q_i = 2·e_i (one-hot, d ≥ M) and
k_jd = x_dj / (2·scale), so that scale·⟨q_i, k_j⟩ = x_ij exactly with a power-of-two scale
(1/√d for d = 16) in float16 and wider (bfloat16 rounds some k: the reference, computed from
the inputs as passed, uses the rounded ones). The values differ in every batch, head, key and value dimension, so
a kernel reading another batch's, head's or key's values fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from derive.impl.cases.contract import FINFO_MIN

__all__ = ["CLASSES", "Case", "Setup", "allowed", "arrays", "case_classes", "cases", "with_dtype_mask"]

INF = math.inf

# failure classes, in the report's order: key → the feature a case of the class has (a case belongs to every
# class whose feature it has, :func:`case_classes`; a failure is filed by derive.impl.judge.classes.RULE)
CLASSES: dict[str, str] = {
    "finite": "finite rows (one batch, one head, dense q and k, none of the features below)",
    "scores": "tied and extreme scores (up to ±1e4, realised exactly)",
    "causal": "causal rows",
    "masked": "masked keys (an additive mask)",
    "fully-masked": "fully masked rows (every key masked)",
    "sinks": "extreme sinks (|s| ≥ 30, −∞, or a bound of the contract's range)",
    "long": "long rows (64 keys or more)",
    "tiles": "several tiles (a tile size passed below the row length)",
    "late": "rows late in a call (more than 16 queries)",
    "decode": "a decode offset (queries at positions start_q + i)",
    "lengths": "key length ≠ query length",
    "window": "a sliding window",
    "layout": "batch and head layouts (B > 1 or H > 1)",
    "headdim": "value head dimension ≠ key head dimension",
}

REALISED = (  # rows of 8 scores, realised exactly by a one-hot q
    (7.25, -3.5, 0.125, 9.0, -0.0625, 1.0, 2.0, -8.0),
    (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    tuple(4.0 * j for j in range(8)),
    (1000.0, 0.0, -1000.0, 5.0, 5.0, 5.0, 5.0, 5.0),
    (10000.0, -10000.0, 0.0, 1.0, 10000.0, 3.0, -2.0, 0.5),
    (-10000.0,) * 8,
    (30.0, 20.0, 0.0, 25.0, 40.0, -30.0, 39.5, 40.0),
    (-1.0, -2.0, -4.0, -8.0, 60.0, 0.5, 0.25, 88.5),
)
EXTREME_SINKS = (30.0, -30.0, 1e4, -1e4, -INF)
ORDINARY_SINKS = (1.5, -2.0, 0.25)


def allowed(M: int, N: int, start_q: int, causal: bool, window: int) -> np.ndarray:
    """(M, N) bool: key j is visible to query i (position start_q + i) under causality and a window."""
    pos = start_q + np.arange(M)[:, None]
    j = np.arange(N)[None, :]
    ok = np.ones((M, N), dtype=bool)
    if causal:
        ok &= j <= pos
    if window:
        ok &= j > pos - window
    return ok



@dataclass(frozen=True)
class Case:
    cls: str
    B: int = 1
    H: int = 1
    M: int = 2
    N: int = 2
    D: int = 16
    Dv: int = 16
    start_q: int = 0
    causal: bool = False
    window: int = 0
    mask: str = ""  # "" | "keys" (some keys masked) | "rows" (some rows with every key masked)
    sinks: tuple | None = None  # one extra logit per head, or None
    block: int = 0  # 0: no tile size passed
    pattern: str = "dense"  # dense | realised | ramp (dense, the scores growing along the keys) | drawn
    seed: int = 0  # drawn: q, k and v from this seed
    amp: float = 1.0  # drawn: q's scale (the scores reach about ±amp·d/4)

    def visible(self) -> np.ndarray:
        return allowed(self.M, self.N, self.start_q, self.causal, self.window)

    def describe(self) -> str:
        bits = [f"B = {self.B}, H = {self.H}, {self.M} quer{'y' if self.M == 1 else 'ies'}, {self.N} key{'' if self.N == 1 else 's'}, "
                f"d = {self.D}" + (f", dv = {self.Dv}" if self.Dv != self.D else "")]
        if self.causal:
            bits.append("causal")
        if self.start_q:
            bits.append(f"start_q = {self.start_q}")
        if self.window:
            bits.append(f"window = {self.window}")
        if self.mask:
            bits.append({"keys": "some keys masked", "rows": "some rows fully masked"}[self.mask])
        if self.sinks is not None:
            bits.append("sinks = [" + ", ".join(_num(s) for s in self.sinks) + "]")
        if self.block:
            bits.append(f"block = {self.block}")
        if self.pattern == "realised":
            bits.append("scores realised exactly")
        elif self.pattern == "ramp":
            bits.append("scores growing along the keys")
        elif self.pattern == "drawn":
            bits.append(f"q, k, v drawn from seed {self.seed} (q in steps of {self.amp / 8:g})")
        return ", ".join(bits)


def _num(v: float) -> str:
    return ("-inf" if v < 0 else "inf") if math.isinf(v) else format(v, "g")


@dataclass
class Setup:
    """What the kernel takes and what the user stated (the parent's decisions)."""

    extra: object  # the normalizer's extra logit: None, a number, or "sinks"
    takes: frozenset  # roles the kernel takes as keywords
    causal: bool  # the definition is causal (--causal)
    start_q: object  # None (varied when the kernel takes it, else 0), an int, or "end" (N − M)
    window: int  # --window (0: none)
    has_batch: bool
    has_heads: bool
    contract: object
    blocks: tuple = (16, 32, 64)  # tile sizes tried when the kernel takes one
    thin: bool = False  # derive launched the target under Triton's CPU interpreter: the search draws tiles ≥ 16
    skipped: dict = field(default_factory=dict)  # class → why it is not tested


def case_classes(case: Case, setup: Setup) -> list[str]:
    """Every class ``case`` belongs to: the class it was made for first (its failure is filed there),
    then each other feature it has, in the order of :data:`CLASSES`."""
    bounds = setup.contract.sinks or () if setup.contract is not None else ()
    has = {
        "scores": case.pattern == "realised",
        "causal": case.causal and not setup.causal,
        "masked": case.mask == "keys",
        "fully-masked": case.mask == "rows",
        "sinks": setup.extra == "sinks" and case.sinks is not None and any(
            s == -INF or abs(s) >= 30.0 or s in bounds for s in case.sinks),
        "long": case.N >= 64,
        "tiles": bool(case.block) and case.block < case.N,
        "late": case.M > 16,
        "decode": case.start_q > 0 and setup.start_q != "end",
        "lengths": case.M != case.N,
        "window": bool(case.window) and not setup.window,
        "layout": case.B > 1 or case.H > 1,
        "headdim": case.Dv != case.D,
    }
    out = [cls for cls in CLASSES if cls != case.cls and has.get(cls, False)]
    return [case.cls] + out if case.cls != "finite" or not out else out


def _sinks_for(setup: Setup, H: int, values=ORDINARY_SINKS):
    if setup.extra is None:
        return None
    if setup.extra != "sinks":
        return (float(setup.extra),) * H
    lo, hi = setup.contract.sinks or (-INF, INF)
    return tuple(min(max(values[h % len(values)], lo), hi) for h in range(H))


def _start(setup: Setup, M: int, N: int) -> int:
    if setup.start_q == "end":
        return N - M
    return setup.start_q if isinstance(setup.start_q, int) else 0


def cases(setup: Setup) -> list[Case]:
    """The fixed list, class by class (classes the kernel or the contract rules out are named in
    ``setup.skipped``)."""
    c = setup.contract
    base = dict(causal=setup.causal, window=setup.window)
    out: list[Case] = []

    def add(cls, **kw):
        kw = {**base, **kw}
        M, N = kw.get("M", 2), kw.get("N", 2)
        kw.setdefault("start_q", _start(setup, M, N))
        H = kw.get("H", 1)
        kw.setdefault("sinks", _sinks_for(setup, H))
        case = Case(cls, **kw)
        if c.min_keys and case.N < c.min_keys:
            return
        if case.sinks is not None and setup.extra == "sinks" and not all(c.sink_ok(s) for s in case.sinks):
            return
        if case.block and not c.block_ok(case.block):
            return
        if c.equal_lengths and case.M != case.N:
            return
        if c.equal_head_dims and case.Dv != case.D:
            return
        if c.no_fully_masked and case.mask == "rows":
            return
        out.append(case)

    for n in (1, 2, 3, 8):
        add("finite", M=n, N=n)
    add("scores", M=8, N=8, pattern="realised")
    if "causal" in setup.takes and setup.causal:
        add("scores", M=8, N=8, pattern="realised", causal=False)
    if "causal" in setup.takes and not setup.causal:
        for n in (2, 8):
            add("causal", M=n, N=n, causal=True)
    elif not setup.causal:
        setup.skipped["causal"] = "the kernel takes no causal flag and --causal was not given"
    else:
        for n in (2, 8):
            add("causal", M=n, N=n)
    if "mask" in setup.takes:
        for n in (3, 8, 40):
            add("masked", M=min(n, 8), N=n, mask="keys")
        for n in (1, 5, 40):
            add("fully-masked", M=min(n, 8) if n > 1 else 2, N=n, mask="rows")
    else:
        setup.skipped["masked"] = setup.skipped["fully-masked"] = "the kernel takes no mask"
    if setup.extra == "sinks":
        values = [s for s in EXTREME_SINKS if c.sink_ok(s)]
        if c.sinks is not None:
            values += [s for s in c.sinks if s not in values]
        for s in values:
            add("sinks", M=5, N=5, sinks=(s,))
    else:
        setup.skipped["sinks"] = "the normalizer has no sink"
    for n in (64, 160, 300):  # causal rows are long for late queries: every query, from position 0 (300: a third tile of 128)
        add("long", M=4 if not (setup.causal or setup.window) else n, N=n, pattern="ramp")
    if "block" in setup.takes:
        for b in (1, 2, 4, 16, 32):
            add("tiles", M=8, N=64, block=b)
        if not any(x.cls == "tiles" for x in out):
            setup.skipped["tiles"] = "no tile size of 1 to 32 keys lies inside the contract"
    else:
        setup.skipped["tiles"] = "the kernel takes no tile size (its own tiles are exercised by the long rows)"
    add("late", M=24, N=24)
    add("late", M=300, N=8)  # past two query tiles of 128: a kernel's later query tiles
    if "start_q" in setup.takes and setup.start_q is None:
        for M, N in ((1, 5), (1, 17), (3, 17)):
            add("decode", M=M, N=N, start_q=N - M)
    elif setup.start_q not in (None, 0):
        add("decode", M=1, N=17)
    else:
        setup.skipped["decode"] = "the kernel takes no start_q and --start-q was not given"
    add("lengths", M=3, N=9)
    add("lengths", M=9, N=3, start_q=_start(setup, 9, 3) if setup.start_q == "end" else 0)
    if "window" in setup.takes and not setup.window:
        for w in (1, 3):
            add("window", M=8, N=8, window=w, causal=True)
        # a window across tile boundaries: late queries have fully masked tiles, then a partly masked one
        add("window", M=160, N=160, window=100, causal=True)
    elif not setup.window:
        setup.skipped["window"] = "the kernel takes no sliding window and --window was not given"
    else:
        add("window", M=8, N=8)
    if setup.has_batch or setup.has_heads:
        B, H = (2 if setup.has_batch else 1), (3 if setup.has_heads else 1)
        add("layout", B=B, H=H, M=5, N=5)
        add("layout", B=B, H=H, M=5, N=5, mask="keys" if "mask" in setup.takes else "")
    else:
        setup.skipped["layout"] = "the layout has no batch or head axis"
    add("headdim", M=5, N=5, Dv=8)
    add("headdim", M=5, N=5, Dv=32)
    for cls in CLASSES:
        if cls not in setup.skipped and not any(x.cls == cls for x in out):
            setup.skipped[cls] = "every case of this class lies outside the contract"
    # a query before the first key (start_q + i < 0) does not occur; a causal row past the keys is fine
    return [x for x in out if x.start_q >= 0]


def arrays(case: Case, scale: float, mask_value: float, rounder, grad: bool = False):
    """(q, k, v, additive mask or None, cotangent or None) in canonical order, rounded to the dtype."""
    B, H, M, N, D, Dv = case.B, case.H, case.M, case.N, case.D, case.Dv
    b = np.arange(B)[:, None, None, None]
    h = np.arange(H)[None, :, None, None]
    i = np.arange(M)[None, None, :, None]
    j = np.arange(N)[None, None, :, None]
    d = np.arange(D)[None, None, None, :]
    c = np.arange(Dv)[None, None, None, :]
    if case.pattern == "realised":
        rows = np.array([REALISED[r % len(REALISED)][:N] for r in range(M)], dtype=np.float64)
        q = np.zeros((B, H, M, D))
        k = np.zeros((B, H, N, D))
        for r in range(M):
            q[:, :, r, r] = 2.0
            k[:, :, :, r] = rows[r] / (2.0 * scale)
    elif case.pattern == "drawn":  # small multiples of powers of two: exact in every dtype
        rng = np.random.default_rng(case.seed)
        q = rng.integers(-4, 5, (B, H, M, D)) * (case.amp / 8.0)
        k = rng.integers(-4, 5, (B, H, N, D)) / 4.0
    else:
        q = np.broadcast_to(((3 * i + 5 * d + 7 * b + 11 * h) % 7 - 3).astype(np.float64), (B, H, M, D)).copy()
        k = np.broadcast_to(((2 * j + 3 * d + 5 * b + 13 * h + 1) % 7 - 3).astype(np.float64), (B, H, N, D)).copy()
        if case.pattern == "ramp":  # the scores grow along the keys: the running maximum changes in every tile
            q[..., 0] = 4.0
            k[..., 0] = np.arange(N)[None, None, :] // 4
    v = (((3 * j + 5 * c + 2 * b + 7 * h) % 9 - 4) / 2.0 + c / 4.0 + b - 0.5 * h).astype(np.float64)
    v = np.broadcast_to(v, (B, H, N, Dv)).copy()
    if case.pattern == "drawn":
        v = v + np.random.default_rng(case.seed + 1).integers(-8, 9, (B, H, N, Dv)) / 4.0
    mask = None
    if case.mask:
        mask = np.zeros((B, 1, M, N))
        for bb in range(B):
            for ii in range(M):
                for jj in range(N):
                    if case.mask == "keys":
                        hit = (jj + ii + bb) % 3 == 2 or (N > 16 and jj < 16 and not case.causal)
                    else:
                        hit = (ii + bb) % 2 == 1
                    if hit:
                        mask[bb, 0, ii, jj] = mask_value
        mask = rounder(mask)
    g = None
    if grad:
        g = (((2 * i + 3 * c + b + 5 * h) % 5 - 2) / 2.0 + 0.25).astype(np.float64)
        g = np.broadcast_to(g, (B, H, M, Dv)).copy()
    return rounder(q), rounder(k), rounder(v), mask, g


def with_dtype_mask(value: str, dtype: str) -> float:
    """The additive mask value: a number, ``-inf`` or ``finfo-min`` (the dtype's most negative number)."""
    if value == "finfo-min":
        return FINFO_MIN[dtype]
    return float(value)

