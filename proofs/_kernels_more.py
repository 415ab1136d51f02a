"""The second half of docs/kernels.md (``proofs/kernels.py`` builds the first): the faults and
their fixes, the backward's algorithm, the normalizers beyond the softmax family, the results box
and the numeric runs. A module whose name starts with ``_`` is no document of its own."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from derive.crosscheck.evaluate import Instance
from derive.crosscheck.witness import certify
from derive.document.api import Document
from derive.document.notation import notation
from derive.errors import StepFailed
from _bound import bound  # noqa: E402  (proofs/_bound.py, beside this module)
from derive.kernels import backward as bw
from derive.kernels.faults import FAULTS, UNDERFLOW_TEXT, K, applies
from derive.kernels.forms import (
    LOG2E,
    E,
    a,
    a2,
    m,
    m2,
    phi,
    psi,
    ratio_state,
    ratio_terms,
    registry_forms,
    sigma,
    tile_den,
    v,
    w,
)
from derive.kernels.forms import x as xk
from derive.kernels.numeric import RatioKernel, backward, online, split
from derive.model.attention import M, i, n, t, u
from derive.model.vectors import Dot
from derive.normalizers.family import YS, row_ratio
from derive.normalizers.properties import derive_property
from derive.normalizers.registry import get, names
from derive.normalizers.table import anchor
from derive.render.latex import tex
from derive.render.view import assignment

_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
# the faults shown by running the numeric kernels (no formula to refute); the build fails if the fault
# table's IEEE faults are others
_IEEE = {"nan_empty_split": "the NaN of an empty split", "guard_stored_as_max": "the underflow of a stored −∞ guard",
         "missing_neg_inf_guard": "the NaN of a masked first tile without the guard"}
assert {f.key for f in FAULTS if f.part == "ieee"} == set(_IEEE), "name the IEEE faults in the kernels document"
EMPTY_SPLITS = "split-KV with empty and fully masked splits"
LATE_TILE = "the row [−∞, −1000] in tiles of one key"
MASKED_TILE = "the row [−∞, −∞, 0.5] in tiles of two keys"


def count(k: int) -> str:
    return _WORDS[k] if k < len(_WORDS) else str(k)


def form_step(name: str) -> str:
    """The name of the step that states registry entry ``name``'s output as the family's form."""
    return f"`{name}` in the family"


def members() -> list[str]:
    return list(registry_forms().extra)


# 5, continued -------------------------------------------------------------------------------
def base2_backward(doc: Document, dq, dq_rec) -> None:
    """Base 2 in the backward: the weights rebuilt with exp2 are the forward's, and the scale of dQ, dK
    is 1/√d, not the forward's scale times log₂e."""
    lse = sp.Symbol("\\mathrm{lse}", real=True)  # set upright, as the notation sheet writes it
    xt = sp.Symbol("x_t", real=True)
    doc.prose("In base 2 the kernel rebuilds $p_t = 2^{x_t \\log_2 e - \\mathrm{lse}_2}$ with "
              "$\\mathrm{lse}_2 = \\mathrm{lse} \\log_2 e$, the forward's weight; $\\mathrm{dS}$ is then the same "
              "number in either base, and $\\log_2 e$ must not re-enter the scale of $\\mathrm{dQ}$ and "
              "$\\mathrm{dK}$:")
    doc.equation(sp.Pow(2, xt * LOG2E - lse * LOG2E, evaluate=False), sp.exp(xt - lse), name="base-2 weights",
                 why="$2^{y \\log_2 e} = e^{y}$ with $y = x_t - \\mathrm{lse}$.")
    doc.refutation(LOG2E * dq_rec, dq, name="dQ scaled by log₂e",
                   why="A kernel that multiplies $\\mathrm{dS}$ by the forward's base-2 scale $\\log_2 e/\\sqrt{d}$ "
                       "returns $\\mathrm{dQ}$ (and $\\mathrm{dK}$) $\\log_2 e \\approx 1.44$ times too large.",
                   max_d=1, max_n=1)


ALGORITHM = (  # (line, the steps that prove it)
    ("Saved by the forward: $\\mathrm{out}_i$ and $\\mathrm{lse}_i = \\log(e^{x^{*}} + Z_i)$, extra logit "
     "included.", ("finalize: lse", "merge step: ℓ")),
    ("$D_i \\leftarrow \\langle \\mathrm{dO}_i, \\mathrm{out}_i \\rangle$.", ("the loss",)),
    ("For each tile of keys (the outer loop of FlashAttention-2, which keeps $\\mathrm{dK}$, $\\mathrm{dV}$ of the "
     "tile in registers) and each row $i$: $p_{i,t} \\leftarrow e^{x_{i,t} - \\mathrm{lse}_i}$ (base 2: "
     "$2^{x_{i,t} \\log_2 e - \\mathrm{lse}_{2,i}}$).", ("weights from the saved lse", "base-2 weights")),
    ("$\\mathrm{dV}_t \\mathrel{+}= p_{i,t} \\mathrm{dO}_i$.", ("gradient of the values",)),
    ("$\\mathrm{dS}_{i,t} \\leftarrow p_{i,t}(\\langle \\mathrm{dO}_i, v_t \\rangle - D_i)$.",
     ("gradient of the scores",)),
    ("$\\mathrm{dQ}_i \\mathrel{+}= \\mathrm{dS}_{i,t} k_t / \\sqrt{d}$ (atomic adds across tiles).",
     ("gradient of the query", "dQ scaled by log₂e")),
    ("$\\mathrm{dK}_t \\mathrel{+}= \\mathrm{dS}_{i,t} q_i / \\sqrt{d}$.", ("gradient of a key",)),
    ("The extra token, per row: $\\partial L / \\partial x^{*}_i = p_{*,i}(\\langle \\mathrm{dO}_i, v^{*} \\rangle "
     "- D_i)$; a sink logit shared by the rows sums $-p_{*,i} D_i$ over them.",
     ("gradient of the extra logit", "gradient of a sink logit", "the gradients of all logits sum to 0")),
    ("A learned token: $\\mathrm{d}k^{*} \\mathrel{+}= (\\partial L / \\partial x^{*}_i)\\, q_i / \\sqrt{d}$, "
     "$\\mathrm{d}v^{*} \\mathrel{+}= p_{*,i} \\mathrm{dO}_i$.",
     ("gradient of the learned key", "gradient of the learned value")),
)


def algorithm(doc: Document) -> None:
    doc.prose("**The algorithm**, every line with the steps above that prove it:\n\n"
              + "\n".join(f"{k}. {line} ({bound(doc, *steps)})" for k, (line, steps) in enumerate(ALGORITHM, 1)))


# 6 ------------------------------------------------------------------------------------------
def faults(doc: Document, Dn) -> dict:
    """Section 6: fault 1 derived, each fault with a formula refuted. Returns {key: step name}."""
    doc.section("6. Kernel faults, derived and refuted", anchor="faults")
    doc.prose(
        "Each fault is one transformation of one part of the forms — the extra logit a kernel adds, the rescaling "
        "factors of the tile update, the extra logit in the lse the backward uses, the extra logit's gradient — "
        "written once in `derive/kernels/faults.py`: the same function builds the faulty formula below, runs in "
        "the numeric kernels of the appendix and in the diagnosis of `derive impl --form`, and decides which "
        "normalizers the fault applies to. Each formula is compared with the correct one on the simplest instance "
        "whose two sides ball arithmetic proves different; "
        f"{', '.join(list(_IEEE.values())[:-1])} and {list(_IEEE.values())[-1]} are shown by running them (appendix)."
    )
    lK = lambda upto, shift, k: k * sp.exp(sigma - shift) + tile_den(1, upto, shift)  # noqa: E731
    doc.prose("**Fault 1, derived.** A kernel that adds the extra token in every tile update keeps "
              "$\\ell_b = B e^{x^{*} - m_b} + \\sum_{t \\le a_b} M_t e^{x_t - m_b}$ after $B$ tiles; the step:")
    doc.equation(sp.exp(m - m2) * lK(a, m, K) + sp.exp(sigma - m2) + tile_den(a + 1, a2, m2), lK(a2, m2, K + 1),
                 where=sp.Le(a, a2), name="faulty step: extra per tile",
                 why="The correct step plus one more $e^{x^{*} - m_{b+1}}$.")
    steps = {}
    for k, f in enumerate(FAULTS, 1):
        if f.rewrite is None:
            continue
        shown = lambda e: sp.sympify(e).subs(bw.D, Dn())  # noqa: E731  (D for ⟨dO, out⟩, as in section 5)
        name = f"fault {k}: {f.title}"
        doc.refutation(shown(f.faulty()), shown(f.correct()), name=name,
                       why=f"Kernel: {f.does_md}. Computes: {f.computes_md}.",
                       fixed=f.fixed or None, assume=f.assume or None, **f.sizes)
        steps[f.key] = name
    doc.record("faults", [{"key": f.key, "title": f.title, "form": f.form, "fix": f.fix} for f in FAULTS])
    return steps


# 7 ------------------------------------------------------------------------------------------
RATIO_L = notation("Lr_b", lambda: ratio_state(a, m)[0], latex="\\ell_b", nargs=0)
RATIO_A = notation("Ar_b", lambda: ratio_state(a, m)[1], latex="\\mathrm{acc}_b", nargs=0)
RATIO_L1 = notation("Lr_b1", lambda: ratio_state(a2, m2)[0], latex="\\ell_{b+1}", nargs=0)
RATIO_A1 = notation("Ar_b1", lambda: ratio_state(a2, m2)[1], latex="\\mathrm{acc}_{b+1}", nargs=0)
_RATIO_KINDS = {"scores": "softmax of modified scores", "elementwise": "elementwise (tiles add)",
                "ratio": "ratio of row sums"}


def _shown(expr):
    """A per-key term for a table: N_i for the number of allowed keys, x for the score."""
    Nsym = sp.Symbol("N_i", positive=True)
    return expr.replace(lambda e: isinstance(e, sp.Sum) and e.function.has(M), lambda e: Nsym).xreplace(
        {YS: sp.Symbol("x", real=True), **{sp.Symbol(p, real=True): sym for p, sym in _param_symbols().items()}})


def _param_symbols() -> dict:
    out = {}
    for name in names():
        for p, sym in get(name).symbols().items():
            out.setdefault(p, sym) if isinstance(sym, sp.Symbol) else None
    out["s"] = sp.Symbol("lambda_ssmax", real=True)  # the only s a ratio of row sums has is SSMax's scale
    return out


def ratios(doc: Document) -> None:
    doc.section("7. Beyond the softmax family", anchor="others")
    doc.prose(
        "A normalizer whose weight is a **ratio of row sums**, $p_j = M_j \\varphi(x_j)/(E + \\sum_t M_t "
        "\\psi(x_t))$ — $\\varphi$, $\\psi$ terms of one key's own score (and of row constants: parameters, "
        "$N_i$), $E \\ge 0$ free of the scores — keeps the same running state with other per-key terms: "
        "$\\ell_b = e^{-m_b}(E + \\sum_{t \\le a_b} M_t \\psi_t)$, $\\mathrm{acc}_b = e^{-m_b} \\sum_{t \\le a_b} M_t "
        "\\varphi_t v_t$ ($\\varphi_t = \\varphi(x_t)$, $\\psi_t = \\psi(x_t)$). The softmax family is "
        "$\\varphi = \\psi = e^{x}$, $E = e^{x^{*}}$. For any per-key terms the tile update (a split merges "
        "as a tile) keeps the invariant, and the state finalizes to the definition:"
    )
    doc.definitions([[RATIO_L(), RATIO_L().unfolded()], [RATIO_A(), RATIO_A().unfolded()]])
    lt, at = ratio_state(a2, m2, lo=a + 1)
    doc.equation(sp.exp(m - m2) * RATIO_L() + lt, RATIO_L1(), where=sp.Le(a, a2), name="ratio step: ℓ",
                 why="As for softmax: $e^{m_b - m_{b+1}} e^{-m_b} = e^{-m_{b+1}}$, then the sums join.")
    doc.equation(sp.exp(m - m2) * RATIO_A() + at, RATIO_A1(), where=sp.Le(a, a2), name="ratio step: acc",
                 why="The same for the accumulator.")
    mB = sp.Symbol("m_B", real=True)
    # The denominator E + Σ_t M_t ψ_t may be 0 for per-key terms of any sign (then the weights have no
    # value either): the finalize step is stated where it is not, as a symbol D ≠ 0 of its own.
    D = sp.Symbol("D", nonzero=True)
    aB = ratio_state(n, mB)[1]
    doc.prose("With $D = E + \\sum_t M_t \\psi_t \\ne 0$, the definition's denominator (where it is 0 the "
              "weights have no value), the state after the last tile is $\\ell_B = e^{-m_B} D$:")
    doc.equation(aB / (sp.exp(-mB) * D), ratio_state(n, 0)[1] / D, name="ratio finalize",
                 why="The factor $e^{-m_B}$ cancels.")
    rows, shown_forms = [], {}
    for name in names():
        r, _ = row_ratio(get(name))
        if r is None or r.kind == "family":
            continue
        entry = get(name)
        if r.kind == "elementwise":
            der = derive_property(name, "jacobian_offdiagonal")
            doc.fact(f"{name}: elementwise", "proved" if der.value_text() == "= 0" else "failed")
            why = (f"[$\\partial p_j/\\partial x_k = 0$](normalizers.md#{anchor(name, 'jacobian_offdiagonal')}) "
                   f"({'{'}verdict:{name}: elementwise=proved{'}'}): $p_t v_t$ added tile by tile")
            xt = {sp.Symbol("x", real=True): sp.Symbol("x_t", real=True)}  # the weight of key t: its own score
            rows.append([f"`{name}`", _RATIO_KINDS[r.kind], f"$p_t = {tex(_shown(r.a).xreplace(xt))}$", "—", why])
            shown_forms[name] = f"{name}: elementwise"
            continue
        # the parameters under the names the table gives them (ε, λ, c_cap), over their domains
        params = {p: _param_symbols().get(p, sp.Symbol(p, real=True)) for p in entry.params}
        named = {sp.Symbol(p, real=True): sym for p, sym in params.items()}  # row_ratio's own symbols
        a_t, b_t = (e.xreplace({YS: xk[i, t], **named}) for e in (r.a, r.b))
        lhs = sp.Sum(M[i, t] * a_t * v[t], (t, 1, n)) / (r.extra.xreplace(named) + sp.Sum(M[i, t] * b_t, (t, 1, n)))
        mix = notation(f"mix_r_{name}", lambda _n=name, _p=params: sp.Sum(
            get(_n).weight(lambda k: xk[i, k], key=u, **_p) * v[u], (u, 1, n)), latex="\\sum_{u} p_u v_u", nargs=0)()
        step = f"`{name}` as a ratio of row sums"
        doc.equation(lhs, mix, name=step, why=f"$p_u$ the weights of `{name}`, {entry.title}.")
        names_ = [step]
        ms = sp.Symbol("m", real=True)
        ka, kb, ke = ratio_terms(r, YS, ms)
        if not _plain_shift(r.a, ka, ms):
            for part, mine, kernel in (("numerator", r.a, ka), ("denominator", r.b, kb)):
                kstep = f"`{name}`: the {part} term a kernel computes"
                doc.equation(mine * sp.exp(-ms), kernel, name=kstep,
                             why="$e^{-m}$ taken into the max and the absolute value (positive homogeneity), so "
                                 "that no exponent exceeds $m$.")
                names_.append(kstep)
        shift = "$m = \\max(0, \\max_t x_t)$" if sp.S.Zero in _exps(r) else "$m = \\max_t g(x_t)$"
        terms = (f"$\\varphi = \\psi = e^{{g(x)}}$, $g(x) = {tex(_shown(r.a.args[0]))}$" if r.kind == "scores" else
                 f"$\\varphi = {tex(_shown(r.a))}$, $\\psi = {tex(_shown(r.b))}$")
        rows.append([f"`{name}`", _RATIO_KINDS[r.kind], terms, f"$E = {tex(_shown(r.extra))}$; {shift}",
                     bound(doc, *names_)])
        shown_forms[name] = step
    doc.prose("The normalizers of the registry outside the family that are ratios of row sums, read off their "
              "formulas (`derive.normalizers.family.row_ratio`); `derive impl --form online` and "
              "`--form split` check kernel code of each against its definition:")
    doc.table(["normalizer", "form", "per-key terms", "constant, shift", "evidence"], rows)
    doc.record("ratios", {k: v_ for k, v_ in shown_forms.items()})
    _no_state(doc)


def _exps(r) -> list:
    from derive.kernels.forms import exponents

    return exponents(r.a + r.b, YS)


def _plain_shift(a_, ka, ms) -> bool:
    """The kernel's term is e^{u − m} for a term e^{u}: SymPy writes both sides alike, nothing to show."""
    return isinstance(a_, sp.exp) and ka == sp.exp(a_.args[0] - ms)


def _no_state(doc: Document) -> None:
    """Clipped softmax and stick-breaking: no running state is derived; what is checked about them."""
    clip, sb = get("clipped"), get("stick_breaking")
    zeta, gamma = (sp.nsimplify(clip.sample_values()[p]) for p in ("zeta", "gamma"))

    def clipped_out(xs, vs):
        z = sum(sp.exp(x_) for x_ in xs)
        return sum(sp.Min(1, sp.Max(0, (zeta - gamma) * sp.exp(x_) / z + gamma)) * v_ for x_, v_ in zip(xs, vs))

    # two rows whose first split has the same softmax state (ℓ = 2, acc = 2 at shift 0), the same second split
    row_a, row_b = ((0, 0, 0), (2, 0, 0)), ((sp.log(2), 0), (1, 0))
    out_a, out_b = clipped_out(*row_a), clipped_out(*row_b)
    if certify(out_a, out_b, Instance(d=1, n=3), {}) is None:
        raise StepFailed("kernels: clipped softmax: no certified difference between the two rows")
    doc.fact("clipped: the softmax state does not determine the output", "refuted")

    def sb_out(xs, vs):
        sig = [1 / (1 + sp.exp(-x_)) for x_ in xs]
        return sum(s_ * sp.prod([1 - q for q in sig[k + 1:]]) * v_ for k, (s_, v_) in enumerate(zip(sig, vs)))

    fwd, rev = sb_out((0, 1), (1, 0)), sb_out((1, 0), (0, 1))
    if certify(fwd, rev, Instance(d=1, n=2), {}) is None:
        raise StepFailed("kernels: stick-breaking: no certified difference when two keys swap")
    doc.fact("stick-breaking: a swap of two keys changes the output", "refuted")
    fmt = lambda e: f"{float(sp.N(e, 30)):.4f}"  # noqa: E731
    doc.prose(
        f"**No running state is derived** for {clip.title} and {sb.title}; two checked facts say why the state "
        "above does not serve. Clipped softmax clips each weight after normalizing, so its output is not a function "
        "of the splits' softmax states: the rows $x = (0, 0, 0)$, $v = (2, 0, 0)$ and $x = (\\ln 2, 0)$, "
        "$v = (1, 0)$, cut after all keys but the last, have the same states (first split $\\ell = 2$, "
        "$\\mathrm{acc} = 2$ at $m = 0$; second split equal) and outputs "
        f"{fmt(out_a)} and {fmt(out_b)} (exact values, $\\zeta = {tex(zeta)}$, $\\gamma = {tex(gamma)}$, "
        "certified different by ball arithmetic). Stick-breaking weights a key by the keys after it, so its output "
        "depends on their order, which no sum over the row sees: with $x = (0, 1)$, $v = (1, 0)$ it is "
        f"{fmt(fwd)}, with the two keys swapped {fmt(rev)} (certified) — it is not a ratio of row sums."
    )


# results -------------------------------------------------------------------------------------
FORM_STEPS = ("base: ℓ", "base: acc", "step: ℓ", "step: acc", "finalize: out", "finalize: lse",
              "softmax step: ℓ", "softmax step: acc", "extra token at finalization", "fully masked row",
              "a split's own state: ℓ", "a split's own state: acc", "merge step: ℓ", "merge step: acc",
              "base-2 state", "lse from lse_KV")
FIX_EVIDENCE = {  # fault → the steps and checks that prove its fix (the per-normalizer proofs are added)
    "extra_per_tile": ("base: ℓ", "base: acc", "step: ℓ", "step: acc", "finalize: out",
                       "extra token at finalization"),
    "seeded_twice_empty_split": ("merge step: ℓ", "merge step: acc", EMPTY_SPLITS),
    "missing_log2e": ("base-2 state",),
    "scale_on_extra": (),
    "unshifted_extra": ("extra token at finalization",),
    "acc_not_rescaled": ("step: acc",),
    "sum_not_rescaled": ("step: ℓ",),
    "nan_empty_split": (EMPTY_SPLITS,),
    "kv_only_lse_backward": ("weights from the saved lse", "gradient of the scores"),
    "extra_grad_missing": ("gradient of the extra logit",),
    "extra_grad_sign": ("gradient of the extra logit",),
    "guard_stored_as_max": (LATE_TILE,),
    "missing_neg_inf_guard": (MASKED_TILE,),
}
assert set(FIX_EVIDENCE) == {f.key for f in FAULTS}, "every fault's fix cites its proof"


def _fix_steps(doc: Document, f) -> tuple:
    """The fault's fix evidence: its steps, each applicable normalizer's own form in the family, and
    the per-normalizer proof of the fix where the fix is a formula (appendix A.1)."""
    listed = [name for name in members() if applies(f, get(name))]
    own = tuple(form_step(name) for name in listed)
    per = tuple(fix_name(f.part, name) for name in listed if f.part in ("lse", "grad"))
    return FIX_EVIDENCE[f.key] + own + per


def fix_name(part: str, name: str) -> str:
    return f"fix of the {'lse' if part == 'lse' else 'extra logit gradient'} for `{name}`"


def results(doc: Document, fault_steps: dict) -> None:
    doc.prose(
        f"**Forms.** For any number and size of tiles and splits and any mask — empty splits, fully masked tiles and "
        f"rows included — the online form, the split-KV merge and the lse the forward saves equal the definition, "
        f"the extra token entering once, in score units, times $\\log_2 e$ in base 2 ({bound(doc, *FORM_STEPS)}; "
        f"sections 2–4). Each normalizer of the family is one choice of $(x^{{*}}, v^{{*}})$ "
        f"({bound(doc, *(form_step(nm) for nm in members()))})."
    )
    grads = [
        ("$\\mathrm{dS}_t = p_t(\\langle \\mathrm{dO}, v_t \\rangle - D)$", "gradient of the scores"),
        ("$\\mathrm{dV} = P^{T}\\mathrm{dO}$", "gradient of the values"),
        ("$\\mathrm{dQ} = \\mathrm{dS}\\,K/\\sqrt{d}$, $\\mathrm{dK} = \\mathrm{dS}^{T} Q/\\sqrt{d}$ (no $\\log_2 e$)",
         "gradient of the query", "gradient of a key", "dQ scaled by log₂e"),
        ("$\\partial L/\\partial x^{*} = p_{*}(\\langle \\mathrm{dO}, v^{*} \\rangle - D)$, $-p_{*} D$ for a sink",
         "gradient of the extra logit", "gradient of a sink logit"),
        ("a learned token: $\\partial L/\\partial k^{*} = \\sum_i (\\partial L/\\partial x^{*}_i) q_i/\\sqrt{d}$, "
         "$\\partial L/\\partial v^{*} = \\sum_i p_{*,i}\\mathrm{dO}_i$", "gradient of the learned key",
         "gradient of the learned value"),
    ]
    doc.prose("**Backward** (section 5, with its algorithm): " + "; ".join(
        f"{text} ({bound(doc, *steps)})" for text, *steps in grads) + ".")
    rows = []
    for k, f in enumerate(FAULTS, 1):
        shown = f"§6, {bound(doc, fault_steps[f.key])}" if f.key in fault_steps else "run (A.2)"
        rows.append([f"{k}. {f.title}", f.fix_md, f"{shown}; fix {bound(doc, *_fix_steps(doc, f))}"])
    doc.prose(f"**Faults.** {count(len(FAULTS)).capitalize()} ways to get the extra token or the running state "
              "wrong (section 6: what each computes, refuted by a certified counterexample or shown by a run), and "
              "the fix of each, proved for every normalizer it applies to (appendix A.1):")
    doc.table(["fault", "fix", "evidence"], rows,
              caption=f"Fault {[f.key for f in FAULTS].index('guard_stored_as_max') + 1}: the underflow sets in {UNDERFLOW_TEXT}.")
    doc.prose("**Beyond the family** (section 7): softpick, SSMax, the soft cap, sigmoid attention with or without "
              "the bias $-\\log N_i$ and ReLU/$N_i$ have a running state of their own, proved, and `derive impl "
              "--form online|split` checks kernels of them; clipped softmax and stick-breaking get none, for the "
              "checked reasons given there.")


# appendix -------------------------------------------------------------------------------------
def fixes(doc: Document, fault_steps: dict) -> None:
    """A.1: each fix that is a formula, proved for each normalizer its fault applies to; the
    applicability table."""
    doc.section("A.1. The fixes, proved for each normalizer", anchor="fixes")
    doc.prose("A fix of the extra token's place (faults 1–7) is the form of sections 2–4, proved for symbolic "
              "$(x^{*}, v^{*})$ and so for each normalizer's pair of section 1. A fix that is a formula — the "
              "weights rebuilt from the lse with the extra logit (fault 9), the extra logit's gradient (faults 10 "
              "and 11) — is proved here for each normalizer it is listed for, that normalizer's $x^{*}$ and "
              "$v^{*}$ put in: the recompute form the fix prescribes against SymPy's derivative of the loss.")
    forms = registry_forms().extra
    done = set()
    for f in FAULTS:
        if f.part not in ("lse", "grad"):
            continue
        for name in members():
            if not applies(f, get(name)) or (f.part, name) in done:
                continue
            done.add((f.part, name))
            ex = forms[name]
            put = {sigma: ex.logit, w: ex.value}
            truth = sp.diff(bw.L(), bw.xj if f.part == "lse" else sigma)
            label = "\\frac{\\partial L}{\\partial x_j}" if f.part == "lse" else "\\frac{\\partial L}{\\partial x^{*}}"
            lhs = notation(f"truth_{f.part}_{name}", lambda _e=truth.subs(put): _e, latex=label, nargs=0)()
            doc.equation(lhs, f.correct().subs(put), name=fix_name(f.part, name),
                         why=f"$x^{{*}} = {tex(ex.logit)}$, $v^{{*}} = {tex(ex.value)}$.")
    rows = [[f"{k}. {f.title}", ", ".join(get(nm).title for nm in members() if applies(f, get(nm))) or "none"]
            for k, f in enumerate(FAULTS, 1)]
    doc.prose("**Where each fault applies.** A fault applies to a member of the family when the form its formula "
              "gives has the part the fault transforms and the transformation changes it: $\\log_2 e$ or the score "
              "scale on an extra logit of 0 (softmax₁, the zero token) changes nothing, which is how those slips "
              "survive tests that use them; a gradient of the extra logit needs a parameter in it. The diagnosis "
              "of `derive impl --form` tries exactly these:")
    doc.table(["fault", "applies to"], rows)
    doc.record("applies", {f.key: [nm for nm in members() if applies(f, get(nm))] for f in FAULTS})


def runs(doc: Document) -> None:
    doc.section("A.2. The kernels run on adversarial rows", anchor="runs")
    rng = np.random.default_rng(10)
    xs = np.round(rng.normal(size=7) * 3, 3)
    xs[2] = -np.inf
    vs = np.round(rng.normal(size=(7, 3)), 3)
    s = 0.7
    shown = ", ".join("-\\infty" if not np.isfinite(v_) else f"{v_:g}" for v_ in xs)
    allowed = int(np.isfinite(xs).sum())
    doc.prose(
        "`derive/kernels/numeric.py` runs the forms in float64 as a fused kernel does (base-2 exponents, the "
        f"$-\\infty$ guard, per-split $(o, \\mathrm{{lse}})$ merged) on a row of {len(xs)} keys, "
        f"{count(len(xs) - allowed)} of them masked, scores $x = ({shown})$, values $v_t \\in \\mathbb{{R}}^3$ and a "
        f"sink $s = {s}$ (`docs/kernels.json`, key `row`), against the definition evaluated directly, within a "
        f"relative tolerance of {doc.cfg.rtol:g}:"
    )
    z = np.exp(xs)
    exact = (z @ vs) / (z.sum() + math.exp(s))
    exact_lse = math.log(z.sum() + math.exp(s))
    runs_ = ([("online", f"tiles of {blk} key{'s' if blk > 1 else ''}", online(xs, vs, blk, s)) for blk in (1, 2, 3, 7)]
             + [("split-KV", f"{k} split{'s' if k > 1 else ''}", split(xs, vs, k, s)) for k in (1, 3)])
    rows = []
    for form, shape, (out, lse) in runs_:
        doc.example_check(f"{form}, {shape}", [*out, lse], [*exact, exact_lse])
        rows.append([form, shape, f"check {len(doc.checks)}"])
    out9, lse9 = split(xs, vs, 9, s)
    doc.example_check(EMPTY_SPLITS, [*out9, lse9], [*exact, exact_lse], detail="9 splits of 7 keys")
    rows.append(["split-KV", "9 splits: two empty, one fully masked", f"check {len(doc.checks)}"])
    masked = np.full(7, -np.inf)
    o1, l1 = online(masked, vs, 2, s)
    o0, l0 = online(masked, vs, 2, None)
    if l0 != -np.inf:
        raise AssertionError("a fully masked softmax row must have lse = −inf")
    doc.example_check("fully masked row, run", [*o1, l1, *o0], [0, 0, 0, s, 0, 0, 0],
                      detail="with a sink: out = 0, lse = s; softmax: out = 0 (lse = −∞)")
    rows.append(["online, every key masked", "sink: out $= 0$, lse $= s$; none: out $= 0$, lse $= -\\infty$",
                 f"check {len(doc.checks)}"])
    bad, _ = split(xs, vs, 9, s, fault="nan_empty_split")
    if not np.all(np.isnan(bad)):
        raise AssertionError("the unguarded empty split must produce NaN")
    late = np.array([-np.inf, -1000.0])
    good, good_lse = online(late, vs[:2], 1, None)
    poor, poor_lse = online(late, vs[:2], 1, None, fault="guard_stored_as_max")
    doc.example_check(LATE_TILE, [*good, good_lse], [*vs[1], -1000.0],
                      detail="out = v₂, lse = −1000: the guard is not stored as the max")
    if not (np.all(poor == 0) and poor_lse == -np.inf):
        raise AssertionError("storing the guard as the running max must underflow on [−inf, −1000]")
    rows.append(["online, guard kept", "the row $[-\\infty, -1000]$, tiles of one key", f"check {len(doc.checks)}"])
    first = np.array([-np.inf, -np.inf, 0.5])
    kept, kept_lse = online(first, vs[:3], 2, None)
    unguarded, unguarded_lse = online(first, vs[:3], 2, None, fault="missing_neg_inf_guard")
    doc.example_check(MASKED_TILE, [*kept, kept_lse], [*vs[2], 0.5],
                      detail="out = v₃, lse = 0.5: a fully masked first tile leaves the state alone")
    if not (np.all(np.isnan(unguarded)) and np.isnan(unguarded_lse)):
        raise AssertionError("without the −∞ guard a fully masked first tile must give NaN")
    rows.append(["online, masked first tile", "the row $[-\\infty, -\\infty, 0.5]$, tiles of two keys",
                 f"check {len(doc.checks)}"])
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
                      detail=f"{count(allowed)} allowed keys, sink s = {s}, step 1e-6")
    rows.append(["backward", "$\\mathrm{dS}$ and $\\partial L/\\partial s$ against central differences, step "
                 "$10^{-6}$ (tolerance $10^{-6}$)", f"check {len(doc.checks)}"])
    doc.table(["form", "run", "evidence"], rows)
    num = {f.key: k for k, f in enumerate(FAULTS, 1)}
    doc.prose(f"Without the guards the same kernels show faults {num['nan_empty_split']}, "
              f"{num['guard_stored_as_max']} and {num['missing_neg_inf_guard']}: the 9 splits give "
              f"{', '.join(str(v_) for v_ in bad)} for the whole row ($0 \\cdot \\mathrm{{NaN}} = \\mathrm{{NaN}}$); "
              f"storing the guard 0 as the running max gives out = {', '.join(str(float(v_)) for v_ in poor)} "
              "and lse $= -\\infty$ on $[-\\infty, -1000]$, since $e^{-1000 - 0}$ underflows; and exponentiating "
              "against $m = -\\infty$ gives out = "
              f"{', '.join(str(float(v_)) for v_ in unguarded)} on $[-\\infty, -\\infty, 0.5]$ in tiles of two keys, "
              "since $e^{-\\infty - (-\\infty)}$ is NaN.")
    doc.record("row", {"x": [None if not np.isfinite(v_) else float(v_) for v_ in xs], "v": vs.tolist(), "sink": s,
                       "dout": g.tolist()})
    _ratio_runs(doc, rng)


def _ratio_runs(doc: Document, rng) -> None:
    """The ratio-of-row-sums kernels against the definition's exact weights, on rows that overflow a
    naive evaluation."""
    import mpmath

    row = np.array([800.0, 799.0, -3.0, -np.inf, 0.5])
    vals = np.round(rng.normal(size=(len(row), 2)), 3)
    rows = []
    for name in names():
        r, _ = row_ratio(get(name))
        if r is None or r.kind == "family":
            continue
        entry = get(name)
        params = {p: float(v_) for p, v_ in entry.sample_values().items()}
        kern = RatioKernel(entry, params)
        with mpmath.workdps(40):
            p = entry.reference([float(x_) for x_ in row], [bool(np.isfinite(x_)) for x_ in row], **params)
            want = [float(mpmath.fsum(w_ * float(vals[t_, c]) for t_, w_ in enumerate(p))) for c in range(2)]
        got = [*kern.online(row, vals, 2), *kern.split(row, vals, 3)]
        doc.example_check(f"`{name}`: online, tiles of 2, and 3 splits", got, want * 2)
        rows.append([f"`{name}`", ", ".join(f"{k}: {v_:g}" for k, v_ in params.items()) or "—",
                     f"check {len(doc.checks)}"])
    doc.prose("The kernels of section 7 (`RatioKernel`) on the row $x = (800, 799, -3, -\\infty, 0.5)$, where "
              "$e^{800}$ overflows float64, in tiles of 2 and in 3 splits, against the definition's exact weights "
              "(ball arithmetic):")
    doc.table(["normalizer", "parameters", "evidence"], rows)
    _ = (t, Dot, assignment, phi, psi, E)
