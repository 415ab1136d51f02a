"""Tensor layouts of attention kernels: ``bhnd``, ``bnhd``, ``nd``, ``nhd``, ...

A layout names the axes of q, k and v in order: ``b`` batch, ``h`` heads, ``n`` the sequence
(queries in q and out, keys in k and v), ``d`` the head dimension. ``n`` and ``d`` are required
and ``d`` is last; ``b`` and ``h`` may be left out (a kernel for one sequence and one head:
``nd``). derive builds every input in the canonical order (B, H, n, d) and permutes it to the
kernel's layout; ``out`` has the layout of q with the value dimension, ``lse`` the layout of q
without ``d``; an additive mask has shape (B, 1, M, N) restricted to the axes the layout has
(b → B, h → 1), the broadcast shape Hugging Face's kernels take.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from derive.errors import InputError

__all__ = ["Layout", "parse_layout"]

CANONICAL = "bhnd"


@dataclass(frozen=True)
class Layout:
    axes: str  # e.g. "bnhd"

    @property
    def has_batch(self) -> bool:
        return "b" in self.axes

    @property
    def has_heads(self) -> bool:
        return "h" in self.axes

    def to_layout(self, a: np.ndarray, canonical: str = CANONICAL) -> np.ndarray:
        """An array in ``canonical`` order ((B, H, n, d), or (B, H, n) for an lse) → the layout's
        order; an axis the layout lacks must have size 1 and is dropped."""
        axes = [x for x in self.axes if x in canonical]
        for i in reversed(range(len(canonical))):
            if canonical[i] not in axes:
                a = a[(slice(None),) * i + (0,)]
        reduced = [x for x in canonical if x in axes]
        return np.ascontiguousarray(np.transpose(a, [reduced.index(x) for x in axes]))

    def from_layout(self, a: np.ndarray, canonical: str = CANONICAL) -> np.ndarray:
        """The inverse of :meth:`to_layout`: an array in the layout → ``canonical`` order."""
        axes = [x for x in self.axes if x in canonical]
        reduced = [x for x in canonical if x in axes]
        a = np.transpose(a, [axes.index(x) for x in reduced])
        for i, x in enumerate(canonical):
            if x not in axes:
                a = np.expand_dims(a, i)
        return a

    def shape(self, B: int, H: int, n: int, d: int) -> tuple:
        sizes = dict(zip(CANONICAL, (B, H, n, d)))
        return tuple(sizes[a] for a in self.axes)

    def lse_shape(self, B: int, H: int, n: int) -> tuple:
        sizes = dict(zip(CANONICAL, (B, H, n)))
        return tuple(sizes[a] for a in self.axes if a != "d")

    def mask_to_layout(self, m: np.ndarray) -> np.ndarray:
        """An additive mask (B, 1, M, N) → the mask shape of the layout."""
        if not self.has_heads:
            m = m[:, 0]
        if not self.has_batch:
            m = m[0]
        return np.ascontiguousarray(m)


def parse_layout(text: str, flag: str = "--layout") -> Layout:
    t = (text or "").strip().lower()
    if (sorted(set(t)) != sorted(t) or not set(t) <= set(CANONICAL) or "n" not in t or "d" not in t
            or not t.endswith("d")):
        raise InputError(f"{flag} {text!r}: a layout names the axes of q, k and v in order, each once, from b "
                         f"(batch), h (heads), n (sequence) and d (head dimension, last), with n and d required: "
                         f"e.g. bhnd, bnhd, nd, nhd")
    return Layout(t)
