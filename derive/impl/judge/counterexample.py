"""One counterexample type for every form of ``derive impl``.

A :class:`Counterexample` says which output of the implementation failed on which input:
what it returned there, the exact values, the error of each entry and the error allowed, and
the failure class the input is filed under. The forms differ only in what the input is — a
row of scores with its parameters (the row form), a call of a kernel with the index of the
failing row (the kernel forms), a case of q, k, v with the failing entry (the attention form)
— so each adds those fields to this one type; the diagnosis, the failure classes and the
reports read the rest the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Counterexample"]


@dataclass
class Counterexample:
    dtype: str
    what: str  # the failing output: value, gradient or complex (row form); out, lse, dx, dv, dq, dk, d<param>
    output: list  # what the implementation returned
    exact: list  # the exact values (NaN where the definition has none)
    errors: list  # |output − exact| per entry
    bounds: list  # the error allowed per entry
    cls: str = ""  # the failure class it is filed under ("" until filed)

    def failing(self) -> list[int]:
        """The entries whose error exceeds what is allowed (a NaN bound allows nothing)."""
        return [k for k, (e, b) in enumerate(zip(self.errors, self.bounds)) if not e <= b]

    def worst(self) -> float:
        """The largest error over its allowed error (inf when an entry allows none)."""
        ratios = [e / b if b > 0 else math.inf for e, b in zip(self.errors, self.bounds) if not e <= b]
        return max(ratios, default=0.0)
