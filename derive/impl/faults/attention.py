"""The attention form's diagnosis: a failing call whose normalizer has an extra logit is compared
with the faults of the one catalogue (:data:`derive.kernels.faults.FAULTS`) that apply to it in
this form (:func:`derive.kernels.faults.faults_for`: those of the extra logit, ``checked`` with
``attention``). A fault of the extra logit is a rewrite of the logit (``rewrite(s, m, K, c,
log)``): the faulty kernel computes the definition with the logit σ′ = rewrite(σ, m, K, c) in
place of σ, m the row's largest score (what an unshifted e^σ is added beside), K the number of
tiles (of the block passed, or of a common block size), c the score scale. The model is the exact
reference with σ′ per row, on the failing query of every batch and head; a fault is named only when
its model matches the kernel's output within the tolerance on each of those rows and differs from
the definition on the failing one, so a name never contradicts its counterexample.

Faults of the call itself, which no other form has (its kv heads, its window), are written once
here (:data:`CALL_FAULTS`): each is a model of what the faulty kernel reads instead, tried the same
way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from derive.impl.exact.reference import exact_attention
from derive.impl.exact.tolerance import magnitude, relative
from derive.kernels.faults import by_key, faults_for

__all__ = ["CALL_FAULTS", "CallFault", "diagnose"]


@dataclass(frozen=True)
class CallFault:
    """A fault of the attention call (not of the normalizer's kernel form): ``model(case, k, v, keep)``
    gives the (k, v, keep) the faulty kernel reads instead, one for each way it may realize (none where the
    fault changes nothing)."""

    key: str
    title: str
    does: str
    computes: str
    fix: str
    model: object


def _tiled_heads(case, k, v, keep):
    if case.kv == case.H or case.kv == 1:
        return []
    heads = [h % case.kv for h in range(case.H)]
    return [(k[:, heads], v[:, heads], keep)]


def _keys_dropped(case, k, v, keep):
    """The keys from L on never read, for each bound L a loop may stop at: the last whole tile of the
    block passed (else of a common size), a hard-coded power of two, or N − 1."""
    blocks = (case.block,) if case.block else _BLOCKS
    bounds = {case.N - 1} | {case.N // b * b for b in blocks} | {1 << p for p in range(4, 16)}
    out = []
    for bound in sorted(b for b in bounds if 0 < b < case.N):
        kept = keep.copy()
        kept[..., bound:] = False
        out.append((k, v, kept))
    return out


def _window_wide(case, k, v, keep):
    if not case.window or case.window[0] < 0:
        return []
    return [(k, v, replace(case, window=(case.window[0] + 1, case.window[1])).keep())]


CALL_FAULTS: tuple[CallFault, ...] = (
    CallFault("gqa_head_mapping", "kv head h mod Hkv for query head h",
              "query head h reads kv head h mod Hkv (k and v repeated with tile/repeat, not repeat_interleave)",
              "attention over another kv head's keys and values for every query head past the first group",
              "query head h reads kv head h // (H / Hkv): repeat_interleave(k, H // Hkv, dim=heads), as "
              "PyTorch's enable_gqa and Hugging Face's repeat_kv do", _tiled_heads),
    CallFault("window_left_off_by_one", "sliding window one key too wide on its left",
              "keeps key p − left − 1 as well (a < where ≤ was meant, or left + 1 keys)",
              "one more key in every row the window cuts",
              "keep key j only when p − left ≤ j ≤ p + right", _window_wide),
    CallFault("keys_past_bound_dropped", "keys past a loop bound never read",
              "stops its key loop before the last key: after the last whole tile (N // BLOCK tiles, the partial "
              "one dropped), at a hard-coded length, or at N − 1",
              "attention over the keys before the bound only",
              "loop over ceil(N / BLOCK) tiles up to N itself, masking the keys past N in the last tile",
              _keys_dropped),
)

_BLOCKS = (16, 32, 64, 128, 256)  # tile sizes a kernel that is passed none may use


def _counts(case) -> list[int]:
    """The numbers K of tiles a kernel adding the extra logit per tile may add it: of the block passed
    (over every key, or the keys up to the last visible one), else of a common block size."""
    blocks = (case.block,) if case.block else _BLOCKS
    return sorted({max(1, -(-case.N // b)) for b in blocks} - {1}) or [2]


def _model(key: str, case, ex, sinks, scale: float, i: int):
    """(variant label, σ′ (B, H, M)) for each way the fault ``key`` realizes on query ``i``."""
    f = by_key(key)
    B, H, M = case.B, case.H, case.M
    top = np.max(ex.rows[:, :, i, :], axis=-1, initial=-math.inf)  # (B, H): the row's largest score
    counts = _counts(case) if "tile" in f.adds else [1]
    out = []
    for K in counts:
        sig = np.full((B, H, M), -math.inf)
        for b in range(B):
            for h in range(H):
                m = float(top[b, h]) if math.isfinite(top[b, h]) else 0.0
                with np.errstate(all="ignore"):
                    sig[b, h, i] = float(f.rewrite(float(sinks[h]), m, K, scale, math.log))
        out.append((K, sig))
    return out


def diagnose(checker, case, fail, q, k, v, keep, bias, scale: float, sinks, got, tol, ex=None) -> list:
    """The fault records whose model matches the kernel on the failing query (module docstring), or
    for the sinks' gradient on every head (``ex``: the exact reference with its gradients)."""
    if fail.what == "dsinks" and ex is not None:
        return _grad_faults(checker, got, ex, tol, int(fail.where[0]))
    if fail.what not in ("out", "lse") or not case.M:
        return []
    b0, h0, i = (int(x) for x in fail.where[:3])
    judged = np.zeros(case.M, dtype=bool)
    judged[i] = True
    OL = checker.out_layout
    out = OL.from_layout(got["out"], groups=case.groups, heads=case.H)
    lse = None if "lse" not in got or checker.values is not None else \
        (checker.lse_layout or OL).from_layout(got["lse"], "bhn", case.groups)
    sig0 = None if sinks is None else tuple(sinks)
    right = checker.exact(case, q, k, v, scale, keep, bias, sig0, None, judged)
    found = []
    for f in CALL_FAULTS:
        for k2, v2, keep2 in f.model(case, k, v, keep) if bias is None else ():
            ex = checker.exact(case, q, k2, v2, scale, keep2, None, sig0, None, judged)
            if _matches(out, lse, ex, right, v2, keep2, case.H // k2.shape[1], tol, i, (b0, h0)):
                found.append(f)
                break
    for key in faults_for(checker.norm, "attention"):
        if by_key(key).part == "ieee":
            if _ieee_matches(key, case, right, v, sinks, out, keep, tol, i, (b0, h0)):
                found.append(by_key(key))
            continue
        if sinks is None or by_key(key).part != "logit":
            continue
        for _, sig in _model(key, case, right, sinks, scale, i):
            if np.array_equal(sig[:, :, i], np.broadcast_to(np.array(sinks, dtype=np.float64), sig[:, :, i].shape)):
                continue  # the rewrite changes nothing here
            ex = exact_attention(q, k, v, scale, keep, bias, sig, checker.dps, None, judged,
                                 lse_units=checker.lse_units, sums=checker.sums)
            if _matches(out, lse, ex, right, v, keep, case.groups, tol, i, (b0, h0)):
                found.append(by_key(key))
                break
    return found


def _grad_faults(checker, got, ex, tol, failing: int) -> list:
    """The faults of the extra logit's gradient (part ``grad``: its rewrite of the exact gradient)
    whose model gives the kernel's sink gradient on every judged head and differs from the exact one
    on the failing head."""
    value = ex.grads["dsinks"][0]
    y = np.ravel(got["dsinks"]).astype(np.float64) if "dsinks" in got else np.zeros_like(value)  # none: 0
    if y.shape != value.shape:
        return []
    bounds = checker.dsinks_bounds(ex, tol)
    found = []
    for key in faults_for(checker.norm, "attention"):
        f = by_key(key)
        if f.part != "grad":
            continue
        model = np.array([float(f.rewrite(float(g), 0.0)) for g in value])
        if "dsinks" not in got:  # no gradient at all: the fault whose model is none (0)
            if not np.any(model):
                found.append(f)
            continue
        judged = np.isfinite(bounds)
        with np.errstate(invalid="ignore"):
            close = np.abs(y - model) <= bounds
        if close[judged].all() and abs(model[failing] - value[failing]) > bounds[failing]:
            found.append(f)
    return found


def _ieee_matches(key: str, case, right, v, sinks, out, keep, tol, i: int, failing) -> bool:
    """An IEEE fault (a guard left out): the numeric kernel of the catalogue with that guard left out
    (:func:`derive.kernels.numeric.online`), run on the exact scores of query ``i`` of every batch and
    head in tiles of the block passed (else of each common size), gives the kernel's output on every
    defined row — NaN where it is NaN — and differs from the definition on the failing one."""
    from derive.kernels.numeric import online

    bound = _bound(tol, keep, v, case.groups, right, i)
    defined = right.defined[:, :, i]
    if not defined[failing]:
        return False
    y = out[:, :, i]
    for block in (case.block,) if case.block else _BLOCKS:
        model = np.empty_like(right.out[:, :, i])
        for b in range(case.B):
            for h in range(case.H):
                extra = None if sinks is None else float(sinks[h])
                model[b, h] = online(right.rows[b, h, i], v[b, h // case.groups], block, extra, base2=False,
                                     fault=key)[0]
        with np.errstate(invalid="ignore", over="ignore"):
            nan = np.isnan(model)
            close = np.where(nan, np.isnan(y), np.abs(y - np.nan_to_num(model)) <= bound)
            differs = nan[failing].any() or bool(np.any(np.abs(model[failing] - right.out[failing]) > bound[failing]))
        if differs and np.where(defined[..., None], close, True).all():
            return True
    return False


def _bound(tol, keep, v, groups: int, ex, i: int) -> np.ndarray:
    """The bound of out on query ``i`` (B, H, Dv), the judge's: the floor of the values it weighs and the
    relative part of the reference ``ex``'s magnitudes and condition."""
    rel = tol.rel * (1.0 + ex.kappa[:, :, i])[..., None]
    with np.errstate(invalid="ignore", over="ignore"):
        return tol.floor(magnitude(keep, v, groups))[:, :, i] + relative(rel, ex.out_scale[:, :, i])


def _matches(out, lse, ex, right, v, keep, groups: int, tol, i: int, failing) -> bool:
    defined = ex.defined[:, :, i]
    if not defined.any() or not defined[failing]:
        return False
    bound = _bound(tol, keep, v, groups, ex, i)
    with np.errstate(invalid="ignore", over="ignore"):
        y = out[:, :, i]
        ok = np.where(defined[..., None], np.abs(y - np.nan_to_num(ex.out[:, :, i])) <= bound, True)
        differs = np.abs(np.nan_to_num(right.out[failing + (i,)]) - ex.out[failing + (i,)]) > bound[failing]
    if lse is not None:
        p = ex.lse[:, :, i]
        lbound = tol.abs + tol.rel * (1.0 + ex.kappa[:, :, i]) * np.maximum(1.0, np.abs(np.where(np.isfinite(p), p, 0)))
        with np.errstate(invalid="ignore", over="ignore"):
            lok = np.where(defined, np.abs(lse[:, :, i] - np.where(np.isfinite(p), p, 0.0)) <= lbound, True)
        if not lok.all():
            return False
    return bool(ok.all() and differs.any())
