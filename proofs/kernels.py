"""Kernel forms derived: online (tiled), split-KV, LSE conventions, backward, kernel faults, and
the running state of the normalizers beyond the softmax family (docs/kernels.md).

The forms and the faulty forms are data in :mod:`derive.kernels`; this module proves the
forms (by induction over tiles and splits, for symbolic tile boundaries), refutes each
fault with a certified counterexample, proves each fault's fix for every normalizer the fault
applies to, and runs the numeric kernels on adversarial rows (``proofs/_kernels_more.py``).
"""

from __future__ import annotations

import sympy as sp

from derive.document.api import Document
from derive.document.notation import notation
from derive.kernels import backward as bw
from derive.kernels.faults import FAULTS
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
from derive.model.attention import M, i, n, t, u
from derive.model.vectors import Dot
from derive.normalizers.registry import get
from derive.render.latex import tex

import _kernels_more as more  # noqa: E402  (proofs/_kernels_more.py: the document's second half)

Zn = notation("Zk", lambda: exact_den(), latex="Z^{*}", nargs=0)
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


def document() -> Document:
    doc = Document(
        "kernels",
        "Kernel forms of attention: online, split-KV and backward, derived",
        summary=(
            "Fast attention kernels never form $p = e^{x}/Z$. They stream the keys in tiles with a running "
            "maximum, a running sum and an accumulator (online softmax {cite:milakov2018}; FlashAttention "
            "{cite:dao2022,dao2023}), split the keys across workers and merge the partial results by their "
            "log-sum-exp (flash-decoding {cite:flash-decoding2023}), and rebuild the weights from the saved "
            "log-sum-exp in the backward pass. An extra token — a sink logit {cite:gpt-oss2025}, softmax₁'s "
            "implicit zero, a zero token, a learned key/value — must enter each of these forms exactly once and "
            "in score units. This document proves each form equal to the definition for any number and size of "
            "tiles and splits and any mask, derives the whole backward pass, writes "
            f"{more.count(len(FAULTS))} ways to get the extra token wrong as the formulas they compute, each "
            "refuted next to its fix, and derives the running state of the normalizers outside the softmax "
            "family that have one."
        ),
        cfg=__import__("derive.settings", fromlist=["DEFAULT"]).DEFAULT.merge(examples=20),
    )
    _row(doc)
    _online(doc)
    _split(doc)
    _lse(doc)
    _backward(doc)
    faults = more.faults(doc, Dn)
    more.ratios(doc)
    doc.appendix("Appendix: reference material")
    more.fixes(doc, faults)
    more.runs(doc)
    with doc.results():  # built last, from the steps above; set first
        more.results(doc, faults)
    return doc


# 1 ------------------------------------------------------------------------------------
def _row(doc: Document) -> None:
    doc.section("1. The row, the extra token and what is claimed")
    doc.prose(
        "Symbols are those of the [notation sheet](notation.md#notation). Row $i$ has scores "
        "$x_t = x_{i,t}$ over keys $t = 1, \\dots, n$ ($n$ symbolic), a mask $M_t = M_{i,t}$ (any set of allowed "
        "keys, possibly empty) and values $v_t$. The softmax family adds at most one **extra token**, of score "
        "$x^{*}$ (the extra logit) and value $v^{*}$; the output and its normalizer are"
    )
    doc.definitions([[Zn(), exact_den()], [OUT(), exact_out()]],
                    caption="Plain softmax has no extra token ($x^{*} = -\\infty$: drop the $e^{x^{*}}$ terms).")
    doc.prose("Each normalizer of the softmax family in the registry is this output for one choice of "
              "$(x^{*}, v^{*})$:")
    stated: dict = {}  # (both sides) → the entries whose output they are: one display for all of them
    for name, ex in registry_forms().extra.items():
        entry = get(name)
        params = {p: ex.logit for p in entry.params}
        lhs = exact_out(ex.logit is not None)
        if ex.logit is not None:
            lhs = lhs.subs({sigma: ex.logit, w: ex.value})
        mix = sp.Sum(entry.weight(lambda k: x[i, k], key=u, **params) * v[u], (u, 1, n))
        if ex.value != 0:  # the learned token's own weight, e^{x*}/(e^{x*} + Σ e^{x_t}), times its value
            mix = mix + sp.exp(ex.logit) / (sp.exp(ex.logit) + exact_den(False)) * ex.value
        stated.setdefault((lhs, mix), []).append((name, entry, ex))
    for (lhs, mix), same in stated.items():  # entries with one formula (softmax₁, zero_token) share the proof
        name, entry, ex = same[0]
        shown = "\\sum_{u} p_u v_u" + (" + p_{*} v^{*}" if ex.value != 0 else "")
        rhs = notation(f"mix_{name}", lambda _m=mix: _m, latex=shown, nargs=0)()
        pair = (f"$x^{{*}} = {tex(ex.logit)}$, $v^{{*}} = {tex(ex.value)}$" if ex.logit is not None
                else "no extra token")
        titles = ", and ".join(f"`{n_}`" + (f", {e.title}" if e.title != n_ else "") for n_, e, _x in same)
        doc.equation(lhs, rhs, name=more.form_step(same[0][0]),
                     why=f"{pair}: $p_u$ are the weights of {titles}"
                         + (", one formula" if len(same) > 1 else "")
                         + ("; $p_{*}$ is the learned token's weight" if ex.value != 0 else "") + ".")
        for other, _e, _x in same[1:]:
            doc.fact(more.form_step(other), "proved")
    doc.prose("The sink here is gpt-oss's {cite:gpt-oss2025}: a learned logit per head in the denominator, with no "
              "value ($x^{*} = s$, $v^{*} = 0$). The attention sinks of StreamingLLM {cite:xiao2024} — initial "
              "tokens kept in a streaming cache, or a sink token learned in pre-training — are real keys with "
              "values of their own: the learned key/value case.")


# 2 ------------------------------------------------------------------------------------
def _online(doc: Document) -> None:
    doc.section("2. The online form (FlashAttention)", anchor="online")
    doc.prose(
        "Cut the keys into tiles $1..a_1, a_1{+}1..a_2, \\dots, a_{B-1}{+}1..a_B$ with $0 = a_0 \\le a_1 \\le "
        "\\dots \\le a_B = n$: any number $B$ of tiles of any sizes, empty ones allowed. The kernel keeps a state "
        "$(m_b, \\ell_b, \\mathrm{acc}_b)$:\n\n"
        "1. **Seed.** $m_0 = x^{*}$, $\\ell_0 = 1$, $\\mathrm{acc}_0 = v^{*}$ (the extra token as tile 0); without "
        "one $m_0 = -\\infty$, $\\ell_0 = 0$, $\\mathrm{acc}_0 = 0$.\n"
        "2. **Tile $b+1$.** $m_{b+1} = \\max(m_b, \\max_{t \\in \\text{tile}} x_t)$; "
        "$\\ell_{b+1} = e^{m_b - m_{b+1}}\\ell_b + \\sum_{t=a_b+1}^{a_{b+1}} M_t e^{x_t - m_{b+1}}$; "
        "$\\mathrm{acc}_{b+1} = e^{m_b - m_{b+1}}\\mathrm{acc}_b + \\sum_{t=a_b+1}^{a_{b+1}} M_t e^{x_t - m_{b+1}} v_t$.\n"
        "3. **Finalize.** $\\mathrm{out} = \\mathrm{acc}_B / \\ell_B$ and $\\mathrm{lse} = m_B + \\log \\ell_B$.\n\n"
        "**Invariant** (after $b$ tiles): the state represents the extra token and keys $1..a_b$ at the shift $m_b$:"
    )
    doc.definitions([[Lb(), Lb().unfolded()], [Ab(), Ab().unfolded()]],
                    caption="$\\ell_{b+1}$, $\\mathrm{acc}_{b+1}$: the same with $a_{b+1}$, $m_{b+1}$. No property of "
                            "$m_b$ is used: the running maximum only keeps every exponent $\\le 0$, so the proofs "
                            "hold for any real shifts.")
    doc.prose("**Base** ($b = 0$, $a_0 = 0$, $m_0 = x^{*}$): the seed satisfies the invariant.")
    doc.equation(state(0, sigma)[0], 1, name="base: ℓ", why="$e^{x^{*} - x^{*}} = 1$; the sum over keys $1..0$ is empty.")
    doc.equation(state(0, sigma)[1], w, name="base: acc", why="The same for the accumulator.")
    doc.prose("**Step** (any $a_b \\le a_{b+1}$, any shifts): one tile update maps the invariant for $b$ tiles to "
              "the invariant for $b + 1$ tiles.")
    ln, an = tile_update(Lb(), Ab(), m, m2, a + 1, a2)
    doc.equation(ln, Lb1(), where=ORDER, name="step: ℓ",
                 why="$e^{m_b - m_{b+1}} e^{x^{*} - m_b} = e^{x^{*} - m_{b+1}}$, and the sums over $1..a_b$ and "
                     "$a_b{+}1..a_{b+1}$ join.")
    doc.equation(an, Ab1(), where=ORDER, name="step: acc", why="The same for the accumulator.")
    doc.prose("By induction the invariant holds after every tile. **Finalization** ($a_B = n$): the shift cancels, "
              "whatever it is.")
    lB, aB = state(n, mB)
    doc.equation(aB / lB, OUT(), name="finalize: out", why="Numerator and denominator carry the factor $e^{-m_B}$.")
    lseB = notation("lseB", lambda: mB + sp.log(lB), latex="\\mathrm{lse}", nargs=0)
    doc.equation(sp.exp(lseB()), Zn(), name="finalize: lse",
                 why="$e^{m_B + \\log \\ell_B} = e^{m_B} \\ell_B$: the saved lse includes the extra logit.")
    doc.prose("**Without a seed.** A kernel may run softmax's form (the same step without the $e^{x^{*}}$ term) and "
              "add the extra token once at finalization, at any shift $m_f$ (kernels take $\\max(m_B, x^{*})$):")
    l0, a0 = state(a, m, extra=False)
    l1, a1 = state(a2, m2, extra=False)
    ln0, an0 = tile_update(l0, a0, m, m2, a + 1, a2)
    doc.equation(ln0, l1, where=ORDER, name="softmax step: ℓ", why="The step above without the $e^{x^{*}}$ term.")
    doc.equation(an0, a1, where=ORDER, name="softmax step: acc", why="The same for the accumulator.")
    mf = sp.Symbol("m_f", real=True)
    lf, af = finalize_extra(*state(n, mB, extra=False), mB, mf)
    doc.equation(af / lf, OUT(), name="extra token at finalization",
                 why="Rescale the state to $m_f$ and add $e^{x^{*} - m_f}$ and $e^{x^{*} - m_f} v^{*}$ once.")
    num = {f.key: k for k, f in enumerate(FAULTS, 1)}
    doc.prose(
        "**Fully masked tiles.** The step holds for any mask, so a tile whose keys are all masked adds nothing. "
        "The danger is numeric: with $m_b = -\\infty$ (nothing allowed yet, no extra token) the exponent "
        f"$x_t - m_{{b+1}}$ of a masked key is $-\\infty - (-\\infty)$, NaN (fault {num['missing_neg_inf_guard']}). "
        "Kernels exponentiate against a finite "
        "stand-in (0 when $m_{b+1} = -\\infty$, as FlashAttention-2 does) for the exponents only and keep the "
        "stored maximum at $-\\infty$; the tile then adds $e^{-\\infty} = 0$ and the state stays as it was. Storing "
        "the stand-in as the maximum is exact in exact arithmetic, but a later tile whose scores lie where "
        f"$e^{{x}}$ underflows returns 0 (fault {num['guard_stored_as_max']})."
    )
    doc.prose("**Fully masked rows.** With an extra token the row attends to it alone: $\\mathrm{out} = v^{*}$ and "
              "$\\mathrm{lse} = x^{*}$. Without one the definition has no value; kernels return $\\mathrm{out} = 0$ "
              "with $\\mathrm{lse} = -\\infty$ (FlexAttention, the split partial results of FlashAttention-2 and "
              "FlashAttention-3: "
              "the combine then weights the empty split by 0) or $\\mathrm{lse} = +\\infty$ (their non-split "
              "forward, so that the backward's $e^{x_t - \\mathrm{lse}}$ is 0 rather than NaN). An lse must not pass "
              "from one convention to the other unconverted.")
    l_, a_ = state(0, mB)
    doc.equation(a_ / l_, w, name="fully masked row", why="Every $M_t = 0$: the sums are empty (keys $1..0$ here) "
                 "and the extra token's terms cancel to $v^{*}$.")
    lse0 = notation("lse0", lambda: mB + sp.log(l_), latex="\\mathrm{lse}", nargs=0)
    doc.equation(sp.exp(lse0()), sp.exp(sigma), name="fully masked row: lse",
                 why="$e^{m_B} e^{x^{*} - m_B} = e^{x^{*}}$.")


# 3 ------------------------------------------------------------------------------------
def _split(doc: Document) -> None:
    doc.section("3. Split-KV: merging partial results (flash-decoding)", anchor="split")
    doc.prose(
        "Cut the keys into $S$ contiguous splits $a_{r-1}{+}1..a_r$ ($0 = a_0 \\le \\dots \\le a_S = n$; a split "
        "may be empty or fully masked). Each split runs the online form **without** the extra token and returns "
        "$(m_r, \\ell_r, \\mathrm{acc}_r)$, or $(o_r, \\mathrm{lse}_r) = (\\mathrm{acc}_r/\\ell_r, m_r + \\log \\ell_r)$. "
        "**Combine** at any shift $m$ (kernels: $\\max(x^{*}, \\max_r m_r)$): "
        "$\\ell = e^{x^{*} - m} + \\sum_{r} e^{m_r - m}\\ell_r$ and "
        "$\\mathrm{acc} = e^{x^{*} - m}v^{*} + \\sum_{r} e^{m_r - m}\\mathrm{acc}_r$ — the extra token once, "
        "here — then out $= \\mathrm{acc}/\\ell$, lse $= m + \\log \\ell$.\n\n"
        "A split's own state is the online form started at its first key $t_0 = a_{r-1} + 1$:"
    )
    c0 = sp.Symbol("t_0", integer=True, positive=True)  # the split's first key
    for label, run in (("ℓ", tile_den), ("acc", tile_num)):
        doc.equation(sp.exp(m - m2) * run(c0, a, m) + run(a + 1, a2, m2), run(c0, a2, m2),
                     where=sp.And(sp.Le(c0, a + 1), ORDER), name=f"a split's own state: {label}",
                     why="The step of section 2 for keys from $t_0$ on.")
    Lr = notation("Lr", lambda: state(ar, mm)[0], latex="J_r", nargs=0)
    Ar = notation("Ar", lambda: state(ar, mm)[1], latex="J^{\\mathrm{acc}}_r", nargs=0)
    doc.prose("**Invariant** (after merging splits $1..r$): the partial combine $(J_r, J^{\\mathrm{acc}}_r)$ is the "
              "state of section 2 for keys $1..a_r$ at the shift $m$; the base $r = 0$ is the extra token's term "
              "alone, and one split more ($a_r \\le a_{r+1}$; equal: an empty split) keeps it:")
    doc.definitions([[Lr(), Lr().unfolded()], [Ar(), Ar().unfolded()]])
    doc.equation(Lr() + sp.exp(mr - mm) * tile_den(ar + 1, ar1, mr), state(ar1, mm)[0], where=sp.Le(ar, ar1),
                 name="merge step: ℓ", why="$e^{m_{r+1} - m} e^{-m_{r+1}} = e^{-m}$, then the two sums join.")
    doc.equation(Ar() + sp.exp(mr - mm) * tile_num(ar + 1, ar1, mr), state(ar1, mm)[1], where=sp.Le(ar, ar1),
                 name="merge step: acc", why="The same for the accumulator.")
    ar0, m_r = sp.Symbol("a_{r-1}", integer=True, nonnegative=True), sp.Symbol("m_r", real=True)
    lr_, cr_ = tile_den(ar0 + 1, ar, m_r), tile_num(ar0 + 1, ar, m_r)
    Lse = notation("lser", lambda: m_r + sp.log(lr_), latex="\\mathrm{lse}_{r}", nargs=0)
    Ov = notation("or", lambda: cr_ / lr_, latex="o_{r}", nargs=0)
    Cr = notation("accr", lambda: cr_, latex="\\mathrm{acc}_{r}", nargs=0)
    Lr_ = notation("ellr", lambda: lr_, latex="\\ell_{r}", nargs=0)
    doc.prose("After all $S$ splits the combine is the finalized state of section 2. In $(o, \\mathrm{lse})$ form "
              "a split's lse carries its own shift:")
    doc.equation(sp.exp(Lse()), sp.exp(m_r) * Lr_(), where=sp.Le(ar0, ar), name="a split's lse",
                 check=False,  # SymPy writes e^{m + log ℓ} as e^m ℓ: both sides are one expression
                 why="$e^{m_r + \\log \\ell_r} = e^{m_r} \\ell_r$.")
    doc.equation(sp.exp(Lse()) * Ov(), sp.exp(m_r) * Cr(), where=sp.Le(ar0, ar), name="a split's output",
                 check=False,  # SymPy cancels ℓ in e^{m + log ℓ} acc/ℓ: both sides are one expression
                 why="For a split with $\\ell_r > 0$; an empty one has no $o_r$.")
    doc.prose("so $\\mathrm{lse} = \\log(e^{x^{*}} + \\sum_r e^{\\mathrm{lse}_r})$ and "
              "$\\mathrm{out} = (e^{x^{*}} v^{*} + \\sum_r e^{\\mathrm{lse}_r} o_r)\\,e^{-\\mathrm{lse}}$. An empty or "
              "fully masked split has $\\ell_r = 0$ and adds nothing, but $o_r = 0/0$ is NaN and its weight "
              "$e^{-\\infty} = 0$ does not cancel a NaN: the merge must skip it or set $o_r = 0$ (fault 8).")


# 4 ------------------------------------------------------------------------------------
def _lse(doc: Document) -> None:
    doc.section("4. LSE conventions", anchor="lse")
    m2_ = sp.Symbol("m_2", real=True)
    doc.prose("**Base 2.** Kernels use exp2: they multiply the scores by $\\log_2 e$ (folded into the softmax "
              "scale), keep $m_2$ in base-2 units and save $\\mathrm{lse}_2 = m_2 + \\log_2 \\ell_2$. The extra "
              "logit is a score and is multiplied too:")
    # (state = Z·2^(−m₂) rather than 2^(m₂)·state = Z: SymPy 1.12 prints a \cdot in the latter)
    doc.equation(base2_state(n, m2_, sigma * LOG2E), Zn() * sp.Pow(2, -m2_), name="base-2 state",
                 why="$2^{y \\log_2 e} = e^{y}$ for every exponent $y$, the extra logit's included.")
    doc.prose("so $2^{\\mathrm{lse}_2} = e^{x^{*}} + Z$, i.e. $\\mathrm{lse} = \\mathrm{lse}_2 \\ln 2$. Without the "
              "factor the kernel computes an extra logit $x^{*} \\ln 2$ (fault 3); for softmax₁ and the zero token "
              "$x^{*} = 0$ and the slip is invisible, which is how it survives tests that use them.")
    doc.prose("**With or without the extra logit.** Some kernels return the log-sum-exp over the keys only, "
              "$\\mathrm{lse}_{KV} = \\log Z$:")
    lkv = sp.log(exact_den(False))
    doc.equation(sp.exp(lkv) * (1 + sp.exp(sigma - lkv)), Zn(), name="lse from lse_KV",
                 why="$\\mathrm{lse} = \\mathrm{lse}_{KV} + \\log(1 + e^{x^{*} - \\mathrm{lse}_{KV}})$.")
    j_ = sp.Symbol("j", integer=True, positive=True)
    lseZ = notation("lseZ", lambda: sp.log(exact_den()), latex="\\mathrm{lse}", nargs=0)
    doc.prose("The backward rebuilds the forward's weights only from the lse that includes the extra logit:")
    doc.equation(M[i, j_] * sp.exp(x[i, j_] - lseZ()), M[i, j_] * sp.exp(x[i, j_]) / Zn(),
                 name="weights from the saved lse", check=False,  # SymPy writes e^{x − log Z} as e^x/Z
                 why="$e^{x_j - \\mathrm{lse}} = e^{x_j}/(e^{x^{*}} + Z)$; with $\\mathrm{lse}_{KV}$ the rebuilt "
                     "weights would sum to 1, as if there were no extra token (fault 9).")


# 5 ------------------------------------------------------------------------------------
def _backward(doc: Document) -> None:
    doc.section("5. The backward pass", anchor="backward")
    doc.prose(
        "With the upstream gradient $\\mathrm{dO}$ of the row's output the loss is "
        "$L = \\langle \\mathrm{dO}, \\mathrm{out} \\rangle$. Key $j$ enters through its score $x_j$ and value "
        "$v_j$; the other allowed keys only through $R = \\sum_{t \\ne j} M_t e^{x_t} \\ge 0$ and "
        "$U = \\sum_{t \\ne j} M_t e^{x_t} v_t$, so the derivatives below hold for every $n$ and mask. Kernels "
        "save lse (extra logit included), recompute $p_j = e^{x_j - \\mathrm{lse}}$, "
        "$p_{*} = e^{x^{*} - \\mathrm{lse}}$ and use $D = \\langle \\mathrm{dO}, \\mathrm{out} \\rangle$:"
    )
    Pj = notation("Pj", lambda: bw.P(bw.xj), latex="p_j", nargs=0)
    Ps = notation("Ps", lambda: bw.P(sigma), latex="p_{*}", nargs=0)
    outb = notation("outb", bw.out, latex="\\mathrm{out}", nargs=0)
    lseb = notation("lseb", lambda: bw.lse, latex="\\mathrm{lse}", nargs=0)
    doc.definitions([[outb(), bw.out()], [lseb(), bw.lse], [Pj(), bw.P(bw.xj)], [Dn(), bw.D]])
    doc.equation(bw.L(), Dot(bw.g, bw.out()), name="the loss", why="$\\langle \\mathrm{dO}, \\cdot \\rangle$ is linear.")
    dLx = notation("dLx", bw.dL_dx, latex="\\frac{\\partial L}{\\partial x_j}", nargs=0)
    dLs = notation("dLs", bw.dL_dsigma, latex="\\frac{\\partial L}{\\partial x^{*}}", nargs=0)
    doc.equation(dLx(), Pj() * (Dot(bw.g, bw.vj) - Dn()), name="gradient of the scores",
                 why="SymPy differentiates $L$; the engine checks the recompute form against it: "
                     "$\\mathrm{dS}_j = p_j(\\langle \\mathrm{dO}, v_j \\rangle - D)$.")
    doc.equation(bw.L(bw.vj + bw.eps * bw.delta) - bw.L(), bw.eps * Pj() * Dot(bw.g, bw.delta),
                 name="gradient of the values",
                 why="$L$ is affine in $v_j$ with slope $p_j \\mathrm{dO}$: $\\mathrm{dV} = P^{T} \\mathrm{dO}$.")
    doc.equation(dLs(), Ps() * (Dot(bw.g, w) - Dn()), name="gradient of the extra logit",
                 why="Only the normalizer and the extra token's term depend on $x^{*}$.")
    doc.equation(dLs(), -Ps() * Dn(), assume={w: 0}, name="gradient of a sink logit",
                 why="$v^{*} = 0$: raising the sink takes weight from every key in proportion.")
    doc.prose("**The query and the keys.** The scores are $x_t = \\langle q, k_t \\rangle / \\sqrt{d}$; a vector is "
              "never written in components, so each gradient is stated as the derivative in a direction $\\delta$ "
              "(the first over the whole row, any $n$ and mask):")
    dq, dq_rec = bw.dq_directional()
    dQn = notation("dQdir", lambda: dq, latex="\\frac{d}{d\\epsilon} L(q + \\epsilon \\delta)\\big|_{0}", nargs=0)
    doc.equation(dQn(), dq_rec, name="gradient of the query",
                 why="$\\mathrm{dQ} = \\sum_t \\mathrm{dS}_t k_t / \\sqrt{d}$: the scale is $1/\\sqrt{d}$, whatever "
                     "base the forward exponentiated in.")
    dk, dk_rec = bw.dk_directional()
    dKn = notation("dKdir", lambda: dk, latex="\\frac{d}{d\\epsilon} L(k_j + \\epsilon \\delta)\\big|_{0}", nargs=0)
    doc.equation(dKn(), dk_rec, name="gradient of a key",
                 why="$\\mathrm{dK}_j = \\mathrm{dS}_j q / \\sqrt{d}$ per row; summed over the rows, "
                     "$\\mathrm{dK} = \\mathrm{dS}^{T} Q / \\sqrt{d}$.")
    more.base2_backward(doc, dq, dq_rec)
    dks, dks_rec = bw.dkstar_directional()
    dKs = notation("dKsdir", lambda: dks, latex="\\frac{d}{d\\epsilon} L(k^{*} + \\epsilon \\delta)\\big|_{0}", nargs=0)
    doc.prose("**A learned token** (`add_bias_kv`) has the score $x^{*}_i = \\langle q_i, k^{*} \\rangle/\\sqrt{d}$ "
              "and the value $v^{*}$, both parameters:")
    doc.equation(dKs(), dks_rec, name="gradient of the learned key",
                 why="The chain rule through $x^{*}$: $\\partial L/\\partial k^{*} = \\sum_i p_{*,i}(\\langle "
                     "\\mathrm{dO}_i, v^{*} \\rangle - D_i)\\, q_i/\\sqrt{d}$ over the rows.")
    dvs, dvs_rec = bw.dvstar_step()
    doc.equation(dvs, dvs_rec, name="gradient of the learned value",
                 why="$L$ is affine in $v^{*}$ with slope $p_{*} \\mathrm{dO}$: "
                     "$\\partial L/\\partial v^{*} = \\sum_i p_{*,i} \\mathrm{dO}_i$.")
    Dfull = notation("Dfull", lambda: (sp.exp(sigma) * Dot(bw.g, w)
                                       + sp.Sum(M[i, t] * sp.exp(x[i, t]) * Dot(bw.g, v[t]), (t, 1, n))) / exact_den(),
                     latex="D", nargs=0)
    Pt = notation("Pt", lambda k: M[i, k] * sp.exp(x[i, k]) / exact_den(), latex="p", nargs=1)
    Pz = notation("Pz", lambda: sp.exp(sigma) / exact_den(), latex="p_{*}", nargs=0)
    doc.prose("**A check.** Adding one constant to every logit, the extra one included, changes nothing, so the "
              "gradients of all logits sum to zero, and a kernel may return the extra logit's gradient as minus "
              "the row sum of $\\mathrm{dS}$:")
    doc.equation(sp.Sum(Pt(t) * (Dot(bw.g, v[t]) - Dfull()), (t, 1, n)) + Pz() * (Dot(bw.g, w) - Dfull()), 0,
                 name="the gradients of all logits sum to 0",
                 why="$\\sum_t p_t + p_{*} = 1$ and $\\sum_t p_t \\langle \\mathrm{dO}, v_t \\rangle + "
                     "p_{*} \\langle \\mathrm{dO}, v^{*} \\rangle = D$.")
    more.algorithm(doc)
