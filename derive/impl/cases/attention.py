"""The one call model of ``derive impl``: an attention call, of which every form is a projection.

A :class:`Case` is the general call: batch B, query heads H, kv heads Hkv (H a multiple of it:
query head h reads kv head h // (H / Hkv), as PyTorch's ``enable_gqa``, FlashAttention and
Hugging Face's ``repeat_kv`` do), M queries at positions start_q + i, N keys, head dimensions d
and dv, the mask (:mod:`derive.impl.cases.masks`: causal, a (left, right) window, a key mask),
the sinks, the tile size and the split count the kernel takes, and the pattern its scores
follow. The attention form passes it as q, k, v; its rows of scores (:func:`call_rows`) are
what the kernel forms are given (their rows of 1025 keys are such a projection), and the rows of
the kernel forms' list are calls of pattern ``rows`` here (:func:`arrays` realises them exactly).

Every case of the fixed list (:mod:`derive.impl.cases.fixed`) adds one feature to the simplest
call; that feature is its class (:data:`CLASSES`), and it belongs to every other class whose
feature it has (:func:`case_classes`, read off the case's own arrays: its mask, its lengths).

q and k are exact: small integers (dense cases, a ramp), small multiples of powers of two
(drawn), or, to realise given rows of scores x_i (the *realised* rows, ties and scores up to
±1e4, and the kernel forms' rows), q_i = 2·e_i (one-hot, d ≥ M) and k_jd = x_dj / (2·scale), so
that scale·⟨q_i, k_j⟩ = x_ij exactly with a power-of-two scale (1/√d for d = 16 or 64) in float16
and wider (bfloat16 rounds some k: the reference, computed from the inputs as passed, uses the
rounded ones). The values differ in every batch, kv head, key and value dimension, so a kernel
reading another batch's, head's or key's values fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from derive.impl.cases.contract import FINFO_MIN
from derive.impl.cases.masks import KEY_MASKS, keep, window_text

__all__ = ["CLASSES", "Case", "Setup", "arrays", "case_classes", "call_rows", "with_dtype_mask"]

INF = math.inf
VERY_LONG = 1024  # keys from which a row is very long

# failure classes, in the report's order: key → the feature a case of the class has (a case belongs to every
# class whose feature it has, :func:`case_classes`; a failure is filed by derive.impl.judge.classes.RULE)
CLASSES: dict[str, str] = {
    "finite": "finite rows (one batch, one head, dense q and k, none of the features below)",
    "scores": "tied and extreme scores (up to ±1e4, realised exactly; the kernel forms' rows)",
    "causal": "causal rows (M ≠ N too)",
    "masked": "masked keys (a mask: a pattern, a prefix-LM or a document mask)",
    "padding": "padding (the first keys of a batch masked: whole tiles before the visible keys)",
    "fully-masked": "fully masked rows (every key masked)",
    "sinks": "extreme sinks (|s| ≥ 30, −∞, or a bound of the contract's range)",
    "long": "long rows (64 keys or more)",
    "very-long": "very long rows (1024 keys or more)",
    "tiles": "several tiles (a tile size passed below the row length)",
    "splits": "several splits (a split count of 2 or more passed)",
    "late": "rows late in a call (more than 16 queries)",
    "decode": "a decode offset (queries at positions start_q + i)",
    "lengths": "key length ≠ query length",
    "window": "a sliding window",
    "gqa": "grouped kv heads (fewer kv heads than query heads)",
    "layout": "batch and head layouts (B > 1 or H > 1)",
    "headdim": "head dimensions (dv ≠ d, or d of 64 or more)",
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
    window: tuple = ()  # (left, right), −1 for no bound on a side; () none
    mask: str = ""  # "" | a key mask of derive.impl.cases.masks.KEY_MASKS | "given" (the realised rows' −∞)
    sinks: tuple | None = None  # one extra logit per query head, or None
    block: int = 0  # 0: no tile size passed
    pattern: str = "dense"  # dense | realised | rows (the kernel forms' rows of N keys) | ramp | drawn
    seed: int = 0  # drawn: q, k and v from this seed
    amp: float = 1.0  # drawn: q's scale (the scores reach about ±amp·d/4)
    Hkv: int = 0  # kv heads (0: as many as query heads)
    splits: int = 0  # 0: no split count passed
    pad: int = 0  # padding: keys masked at the start of batch 0 (batch b: pad >> b); prefix, document: P
    sample: int = 0  # judge the first 8 queries, every sample-th and the last 8 only (0: every query)
    rows: tuple = field(default=(), repr=False)  # pattern rows: the M rows of N scores it realises
    params: tuple = ()  # a normalizer outside the softmax family: its parameter values, ((name, value), ...)

    @property
    def kv(self) -> int:
        return self.Hkv or self.H

    @property
    def groups(self) -> int:
        return self.H // self.kv

    def keep(self) -> np.ndarray:
        """(B, M, N): the keys each query sees (:func:`derive.impl.cases.masks.keep`)."""
        return keep(self)

    def given(self) -> np.ndarray:
        """(B, M, N): the keys of the realised rows that are not −∞ (the key mask ``given``)."""
        rows = np.array(self.rows, dtype=np.float64).reshape(self.M, self.N)
        return np.broadcast_to(np.isfinite(rows), (self.B, self.M, self.N)).copy()

    def judged(self) -> np.ndarray:
        """(M,) bool: the queries whose outputs are compared (every one unless ``sample``)."""
        i = np.arange(self.M)
        if not self.sample:
            return np.ones(self.M, dtype=bool)
        return (i < 8) | (i % self.sample == self.sample - 1) | (i >= self.M - 8)

    def describe(self) -> str:
        heads = f"H = {self.H}" + (f", Hkv = {self.kv} (groups of {self.groups})" if self.kv != self.H else "")
        bits = [f"B = {self.B}, {heads}, {self.M} quer{'y' if self.M == 1 else 'ies'}, "
                f"{self.N} key{'' if self.N == 1 else 's'}, d = {self.D}" + (f", dv = {self.Dv}" if self.Dv != self.D
                                                                             else "")]
        if self.causal:
            bits.append("causal")
        if self.start_q:
            bits.append(f"start_q = {self.start_q}")
        if self.window:
            bits.append(f"window (left, right) = {window_text(self.window)}")
        if self.mask == "padding":
            bits.append(f"padding: the first {self.pad} keys of batch 0 masked" + (
                f", {self.pad >> 1} of batch 1" if self.B > 1 else ""))
        elif self.mask in ("prefix", "document"):
            bits.append(f"{KEY_MASKS[self.mask]} ({'prefix_lm' if self.mask == 'prefix' else 'documents of'} "
                        f"{self.pad}{'' if self.mask == 'prefix' else ' keys'})")
        elif self.mask in KEY_MASKS:
            bits.append(KEY_MASKS[self.mask])
        if self.sinks is not None:
            bits.append("sinks = [" + ", ".join(_num(s) for s in self.sinks) + "]")
        bits += [f"{name} = {_num(value)}" for name, value in self.params]
        if self.block:
            bits.append(f"block = {self.block}")
        if self.splits:
            bits.append(f"splits = {self.splits}")
        if self.pattern == "realised":
            bits.append("scores realised exactly")
        elif self.pattern == "rows":
            bits.append(f"the kernel forms' rows of {self.N} keys realised exactly"
                        + (" (their masked keys masked)" if self.mask == "given" else ""))
        elif self.pattern == "ramp":
            bits.append("scores growing along the keys")
        elif self.pattern == "drawn":
            bits.append(f"q, k, v drawn from seed {self.seed} (q in steps of {self.amp / 8:g})")
        if self.sample:
            bits.append(f"the first 8 queries, every {self.sample}th and the last 8 judged")
        return ", ".join(bits)


def _num(v: float) -> str:
    return ("-inf" if v < 0 else "inf") if math.isinf(v) else format(v, "g")


@dataclass
class Setup:
    """What the kernel takes and what the user stated (the parent's decisions)."""

    extra: object  # the normalizer's extra logit: None, a number, or "sinks"
    takes: frozenset  # roles the kernel takes as keywords
    causal: bool  # the definition is causal (--causal)
    start_q: object  # None (varied when the kernel takes it, else 0), an int, or "end" (N − M: bottom-right)
    window: tuple  # --window: (left, right), or () for none
    has_batch: bool
    has_heads: bool
    contract: object
    thin: bool = False  # derive launched the target under Triton's CPU interpreter: the search draws tiles ≥ 16
    gqa: bool = False  # k and v may have fewer heads than q (--gqa)
    mask_form: str = "additive"  # how the kernel takes its mask (derive.impl.cases.masks.MASK_FORMS)
    window_form: str = "int"  # how its window keyword takes a window: int (W keys) or pair (left, right)
    backward: bool = False  # gradients are checked (every query of a call judged: no sampled cases)
    skipped: dict = field(default_factory=dict)  # class → why it is not tested

    @property
    def causal_by(self) -> str | None:
        """How causality reaches the kernel: its flag, stated (--causal), its mask, or not at all."""
        if "causal" in self.takes:
            return "flag"
        if self.causal:
            return "stated"
        return "mask" if "mask" in self.takes else None

    @property
    def window_by(self) -> str | None:
        if "window" in self.takes:
            return "keyword"
        if self.window:
            return "stated"
        return "mask" if "mask" in self.takes else None

    def in_mask(self, case) -> tuple:
        """The parts of ``case``'s mask the kernel takes through its mask argument: those it has no keyword
        for (a window only when the call has one), and causality too when the call passes a mask at all (a
        causal flag beside a mask is refused by some kernels, PyTorch's among them; the mask carries both)."""
        window = bool(case.window) and self.window_by == "mask"
        causal = self.causal_by == "mask" or (self.causal_by == "flag" and (bool(case.mask) or window)
                                               and "mask" in self.takes)
        return tuple(p for p, inside in (("causal", causal), ("window", window)) if inside)


def case_classes(case: Case, setup: Setup) -> list[str]:
    """Every class ``case`` belongs to: the class it was made for first (its failure is filed there),
    then each other feature it has, in the order of :data:`CLASSES`, read off the case itself (its
    mask as built, its lengths, heads and partitions)."""
    bounds = setup.contract.sinks or () if setup.contract is not None else ()
    key_masked = case.mask not in ("", "padding")
    kept = case.keep() if case.mask in ("rows", "given", "keys") else None
    has = {
        "scores": case.pattern in ("realised", "rows"),
        "causal": case.causal and not setup.causal,
        "masked": key_masked and (kept is None or bool((~kept).any())) and case.mask != "rows",
        "padding": case.mask == "padding",
        "fully-masked": kept is not None and bool((~kept).all(axis=-1).any()),
        "sinks": setup.extra == "sinks" and case.sinks is not None and any(
            s == -INF or abs(s) >= 30.0 or s in bounds for s in case.sinks),
        "long": case.N >= 64,
        "very-long": case.N >= VERY_LONG,
        "tiles": bool(case.block) and case.block < case.N,
        "splits": case.splits >= 2,
        "late": case.M > 16,
        "decode": case.start_q > 0 and setup.start_q != "end",
        "lengths": case.M != case.N,
        "window": bool(case.window) and not setup.window,
        "gqa": case.kv != case.H,
        "layout": case.B > 1 or case.H > 1,
        "headdim": case.Dv != case.D or case.D >= 64,
    }
    out = [cls for cls in CLASSES if cls != case.cls and has.get(cls, False)]
    return [case.cls] + out if case.cls != "finite" or not out else out


def arrays(case: Case, scale: float, rounder, grad: bool = False):
    """(q (B, H, M, D), k (B, Hkv, N, D), v (B, Hkv, N, Dv), cotangent (B, H, M, Dv) or None) in
    canonical order, rounded to the dtype (the mask: :func:`derive.impl.cases.masks.lower`)."""
    B, H, M, N, D, Dv, K = case.B, case.H, case.M, case.N, case.D, case.Dv, case.kv
    b = np.arange(B)[:, None, None, None]
    h = np.arange(H)[None, :, None, None]
    kh = np.arange(K)[None, :, None, None]
    i = np.arange(M)[None, None, :, None]
    j = np.arange(N)[None, None, :, None]
    d = np.arange(D)[None, None, None, :]
    c = np.arange(Dv)[None, None, None, :]
    if case.pattern in ("realised", "rows"):
        rows = (np.array([REALISED[r % len(REALISED)][:N] for r in range(M)], dtype=np.float64)
                if case.pattern == "realised" else np.array(case.rows, dtype=np.float64).reshape(M, N))
        rows = np.where(np.isfinite(rows), rows, 0.0)  # a masked score is the mask's: k carries 0 there
        q = np.zeros((B, H, M, D))
        k = np.zeros((B, K, N, D))
        for r in range(M):
            q[:, :, r, r] = 2.0
            k[:, :, :, r] = rows[r] / (2.0 * scale)
    elif case.pattern == "drawn":  # small multiples of powers of two: exact in every dtype
        rng = np.random.default_rng(case.seed)
        q = rng.integers(-4, 5, (B, H, M, D)) * (case.amp / 8.0)
        k = rng.integers(-4, 5, (B, K, N, D)) / 4.0
    else:
        q = np.broadcast_to(((3 * i + 5 * d + 7 * b + 11 * h) % 7 - 3).astype(np.float64), (B, H, M, D)).copy()
        k = np.broadcast_to(((2 * j + 3 * d + 5 * b + 13 * kh + 1) % 7 - 3).astype(np.float64), (B, K, N, D)).copy()
        if case.pattern == "ramp":  # the scores grow along the keys: the running maximum changes in every tile
            q[..., 0] = 4.0
            k[..., 0] = np.arange(N)[None, None, :] // 4
    v = (((3 * j + 5 * c + 2 * b + 7 * kh) % 9 - 4) / 2.0 + c / 4.0 + b - 0.5 * kh).astype(np.float64)
    v = np.broadcast_to(v, (B, K, N, Dv)).copy()
    if case.pattern == "drawn":
        v = v + np.random.default_rng(case.seed + 1).integers(-8, 9, (B, K, N, Dv)) / 4.0
    g = None
    if grad:
        g = (((2 * i + 3 * c + b + 5 * h) % 5 - 2) / 2.0 + 0.25).astype(np.float64)
        g = np.broadcast_to(g, (B, H, M, Dv)).copy()
    return rounder(q), rounder(k), rounder(v), g


def call_rows(case: Case) -> np.ndarray:
    """The projection of a call on rows (B·H·M, N): each query's scores 1/√d · ⟨q_i, k_j⟩ (exact in
    float64 for the dense and ramp patterns, small integers times a power of two when d is a power of
    four), −∞ where its mask hides key j: what the row and kernel forms are given."""
    scale = 1.0 / math.sqrt(case.D)
    q, k, _, _ = arrays(case, scale, lambda a: a)
    k = np.repeat(k, case.groups, axis=1)
    x = np.einsum("bhid,bhjd->bhij", q, k) * scale
    x = np.where(case.keep()[:, None], x, -INF)
    return x.reshape(-1, case.N)


def with_dtype_mask(value: str, dtype: str) -> float:
    """The additive mask value: a number, ``-inf`` or ``finfo-min`` (the dtype's most negative number)."""
    if value == "finfo-min":
        return FINFO_MIN[dtype]
    return float(value)
