"""The engine's side of proof certificates: SymPy written as the checker's terms
(:mod:`.sympy_terms`), the search for a chain of steps (:mod:`.chain`), and the seal that says
whether a proof replayed (:mod:`.seal`). The checker itself is :mod:`derive.replay`."""

from __future__ import annotations

__all__ = ["Outside"]


class Outside(Exception):
    """A claim the checker's term language cannot state: its proof is "proved (not replayed)"."""
