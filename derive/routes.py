"""The exceptions that mean "this route cannot decide here", and only those.

A proof route or an evaluation that meets one of them gives up honestly (not proved, no value
at this point, no certificate): another route, or the verdict *undecided*, takes over. Every
other exception is a failure of derive's own engine: it propagates to the claim, the property
or the build that met it, which ends in the error outcome (exit 3), never in a verdict
(:mod:`derive.errors`). A handler that catches more than these is a boundary of its own (user
code in the sandbox, a cache entry that fails to unpickle) and says why beside it.

* :data:`CANNOT_DECIDE` — a symbolic route SymPy cannot take: ``NotImplementedError`` (a
  rewrite, a solution set or a limit SymPy does not implement), the polynomial machinery's
  errors (``PolynomialError``, ``CoercionFailed``, … :class:`BasePolynomialError`: a generator or
  a domain it refuses), and derive's own :class:`~derive.errors.Unsupported`.
* :func:`sympy_gave_up` — the same, or any exception that SymPy's (or mpmath's) own code raised
  inside one of its algorithms without derive's code running in between: SymPy 1.14's
  ``simplify`` raises ``StopIteration`` on some sums of sums, its limit algorithm ``TypeError``
  on a comparison with NaN. Such a pass fails on that expression; derive's own code raising
  (also when SymPy calls back into derive's classes) is not SymPy giving up.
* :data:`NO_VALUE` — an expression that has no value at a point, or none the evaluator can
  enclose: :class:`~derive.errors.Unsupported` (a node the evaluator does not know, an
  undecidable comparison of balls), ``ArithmeticError`` (division by zero, overflow, a floating
  point trap) and ``ValueError`` (an argument outside a function's domain: ``math.log(-1)``,
  a ball flint cannot convert).
"""

from __future__ import annotations

import os

import mpmath
import sympy
from sympy.polys.polyerrors import BasePolynomialError

from derive.errors import Unsupported

__all__ = ["CANNOT_DECIDE", "NO_VALUE", "sympy_gave_up"]

CANNOT_DECIDE: tuple[type[BaseException], ...] = (NotImplementedError, BasePolynomialError, Unsupported)
NO_VALUE: tuple[type[BaseException], ...] = (Unsupported, ArithmeticError, ValueError)

_DERIVE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_LIBRARIES = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (sympy, mpmath))


def sympy_gave_up(exc: BaseException) -> bool:
    """Whether ``exc``, caught around a call into SymPy, means that SymPy cannot take this route:
    one of :data:`CANNOT_DECIDE`, or an exception raised in SymPy's or mpmath's own code, at
    least two of their frames deep (inside an algorithm of theirs, not derive misusing one of
    their primitives: ``bool()`` of an undecided relation raises in ``__bool__`` at once), with
    no frame of derive's between the first of their frames and the raise. (derive's frames
    before the call, the wrappers of a pass, do not count.)"""
    if isinstance(exc, CANNOT_DECIDE):
        return True
    if not isinstance(exc, Exception):
        return False
    tb, depth, last = exc.__traceback__, 0, ""
    while tb is not None:
        last = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if last.startswith(_LIBRARIES):
            depth += 1
        elif depth and last.startswith(_DERIVE):
            return False  # SymPy called back into derive, whose code failed: an engine fault
        tb = tb.tb_next
    return depth >= 2 and last.startswith(_LIBRARIES)
