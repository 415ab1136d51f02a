"""Concrete instances for the symbols an expression uses.

:func:`signature` reads what an expression needs (vectors, per-token vector families,
scalar tables, masks, scalars, index symbols); :func:`make_instance` fills it from a
numpy generator, either with bounded floats (cross-checks) or with small integers
(counterexamples a reader can redo by hand).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from derive.crosscheck.evaluate import Instance
from derive.model.attention import LabelBase, MaskBase
from derive.model.attention import d as D
from derive.model.attention import n as N
from derive.model.vectors import VectorBase, VectorSymbol

__all__ = ["LABELS", "MASK_KINDS", "Signature", "first_index", "make_instance", "signature"]

MASK_KINDS = ("full", "causal", "random")
LABELS = 3  # a label vector's entries are 0, 1, 2 (three documents are enough to tell masks apart)


@dataclass(frozen=True)
class Signature:
    vectors: tuple[sp.Symbol, ...]
    families: tuple[str, ...]
    tables: tuple[str, ...]
    masks: tuple[str, ...]
    scalars: tuple[sp.Symbol, ...]
    indices: tuple[sp.Symbol, ...]
    min_n: int = 1  # the largest concrete key index used (e.g. k[2] needs n ≥ 2)
    labels: tuple[str, ...] = ()  # label vectors (LabelBase): one integer per position


def signature(*exprs: sp.Basic) -> Signature:
    vecs, fams, tabs, masks, scal, idx, labs = set(), set(), set(), set(), set(), set(), set()
    min_n = 1
    labels = {ind.base.label for e in exprs for ind in e.atoms(sp.Indexed)}
    for e in exprs:
        for s in e.free_symbols:
            if s in labels:
                continue
            if isinstance(s, VectorSymbol):
                vecs.add(s)
            elif isinstance(s, sp.Indexed) or isinstance(s, sp.IndexedBase) or s in (D, N):
                continue
            elif s.is_integer:
                idx.add(s)
            else:
                scal.add(s)
        for ind in e.atoms(sp.Indexed):
            base = ind.base
            if isinstance(base, VectorBase):
                fams.add(base.name)
            elif isinstance(base, MaskBase):
                masks.add(base.name)
            elif isinstance(base, LabelBase):
                labs.add(base.name)
            else:
                tabs.add(base.name)
            for a in ind.indices:
                if a.is_Integer:
                    min_n = max(min_n, int(a))
                for s in a.free_symbols:
                    if s.is_integer and s not in (D, N):
                        idx.add(s)
    # bound summation variables are not free: drop those that only occur bound
    free = set().union(*(e.free_symbols for e in exprs)) if exprs else set()
    idx = {s for s in idx if s in free}
    key = lambda s: s.name
    return Signature(
        tuple(sorted(vecs, key=key)),
        tuple(sorted(fams)),
        tuple(sorted(tabs)),
        tuple(sorted(masks)),
        tuple(sorted(scal, key=key)),
        tuple(sorted(idx, key=key)),
        min_n,
        tuple(sorted(labs)),
    )


def first_index(s: sp.Symbol) -> int:
    """The smallest value an index symbol takes: 0 for a 0-based one (the head h), else 1."""
    return 0 if s.is_nonnegative and not s.is_positive else 1


def mask_table(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    m = np.zeros((n + 1, n + 1))
    if kind == "full":
        m[1:, 1:] = 1
    elif kind == "causal":
        m[1:, 1:] = np.tri(n)  # row r allows keys 1..r
    else:
        m[1:, 1:] = rng.random((n, n)) < 0.5
        for r in np.flatnonzero(~m[1:, 1:].any(axis=1)) + 1:  # an allowed set must not be empty
            m[r, rng.integers(1, n + 1)] = 1  # (a row's fix leaves the others as they are)
    return m


def make_instance(
    sig: Signature,
    d: int,
    n: int,
    rng: np.random.Generator,
    *,
    bound: float = 2.0,
    integers: bool = False,
    mask: str = "full",
    fixed: dict | None = None,
) -> tuple[Instance, dict]:
    """An instance and an environment binding each index symbol to a value in 1..n."""

    def draw(*shape):
        if integers:
            return rng.integers(-int(bound), int(bound) + 1, size=shape).astype(float)
        return rng.uniform(-bound, bound, size=shape)

    inst = Instance(d=d, n=n)
    for v in sig.vectors:
        inst.vectors[v] = draw(d)
    for f in sig.families:
        fam = np.zeros((n + 1, d))
        fam[1:] = draw(n, d)
        inst.families[f] = fam
    for tname in sig.tables:
        tab = np.zeros((n + 1, n + 1))
        tab[1:, 1:] = draw(n, n)
        inst.tables[tname] = tab
    for mname in sig.masks:
        inst.tables[mname] = mask_table(mask, n, rng)
    for lname in sig.labels:
        inst.tables[lname] = np.concatenate([[0], rng.integers(0, LABELS, size=n)]).astype(float)
    for s in sig.scalars:
        inst.scalars[s] = float(draw(1)[0])
    env = {s: int(rng.integers(first_index(s), n + 1)) for s in sig.indices}
    for k, v in (fixed or {}).items():
        env[k] = v
    return inst, env
