"""Reference kernels in numpy, one row at a time, that apply a known fault from its one definition.

These run the forms of :mod:`derive.kernels.forms` the way a fused kernel does (tiles of
keys, a running max, per-split partial results merged by their log-sum-exp, a backward
pass from the saved lse) so that the document can show a fault on concrete numbers and a
checker can compare an implementation with the same forms. ``fault`` is a
:class:`~derive.kernels.faults.KernelFault`, the key of one in
:data:`derive.kernels.faults.FAULTS`, or ``None``: the kernels apply that fault's one definition
and nothing else of it, the transformation of its part (the extra logit added, K times where
the record's ``adds`` says; the rescaling factors of the tile update; the extra logit in the lse
the backward uses; the extra logit's gradient returned), or for an IEEE fault the guard of
:data:`~derive.kernels.faults.GUARDS` its record names, left out. No fault is named here.

Scores ``x`` are raw (the kernel multiplies them by ``scale``); −inf marks a masked key. The
−∞ guard (a finite stand-in for the shift while nothing is allowed: guard ``finite_shift``; without
it a fully masked first tile computes e^{−∞ − (−∞)} = NaN) is used for the exponents only and never stored as the running max (guard ``running_max``): storing it makes the
row [−∞, −1000] in tiles of one key underflow to out 0, lse −∞. A split with ℓ = 0 (no key, or
every key masked) is finalized to out 0, lse −∞ and skipped by the merge (guard ``empty_split``):
without it, o = 0/0 = NaN and the merge's 0·NaN makes the row NaN.
``extra`` is the extra logit in score units (a sink s; 0 for softmax₁), ``extra_value``
its value (default 0). Results: ``out`` and the natural, sink-inclusive ``lse``.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from derive.kernels.faults import by_key

__all__ = ["RatioKernel", "backward", "online", "split"]

LOG2E = 1.0 / math.log(2.0)
NEG = -math.inf


def _log(k: float) -> float:
    return math.log(k) if k > 0 else NEG


def _merge(parts, dv, unguarded=False):
    """(out, lse) of partial results (o_r, lse_r) merged by their log-sum-exp (0 and −∞ for none).
    ``unguarded``: every o_r is multiplied by its weight, a NaN one too (0·NaN = NaN)."""
    lses = np.array([p[1] for p in parts], dtype=float)
    top = np.max(lses) if len(lses) else NEG
    if top == NEG:
        return np.zeros(dv), NEG
    lse = top + math.log(np.exp(lses - top).sum())
    out = np.zeros(dv)
    for (o, _), wt in zip(parts, np.exp(lses - lse)):
        out = out + wt * o if wt > 0 or unguarded else out
    return out, lse


def _record(fault):
    """The fault's record: ``fault`` itself, or the one of that key (:func:`derive.kernels.faults.by_key`)."""
    return by_key(fault) if isinstance(fault, str) else fault


def _part(fault, part: str):
    """The transformation of ``part`` by ``fault``, or None."""
    f = _record(fault)
    return f.rewrite if f is not None and f.part == part else None


def _guarded(fault, guard: str) -> bool:
    """Does a kernel with ``fault`` keep ``guard`` (:data:`derive.kernels.faults.GUARDS`)?"""
    f = _record(fault)
    return f is None or f.part != "ieee" or f.guard != guard


def _times(fault, x, chunks, also=()) -> int:
    """K, how many times a kernel with ``fault`` adds the extra logit: once for ``combine`` in the
    record's ``adds`` (or the realization's ``also``), and once per chunk (tile or split) of a kind
    named there: ``tile`` (a chunk with a key), ``empty`` (one without), ``masked`` (one whose keys
    are all masked)."""
    units = set(_record(fault).adds) | set(also)
    count = int("combine" in units)
    for idx in chunks:
        kinds = {"tile", "masked"} if len(idx) and np.all(x[idx] == NEG) else {"tile"} if len(idx) else {"empty"}
        count += bool(kinds & units)
    return count


def _with_faulty_extra(o, lse, wv, fault, extra, shift, count, scale):
    """The keys' (o, lse) merged with the extra logit that a kernel with ``fault`` adds ``count``
    times (the fault's transformation of the logit, its one definition)."""
    used = _part(fault, "logit")(float(extra), shift, count, scale, _log)
    return _merge([(o, lse), (wv, used)], len(wv))


def online(x, v, block, extra=None, extra_value=None, scale=1.0, base2=True, fault=None, no_tile_nan=False):
    """One row streamed in tiles of ``block`` keys; returns (out, lse).

    With ``base2`` the kernel works in base-2 units like FlashAttention: exponents
    u = x·scale·log₂e and exp2; lse is returned in natural units either way.
    ``no_tile_nan`` is how a real kernel finalizes a row into whose state nothing entered (no key,
    and a fault that adds the extra logit per tile adds it K = 0 times: ℓ = 0, acc = 0):
    out = acc/ℓ = 0/0 = NaN, lse = −∞.
    """
    x, v, fault = np.asarray(x, float), np.asarray(v, float), _record(fault)
    n, dv = v.shape
    ex, c = (np.exp2, LOG2E) if base2 else (np.exp, 1.0)
    wv = np.zeros(dv) if extra_value is None else np.asarray(extra_value, float)
    if extra is not None and _part(fault, "logit") is not None:
        o, lse = online(x, v, block, None, None, scale, base2)
        count = _times(fault, x, [np.arange(lo, min(lo + block, n)) for lo in range(0, n, block)])
        if count == 0 and lse == NEG and no_tile_nan:
            return np.full(dv, np.nan), NEG  # nothing entered: no key, and the extra logit added no time, 0/0
        top = float(np.max(scale * x)) if n else NEG  # the running max of a kernel not seeded with the extra logit
        return _with_faulty_extra(o, lse, wv, fault, extra, top, count, scale)
    m, ell, acc = NEG, 0.0, np.zeros(dv)
    e = None if extra is None else float(extra) * c
    if e is not None:
        m, ell, acc = e, 1.0, wv.copy()  # the extra key as tile 0
    for lo in range(0, n, block):
        u, vals = scale * x[lo:lo + block] * c, v[lo:lo + block]
        m_new = max(m, float(np.max(u)))
        # the guard: exponents against a finite stand-in (0 when nothing is allowed yet), so a fully masked
        # tile adds e^{−∞} = 0 and leaves the state as it is; the stored running max stays m_new (−∞ there)
        shift = m_new if m_new > NEG or not _guarded(fault, "finite_shift") else 0.0
        with np.errstate(invalid="ignore"):  # without the guard: e^{−∞ − (−∞)} = NaN
            alpha = float(ex(m - shift)) if m > NEG or shift == NEG else 0.0
            p = ex(u - shift)
        # the fault's factors while there is a state to rescale (a seed of logit −∞ has none: α = 0 drops it)
        r_ell, r_acc = ((_part(fault, "rescale") if m > NEG else None) or _kept)(alpha, alpha, 1.0)
        ell = r_ell * ell + p.sum()
        acc = r_acc * acc + p @ vals
        m = m_new if _guarded(fault, "running_max") else shift
    if ell == 0:
        return np.zeros(dv), NEG  # a fully masked row without an extra logit (or an underflow): out = 0, lse = −∞
    return acc / ell, m / c + math.log(ell)


def split(x, v, splits, extra=None, extra_value=None, fault=None, also=(), scale=1.0):
    """The keys cut into ``splits`` contiguous chunks (numpy.array_split order), each reduced to
    (o, lse) by an online pass without the extra logit, then merged with the extra logit once;
    returns (out, lse).

    A fault of the extra logit (part ``logit``) changes the logit the combine adds: its rewrite
    with K = the places that add it (the record's ``adds``; ``also``: more places a realization
    adds it, e.g. ``("empty",)``: a kernel that seeds every split seeds an empty one too), m = the
    largest split lse."""
    x, v, fault = np.asarray(x, float), np.asarray(v, float), _record(fault)
    dv = v.shape[1]
    wv = np.zeros(dv) if extra_value is None else np.asarray(extra_value, float)
    guarded = _guarded(fault, "empty_split")
    chunks = np.array_split(np.arange(len(x)), splits)
    parts = []
    for idx in chunks:
        if not guarded and (len(idx) == 0 or bool(np.all(x[idx] == NEG))):
            with np.errstate(invalid="ignore"):
                parts.append((np.zeros(dv) / 0.0, NEG))  # 0/0 without the guard
            continue
        parts.append(online(x[idx], v[idx], max(1, len(idx)), None, wv) if len(idx) else (np.zeros(dv), NEG))
    if not guarded:
        return _merge(parts + ([(wv, float(extra))] if extra is not None else []), dv, unguarded=True)
    o, lse = _merge(parts, dv)
    if extra is None:
        return o, lse
    if _part(fault, "logit") is not None:
        top = max((p[1] for p in parts), default=NEG)
        return _with_faulty_extra(o, lse, wv, fault, extra, top, _times(fault, x, chunks, also), scale)
    return _merge([(o, lse), (wv, float(extra))], dv)  # the extra logit enters once, in the combine


def _kept(r_ell, r_acc, one):
    return r_ell, r_acc


def backward(x, v, dout, extra=None, extra_value=None, fault=None, p_only=False):
    """Recompute-form gradients of L = ⟨dout, out⟩ for one row: (dx, dv, dextra). A fault of the
    lse (part ``lse``) recomputes P from an lse whose extra logit it transforms; with
    ``p_only`` only P, the extra logit's gradient uses the right lse. A fault of the gradient
    transforms the extra logit's gradient returned."""
    x, v, g, fault = np.asarray(x, float), np.asarray(v, float), np.asarray(dout, float), _record(fault)
    wv = np.zeros(v.shape[1]) if extra_value is None else np.asarray(extra_value, float)
    out, lse = split(x, v, 1, extra, wv)
    true_lse = lse
    in_lse = _part(fault, "lse")
    if in_lse is not None and extra is not None:
        used = in_lse(float(extra), NEG)
        _, lse = split(x, v, 1, None if used == NEG else used)
    with np.errstate(invalid="ignore"):
        p = np.exp(x - lse)
    D = float(g @ out)
    dx = p * (v @ g - D)
    dv = p[:, None] * g[None, :]
    if extra is None:
        return dx, dv, None
    with np.errstate(over="ignore", invalid="ignore"):  # an lse of −∞ without the extra logit (every key masked)
        ds = float(np.exp(extra - (true_lse if p_only else lse))) * (float(g @ wv) - D)
    returned = _part(fault, "grad")
    return dx, dv, (ds if returned is None else returned(ds, 0.0))


# ---- ratios of row sums (derive.normalizers.family.row_ratio): the same state, other per-key terms ----

class RatioKernel:
    """The online and split forms of a normalizer that is a ratio of row sums,
    p_j = M_j φ(x_j)/(E + Σ_t M_t ψ(x_t)), in float64, run like a fused kernel: per tile the running
    max m of the exponents the terms hold (:func:`derive.kernels.forms.exponents`), the state
    ℓ = e^{−m}(Σ M ψ), acc = e^{−m} Σ M φ v rescaled by e^{m − m′}, each term computed as
    :func:`derive.kernels.forms.shift_in` writes it (e^{−m}·relu(e^x − 1) = relu(e^{x − m} − e^{−m}));
    E e^{−m} added once at finalization. An elementwise normalizer (ψ = 0) keeps no ℓ: its tiles add.
    Scores are as the normalizer reads them (−inf marks a masked key); N is the row's allowed keys."""

    def __init__(self, entry, params: dict | None = None):
        import sympy as sp

        from derive.kernels.forms import exponents, shift_in
        from derive.model.attention import M as Mask
        from derive.normalizers.family import YS, row_ratio

        ratio, why = row_ratio(entry)
        if ratio is None:
            raise ValueError(f"{entry.name} has no ratio-of-row-sums form: {why}")
        values = {sp.Symbol(p, real=True): float(v) for p, v in (params or {}).items()}
        missing = [p for p in entry.params if sp.Symbol(p, real=True) not in values]
        if missing:
            raise ValueError(f"{entry.name} needs its parameters {missing}")
        count, shift = sp.Symbol("N", positive=True), sp.Symbol("m", real=True)

        def plain(e):
            e = e.xreplace(values)
            return e.replace(lambda a: isinstance(a, sp.Sum) and a.function.has(Mask), lambda a: count)

        # SymPy 1.12 prints Max(a, b) as amax((a, b), axis=0), which fails when a is a scalar and
        # b an array; later releases print reduce(maximum, [a, b]): both become elementwise here
        elementwise = lambda f: lambda args, axis=0: functools.reduce(f, args)  # noqa: E731
        mods = [{"Max": np.maximum, "Min": np.minimum, "Abs": np.abs, "Heaviside": np.heaviside,
                 "amax": elementwise(np.maximum), "amin": elementwise(np.minimum)}, "numpy"]
        make = lambda e: sp.lambdify((YS, shift, count), plain(e), modules=mods)  # noqa: E731
        self.elementwise = ratio.b == 0
        self.phi, self.psi, self.extra = (make(shift_in(part, YS, shift)) for part in (ratio.a, ratio.b, ratio.extra))
        self.weight = make(ratio.a / ratio.extra) if self.elementwise else None
        self.expo = [sp.lambdify((YS, count), plain(u), modules=mods) for u in exponents(ratio.a + ratio.b, YS)]

    def _top(self, y, N) -> float:
        return max((float(np.max(np.broadcast_to(f(y, N), y.shape))) for f in self.expo), default=0.0) if len(y) else NEG

    def _tile(self, y, vals, N, m):
        with np.errstate(over="ignore", invalid="ignore"):
            a = np.broadcast_to(np.asarray(self.phi(y, m, N), float), y.shape)
            b = np.broadcast_to(np.asarray(self.psi(y, m, N), float), y.shape)
        return float(b.sum()), a @ vals

    def state(self, x, v, N):
        """(m, ℓ, acc) of one chunk of keys (masked ones dropped), in one pass; m = −∞ for none."""
        keep = x != NEG
        y, vals = x[keep], v[keep]
        if not len(y):
            return NEG, 0.0, np.zeros(v.shape[1])
        m = self._top(y, N)
        ell, acc = self._tile(y, vals, N, m)
        return m, ell, acc

    def finalize(self, m, ell, acc, dv):
        if self.elementwise:
            return acc
        with np.errstate(over="ignore"):
            extra = float(self.extra(0.0, m if m > NEG else 0.0, 0.0))
        total = ell + extra
        return acc / total if total > 0 else np.full(dv, np.nan)

    def online(self, x, v, block):
        """out of one row streamed in tiles of ``block`` keys."""
        x, v = np.asarray(x, float), np.asarray(v, float)
        N, dv = float(np.sum(x != NEG)), v.shape[1]
        if self.elementwise:  # tiles add
            return sum((self._add(x[lo:lo + block], v[lo:lo + block], N) for lo in range(0, len(x), block)),
                       np.zeros(dv))
        m, ell, acc = NEG, 0.0, np.zeros(dv)
        for lo in range(0, len(x), block):
            mt, lt, at = self.state(x[lo:lo + block], v[lo:lo + block], N)
            m, ell, acc = self.merge((m, ell, acc), (mt, lt, at))
        return self.finalize(m, ell, acc, dv)

    def _add(self, x, v, N):
        """An elementwise normalizer's chunk: Σ_t M_t p_t v_t over its allowed keys."""
        keep = x != NEG
        p = np.broadcast_to(np.asarray(self.weight(x[keep], 0.0, N), float), (int(keep.sum()),))
        return p @ v[keep]

    def merge(self, s1, s2):
        """Two states brought to the larger shift and added (the tile update and the split merge)."""
        (m1, l1, a1), (m2, l2, a2) = s1, s2
        m = max(m1, m2)
        if m == NEG:
            return NEG, 0.0, a1 + a2
        r1, r2 = (math.exp(m1 - m) if m1 > NEG else 0.0), (math.exp(m2 - m) if m2 > NEG else 0.0)
        return m, r1 * l1 + r2 * l2, r1 * a1 + r2 * a2

    def split(self, x, v, splits):
        """out of one row cut into ``splits`` chunks (numpy.array_split order), each reduced to its
        state, the states merged, E added once."""
        x, v = np.asarray(x, float), np.asarray(v, float)
        N, dv = float(np.sum(x != NEG)), v.shape[1]
        chunks = np.array_split(np.arange(len(x)), splits)
        if self.elementwise:  # splits add
            return sum((self._add(x[idx], v[idx], N) for idx in chunks), np.zeros(dv))
        state = (NEG, 0.0, np.zeros(dv))
        for idx in chunks:
            state = self.merge(state, self.state(x[idx], v[idx], N))
        return self.finalize(*state, dv)
