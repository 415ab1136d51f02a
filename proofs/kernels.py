"""Kernel forms derived: online (tiled), split-KV, LSE conventions, backward, known faults
(docs/kernels.md).

The forms and the faulty forms are data in :mod:`derive.kernels`; this module proves the
forms (by induction over tiles and splits, for symbolic tile boundaries), refutes each
fault with a certified counterexample and runs the numeric kernels on adversarial rows.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from derive.document.api import Document
from derive.document.notation import notation
from derive.kernels import backward as bw
from derive.kernels.faults import FAULTS, K, applies
from derive.kernels.forms import (
    LOG2E,
    a,
    a2,
    base2_state,
    exact_den,
    exact_out,
    finalize_extra,
    m,
    m2,
    registry_forms,
    sigma,
    state,
    tile_den,
    tile_num,
    tile_update,
    v,
    w,
    x,
)
from derive.impl.forms.kernel import extra_logits
from derive.kernels.numeric import backward, online, split
from derive.model.attention import M, i, n, t, u
from derive.model.vectors import Dot
from derive.normalizers.registry import get
from derive.render.latex import tex
from derive.render.view import assignment
from derive.settings import DEFAULT

Zn = notation("Zk", lambda: exact_den(), latex="Z", nargs=0)
OUT = notation("outk", lambda: exact_out(), latex="\\mathrm{out}", nargs=0)
Lb = notation("Lb", lambda: state(a, m)[0], latex="\\ell_b", nargs=0)
Ab = notation("Ab", lambda: state(a, m)[1], latex="\\mathrm{acc}_b", nargs=0)
Lb1 = notation("Lb1", lambda: state(a2, m2)[0], latex="\\ell_{b+1}", nargs=0)
Ab1 = notation("Ab1", lambda: state(a2, m2)[1], latex="\\mathrm{acc}_{b+1}", nargs=0)
ORDER = sp.Le(a, a2)
mB = sp.Symbol("m_B", real=True)  # the shift after the last tile
Dn = notation("Dk", lambda: bw.D, latex="D", nargs=0)

# split-KV: splits r = 1..S over keys (a_{r-1}, a_r]; merged to one shift m
mm = sp.Symbol("m", real=True)
mr = sp.Symbol("m_{r+1}", real=True)
ar = sp.Symbol("a_r", integer=True, nonnegative=True)
ar1 = sp.Symbol("a_{r+1}", integer=True, nonnegative=True)
lse_r = sp.Symbol("lse_{r+1}", real=True)

def document() -> Document:
    doc = Document(
        "kernels",
        "Kernel forms of attention: online, split-KV and backward, derived",
        summary=(
            "Fast attention kernels never compute $p = e^x / Z$. They stream the keys in tiles with a running "
            "maximum, a running sum and an accumulator (online softmax {cite:milakov2018}; FlashAttention {cite:dao2022,dao2023}), split the keys across workers and merge "
            "the partial results by their log-sum-exp (flash-decoding {cite:flash-decoding2023}), and rebuild the weights from the saved "
            "log-sum-exp in the backward pass. An extra logit — a sink {cite:gpt-oss2025}, softmax₁'s implicit 0, a zero token, a "
            "learned key/value — must enter each of these forms exactly once and in the right units, and that is "
            "where kernel bugs ship. This document proves each form equal to the definition for any number and "
            "size of tiles and splits and any mask (including empty splits, fully masked tiles and fully masked "
            f"rows), derives the backward pass in recompute form, and refutes {_count(len(FAULTS))} known faults — "
            f"{_count(len(FAULTS) - len(_IEEE))} by certified counterexamples, "
            f"{' and '.join(_IEEE.values())} by running them — each with its fix."
        ),
        cfg=DEFAULT.merge(examples=20),  # 20 fixed + 20 searched instances per check: the build stays within 15 s
    )
    _notation(doc)
    _online(doc)
    _split(doc)
    _lse(doc)
    _backward(doc)
    _faults(doc)
    _kernels_run(doc)
    _others(doc)
    return doc


# the faults shown by running the numeric kernels (no formula to refute), as the summary names them;
# the build fails if the fault table's IEEE faults are others
_IEEE = {"nan_empty_split": "the NaN of an empty split", "guard_stored_as_max": "the underflow of a stored −∞ guard"}
assert {f.key for f in FAULTS if f.part == "ieee"} == set(_IEEE), "name the IEEE faults in the kernels summary"
_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")


def _count(k: int) -> str:
    return _WORDS[k] if k < len(_WORDS) else str(k)


# 1 ------------------------------------------------------------------------------------
def _notation(doc: Document) -> None:
    doc.section("1. The row, the extra logit and what is claimed")
    doc.prose(
        "Row $i$ has scaled scores $x_t = x_{i,t}$ over keys $t = 1, \\dots, n$ ($n$ symbolic), a mask "
        "$M_t = M_{i,t} \\in \\{0, 1\\}$ (any set of allowed keys, possibly empty) and values $v_t$ (vectors of "
        "dimension $d$). The softmax family adds at most one **extra logit** $\\sigma$ with an **extra value** "
        "$w$; the attention output and its normalizer are"
    )
    doc.definitions([[Zn(), exact_den()], [OUT(), exact_out()]],
              caption="Plain softmax has no extra logit ($\\sigma = -\\infty$: drop the $e^{\\sigma}$ terms).")
    doc.prose("Each registered normalizer of the softmax family is this output for one choice of $(\\sigma, w)$:")
    stated: dict = {}  # (both sides) → the entries whose output they are: one display for all of them
    for name, ex in registry_forms().extra.items():
        entry = get(name)
        score = lambda k: x[i, k]
        params = {p: ex.logit for p in entry.params}
        lhs = exact_out(ex.logit is not None)
        if ex.logit is not None:
            lhs = lhs.subs({sigma: ex.logit, w: ex.value})
        mix = sp.Sum(entry.weight(score, key=u, **params) * v[u], (u, 1, n))
        if ex.value != 0:
            # the learned token's own weight, e^{s*}/(e^{s*} + Σ e^{x_t}), times its value
            mix = mix + sp.exp(ex.logit) / (sp.exp(ex.logit) + exact_den(False)) * ex.value
        stated.setdefault((lhs, mix), []).append((name, entry, ex))
    for (lhs, mix), same in stated.items():  # entries with one formula (softmax₁, zero_token) share the proof
        name, entry, ex = same[0]
        shown = "\\sum_{u} p_u v_u" + (" + p_{\\mathrm{tok}} v^*" if ex.value != 0 else "")
        rhs = notation(f"mix_{name}", lambda _m=mix: _m, latex=shown, nargs=0)()
        pair = (f"$\\sigma = {tex(ex.logit)}$, $w = {tex(ex.value)}$" if ex.logit is not None
                else "no extra logit: $m_0 = -\\infty$, $\\ell_0 = 0$, $\\mathrm{acc}_0 = 0$")
        titles = ", and ".join(f"`{n_}`" + (f", {e.title}" if e.title != n_ else "") for n_, e, _x in same)
        one = ", which have one formula" if len(same) > 1 else ""
        tok = tex(ex.logit) if ex.logit is not None else ""
        doc.equation(lhs, rhs, name=f"{', '.join(f'`{n_}`' for n_, _e, _x in same)}: {pair}",
                     why=f"$p_u$ are the weights of the registry entr{'ies' if len(same) > 1 else 'y'} {titles}{one}"
                         + (f", $p_{{\\mathrm{{tok}}}} = e^{{{tok}}}/(e^{{{tok}}} + \\sum_t e^{{x_t}})$ the learned "
                            "token's" if ex.value != 0 else "") + ".")
    doc.prose(
        "**What is proved below.** (i) The online form keeps an invariant that, after any number $b$ of tiles of "
        "any sizes, makes its state represent exactly the keys seen so far; the extra logit enters once, as the "
        "seed or at finalization. (ii) Partial results of any number $S$ of splits, empty ones included, merge "
        "to the definition, the extra logit added once in the combine. (iii) The log-sum-exp the forward saves "
        "must include the extra logit, and in a base-2 pipeline the extra logit is multiplied by $\\log_2 e$ "
        "like the scores. (iv) The backward pass in recompute form equals the derivative. "
        f"(v) {_count(len(FAULTS)).capitalize()} faults compute something else: "
        f"{_count(len(FAULTS) - len(_IEEE))} shown by a certified counterexample, {' and '.join(_IEEE.values())} "
        "by running them (section 7)."
    )


# 2 ------------------------------------------------------------------------------------
def _online(doc: Document) -> None:
    doc.section("2. The online form (FlashAttention)", anchor="online")
    doc.prose(
        "Cut the keys into tiles $1..a_1, a_1{+}1..a_2, \\dots, a_{B-1}{+}1..a_B$ with $0 = a_0 \\le a_1 \\le "
        "\\dots \\le a_B = n$: any number $B$ of tiles of any sizes, empty ones allowed. The kernel keeps a state "
        "$(m_b, \\ell_b, \\mathrm{acc}_b)$:\n\n"
        "1. **Seed.** $m_0 = \\sigma$, $\\ell_0 = 1$, $\\mathrm{acc}_0 = w$ (the extra key as tile 0); for plain "
        "softmax $m_0 = -\\infty$, $\\ell_0 = 0$, $\\mathrm{acc}_0 = 0$.\n"
        "2. **Tile $b+1$.** $m_{b+1} = \\max(m_b, \\max_{t \\in \\text{tile}} x_t)$; "
        "$\\ell_{b+1} = e^{m_b - m_{b+1}}\\ell_b + \\sum_{t=a_b+1}^{a_{b+1}} M_t e^{x_t - m_{b+1}}$; "
        "$\\mathrm{acc}_{b+1} = e^{m_b - m_{b+1}}\\mathrm{acc}_b + \\sum_{t=a_b+1}^{a_{b+1}} M_t e^{x_t - m_{b+1}} v_t$.\n"
        "3. **Finalize.** $\\mathrm{out} = \\mathrm{acc}_B / \\ell_B$ and $\\mathrm{lse} = m_B + \\log \\ell_B$.\n\n"
        "**Invariant** (after $b$ tiles): the state represents the extra key and keys $1..a_b$ at the shift $m_b$:"
    )
    doc.definitions([[Lb(), Lb().unfolded()], [Ab(), Ab().unfolded()]],
              caption="$\\ell_{b+1}$, $\\mathrm{acc}_{b+1}$: the same with $a_{b+1}$, $m_{b+1}$. No property of $m_b$ is used: the running "
                      "maximum only keeps every exponent $\\le 0$, so the proofs hold for any real shifts.")
    doc.prose("**Base** ($b = 0$, $a_0 = 0$, $m_0 = \\sigma$): the seed satisfies the invariant.")
    doc.equation(state(0, sigma)[0], 1, name="base: $\\ell_0 = 1$", why="$e^{\\sigma - \\sigma} = 1$ and the sum over keys $1, \\dots, 0$ is empty.")
    doc.equation(state(0, sigma)[1], w, name="base: $\\mathrm{acc}_0 = w$", why="The same for the accumulator.")
    doc.prose("**Step** (any $a_b \\le a_{b+1}$, any shifts): one tile update maps the invariant for $b$ tiles to the "
              "invariant for $b + 1$ tiles.")
    ln, an = tile_update(Lb(), Ab(), m, m2, a + 1, a2)
    doc.equation(ln, Lb1(), where=ORDER, name="step: ℓ",
                 why="$e^{m_b - m_{b+1}} e^{\\sigma - m_b} = e^{\\sigma - m_{b+1}}$, and the sums over $1, \\dots, a_b$ and "
                     "$a_b + 1, \\dots, a_{b+1}$ join into one over $1, \\dots, a_{b+1}$.")
    doc.equation(an, Ab1(), where=ORDER, name="step: acc", why="The same for the accumulator.")
    doc.prose("By induction the invariant holds after every tile, for any number of tiles. **Finalization** "
              "($a_B = n$): the shift cancels, whatever it is.")
    lB, aB = state(n, mB)
    doc.equation(aB / lB, OUT(), name="finalize: out", why="Numerator and denominator carry the common factor $e^{-m_B}$.")
    lseB = notation("lseB", lambda: mB + sp.log(lB), latex="\\mathrm{lse}", nargs=0)
    doc.equation(sp.exp(lseB()), Zn(), name="finalize: lse",
                 why="$e^{m_B + \\log \\ell_B} = e^{m_B} \\ell_B$: the saved lse is $\\log Z$, the extra logit included.")
    doc.prose("**Without a seed.** Plain softmax starts from the empty state; the same step holds with the extra "
              "terms deleted, and a kernel with an extra logit may instead run softmax's form and add the extra "
              "key once at finalization, at any shift $m_f$ (kernels take $\\max(m_B, \\sigma)$):")
    l0, a0 = state(a, m, extra=False)
    l1, a1 = state(a2, m2, extra=False)
    ln0, an0 = tile_update(l0, a0, m, m2, a + 1, a2)
    doc.equation(ln0, l1, where=ORDER, name="softmax step: ℓ", why="The step above without the $e^{\\sigma}$ term.")
    doc.equation(an0, a1, where=ORDER, name="softmax step: acc", why="The same for the accumulator.")
    mf = sp.Symbol("m_f", real=True)
    lf, af = finalize_extra(*state(n, mB, extra=False), mB, mf)
    doc.equation(af / lf, OUT(), name="extra logit at finalization",
                 why="Rescale the state to $m_f$ and add $e^{\\sigma - m_f}$, $e^{\\sigma - m_f} w$ once.")
    doc.prose(
        "**Fully masked tiles.** The step is proved for any mask, so a tile whose keys are all masked adds "
        "$M_t = 0$ terms and the invariant carries over. The danger is numeric: with $m_b = -\\infty$ (nothing "
        "allowed yet, no extra logit) and a fully masked tile, $m_{b+1} = -\\infty$ and $e^{x_t - m_{b+1}}$ is "
        "$e^{-\\infty - (-\\infty)}$ = NaN. Kernels guard it by exponentiating against a finite stand-in "
        "($m_{b+1}$ if it is finite, else 0: FlashAttention-2 replaces a running maximum of $-\\infty$ by 0 "
        "before it exponentiates) for the exponents only: the stored running max stays $m_{b+1} = -\\infty$. "
        "(A kernel that stores the stand-in 0 as its max is exact in exact arithmetic, but a later tile of scores "
        "below about $-745$ then underflows to 0: fault 12, section 7.) The invariant holds for any real shift, "
        "and with the guard the update of a fully masked tile leaves the state as it is:"
    )
    doc.prose("**Fully masked rows.** With an extra logit the row attends to the extra key alone: the state after "
              "all tiles is the seed, rescaled, and the output is $w$ (0 for a sink, softmax₁ and the zero "
              "token); the lse is $\\sigma$. Without one, $\\ell_B = 0$: the definition has no value, and kernels "
              "return $\\mathrm{out} = 0$ by one of two conventions for the lse. "
              "(a) $\\mathrm{lse} = -\\infty = \\log 0$: FlexAttention, the split-KV partial results of "
              "FlashAttention-2 and FlashAttention-3 (so that the combine gives the empty split the weight "
              "$e^{-\\infty} = 0$) and this document's numeric kernels. "
              "(b) $\\mathrm{lse} = +\\infty$: the non-split forward of FlashAttention-2 and FlashAttention-3, so that the "
              "backward's recomputed weights $e^{x_t - \\mathrm{lse}}$ are 0 rather than "
              "$e^{-\\infty - (-\\infty)}$ = NaN. Both give $\\mathrm{out} = 0$; a merge needs (a) and a "
              "backward that recomputes the weights needs (b) or a guard, so an lse must not be handed "
              "from one to the other unconverted. Section 7 runs (a), with and without an extra logit.")
    l_, a_ = state(0, mB)
    doc.equation(a_ / l_, w, name="fully masked row", why="Every key has $M_t = 0$, so the sums are those over no key "
                 "(keys $1, \\dots, 0$ here): only the extra key's terms remain, and they cancel to $w$.")
    lse0 = notation("lse0", lambda: mB + sp.log(l_), latex="\\mathrm{lse}", nargs=0)
    doc.equation(sp.exp(lse0()), sp.exp(sigma), name="… and its lse is $\\sigma$", why="$e^{m_B} e^{\\sigma - m_B} = e^{\\sigma}$.")


# 3 ------------------------------------------------------------------------------------
def _split(doc: Document) -> None:
    doc.section("3. Split-KV: merging partial results (flash-decoding)", anchor="split")
    doc.prose(
        "Cut the keys into $S$ contiguous splits $a_{r-1}{+}1..a_r$ ($0 = a_0 \\le \\dots \\le a_S = n$; a split "
        "may be empty or fully masked). Each split runs the online form **without** the extra logit and returns "
        "$(m_r, \\ell_r, \\mathrm{acc}_r)$ with $\\ell_r = \\sum_{t=a_{r-1}+1}^{a_r} M_t e^{x_t - m_r}$ (section 2, "
        "started at key $a_{r-1}+1$), or $(o_r, \\mathrm{lse}_r) = (\\mathrm{acc}_r/\\ell_r, m_r + \\log \\ell_r)$. "
        "**Combine:** pick any shift $m$ (kernels: $\\max(\\sigma, \\max_r m_r)$) and form\n\n"
        "1. $\\ell = e^{\\sigma - m} + \\sum_{r=1}^{S} e^{m_r - m}\\ell_r$, "
        "$\\mathrm{acc} = e^{\\sigma - m}w + \\sum_{r=1}^{S} e^{m_r - m}\\mathrm{acc}_r$ — the extra key once, here;\n"
        "2. $\\mathrm{out} = \\mathrm{acc}/\\ell$, $\\mathrm{lse} = m + \\log \\ell$.\n\n"
        "**Invariant** (after merging splits $1..r$): the partial combine equals the state of section 2 for keys "
        "$1..a_r$ at the shift $m$. The base $r = 0$ is the seed term $e^{\\sigma - m}$ alone; the step adds one "
        "split, for any $a_r \\le a_{r+1}$ (equality: an empty split):"
    )
    c0 = sp.Symbol("t_0", integer=True, positive=True)  # the split's first key (c is a shift elsewhere)
    for label, run in (("ℓ", tile_den), ("acc", tile_num)):
        doc.equation(sp.exp(m - m2) * run(c0, a, m) + run(a + 1, a2, m2), run(c0, a2, m2),
                     where=sp.And(sp.Le(c0, a + 1), ORDER), name=f"a split's own state: {label}",
                     why="The step of section 2 for the keys of split $r$, which start at $t_0 = a_{r-1} + 1$ "
                         "instead of 1; its tiles end at $a_b$ and $a_{b+1}$ inside the split.")
    Lr = notation("Lr", lambda: state(ar, mm)[0], latex="J_r", nargs=0)
    Ar = notation("Ar", lambda: state(ar, mm)[1], latex="J^{\\mathrm{acc}}_r", nargs=0)
    doc.definitions([[Lr(), Lr().unfolded()], [Ar(), Ar().unfolded()]])
    doc.equation(Lr() + sp.exp(mr - mm) * tile_den(ar + 1, ar1, mr), state(ar1, mm)[0], where=sp.Le(ar, ar1),
                 name="merge step: ℓ", why="$e^{m_{r+1} - m} e^{-m_{r+1}} = e^{-m}$, then the two sums join.")
    doc.equation(Ar() + sp.exp(mr - mm) * tile_num(ar + 1, ar1, mr), state(ar1, mm)[1], where=sp.Le(ar, ar1),
                 name="merge step: acc", why="The same for the accumulator.")
    doc.prose("So after all $S$ splits the combine is the finalized state of section 2: out and lse are the "
              "definition's, for any $S$. In the $(o, \\mathrm{lse})$ form the merge weights are "
              "$e^{\\mathrm{lse}_r - \\mathrm{lse}}$, because a split's lse carries its shift:")
    # split r covers keys a_{r-1}+1 .. a_r at its own shift m_r (indices as in the prose)
    ar0, m_r = sp.Symbol("a_{r-1}", integer=True, nonnegative=True), sp.Symbol("m_r", real=True)
    lr_, cr_ = tile_den(ar0 + 1, ar, m_r), tile_num(ar0 + 1, ar, m_r)
    Lse = notation("lser", lambda: m_r + sp.log(lr_), latex="\\mathrm{lse}_{r}", nargs=0)
    Ov = notation("or", lambda: cr_ / lr_, latex="o_{r}", nargs=0)
    Cr = notation("accr", lambda: cr_, latex="\\mathrm{acc}_{r}", nargs=0)
    Lr_ = notation("ellr", lambda: lr_, latex="\\ell_{r}", nargs=0)
    doc.equation(sp.exp(Lse()), sp.exp(m_r) * Lr_(), where=sp.Le(ar0, ar), name="$e^{\\mathrm{lse}_r} = e^{m_r} \\ell_r$",
                 check=False,  # SymPy writes e^{m + log ℓ} as e^m ℓ: both sides are one expression
                 why="A split's lse carries its own shift.")
    doc.equation(sp.exp(Lse()) * Ov(), sp.exp(m_r) * Cr(), where=sp.Le(ar0, ar), name="$e^{\\mathrm{lse}_r} o_r = e^{m_r} \\mathrm{acc}_r$",
                 check=False,  # SymPy cancels ℓ in e^{m + log ℓ} acc/ℓ: both sides are one expression
                 why="$e^{m_r + \\log \\ell_r} \\mathrm{acc}_r / \\ell_r$, for a split with $\\ell_r > 0$ (an empty one has no $o_r$: fault 8).")
    doc.prose("Hence, in $(o, \\mathrm{lse})$ form, $\\mathrm{lse} = \\log(e^{\\sigma} + \\sum_r e^{\\mathrm{lse}_r})$ and "
              "$\\mathrm{out} = (e^{\\sigma} w + \\sum_r e^{\\mathrm{lse}_r} o_r)\\,e^{-\\mathrm{lse}}$: the merge above "
              "multiplied out by $e^{m}$, with the extra logit once.")
    doc.prose("An empty or fully masked split has $\\ell_r = 0$: it contributes nothing to $\\ell$ and acc (the "
              "step above with no allowed key), but $o_r = 0/0$ is NaN and its weight $e^{-\\infty} = 0$ does not "
              "cancel a NaN. The merge must skip it or set $o_r = 0$.")


# 4 ------------------------------------------------------------------------------------
def _lse(doc: Document) -> None:
    doc.section("4. LSE conventions", anchor="lse")
    m2_ = sp.Symbol("m_2", real=True)
    doc.prose(
        "**Base 2.** Kernels use exp2, which is faster: they multiply the scores by $\\log_2 e$ "
        "(folded into the softmax scale), keep $m_2$ in base-2 units and save $\\mathrm{lse}_2 = m_2 + \\log_2 \\ell_2$. "
        "The extra logit is a score and must be multiplied too: with it seeded as $2^{\\sigma \\log_2 e - m_2}$,"
    )
    # (state = Z·2^(−m₂) rather than 2^(m₂)·state = Z: SymPy 1.12 prints a \cdot in the latter)
    doc.equation(base2_state(n, m2_, sigma * LOG2E), Zn() * sp.Pow(2, -m2_), name="base-2 state",
                 why="$2^{y \\log_2 e} = e^{y}$ for every exponent $y$, the extra logit's included.")
    doc.prose("so $2^{\\mathrm{lse}_2} = Z$, i.e. $\\mathrm{lse} = \\mathrm{lse}_2 \\cdot \\ln 2$. Without the "
              "factor the kernel computes a sink of logit $\\sigma \\ln 2$ (fault 3 below); for softmax₁ and the "
              "zero token $\\sigma = 0$ and the slip is invisible, which is how it survives tests that use them.")
    doc.prose("**Sink-inclusive vs KV-only.** Some kernels return the log-sum-exp over the keys only, "
              "$\\mathrm{lse}_{KV} = \\log \\sum_t M_t e^{x_t}$; the two are related by")
    lkv = sp.log(exact_den(False))
    doc.equation(sp.exp(lkv) * (1 + sp.exp(sigma - lkv)), Zn(), name="lse from lse_KV",
                 why="$\\mathrm{lse} = \\mathrm{lse}_{KV} + \\log(1 + e^{\\sigma - \\mathrm{lse}_{KV}})$.")
    doc.prose("**Which one the backward needs.** The weights it rebuilds are the forward's only with the "
              "sink-inclusive lse:")
    j_ = sp.Symbol("j", integer=True, positive=True)
    lseZ = notation("lseZ", lambda: sp.log(exact_den()), latex="\\mathrm{lse}", nargs=0)
    doc.equation(M[i, j_] * sp.exp(x[i, j_] - lseZ()), M[i, j_] * sp.exp(x[i, j_]) / Zn(),
                 name="P from the saved lse", check=False,  # SymPy writes e^{x − log Z} as e^x/Z: one expression
                 why="$e^{x_j - \\log Z} = e^{x_j}/Z$: the forward's weight of key $j$.")
    doc.prose("With $\\mathrm{lse}_{KV}$ the rebuilt weights sum to 1, as if there were no sink (fault 9).")


# 5 ------------------------------------------------------------------------------------
def _backward(doc: Document) -> None:
    doc.section("5. The backward pass in recompute form", anchor="backward")
    doc.prose(
        "With an upstream gradient $g = d\\mathrm{out}_i$ the loss of the row is $L = \\langle g, \\mathrm{out} "
        "\\rangle$. Key $j$ enters through its score $x_j$ and value $v_j$; the other allowed keys only through "
        "$R = \\sum_{t \\ne j} M_t e^{x_t} \\ge 0$ and $W = \\sum_{t \\ne j} M_t e^{x_t} v_t$, so the derivatives "
        "below hold for every $n$ and mask. Kernels save lse (sink-inclusive), recompute "
        "$P_j = e^{x_j - \\mathrm{lse}}$, $P_\\sigma = e^{\\sigma - \\mathrm{lse}}$ and use "
        "$D = \\langle g, \\mathrm{out} \\rangle$ (FlashAttention-2's $D_i = \\mathrm{rowsum}(dO_i \\circ O_i)$):"
    )
    Pj = notation("Pj", lambda: bw.P(bw.xj), latex="P_j", nargs=0)
    Ps = notation("Ps", lambda: bw.P(sigma), latex="P_\\sigma", nargs=0)
    outb = notation("outb", bw.out, latex="\\mathrm{out}", nargs=0)
    lseb = notation("lseb", lambda: bw.lse, latex="\\mathrm{lse}", nargs=0)
    doc.definitions([[outb(), bw.out()], [lseb(), bw.lse],
                                       [Pj(), bw.P(bw.xj)], [Dn(), bw.D]])
    doc.equation(bw.L(), Dot(bw.g, bw.out()), name="the loss", why="$\\langle g, \\cdot \\rangle$ is linear.")
    dLx = notation("dLx", bw.dL_dx, latex="\\frac{\\partial L}{\\partial x_j}", nargs=0)
    dLs = notation("dLs", bw.dL_dsigma, latex="\\frac{\\partial L}{\\partial \\sigma}", nargs=0)
    doc.equation(dLx(), Pj() * (Dot(bw.g, bw.vj) - Dn()), name="gradient of the scores",
                 why="SymPy differentiates $L$; the engine checks the result against the recompute form.")
    doc.equation(bw.L(bw.vj + bw.eps * bw.delta) - bw.L(), bw.eps * Pj() * Dot(bw.g, bw.delta),
                 name="gradient of the values",
                 why="$L$ is affine in $v_j$ with slope $P_j g$: $\\partial L / \\partial v_j = P_j g$, i.e. $dV = P^{T} dO$.")
    doc.equation(dLs(), Ps() * (Dot(bw.g, w) - Dn()), name="gradient of the extra logit",
                 why="Only $Z$ and the extra key's term depend on $\\sigma$.")
    doc.equation(dLs(), -Ps() * Dn(), assume={w: 0}, name="gradient of a sink logit",
                 why="$w = 0$: raising the sink takes weight from every key in proportion.")
    doc.prose("**A check, and a shortcut.** Over the whole row, $D = \\sum_t P_t \\langle g, v_t \\rangle + "
              "P_\\sigma \\langle g, w \\rangle$ ($\\langle g, \\cdot \\rangle$ is linear). Adding one constant to "
              "every logit, the extra one included, changes nothing, so the gradients sum to zero:")
    Dfull = notation("Dfull", lambda: (sp.exp(sigma) * Dot(bw.g, w)
                                       + sp.Sum(M[i, t] * sp.exp(x[i, t]) * Dot(bw.g, v[t]), (t, 1, n))) / exact_den(),
                     latex="D", nargs=0)
    Pt = notation("Pt", lambda k: M[i, k] * sp.exp(x[i, k]) / exact_den(), latex="P", nargs=1)
    Pz = notation("Pz", lambda: sp.exp(sigma) / exact_den(), latex="P_\\sigma", nargs=0)
    doc.equation(sp.Sum(Pt(t) * (Dot(bw.g, v[t]) - Dfull()), (t, 1, n)) + Pz() * (Dot(bw.g, w) - Dfull()), 0,
                 name="the gradients of all logits sum to 0",
                 why="$\\sum_t P_t + P_\\sigma = 1$ and $\\sum_t P_t \\langle g, v_t \\rangle + P_\\sigma \\langle g, w \\rangle = D$.")
    doc.prose("So $\\partial L / \\partial \\sigma = -\\sum_t \\partial L / \\partial x_t$: a kernel may return "
              "the sink gradient as minus the row sum of $dS$, and a sign error there is fault 11.")
    doc.prose("A sink shared by all rows (gpt-oss: one logit per head) gets the sum of $-P_{\\sigma,i} D_i$ over "
              "rows and batch. Section 7 runs the recompute form on a fixed row and compares it with central "
              "differences of the loss; `tests/test_kernels.py` compares it with PyTorch autograd on random rows "
              "with masks and sinks.")


# 6 ------------------------------------------------------------------------------------
def _faults(doc: Document) -> None:
    doc.section("6. Known kernel faults, derived and refuted", anchor="faults")
    doc.prose(
        "Each fault below is written as the formula the faulty kernel computes, derived from the forms above "
        "(for the first, by the same induction), and compared with the correct one; the counterexample is the "
        "simplest instance found whose two sides ball arithmetic proves different. Each fault is one "
        "transformation of one part of the forms (the extra logit a kernel adds, the rescaling factors of the "
        "tile update, the extra logit in the lse the backward uses, the extra logit's gradient), written once "
        "in `derive/kernels/faults.py`: the same function builds the faulty side below, runs in the numeric "
        "kernels of section 7 and in the diagnosis of `derive impl --form`, and decides where the fault "
        "applies (table after the refutations)."
    )
    # the per-tile fault, derived by induction for K tiles
    lK = lambda upto, shift, k: k * sp.exp(sigma - shift) + tile_den(1, upto, shift)
    doc.prose("**Fault 1, derived.** A kernel that adds the extra key in every tile update keeps "
              "$\\ell_b = K e^{\\sigma - m_b} + \\sum_{t \\le a_b} M_t e^{x_t - m_b}$ after $K$ tiles; the step:")
    doc.equation(sp.exp(m - m2) * lK(a, m, K) + sp.exp(sigma - m2) + tile_den(a + 1, a2, m2), lK(a2, m2, K + 1),
                 where=ORDER, name="faulty step: extra per tile", why="The correct step plus one more $e^{\\sigma - m_{b+1}}$.")
    rows = []
    for k, f in enumerate(FAULTS, 1):
        if f.rewrite is None:
            rows.append([f"{k}. {f.title}", f.form, f.computes_md, f.fix_md, f.ieee])
            continue
        shown = lambda e: sp.sympify(e).subs(bw.D, Dn())  # D for ⟨g, out⟩, as in section 5
        step = doc.refutation(shown(f.faulty()), shown(f.correct()), name=f"fault {k}: {f.title}",
                              why=f"Kernel: {f.does_md}. Computes: {f.computes_md}. Fix: {f.fix_md}.",
                              fixed=f.fixed or None, assume=f.assume or None, **f.sizes)
        wt = step.verdict.witness
        inst = "; ".join(assignment(kk, vv) for kk, vv in {**wt["instance"], **wt["indices"]}.items())
        rows.append([f"{k}. {f.title}", f.form, f.computes_md, f.fix_md, inst])
    doc.table(["fault", "form", "computes instead", "fix", "counterexample"], rows,
              caption="$K = 2$ in faults 1 and 2 (two tiles or splits; one empty split and the combine).")
    _applicability(doc)
    doc.record("faults", [{"key": f.key, "title": f.title, "form": f.form, "fix": f.fix} for f in FAULTS])


def _applicability(doc: Document) -> None:
    """Which fault applies to which registered normalizer of the family, decided from its formula."""
    members = list(registry_forms().extra)
    doc.prose(
        "**Where each fault applies.** A fault applies to a normalizer of the softmax family when the kernel form "
        "its formula gives (section 1) has the part the fault transforms and the transformation changes it: the "
        "extra logit counted per tile needs an extra logit; $\\log_2 e$ missing on it, or the score scale on it, "
        "changes nothing when $\\sigma = 0$ (softmax₁, the zero token), which is how those slips survive tests that "
        "use them; a gradient of the extra logit needs a parameter in it. The IEEE faults and the rescaling "
        "faults apply to every member. The diagnosis of `derive impl --form` tries, for a normalizer, exactly "
        "the faults listed for it here (a registry entry or a spec's normalizer alike, read off its formula):"
    )
    rows = []
    for k, f in enumerate(FAULTS, 1):
        rows.append([f"{k}. {f.title}", ", ".join(get(name).title for name in members if applies(f, get(name)))
                     or "none"])
    doc.table(["fault", "applies to"], rows)
    doc.record("applies", {f.key: [name for name in members if applies(f, get(name))] for f in FAULTS})


# 7 ------------------------------------------------------------------------------------
def _unfilled(xs, k: int, form: str) -> str:
    """The splits of ``k`` (numpy.array_split, as the numeric split form cuts) that hold no allowed
    key, in words inside ``form``; '' when there are none."""
    chunks = np.array_split(np.arange(len(xs)), k)
    empty = sum(len(c) == 0 for c in chunks)
    masked = sum(len(c) > 0 and not np.isfinite(xs[c]).any() for c in chunks)
    said = [f"{_count(empty)} empty"] * bool(empty) + [f"{_count(masked)} fully masked"] * bool(masked)
    return form.format(" and ".join(said)) if said else ""


def _kernels_run(doc: Document) -> None:
    doc.section("7. The kernels run on an adversarial row", anchor="runs")
    rng = np.random.default_rng(10)
    xs = np.round(rng.normal(size=7) * 3, 3)
    xs[2] = -np.inf
    vs = np.round(rng.normal(size=(7, 3)), 3)
    s = 0.7
    shown = ", ".join("-\\infty" if not np.isfinite(v) else f"{v:g}" for v in xs)
    allowed = int(np.isfinite(xs).sum())
    doc.prose(
        "`derive/kernels/numeric.py` runs the forms in float64 the way a fused kernel does (base-2 exponents, "
        "the $-\\infty$ guard, per-split $(o, \\mathrm{lse})$ merged). The row has "
        f"{len(xs)} keys, {_count(len(xs) - allowed)} of them masked, scores $x = ({shown})$, values $v_t \\in \\mathbb{{R}}^3$ and a sink $s = {s}$ (`docs/kernels.json`, "
        "key `row`). Each run's output and lse are compared with the definition evaluated directly, "
        "$\\mathrm{out} = \\sum_t e^{x_t} v_t / (e^{s} + \\sum_t e^{x_t})$ and $\\mathrm{lse} = \\log(e^{s} + \\sum_t e^{x_t})$, "
        f"within a relative tolerance of {doc.cfg.rtol:g}:"
    )
    z = np.exp(xs)
    exact = (z @ vs) / (z.sum() + math.exp(s))
    exact_lse = math.log(z.sum() + math.exp(s))
    runs = ([("online", f"tiles of {blk} key{'s' if blk > 1 else ''}", online(xs, vs, blk, s)) for blk in (1, 2, 3, 7)]
            + [("split-KV", f"{k} split{'s' if k > 1 else ''}" + _unfilled(xs, k, " ({})"), split(xs, vs, k, s))
               for k in (1, 3, 9)])
    rows = []
    for form, shape, (out, lse) in runs:
        check = doc.example_check(f"{form}, {shape}, sink $s = {s}$", [*out, lse], [*exact, exact_lse])
        rows.append([form, shape, "= definition" if check.passed else "differs", f"check {len(doc.checks)}"])
    masked = np.full(7, -np.inf)
    o1, l1 = online(masked, vs, 2, s)
    o0, l0 = online(masked, vs, 2, None)
    if l0 != -np.inf:
        raise AssertionError("a fully masked softmax row must have lse = −inf")
    check = doc.example_check("fully masked row", [*o1, l1, *o0], [0, 0, 0, s, 0, 0, 0],
                              detail="with a sink: out = 0, lse = s; softmax: out = 0 (lse = −∞)")
    rows.append(["online, every key masked", "sink $s$: out $= 0$, lse $= s$; no sink: out $= 0$, lse $= -\\infty$",
                 "= definition; convention (a)" if check.passed else "differs", f"check {len(doc.checks)}"])
    doc.table(["form", "run", "out and lse", "evidence"], rows,
              caption="The numbered checks are listed with their tolerances in the appendix.")
    bad, _ = split(xs, vs, 9, s, fault="nan_empty_split")
    if not np.all(np.isnan(bad)):
        raise AssertionError("the unguarded empty split must produce NaN")
    doc.prose(f"**Fault 8 on this row.** With 9 splits of {len(xs)} keys{_unfilled(xs, 9, ', {}')}; without "
              "the guard each of those "
              f"finalizes $0/0$, and the merge returns {', '.join(str(v) for v in bad)} for the whole row "
              "(IEEE arithmetic: $0 \\cdot \\mathrm{NaN} = \\mathrm{NaN}$). With the guard it returns the "
              "definition (checked above).")
    late = np.array([-np.inf, -1000.0])
    good, good_lse = online(late, vs[:2], 1, None)
    poor, poor_lse = online(late, vs[:2], 1, None, fault="guard_stored_as_max")
    doc.example_check("the row [−∞, −1000] in tiles of one key", [*good, good_lse], [*vs[1], -1000.0],
                      detail="out = v₂, lse = −1000: the guard is not stored as the max")
    if not (np.all(poor == 0) and poor_lse == -np.inf):
        raise AssertionError("storing the guard as the running max must underflow on [−inf, −1000]")
    doc.prose("**Fault 12 on the row [−∞, −1000]** in tiles of one key, no extra logit: storing the guard 0 as the "
              f"running max after the masked first tile gives out = {', '.join(str(float(v)) for v in poor)} and "
              "lse = −∞, since $e^{-1000 - 0}$ underflows; with the stored max left at $-\\infty$ the second tile "
              "shifts by −1000 and returns its value row and lse = −1000 (checked above).")
    g = np.round(rng.normal(size=3), 3)
    keep = np.isfinite(xs)
    dx, dv, ds = backward(xs[keep], vs[keep], g, s)
    h = 1e-6
    def loss(xx, ss):
        zz = np.exp(xx)
        return float(g @ ((zz @ vs[keep]) / (zz.sum() + math.exp(ss))))
    fd_x = [(loss(xs[keep] + h * e, s) - loss(xs[keep] - h * e, s)) / (2 * h) for e in np.eye(int(keep.sum()))]
    fd_s = (loss(xs[keep], s + h) - loss(xs[keep], s - h)) / (2 * h)
    doc.example_check("recompute backward vs central differences", [*dx, ds], [*fd_x, fd_s], tol=1e-6,
                      detail=f"{_count(allowed)} allowed keys, sink s = {s}, step 1e-6")
    doc.prose(f"**The backward on this row.** With an upstream gradient $g \\in \\mathbb{{R}}^3$, the recompute "
              f"form's $\\partial L/\\partial x_t$ for the {_count(allowed)} allowed keys and $\\partial L/\\partial s$ (section 5) "
              f"agree with central differences of $L = \\langle g, \\mathrm{{out}} \\rangle$ (step $10^{{-6}}$) within "
              f"$10^{{-6}}$: check {len(doc.checks)}.")
    doc.record("row", {"x": [None if not np.isfinite(v) else float(v) for v in xs], "v": vs.tolist(), "sink": s,
                       "dout": g.tolist()})


# 8 ------------------------------------------------------------------------------------
def _others(doc: Document) -> None:
    doc.section("8. The other normalizers", anchor="others")
    doc.prose("The registry's other entries have no online form of their own:")
    by_why: dict[str, list[str]] = {}  # entries kept out for the same reason share one row
    forms, logits = registry_forms(), extra_logits()
    for name, why in forms.no_form.items():
        by_why.setdefault(why, []).append(get(name).title)
    doc.table(["normalizer", "why"], [[", ".join(titles), why] for why, titles in by_why.items()])
    checked = [get(name).title for name in logits]
    for name, why in forms.not_checked.items():
        if name in logits or name not in forms.extra or get(name).params != ("s_star",):
            raise AssertionError(f"not_checked[{name!r}] no longer describes the registry and the checker")
        doc.prose(f"`derive impl --form` checks kernel code of {', '.join(checked[:-1])} and {checked[-1]} against "
                  f"these forms. It does not check `{name}`, although its forms are derived above: {why}.")
    doc.prose("The sink used here is the gpt-oss one {cite:gpt-oss2025}: a learned logit per head added to the "
              "softmax denominator, with no value ($\\sigma = s$, $w = 0$). The attention sinks "
              "{cite:xiao2024} — initial tokens kept in a streaming cache, or a sink token learned in "
              "pre-training — are real keys with values of their own: the learned key/value case "
              "($\\sigma = \\langle q_i, k^* \\rangle/\\sqrt{d}$, $w = v^*$).")
