"""Tensor layouts of attention kernels: ``bhnd``, ``bnhd``, ``nd``, ``nhd``, ...

A layout names the axes of q, k and v in order: ``b`` batch, ``h`` heads, ``n`` the sequence
(queries in q and out, keys in k and v), ``d`` the head dimension. ``n`` and ``d`` are required
and ``d`` is last; ``b`` and ``h`` may be left out (a kernel for one sequence and one head:
``nd``). derive builds every input in the canonical order (B, H, n, d) and permutes it to the
kernel's layout; ``out`` has the layout of q with the value dimension, ``lse`` the layout of q
without ``d``; an additive mask has shape (B, 1, M, N) restricted to the axes the layout has
(b → B, h → 1), the broadcast shape Hugging Face's kernels take.

Grouped-query kernels may give q a group axis: ``g`` right after ``h`` splits the query heads as
(kv head, member of its group), query head h·G + g reading kv head h (gpt-oss's reference takes q as
(n, Hkv, G, d), ``nhgd``); k and v have the layout without ``g``. An output may merge its trailing
head axes with d, ``bn(hd)`` (an (B, n, H·d) output, the heads concatenated as a model's output
projection takes them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from derive.errors import InputError

__all__ = ["Layout", "parse_layout"]

CANONICAL = "bhnd"


@dataclass(frozen=True)
class Layout:
    axes: str  # e.g. "bnhd"; "nhgd": the query heads as (kv head h, group member g)
    flat: bool = False  # the trailing head axes and d merged into one, e.g. bn(hd)

    @property
    def has_batch(self) -> bool:
        return "b" in self.axes

    @property
    def has_heads(self) -> bool:
        return "h" in self.axes

    @property
    def text(self) -> str:
        """As written: ``bnhd``, ``nhgd``, ``bn(hd)``."""
        if not self.flat:
            return self.axes
        cut = self.axes.index("h")
        return f"{self.axes[:cut]}({self.axes[cut:]})"

    @property
    def kv(self) -> "Layout":
        """The layout of k and v (and their gradients): without the group axis."""
        return Layout(self.axes.replace("g", ""), self.flat)

    def _split(self, a: np.ndarray, canonical: str, groups: int) -> tuple[np.ndarray, str]:
        """(B, H, …) → (B, H / G, G, …) when the layout has a group axis."""
        if "g" not in self.axes or "h" not in canonical:
            return a, canonical
        at = canonical.index("h")
        shape = a.shape[:at] + (a.shape[at] // groups, groups) + a.shape[at + 1:]
        return a.reshape(shape), canonical.replace("h", "hg")

    def to_layout(self, a: np.ndarray, canonical: str = CANONICAL, groups: int = 1) -> np.ndarray:
        """An array in ``canonical`` order ((B, H, n, d), or (B, H, n) for an lse) → the layout's
        order; an axis the layout lacks must have size 1 and is dropped; ``groups``: the query heads
        per kv head (a layout with ``g``)."""
        a, canonical = self._split(a, canonical, groups)
        axes = [x for x in self.axes if x in canonical]
        for i in reversed(range(len(canonical))):
            if canonical[i] not in axes:
                a = a[(slice(None),) * i + (0,)]
        reduced = [x for x in canonical if x in axes]
        a = np.ascontiguousarray(np.transpose(a, [reduced.index(x) for x in axes]))
        if self.flat and "d" in canonical:
            merged = len(self.axes) - self.axes.index("h")
            a = a.reshape(a.shape[:-merged] + (-1,))
        return a

    def from_layout(self, a: np.ndarray, canonical: str = CANONICAL, groups: int = 1, heads: int = 0) -> np.ndarray:
        """The inverse of :meth:`to_layout`: an array in the layout → ``canonical`` order; a merged
        output is split back by ``heads`` (the query heads) and ``groups``."""
        a = np.asarray(a)
        split = "g" in self.axes and "h" in canonical
        if self.flat and "d" in canonical:
            sizes = {"h": heads // groups if "g" in self.axes else heads, "g": groups}
            tail = [sizes[x] for x in self.axes[self.axes.index("h"):-1]]
            a = a.reshape(a.shape[:-1] + tuple(tail) + (-1,))
        full = canonical.replace("h", "hg") if split else canonical
        axes = [x for x in self.axes if x in full]
        reduced = [x for x in full if x in axes]
        a = np.transpose(a, [axes.index(x) for x in reduced])
        for i, x in enumerate(full):
            if x not in axes:
                a = np.expand_dims(a, i)
        if split:
            at = full.index("h")
            a = a.reshape(a.shape[:at] + (a.shape[at] * a.shape[at + 1],) + a.shape[at + 2:])
        return a

    def _sizes(self, B: int, H: int, groups: int) -> dict:
        return {"b": B, "h": H // groups if "g" in self.axes else H, "g": groups}

    def shape(self, B: int, H: int, n: int, d: int, groups: int = 1) -> tuple:
        sizes = {**self._sizes(B, H, groups), "n": n, "d": d}
        out = tuple(sizes[a] for a in self.axes)
        if self.flat:
            merged = len(self.axes) - self.axes.index("h")
            out = out[:-merged] + (int(np.prod(out[-merged:])),)
        return out

    def lse_shape(self, B: int, H: int, n: int, groups: int = 1) -> tuple:
        sizes = {**self._sizes(B, H, groups), "n": n}
        return tuple(sizes[a] for a in self.axes if a != "d")

    def mask_to_layout(self, m: np.ndarray) -> np.ndarray:
        """An additive mask (B, 1, M, N) → the mask shape of the layout."""
        if not self.has_heads:
            m = m[:, 0]
        if not self.has_batch:
            m = m[0]
        return np.ascontiguousarray(m)


_AXES = CANONICAL + "g"


def parse_layout(text: str, flag: str = "--layout") -> Layout:
    raw = (text or "").strip().lower()
    flat = raw.count("(") == 1 and raw.endswith(")") and flag == "--out-layout"
    t = raw.replace("(", "").replace(")", "") if flat else raw
    ok = (sorted(set(t)) == sorted(t) and set(t) <= set(_AXES) and "n" in t and "d" in t and t.endswith("d")
          and ("g" not in t or "hg" in t) and not (flat and raw[raw.index("("):] not in ("(hd)", "(hgd)")))
    if not ok:
        merged = (" An output may merge its head axes with d at the end: bn(hd), n(hgd)." if flag == "--out-layout"
                  else "")
        raise InputError(f"{flag} {text!r}: a layout names the axes of q, k and v in order, each once, from b "
                         f"(batch), h (heads), n (sequence) and d (head dimension, last), with n and d required: "
                         f"e.g. bhnd, bnhd, nd, nhd; g right after h splits q's heads by kv head (nhgd).{merged}")
    return Layout(t, flat)
