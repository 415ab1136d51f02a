"""Named notation: show ``s_{ij}`` in a document while proving with its definition.

``notation("s", body)`` makes a SymPy function class whose instances print as a named
symbol with subscripts. Before anything is proved or evaluated, :func:`unfold` replaces
each instance by ``body(*args)``, so a displayed step is checked against what the name
stands for, not against the name.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp

__all__ = ["Notation", "notation", "unfold"]


class Notation(sp.Function):
    body: Callable[..., sp.Expr]
    latex_name: str = ""
    is_real = True

    def _latex(self, printer):
        subs = "".join(printer._print(a) for a in self.args)
        return f"{self.latex_name}_{{{subs}}}" if self.args else self.latex_name

    def unfolded(self) -> sp.Expr:
        return type(self).body(*self.args)


def notation(name: str, body: Callable[..., sp.Expr], latex: str | None = None, nargs: int = 1) -> type:
    """A function class named ``name`` that stands for ``body``."""
    return type(name, (Notation,), {"body": staticmethod(body), "latex_name": latex or name, "nargs": nargs})


def unfold(expr: sp.Basic) -> sp.Basic:
    """Replace every notation by its definition, recursively."""
    for _ in range(32):
        if not expr.has(Notation):
            return expr
        expr = expr.replace(lambda e: isinstance(e, Notation), lambda e: e.unfolded())
    raise RecursionError("notation definitions nest more than 32 levels")
