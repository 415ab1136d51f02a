"""Kernel forms of the softmax family as data: online (tiled), split-KV, base-2, backward.

One row i with scores ``x[i, t]`` (already scaled), mask ``M[i, t]``, values ``v[t]`` and an
optional *extra logit* σ with an extra value w — the sink (σ = s, w = 0), softmax₁ and the
zero token (σ = 0, w = 0), a learned key/value (σ = s*_i = ⟨q_i, k*⟩/√d, w = v*); plain softmax has none.
The exact output is

    out = (e^σ w + Σ_{t=1}^{n} M_t e^{x_t} v_t) / (e^σ + Σ_{t=1}^{n} M_t e^{x_t}).

Kernels never form it directly. They keep a state (m, ℓ, acc) that represents the keys
seen so far, keys 1..a, through the invariant

    ℓ = e^{-m} (E + Σ_{t=1}^{a} M_t e^{x_t}),   acc = e^{-m} (E·w + Σ_{t=1}^{a} M_t e^{x_t} v_t),

with E = e^σ once the extra logit has entered and 0 before. The invariant holds for *any*
real m: the running maximum only keeps the exponents ≤ 0. Every function here returns SymPy
expressions over symbolic tile boundaries, so the proofs in ``proofs/kernels.py`` hold for
any number and size of tiles and splits; :mod:`derive.kernels.faults` builds the known
faulty forms from the same pieces.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from derive.model.attention import M, ScalarBase, i, n, t
from derive.model.vectors import VectorBase, VectorSymbol
from derive.normalizers.registry import get, names, on_use

__all__ = [
    "LOG2E",
    "Extra",
    "RegistryForms",
    "base2_state",
    "exact_den",
    "exact_num",
    "exact_out",
    "finalize_extra",
    "merge_pair",
    "ratio_state",
    "ratio_terms",
    "registry_forms",
    "shift_in",
    "state",
    "tile_den",
    "tile_num",
    "tile_update",
]

x = ScalarBase("x")  # scaled scores x[i, t]
v = VectorBase("v")  # values v[t]
sigma = sp.Symbol("x_star", real=True)  # the extra logit x* (the extra token's score; the name in code: sigma)
w = VectorSymbol("v^*")  # the extra value v* (in code: w)
LOG2E = 1 / sp.log(2)  # log₂ e, as kernels pre-multiply it into the scores

# tile boundaries: after b tiles the keys 1..a_b are seen; tile b+1 is a_b+1 .. a_{b+1}
a = sp.Symbol("a_b", integer=True, nonnegative=True)
a2 = sp.Symbol("a_{b+1}", integer=True, nonnegative=True)
# running maxima (any real numbers: the invariant does not depend on them)
m = sp.Symbol("m_b", real=True)
m2 = sp.Symbol("m_{b+1}", real=True)


def tile_den(lo, hi, shift) -> sp.Expr:
    """Σ_{t=lo}^{hi} M_t e^{x_t − shift}: one tile's (or split's) contribution to ℓ."""
    return sp.Sum(M[i, t] * sp.exp(x[i, t] - shift), (t, lo, hi))


def tile_num(lo, hi, shift) -> sp.Expr:
    """Σ_{t=lo}^{hi} M_t e^{x_t − shift} v_t: its contribution to acc."""
    return sp.Sum(M[i, t] * sp.exp(x[i, t] - shift) * v[t], (t, lo, hi))


def state(upto, shift, extra: bool = True) -> tuple[sp.Expr, sp.Expr]:
    """(ℓ, acc) of the invariant for keys 1..upto, shift m, with or without the extra logit."""
    e = sp.exp(sigma - shift) if extra else sp.S.Zero
    return e + tile_den(1, upto, shift), e * w + tile_num(1, upto, shift)


def tile_update(ell, acc, old, new, lo, hi) -> tuple[sp.Expr, sp.Expr]:
    """One tile: rescale the state from shift ``old`` to ``new`` and add the tile's keys lo..hi."""
    r = sp.exp(old - new)
    return r * ell + tile_den(lo, hi, new), r * acc + tile_num(lo, hi, new)


def merge_pair(s1, s2, new) -> tuple[sp.Expr, sp.Expr]:
    """Merge two partial states ((m₁, ℓ₁, acc₁), (m₂, ℓ₂, acc₂)) to the common shift ``new``."""
    (o1, l1, c1), (o2, l2, c2) = s1, s2
    return sp.exp(o1 - new) * l1 + sp.exp(o2 - new) * l2, sp.exp(o1 - new) * c1 + sp.exp(o2 - new) * c2


def finalize_extra(ell, acc, old, new) -> tuple[sp.Expr, sp.Expr]:
    """Add the extra logit once, at finalization, to a state kept without it."""
    return sp.exp(old - new) * ell + sp.exp(sigma - new), sp.exp(old - new) * acc + sp.exp(sigma - new) * w


def base2_state(upto, shift2, extra_logit) -> sp.Expr:
    """ℓ of a base-2 pipeline: Σ 2^{x_t·log₂e − m₂} plus 2^{extra_logit − m₂} (correct: σ·log₂e)."""
    return sp.Pow(2, extra_logit - shift2) + sp.Sum(M[i, t] * sp.Pow(2, x[i, t] * LOG2E - shift2), (t, 1, upto))


def exact_den(extra: bool = True) -> sp.Expr:
    return (sp.exp(sigma) if extra else 0) + sp.Sum(M[i, t] * sp.exp(x[i, t]), (t, 1, n))


def exact_num(extra: bool = True) -> sp.Expr:
    return (sp.exp(sigma) * w if extra else 0) + sp.Sum(M[i, t] * sp.exp(x[i, t]) * v[t], (t, 1, n))


def exact_out(extra: bool = True) -> sp.Expr:
    return exact_num(extra) / exact_den(extra)


# ---- ratios of row sums: p_j = M_j φ(x_j) / (E + Σ_t M_t ψ(x_t)) ------------------------------
# (derive.normalizers.family.row_ratio reads φ, ψ and E off a normalizer's formula.) The running state
# keeps ℓ = e^{−m}(E + Σ_{seen} M_t ψ_t) and acc = e^{−m} Σ_{seen} M_t φ_t v_t for any real m; the
# proofs write the per-key terms as φ_t = φ(x_t), ψ_t = ψ(x_t), numbers of key t alone.

phi = ScalarBase("varphi")  # φ_t: the per-key term of the numerator
psi = ScalarBase("psi")  # ψ_t: of the denominator
E = sp.Symbol("E", nonnegative=True)  # the constant of the denominator (E = e^{x*} in the softmax family)


def ratio_state(upto, shift, lo=1) -> tuple[sp.Expr, sp.Expr]:
    """(ℓ, acc) of the ratio form for keys lo..upto at the shift m (E entered at lo = 1, as the seed)."""
    ell = sp.Sum(M[i, t] * psi[i, t] * sp.exp(-shift), (t, lo, upto))
    acc = sp.Sum(M[i, t] * phi[i, t] * sp.exp(-shift) * v[t], (t, lo, upto))
    return (E * sp.exp(-shift) + ell if lo == 1 else ell), acc


def shift_in(expr: sp.Expr, y: sp.Symbol, shift: sp.Expr) -> sp.Expr:
    """e^{−shift}·expr with the factor taken inside, as a kernel computes a per-key term without
    overflow: into each exponential (e^{u}·e^{−m} = e^{u − m}), onto a term free of the score, through
    sums and constant factors, and — positive homogeneity — into max, min and abs (ReLU). Where it
    cannot go further it stays a factor. Nothing here is assumed: the documents prove the result
    equal to e^{−shift}·expr."""
    if not expr.has(y):
        return expr * sp.exp(-shift) if expr != 0 else sp.S.Zero
    if isinstance(expr, sp.exp):
        return sp.exp(expr.args[0] - shift)
    if isinstance(expr, sp.Add):
        return sp.Add(*(shift_in(a, y, shift) for a in expr.args))
    if isinstance(expr, sp.Mul):
        own = [f for f in expr.args if f.has(y)]
        if len(own) == 1:
            return sp.Mul(*(f for f in expr.args if not f.has(y))) * shift_in(own[0], y, shift)
    if isinstance(expr, (sp.Max, sp.Min)):
        return type(expr)(*(shift_in(a, y, shift) for a in expr.args))
    if isinstance(expr, sp.Abs):
        return sp.Abs(shift_in(expr.args[0], y, shift))
    return expr * sp.exp(-shift)


def ratio_terms(ratio, y: sp.Symbol, shift: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(e^{−m}φ(y), e^{−m}ψ(y), e^{−m}E) as a kernel computes them (:func:`shift_in`)."""
    return shift_in(ratio.a, y, shift), shift_in(ratio.b, y, shift), shift_in(ratio.extra, y, shift)


def exponents(expr: sp.Expr, y: sp.Symbol) -> list[sp.Expr]:
    """The exponents a running max must cover so that no e^{u − m} of ``expr`` (after
    :func:`shift_in`) exceeds 1: each u of an exponential, and 0 for a term free of the score."""
    out = [e.args[0] for e in expr.atoms(sp.exp) if e.has(y)]
    terms = [a for f in sp.preorder_traversal(expr) if isinstance(f, sp.Add) for a in f.args]
    if any(not a.has(y) and a != 0 for a in terms):
        out.append(sp.S.Zero)
    return out


@dataclass(frozen=True)
class Extra:
    """How a registered normalizer's extra logit and value instantiate (σ, w)."""

    normalizer: str
    logit: sp.Expr | None  # None: no extra logit (softmax)
    value: sp.Expr  # the extra key's value (0 unless the entry mixes a value of its own)
    text: str  # prose markup ($…$ math)


_bv = w  # the learned value v* is the extra value (k*, v*: not the projection biases b_K, b_V)


@dataclass(frozen=True)
class RegistryForms:
    """The kernel forms of the registered normalizers, read off their formulas."""

    extra: dict  # name → Extra: each entry of the softmax family, with its extra logit and value
    no_form: dict  # name → why no online form is derived (every other entry)
    not_checked: dict  # name → why ``derive impl --form`` does not check the form derived here


def _from_registry() -> RegistryForms:
    """Every entry of the softmax family with its extra logit (in the entry's own symbols) and
    value, every other entry with the reason no online form is derived, and the members the kernel
    check does not check: read off the registry's formulas as they are now."""
    from derive.normalizers.family import kernel_form, recognise
    from derive.render.latex import tex

    extra, no_form, not_checked = {}, {}, {}
    for name in names():
        entry = get(name)
        fam, why = recognise(entry)
        if fam is None:
            no_form[name] = why
            continue
        shown = {sp.Symbol(p, real=True): v for p, v in entry.symbols().items()}
        logit = None if fam.logit is None else fam.logit.xreplace(shown)
        value = _bv if entry.extra_value else sp.S.Zero
        if logit is None:
            text = r"no extra logit: $m_0 = -\infty$, $\ell_0 = 0$, $\mathrm{acc}_0 = 0$"
        else:
            text = f"$\\sigma = {tex(logit)}$, $w = {tex(value)}$"
        extra[name] = Extra(name, logit, value, text)
        facts = kernel_form(entry)
        if not facts.checked:
            not_checked[name] = facts.why
    return RegistryForms(extra, no_form, not_checked)


# the kernel forms of the registry as it is when asked, remembered while it is unchanged
registry_forms = on_use(_from_registry)
