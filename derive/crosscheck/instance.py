"""A concrete instance of the engine's model: the values an expression is evaluated on.

Tables are indexed 1-based like the model. Also the rotation matrix of rotary position
embedding, which both backends of :mod:`derive.crosscheck.evaluate` use, and the exception
for a ball comparison that cannot be decided.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import sympy as sp
from flint import arb

from derive.errors import Unsupported

__all__ = ["Instance", "Uncertain", "rope_matrix"]


@dataclass
class Instance:
    """Concrete values: ``d``, ``n``, scalars/indices by symbol, tables by base name.

    Tables are indexed 1-based like the model: a vector family has shape (n + 1, d), a
    scalar table (n + 1, n + 1), a label vector (n + 1,); row/column 0 is unused.
    """

    d: int
    n: int
    scalars: dict[sp.Symbol, float] = field(default_factory=dict)
    vectors: dict[sp.Symbol, np.ndarray] = field(default_factory=dict)
    families: dict[str, np.ndarray] = field(default_factory=dict)
    tables: dict[str, np.ndarray] = field(default_factory=dict)

    def describe(self) -> dict:
        """A JSON-ready description (used for counterexamples), 1-based rows dropped of row 0."""
        out: dict = {"d": self.d, "n": self.n}
        for s, v in sorted(self.scalars.items(), key=lambda kv: kv[0].name):
            out[s.name] = _plain(v)
        for s, v in sorted(self.vectors.items(), key=lambda kv: kv[0].name):
            out[s.name] = [_plain(x) for x in v]
        for name, fam in sorted(self.families.items()):
            out[name] = [[_plain(x) for x in row] for row in fam[1:]]
        for name, tab in sorted(self.tables.items()):
            if tab.ndim == 1:  # a label vector (document ids), position 1..n
                out[name] = [_plain(x) for x in tab[1:]]
                continue
            out[name] = [[_plain(x) for x in row[1:]] for row in tab[1:]]
        return out


def _plain(x):
    if isinstance(x, (np.bool_, bool)):
        return int(x)
    if isinstance(x, sp.Basic) and not (x.is_Rational and x.q in (1, 2, 4, 8)):
        return sp.sstr(x)  # an exact irrational entry, written so that it can be replayed
    f = float(x)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


class Uncertain(Unsupported):
    """A ball comparison could not decide a branch (the intervals overlap)."""


def rope_matrix(pos, dim: int, mode: str = "float", base: float = 10000.0):
    """R(pos) of rotary position embedding: pairs (2k, 2k+1) rotate by pos·base^(−2k/dim).

    R(a)ᵀR(b) = R(b − a) holds for every a, b; an odd last component is left unrotated.
    """
    if mode == "float":
        r = np.eye(dim)
        for k in range(dim // 2):
            th = pos * base ** (-2.0 * k / dim)
            c, s = math.cos(th), math.sin(th)
            r[2 * k, 2 * k], r[2 * k, 2 * k + 1], r[2 * k + 1, 2 * k], r[2 * k + 1, 2 * k + 1] = c, -s, s, c
        return r
    one, zero, b = arb(1), arb(0), arb(int(base))
    r = np.array([[one if a == c else zero for c in range(dim)] for a in range(dim)], dtype=object)
    for k in range(dim // 2):
        th = pos * b ** (arb(-2 * k) / dim)
        c, s = th.cos(), th.sin()
        r[2 * k, 2 * k], r[2 * k, 2 * k + 1], r[2 * k + 1, 2 * k], r[2 * k + 1, 2 * k + 1] = c, -s, s, c
    return r
