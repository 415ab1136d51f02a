"""Known kernel faults as data: what the kernel does, what it computes instead, the fix.

Each :class:`KernelFault` builds the faulty result and the correct one as SymPy expressions
from the pieces of :mod:`derive.kernels.forms` and :mod:`derive.kernels.backward`, so the
document can refute the fault with a certified counterexample and a checker can later match
an implementation's output against the same formulas. ``fixed`` pins index symbols for the
counterexample search (e.g. two tiles); ``assume`` specializes the extra logit (e.g. a sink,
w = 0). The empty-split NaN is an IEEE fault (0/0) rather than a formula: its ``numeric``
entry names the numeric kernel switch that reproduces it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import sympy as sp

from derive.kernels import backward as bw
from derive.kernels.forms import a, exact_den, exact_num, m, m2, sigma, tile_den, tile_num, w, x
from derive.model.attention import d, i, n
from derive.render.markup import plain_math

__all__ = ["EXTRA_FAULTS", "FAULTS", "KernelFault", "K"]

K = sp.Symbol("K", integer=True, positive=True)  # how many times a fault repeats the extra logit
SINK_ONLY = {w: 0}  # a sink, softmax₁ or zero token: the extra key has value 0
# two keys in two tiles of one key, each shift the running max
TWO_TILES = {a: 1, n: 2, m: x[i, 1], m2: sp.Max(x[i, 1], x[i, 2])}


# Faults that change only the extra logit, as one transformation each: the logit a kernel with the fault
# adds, from the true one s, the shift m it finalizes at (natural units: the running max of the online form,
# the largest split lse of the split form), the number K of tiles or splits that add it, and the score scale
# c. The symbolic refutation (``faulty``) and the numeric kernels (derive.kernels.numeric) both apply it, so
# each such fault is written once and reaches every form where it makes sense (online and split alike).
EXTRA_FAULTS: dict[str, Callable] = {
    "extra_per_tile": lambda s, m, K, c, log: s + log(K),  # K e^s: once per tile or split
    "seeded_twice_empty_split": lambda s, m, K, c, log: s + log(K),  # K = 1 + the empty splits
    "missing_log2e": lambda s, m, K, c, log: s * log(2),  # 2^{s − m₂} for e^{s − m}: the logit s ln 2
    "scale_on_extra": lambda s, m, K, c, log: s * c,  # the score scale 1/√d on the extra logit
    "softmax1_unshifted_one": lambda s, m, K, c, log: s + m,  # e^s added unshifted to ℓ = e^{−m} Σ
}


def _faulty_extra(key: str, times=K, shift=m, scale=1 / sp.sqrt(d)) -> sp.Expr:
    """The output of a kernel with the extra-logit fault ``key`` (:data:`EXTRA_FAULTS`)."""
    return _with_extra(logit=EXTRA_FAULTS[key](sigma, shift, times, scale, sp.log))


def _with_extra(times=1, logit=sigma) -> sp.Expr:
    """The output when the extra key enters ``times`` times with logit ``logit``."""
    e = times * sp.exp(logit)
    return (e * w + exact_num(False)) / (e + exact_den(False))


def _two_tiles(rescale_l: bool, rescale_acc: bool) -> sp.Expr:
    """out after tiles 1..a (shift m) and a+1..n (shift m′), with or without the rescaling e^{m−m′}."""
    r = sp.exp(m - m2)
    l1, c1 = tile_den(1, a, m), tile_num(1, a, m)
    ell = (r if rescale_l else 1) * l1 + tile_den(a + 1, n, m2)
    acc = (r if rescale_acc else 1) * c1 + tile_num(a + 1, n, m2)
    return acc / ell


@dataclass(frozen=True)
class KernelFault:
    """``does_md``, ``computes_md`` and ``fix_md`` are prose markup (``$…$`` math) for the
    documents; ``does``, ``computes`` and ``fix`` read their math aloud for a terminal."""

    key: str
    form: str  # online | split | base2 | finalize | backward
    title: str
    does_md: str  # what the faulty kernel does
    computes_md: str  # what it computes instead
    fix_md: str
    faulty: Callable[[], sp.Expr] | None
    correct: Callable[[], sp.Expr] | None
    fixed: dict = field(default_factory=dict)
    assume: dict = field(default_factory=dict)
    numeric: str = ""  # the switch of derive.kernels.numeric that reproduces it
    ieee: str = ""  # an IEEE fault (faulty is None): what shows it, e.g. "IEEE NaN, section 7"
    sizes: dict = field(default_factory=dict)  # max_d / max_n of the counterexample search

    @property
    def does(self) -> str:
        return plain_math(self.does_md)

    @property
    def computes(self) -> str:
        return plain_math(self.computes_md)

    @property
    def fix(self) -> str:
        return plain_math(self.fix_md)


def _exact() -> sp.Expr:
    return _with_extra()


FAULTS: tuple[KernelFault, ...] = (
    KernelFault("extra_per_tile", "online / split", "extra logit added per tile or per split",
                r"adds $e^{\sigma - m}$ to $\ell$ (and $e^{\sigma - m} w$ to $\mathrm{acc}$) in every tile update, "
                "or in every split",
                "the extra logit $K$ times, $K$ the number of tiles or splits",
                r"seed it once ($m_0 = \sigma$, $\ell_0 = 1$, $\mathrm{acc}_0 = w$) or add it once at finalization / "
                "in the combine",
                lambda: _faulty_extra("extra_per_tile"), _exact, fixed={K: 2}, assume=SINK_ONLY,
                numeric="extra_per_tile"),
    KernelFault("seeded_twice_empty_split", "split", "extra logit seeded twice when a split is empty",
                r"an empty split returns the seeded state $(\sigma, 1, w)$ instead of the empty state "
                r"$(-\infty, 0, 0)$, "
                "and the combine adds the extra logit as well",
                "the extra logit twice",
                r"an empty split returns $(m, \ell, \mathrm{acc}) = (-\infty, 0, 0)$ (or $\mathrm{lse} = -\infty$); "
                "only the combine adds the extra logit",
                lambda: _faulty_extra("seeded_twice_empty_split", times=2), _exact, assume=SINK_ONLY,
                numeric="seeded_twice_empty_split"),
    KernelFault("missing_log2e", "base2", "log₂e missing on the extra logit",
                r"computes $2^{x \log_2 e - m_2}$ for the keys but $2^{\sigma - m_2}$ for the extra logit",
                r"the extra logit $\sigma \ln 2$ instead of $\sigma$",
                r"seed with $2^{\sigma \log_2 e - m_2}$: pre-multiply the extra logit like the scores",
                lambda: _faulty_extra("missing_log2e"), _exact, assume=SINK_ONLY,
                numeric="missing_log2e"),
    KernelFault("scale_on_extra", "online", "score scale applied to the extra logit",
                r"multiplies the extra logit by the softmax scale $1/\sqrt{d}$ along with the raw scores $q \cdot k$",
                r"the extra logit $\sigma/\sqrt{d}$ instead of $\sigma$",
                "scale the raw scores only; the sink logit is already in score units",
                lambda: _faulty_extra("scale_on_extra"), _exact, assume=SINK_ONLY,
                numeric="scale_on_extra"),
    KernelFault("softmax1_unshifted_one", "finalize", "softmax₁ finalized with an unshifted +1",
                r"finalizes $\ell + 1$ with $\ell = e^{-m} \sum_t e^{x_t}$, instead of $\ell + e^{0 - m}$",
                "a sink of logit $m$ (the running max) instead of 0",
                r"add $e^{-m}$ (the zero logit shifted like the scores), or seed $m_0 = 0$, $\ell_0 = 1$",
                lambda: _faulty_extra("softmax1_unshifted_one"), _exact,
                assume={w: 0, sigma: 0, n: 1, m: x[i, 1]}, sizes={"max_n": 1, "max_d": 1},
                numeric="softmax1_unshifted_one"),
    KernelFault("acc_not_rescaled", "online", "accumulator not rescaled when the max grows",
                r"updates $\mathrm{acc} \leftarrow \mathrm{acc} + \sum_{\mathrm{tile}} e^{x - m'} v$ without the factor "
                r"$e^{m - m'}$",
                r"keys of earlier tiles weighted by $e^{x - m}$ against later ones by $e^{x - m'}$",
                r"$\mathrm{acc} \leftarrow e^{m - m'} \mathrm{acc} + \sum_{\mathrm{tile}} e^{x - m'} v$",
                lambda: _two_tiles(True, False), lambda: _two_tiles(True, True), assume=TWO_TILES,
                sizes={"max_n": 2, "max_d": 1},
                numeric="acc_not_rescaled"),
    KernelFault("sum_not_rescaled", "online", "sum ℓ not rescaled when the max grows",
                r"updates $\ell \leftarrow \ell + \sum_{\mathrm{tile}} e^{x - m'}$ without the factor $e^{m - m'}$",
                "the normalizer of earlier tiles at the stale shift $m$",
                r"$\ell \leftarrow e^{m - m'} \ell + \sum_{\mathrm{tile}} e^{x - m'}$",
                lambda: _two_tiles(False, True), lambda: _two_tiles(True, True), assume=TWO_TILES,
                sizes={"max_n": 2, "max_d": 1},
                numeric="sum_not_rescaled"),
    KernelFault("nan_empty_split", "split", "an empty split's NaN poisons the merge",
                r"an empty or fully masked split finalizes $o = \mathrm{acc}/\ell = 0/0 = \mathrm{NaN}$ and "
                r"$\mathrm{lse} = -\infty$; the merge "
                r"multiplies it by $e^{\mathrm{lse}_\sigma - \mathrm{lse}} = 0$, and "
                r"$0 \cdot \mathrm{NaN} = \mathrm{NaN}$",
                "NaN for the whole row",
                r"give a split with $\ell = 0$ the output 0 (or skip it); use a finite shift when $m = -\infty$",
                None, None, numeric="nan_empty_split", ieee="IEEE NaN, section 7"),
    KernelFault("kv_only_lse_backward", "backward", "KV-only LSE used in the backward",
                r"recomputes $P_j = e^{x_j - \mathrm{lse}_{KV}}$ with $\mathrm{lse}_{KV} = \log \sum_t e^{x_t}$, "
                "without the extra logit",
                "weights that sum to 1, as if there were no sink",
                r"save and use the sink-inclusive $\mathrm{lse} = \log(e^{\sigma} + \sum_t e^{x_t})$",
                lambda: bw.dx_recompute(bw.lse_kv), bw.dx_recompute, numeric="kv_only_lse_backward",
                sizes={"max_d": 1}),
    KernelFault("sink_grad_missing", "backward", "sink gradient missing",
                r"returns $\partial L/\partial \sigma = 0$ (the sink treated as a constant)",
                r"0 instead of $-P_\sigma D$",
                r"$\partial L/\partial s = -P_s D_i$ per row, with $P_s = e^{s - \mathrm{lse}_i}$, summed over rows "
                "for a shared sink",
                lambda: sp.S.Zero, bw.dsigma_recompute, assume=SINK_ONLY, numeric="sink_grad_missing",
                sizes={"max_d": 1}),
    KernelFault("sink_grad_sign", "backward", "sink gradient with the wrong sign",
                r"returns $+P_\sigma D$",
                "the negative of the gradient",
                r"$\partial L/\partial s = -P_s D_i$: raising the sink takes weight from every key",
                lambda: bw.dsigma_recompute(-1), bw.dsigma_recompute, assume=SINK_ONLY, numeric="sink_grad_sign",
                sizes={"max_d": 1}),
    KernelFault("guard_stored_as_max", "online", "the −∞ guard stored as the running max",
                r"exponentiates a fully masked tile against the stand-in 0 (the guard for $m = -\infty$) and "
                r"then keeps 0 as the running max $m$",
                r"exact in exact arithmetic (the invariant holds for any shift), but a later tile whose scores are "
                r"all below about $-745$ underflows: $e^{x - 0} = 0$, so the row [−∞, −1000] in tiles of one key "
                r"gives out 0 and lse $-\infty$",
                r"use the stand-in for the exponents only and store $m_{b+1} = \max(m_b, \max_{\mathrm{tile}} x)$, "
                r"$-\infty$ while nothing is allowed",
                None, None, numeric="guard_stored_as_max", ieee="IEEE underflow, section 7"),
)
