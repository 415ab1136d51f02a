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
    "registry_forms",
    "state",
    "tile_den",
    "tile_num",
    "tile_update",
]

x = ScalarBase("x")  # scaled scores x[i, t]
v = VectorBase("v")  # values v[t]
sigma = sp.Symbol("sigma", real=True)  # the extra logit
w = VectorSymbol("w")  # the extra value
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


@dataclass(frozen=True)
class Extra:
    """How a registered normalizer's extra logit and value instantiate (σ, w)."""

    normalizer: str
    logit: sp.Expr | None  # None: no extra logit (softmax)
    value: sp.Expr  # the extra key's value (0 unless the entry mixes a value of its own)
    text: str  # prose markup ($…$ math)


_bv = VectorSymbol("v^*")  # the learned value (k*, v*: not the projection biases b_K, b_V)


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
