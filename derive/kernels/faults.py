"""Known kernel faults, each one transformation of one part of the softmax family's kernel forms.

A normalizer of the softmax family (recognised from its formula by
:mod:`derive.normalizers.family`: weights e^{x_j}/(E + Σ_t e^{x_t}), extra logit σ = log E) has
the online, split and backward forms of :mod:`derive.kernels.forms` and
:mod:`derive.kernels.backward`. A fault is written once, as a function of one *part* of those
forms, and the same function is applied by

* the symbolic refutation of ``docs/kernels.md`` (:meth:`KernelFault.faulty` against
  :meth:`KernelFault.correct`, SymPy expressions over symbolic tiles),
* the numeric kernels of :mod:`derive.kernels.numeric` (floats: the same function, with the
  record's ``adds`` and ``guard``), and
* the applicability test :func:`applies`: the fault is listed for a normalizer only where its
  formula has the part and the transformation changes it (:func:`faults_for`).

The parts (:data:`PARTS`):

``logit``   the extra logit a kernel adds to ℓ and acc, ``rewrite(s, m, K, c, log)``: from the
            true logit s, the shift m it is finalized at, the number K of tiles or splits that add
            it, the score scale c (the row form's faults of the extra logit use it too:
            :mod:`derive.impl.faults.row`);
``rescale`` the factors the tile update multiplies ℓ and acc by, ``rewrite(r_ell, r_acc, one)``;
``lse``     the extra logit inside the lse the backward recomputes P from, ``rewrite(s, minus_inf)``;
``grad``    the gradient of the extra logit the backward returns, ``rewrite(g, zero)``;
``ieee``    no formula: an IEEE effect (NaN, underflow) of a guard left out, named by ``guard``
            (one of :data:`GUARDS`); the numeric kernels leave that guard out, and the fault
            applies to every member of the family.

What the numeric kernels need beyond the rewrite is data on the record too: ``adds``, where a
kernel with a fault of the extra logit adds it (the count K its rewrite reads, one of
:data:`ADDS` each), and ``guard``. :mod:`derive.kernels.numeric` reads nothing else, and the ways
a diagnosis realizes a fault (``derive.impl.faults.kernel.variants``) are read off the same fields,
so a fault added as one record gets the numeric behaviour of its definition and is tried by
``derive impl --form``.

``fixed`` pins index symbols for the counterexample search (e.g. two tiles); ``assume``
specializes the instance (e.g. a sink, w = 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import sympy as sp

from derive.kernels import backward as bw
from derive.kernels.forms import a, exact_den, exact_num, m, m2, sigma, tile_den, tile_num, w, x
from derive.model.attention import d, i, n
from derive.normalizers.family import recognise
from derive.prove.memo import memoized, simplifies_to_zero
from derive.render.markup import plain_math
from derive.floats import FORMATS

__all__ = ["ADDS", "FAULTS", "GUARDS", "PARTS", "K", "UNDERFLOW_TEXT", "KernelFault", "applies", "by_key", "faults_for"]

K = sp.Symbol("B", integer=True, positive=True)  # how many times a fault repeats the extra logit (B: a count of tiles)
SINK_ONLY = {w: 0}  # a sink, softmax₁ or zero token: the extra key has value 0
# two keys in two tiles of one key, each shift the running max
TWO_TILES = {a: 1, n: 2, m: x[i, 1], m2: sp.Max(x[i, 1], x[i, 2])}
PARTS = ("logit", "rescale", "lse", "grad", "ieee")
# where a kernel may add the extra logit; K counts the places: once in the combine (or at finalization),
# once per tile or split with a key, per split without a key, per tile or split whose keys are all masked
ADDS = ("combine", "tile", "empty", "masked")
# the IEEE guards of the numeric forms, each with what leaving it out shows: a finite stand-in for the shift
# while the running max is −∞ (else e^{−∞ − (−∞)} = NaN); the stand-in used for the exponents only, never
# stored as the running max (else an underflow); a split with ℓ = 0 finalized to (0, −∞) and skipped by the
# merge (else 0/0 = NaN, and 0·NaN in the merge)
GUARDS = {"finite_shift": "nan", "running_max": "underflow", "empty_split": "nan"}
# where e^x underflows to 0 in float64: below ln of half the smallest subnormal (rounding to nearest)
_UNDERFLOW = math.log(FORMATS["float64"].smallest_subnormal) - math.log(2.0)


def _underflow(dtype, base2: bool, flushed: bool) -> int:
    """The exponent below which e^x (2^x with ``base2``) is 0 in ``dtype``, rounded to an integer:
    below the smallest normal number when subnormals are flushed to zero (as GPU kernels compiled
    with fast math do), else below half the smallest subnormal (round to nearest)."""
    f = FORMATS[dtype]
    low = math.log2(f.tiny) if flushed else math.log2(f.smallest_subnormal) - 1
    return round(low if base2 else low * math.log(2.0))


def _minus(k: int) -> str:
    return str(k).replace("-", "−")


# the thresholds, read off the formats (numpy's finfo): float64 −745 (−708 flushed), float32 −104 (−87 flushed), …
_U = {(dt, b2, fl): _minus(_underflow(dt, b2, fl)) for dt in ("float64", "float32") for b2 in (False, True)
      for fl in (False, True)}
UNDERFLOW_TEXT = (f"below about {_U['float64', False, False]} in float64 ({_U['float64', False, True]} with "
                  f"subnormals flushed), {_U['float32', False, False]} in float32 ({_U['float32', False, True]} "
                  f"flushed, as fast-math GPU kernels run); with exp2, in base-2 units, "
                  f"{_U['float64', True, False]} ({_U['float64', True, True]}) and {_U['float32', True, False]} "
                  f"({_U['float32', True, True]})")


@dataclass(frozen=True)
class KernelFault:
    """``does_md``, ``computes_md`` and ``fix_md`` are prose markup (``$…$`` math) for the
    documents; ``does``, ``computes`` and ``fix`` read their math aloud for a terminal. ``form``
    labels the document's table; ``checked`` the forms of ``derive impl --form`` whose diagnosis
    tries it."""

    key: str
    form: str  # online | split | base2 | finalize | backward
    checked: tuple[str, ...]
    title: str
    does_md: str  # what the faulty kernel does
    computes_md: str  # what it computes instead
    fix_md: str
    part: str  # one of PARTS
    rewrite: Callable | None = None  # the transformation of the part (None: an IEEE fault)
    fixed: dict = field(default_factory=dict)
    assume: dict = field(default_factory=dict)
    ieee: str = ""  # an IEEE fault: what shows it, e.g. "IEEE NaN, section 7"
    guard: str = ""  # an IEEE fault: the guard of GUARDS it leaves out
    adds: tuple[str, ...] = ("combine",)  # a fault of the extra logit: where it adds it (ADDS; K counts them)
    sizes: dict = field(default_factory=dict)  # max_d / max_n of the counterexample search

    @property
    def shows_nan(self) -> bool:
        """Its effect is a NaN (a guard of 0/0 left out): a diagnosis compares it on the rows where
        its model is NaN too."""
        return GUARDS.get(self.guard) == "nan"

    @property
    def does(self) -> str:
        return plain_math(self.does_md)

    @property
    def computes(self) -> str:
        return plain_math(self.computes_md)

    @property
    def fix(self) -> str:
        return plain_math(self.fix_md)

    # ---- the part, transformed or not: the two sides of the refutation ----------------------

    def faulty(self) -> sp.Expr | None:
        """What the faulty kernel computes, as a formula of the forms (None: an IEEE fault)."""
        return None if self.rewrite is None else _PART[self.part](self.rewrite)

    def correct(self) -> sp.Expr | None:
        return None if self.rewrite is None else _PART[self.part](_IDENTITY[self.part])


def _with_extra(rewrite) -> sp.Expr:
    """The output when the extra key enters with the logit ``rewrite(σ, m, K, 1/√d, log)``."""
    e = sp.exp(rewrite(sigma, m, K, 1 / sp.sqrt(d), sp.log))
    return (e * w + exact_num(False)) / (e + exact_den(False))


def _two_tiles(rewrite) -> sp.Expr:
    """out after tiles 1..a (shift m) and a+1..n (shift m′), the state rescaled by the factors
    ``rewrite(e^{m−m′}, e^{m−m′}, 1)`` for ℓ and acc."""
    r = sp.exp(m - m2)
    r_ell, r_acc = rewrite(r, r, sp.S.One)
    ell = r_ell * tile_den(1, a, m) + tile_den(a + 1, n, m2)
    acc = r_acc * tile_num(1, a, m) + tile_num(a + 1, n, m2)
    return acc / ell


def _recomputed_dx(rewrite) -> sp.Expr:
    """∂L/∂x_j recomputed from an lse whose extra logit is ``rewrite(σ, −∞)``."""
    return bw.dx_recompute(sp.log(sp.exp(rewrite(sigma, -sp.oo)) + sp.exp(bw.xj) + bw.R))


def _returned_dsigma(rewrite) -> sp.Expr:
    return rewrite(bw.dsigma_recompute(), sp.S.Zero)


_PART = {"logit": _with_extra, "rescale": _two_tiles, "lse": _recomputed_dx, "grad": _returned_dsigma}
_IDENTITY = {"logit": lambda s, m, K, c, log: s, "rescale": lambda r_ell, r_acc, one: (r_ell, r_acc),
             "lse": lambda s, minus_inf: s, "grad": lambda g, zero: g}


FAULTS: tuple[KernelFault, ...] = (
    KernelFault("extra_per_tile", "online / split", ("online", "split", "attention"), "extra logit added per tile or per split",
                r"adds $e^{x^{*} - m}$ to $\ell$ (and $e^{x^{*} - m} v^{*}$ to $\mathrm{acc}$) in every tile update, "
                "or in every split",
                "the extra logit $B$ times, $B$ the number of tiles or splits",
                r"seed it once ($m_0 = x^{*}$, $\ell_0 = 1$, $\mathrm{acc}_0 = v^{*}$) or add it once at finalization / "
                "in the combine",
                "logit", lambda s, m, K, c, log: s + log(K),  # K e^s: once per tile or split
                fixed={K: 2}, assume=SINK_ONLY, adds=("tile",)),
    KernelFault("seeded_twice_empty_split", "split", ("split",), "extra logit seeded twice when a split is empty",
                r"an empty split returns the seeded state $(x^{*}, 1, v^{*})$ instead of the empty state "
                r"$(-\infty, 0, 0)$, "
                "and the combine adds the extra logit as well",
                "the extra logit twice",
                r"an empty split returns $(m, \ell, \mathrm{acc}) = (-\infty, 0, 0)$ (or $\mathrm{lse} = -\infty$); "
                "only the combine adds the extra logit",
                "logit", lambda s, m, K, c, log: s + log(K),  # K = 1 + the empty splits
                assume={**SINK_ONLY, K: 2}, adds=("combine", "empty")),
    KernelFault("missing_log2e", "base2", ("online", "split", "attention"), "log₂e missing on the extra logit",
                r"computes $2^{x \log_2 e - m_2}$ for the keys but $2^{x^{*} - m_2}$ for the extra logit",
                r"the extra logit $x^{*} \ln 2$ instead of $x^{*}$",
                r"seed with $2^{x^{*} \log_2 e - m_2}$: pre-multiply the extra logit like the scores",
                "logit", lambda s, m, K, c, log: s * log(2),  # 2^{s − m₂} for e^{s − m}: the logit s ln 2
                assume=SINK_ONLY),
    KernelFault("scale_on_extra", "online", ("online", "split", "attention"), "score scale applied to the extra logit",
                r"multiplies the extra logit by the softmax scale $1/\sqrt{d}$ along with the raw scores "
                r"$\langle q, k \rangle$",
                r"the extra logit $x^{*}/\sqrt{d}$ instead of $x^{*}$",
                "scale the raw scores only; the extra logit is already in score units",
                "logit", lambda s, m, K, c, log: s * c,  # the score scale 1/√d on the extra logit
                assume=SINK_ONLY),
    KernelFault("unshifted_extra", "finalize", ("online", "split", "attention"), "extra logit added unshifted at finalization",
                r"finalizes $\ell + e^{x^{*}}$ with $\ell = e^{-m} \sum_t e^{x_t}$, "
                r"instead of $\ell + e^{x^{*} - m}$",
                r"an extra logit $x^{*} + m$ ($m$ the running max) instead of $x^{*}$",
                r"add $e^{x^{*} - m}$ (the extra logit shifted like the scores), or seed $m_0 = x^{*}$, $\ell_0 = 1$",
                "logit", lambda s, m, K, c, log: s + m,  # e^s added unshifted to ℓ = e^{−m} Σ
                assume={w: 0, sigma: 0, n: 1, m: x[i, 1]}, sizes={"max_n": 1, "max_d": 1}),
    KernelFault("acc_not_rescaled", "online", ("online",), "accumulator not rescaled when the max grows",
                r"updates $\mathrm{acc} \leftarrow \mathrm{acc} + \sum_{\mathrm{tile}} e^{x - m'} v$ "
                r"without the factor $e^{m - m'}$",
                r"keys of earlier tiles weighted by $e^{x - m}$ against later ones by $e^{x - m'}$",
                r"$\mathrm{acc} \leftarrow e^{m - m'} \mathrm{acc} + \sum_{\mathrm{tile}} e^{x - m'} v$",
                "rescale", lambda r_ell, r_acc, one: (r_ell, one), assume=TWO_TILES, sizes={"max_n": 2, "max_d": 1}),
    KernelFault("sum_not_rescaled", "online", ("online",), "sum ℓ not rescaled when the max grows",
                r"updates $\ell \leftarrow \ell + \sum_{\mathrm{tile}} e^{x - m'}$ without the factor $e^{m - m'}$",
                "the normalizer of earlier tiles at the stale shift $m$",
                r"$\ell \leftarrow e^{m - m'} \ell + \sum_{\mathrm{tile}} e^{x - m'}$",
                "rescale", lambda r_ell, r_acc, one: (one, r_acc), assume=TWO_TILES, sizes={"max_n": 2, "max_d": 1}),
    KernelFault("nan_empty_split", "split", ("split",), "an empty split's NaN poisons the merge",
                r"an empty or fully masked split finalizes $o = \mathrm{acc}/\ell = 0/0 = \mathrm{NaN}$ and "
                r"$\mathrm{lse} = -\infty$; the merge "
                r"multiplies it by $e^{\mathrm{lse}_r - \mathrm{lse}} = 0$, and "
                r"$0 \cdot \mathrm{NaN} = \mathrm{NaN}$",
                "NaN for the whole row",
                r"give a split with $\ell = 0$ the output 0 (or skip it); use a finite shift when $m = -\infty$",
                "ieee", ieee="IEEE NaN, section 7", guard="empty_split"),
    KernelFault("kv_only_lse_backward", "backward", ("backward",), "KV-only LSE used in the backward",
                r"recomputes $p_j = e^{x_j - \mathrm{lse}_{KV}}$ with $\mathrm{lse}_{KV} = \log \sum_t e^{x_t}$, "
                "without the extra logit",
                "weights that sum to 1, as if there were no extra logit",
                r"save and use the lse with the extra logit, $\mathrm{lse} = \log(e^{x^{*}} + \sum_t e^{x_t})$",
                "lse", lambda s, minus_inf: minus_inf, sizes={"max_d": 1}),
    KernelFault("extra_grad_missing", "backward", ("backward", "attention"), "gradient of the extra logit missing",
                r"returns $\partial L/\partial x^{*} = 0$ (the extra logit treated as a constant)",
                r"0 instead of $p_{*}(\langle \mathrm{dO}, v^{*} \rangle - D)$",
                r"$\partial L/\partial x^{*} = p_{*}(\langle \mathrm{dO}_i, v^{*} \rangle - D_i)$ per row, with "
                r"$p_{*} = e^{x^{*} - \mathrm{lse}_i}$ ($-p_{*} D_i$ for a sink: $v^{*} = 0$), summed over the rows "
                "that share the logit",
                "grad", lambda g, zero: zero, assume=SINK_ONLY, sizes={"max_d": 1}),
    KernelFault("extra_grad_sign", "backward", ("backward", "attention"), "gradient of the extra logit with the wrong sign",
                r"returns the gradient negated, e.g. $+p_{*} D$ for a sink",
                "the negative of the gradient",
                r"$\partial L/\partial x^{*} = p_{*}(\langle \mathrm{dO}_i, v^{*} \rangle - D_i)$ per row ($-p_{*} D_i$ "
                "for a sink: raising its logit takes weight from every key)",
                "grad", lambda g, zero: -g, assume=SINK_ONLY, sizes={"max_d": 1}),
    KernelFault("guard_stored_as_max", "online", ("online",), "the −∞ guard stored as the running max",
                r"exponentiates a fully masked tile against the stand-in 0 (the guard for $m = -\infty$) and "
                r"then keeps 0 as the running max $m$",
                r"exact in exact arithmetic (the invariant holds for any shift), but a later tile whose scores all "
                rf"lie where $e^{{x}}$ underflows ({UNDERFLOW_TEXT}) gives 0: the row [−∞, −1000] in tiles "
                r"of one key gives out 0 and lse $-\infty$ in float64",
                r"use the stand-in for the exponents only and store $m_{b+1} = \max(m_b, \max_{\mathrm{tile}} x)$, "
                r"$-\infty$ while nothing is allowed",
                "ieee", ieee="IEEE underflow, section 7", guard="running_max"),
    KernelFault("missing_neg_inf_guard", "online", ("online", "attention"), "no −∞ guard on the shift",
                r"exponentiates a tile against the running max $m$ while $m = -\infty$: a tile whose keys are all "
                r"masked, before any visible key, computes $e^{-\infty - (-\infty)}$",
                r"NaN for every row whose first tile is fully masked (padding, a window, a document mask, a "
                "bottom-right causal row), though the row has visible keys",
                r"while $m = -\infty$ exponentiate against a finite stand-in (0), so a fully masked tile adds "
                r"$e^{-\infty} = 0$ and leaves the state as it is; keep storing $m = -\infty$",
                "ieee", ieee="IEEE NaN, section 7", guard="finite_shift"),
)
assert all(f.part in PARTS and (f.rewrite is None) == (f.part == "ieee") == (f.guard in GUARDS)
           and set(f.adds) <= set(ADDS) for f in FAULTS)


_INDEX: list = []  # [the FAULTS tuple indexed, its key → record]


def by_key(key: str) -> KernelFault:
    """The record of ``key`` in :data:`FAULTS` as it is now (a record added later, e.g. to a
    temporary table, is found)."""
    if not _INDEX or _INDEX[0] is not FAULTS:
        _INDEX[:] = [FAULTS, {f.key: f for f in FAULTS}]
    return _INDEX[1][key]


# ---- where a fault applies: the normalizer's formula has the part, and the rewrite changes it --------


@memoized  # every member asks about the same rescale factor, several the same extra logit
def _changed(new, old) -> bool:
    """The rewrite changed the part: SymPy does not simplify the difference to 0 (a change it cannot
    rule out lists the fault, which is then only tried: a diagnosis names a fault only where its
    model differs from the definition on a probe)."""
    return not simplifies_to_zero(new - old)


def applies(fault: KernelFault, entry) -> bool:
    """Does ``fault`` apply to the registry entry ``entry``: is the entry of the softmax family, does
    its kernel form have the part the fault transforms, and does the transformation change it? E.g.
    the extra logit counted per tile needs an extra logit; log₂e missing on it, or the score scale
    on it, changes nothing when it is 0 (softmax₁); a gradient of the extra logit needs a parameter
    in it."""
    fam, _ = recognise(entry)
    if fam is None:
        return False
    if fault.part == "ieee":  # every member's online / split form has the guards
        return True
    if fault.part == "rescale":  # and a tile update, whose factors e^{m − m′} the fault changes or not
        r = sp.exp(m - m2)
        return any(_changed(new, r) for new in fault.rewrite(r, r, sp.S.One))
    if fam.logit is None:  # no extra logit: nothing to add, count, shift, drop or differentiate
        return False
    if fault.part == "logit":
        return _changed(sp.exp(fault.rewrite(fam.logit, m, K, 1 / sp.sqrt(d), sp.log)), fam.extra)
    if fault.part == "lse":
        return _changed(sp.exp(fault.rewrite(fam.logit, -sp.oo)), fam.extra)
    g = sp.Symbol("g", real=True)  # the gradient of each parameter in the extra logit: ∂σ/∂p · ∂L/∂σ
    grads = [sp.diff(fam.logit, sp.Symbol(p, real=True)) * g for p in entry.params]
    return any(_changed(fault.rewrite(gp, sp.S.Zero), gp) for gp in grads if gp != 0)


_APPLIES: dict = {}


def faults_for(entry, form: str) -> tuple[str, ...]:
    """The keys of the faults the diagnosis of ``derive impl --form FORM`` tries for ``entry``: those
    of the form that apply to it (:func:`applies`), in the order of :data:`FAULTS`."""
    return tuple(f.key for f in FAULTS if form in f.checked and _applies(f, entry))


def _applies(fault: KernelFault, entry) -> bool:
    """:func:`applies`, remembered per entry and fault record (the record is kept with the answer, so
    the id of a record added later, e.g. to a temporary table, is never one it had)."""
    key = (entry.name, entry.formula, entry.params, id(fault))
    if key not in _APPLIES:
        _APPLIES[key] = (fault, applies(fault, entry))
    return _APPLIES[key][1]
