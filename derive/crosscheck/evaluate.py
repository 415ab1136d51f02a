"""Numeric evaluation of engine expressions on a concrete instance.

Two backends: ``float`` (numpy float64) and ``arb`` (python-flint's ball arithmetic at a
chosen precision in bits, vectors as object arrays of balls: every value is an interval
certain to contain the exact one, which is what certifies a counterexample). Instance
entries may be exact numbers (integers, ``sympy.Rational``, ``sqrt(2)``); the ``arb``
backend encloses them exactly, ``float`` rounds them. An expression is evaluated through its
compiled closures (:mod:`derive.crosscheck.compiled`), over a whitelist of node types;
anything else raises :class:`~derive.errors.Unsupported`. From its second float evaluation on,
an expression is evaluated by one generated function (:mod:`derive.crosscheck.generated`: the
same operations, without a call per node), the closures taking over where that raises.
"""

from __future__ import annotations

import math

import flint
import numpy as np
import sympy as sp
from flint import arb

from derive.crosscheck.compiled import canon, compiled
from derive.crosscheck.generated import generated
from derive.crosscheck.instance import Instance, Uncertain, rope_matrix
from derive.errors import Unsupported
from derive.model.vectors import VectorSymbol

__all__ = ["Instance", "Uncertain", "evaluate", "rope_matrix"]

_UNARY = ("exp", "log", "tanh", "sin", "cos")
_COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


class _Eval:
    def __init__(self, inst: Instance, mode: str):
        self.inst, self.mode = inst, mode
        self.cache: dict = {}  # sums and dot products, by node and loop values
        self.values: dict = {}  # the instance's symbols (d, n, scalars, vectors), by key

    # ---- numbers of the backend -------------------------------------------------------

    def num(self, x):
        if self.mode == "float":
            return float(x)
        return self.exact(x)

    def exact(self, x):
        """An arb ball containing the exact value of an entry (int, float, Rational, sqrt(2), …)."""
        if isinstance(x, arb):
            return x
        if isinstance(x, (bool, np.bool_)):
            return arb(int(x))
        if isinstance(x, (int, np.integer)):
            return arb(int(x))
        if isinstance(x, (float, np.floating)):
            return arb(float(x))  # a float is a dyadic rational: enclosed exactly
        if isinstance(x, sp.Basic) and x.is_number:
            return compiled(x)(self, {})
        raise Unsupported(f"no exact value for {x!r}")

    def arr(self, a):
        if self.mode == "float":
            return np.asarray(a, dtype=float)
        return np.array([self.num(x) for x in a], dtype=object)

    def index(self, v) -> int:
        if isinstance(v, arb):
            z = v.unique_fmpz()
            if z is None:
                raise Uncertain("an index is not a unique integer")
            return int(z)
        return int(v)

    def unary(self, name: str, x):
        if self.mode == "arb":
            return getattr(self.exact(x), name)()
        if name == "exp":
            return math.exp(x) if x < 709.0 else math.inf
        if name == "log":
            return math.log(x) if x > 0 else -math.inf
        return getattr(math, name)(x)

    def sqrt(self, x):
        return self.exact(x).sqrt() if self.mode == "arb" else math.sqrt(x)

    def truth(self, op: str, a, b) -> bool:
        """A comparison; with balls, only a certain answer counts."""
        if self.mode != "arb" or not (isinstance(a, arb) or isinstance(b, arb)):
            return bool(_COMPARE[op](a, b))
        a, b = self.exact(a), self.exact(b)
        if _COMPARE[op](a, b):
            return True
        if _COMPARE[_NEGATE[op]](a, b):
            return False
        raise Uncertain(f"cannot decide {op} between overlapping balls")

    # ---- evaluation -----------------------------------------------------------------------

    def run(self, e: sp.Basic, env: dict):
        f = compiled(e)
        if self.mode == "float":
            f.runs += 1
            if f.runs == 2:  # evaluated again: worth one generated function (derive.crosscheck.generated)
                f.generated = generated(f.tree)
            if f.generated is not None:
                try:
                    return f.generated(self, env)
                except Exception:  # noqa: BLE001 - the closures give their own value or exception
                    pass
        return f(self, env)

    def symbol(self, e: sp.Symbol):
        """The value of a symbol that no loop binds: d, n, a scalar or a vector of the instance."""
        if isinstance(e, VectorSymbol):
            return self.arr(self.inst.vectors[e])
        if e.name == "d":
            return self.num(self.inst.d)
        if e.name == "n":
            return self.num(self.inst.n)
        if e in self.inst.scalars:
            return self.num(self.inst.scalars[e])
        raise Unsupported(f"no value for symbol {e}")


def evaluate(expr: sp.Basic, inst: Instance, mode: str = "float", env: dict | None = None, prec: int = 64):
    """Evaluate ``expr`` on ``inst``; ``env`` binds index symbols (i, j, …) to integers.

    ``mode`` is ``"float"`` or ``"arb"``; ``prec`` is the arb precision in bits.
    """
    if mode == "arb":
        old = flint.ctx.prec
        flint.ctx.prec = prec
        try:
            return _Eval(inst, mode).run(expr, _env(env))
        finally:
            flint.ctx.prec = old
    if mode != "float":
        raise ValueError(f"unknown evaluation mode {mode!r}; expected 'float' or 'arb'")
    with np.errstate(all="ignore"):  # inf and nan are results here; callers check finiteness
        return _Eval(inst, mode).run(expr, _env(env))


def _env(env: dict | None) -> dict:
    """A copy of ``env`` keyed by the symbols' keys (see :func:`~derive.crosscheck.compiled.canon`)."""
    return {canon(k): v for k, v in (env or {}).items()}
