"""Numbers as the ``derive impl`` reports show them, and the comparison of one entry with its
exact value: one wording and one rule for the row and kernel forms."""

from __future__ import annotations

import math

import numpy as np

from derive.floats import round_to

__all__ = ["agree", "agree_all", "err", "jnum", "listed", "num", "round_to", "scaled", "shortest", "tex_num", "zero_or_nan"]

INF = math.inf


def num(v, digits: int | None = 17) -> str:
    """A number as the reports print it: ``digits`` significant digits (None: the shortest text
    that reads back as the same float), ``nan``, ``inf``, ``-inf``; a complex one as a+bj."""
    if isinstance(v, complex):
        return f"{num(v.real, digits)}{'-' if v.imag < 0 else '+'}{num(abs(v.imag), digits)}j"
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v) if digits is None else format(v, f".{digits}g")


def shortest(v) -> str:
    """The shortest text of ``v`` that reads back as the same float (``repr``)."""
    return num(v, None)


def tex_num(v: float) -> str:
    """A parameter value as math source: ``-2.0`` → ``-2``, ``-inf`` → ``-\\infty``."""
    v = float(v)
    if math.isinf(v):
        return r"\infty" if v > 0 else r"-\infty"
    return format(v, "g") if v == int(v) and abs(v) < 1e15 else repr(v)


def err(v: float) -> str:
    """An error or a bound: three digits after the point, exponent form."""
    return format(v, ".3e") if math.isfinite(v) else num(float(v))


def listed(xs, fmt, most: int | None = None) -> str:
    """``[a, b, …]`` with ``fmt`` for each entry; with ``most``, the first ``most`` entries and
    the count of the rest."""
    xs = list(np.ravel(np.asarray(xs, dtype=object))) if not isinstance(xs, list) else xs
    shown = xs if most is None or len(xs) <= most else xs[:most]
    rest = "" if len(shown) == len(xs) else f", … ({len(xs) - len(shown)} more)"
    return "[" + ", ".join(fmt(float(a)) for a in shown) + rest + "]"


def jnum(v, digits: int = 17):
    """A number for JSON: a float (read back exactly at 17 digits), or the text of a NaN, an
    infinity or a complex number, which JSON has no number for."""
    if isinstance(v, complex):
        return num(v, digits)
    v = float(v)
    return num(v, digits) if not math.isfinite(v) else float(num(v, digits))


def agree(y: float, p: float, bound: float) -> tuple[bool, float]:
    if math.isinf(p) or math.isnan(p):
        return (y == p or (math.isnan(p) and math.isnan(y))), (0.0 if y == p else INF)
    if not math.isfinite(y):
        return False, INF
    e = abs(y - p)
    return e <= bound, e


def agree_all(ys, ps, bounds) -> tuple[np.ndarray, np.ndarray]:
    """:func:`agree` entry by entry on arrays: (agrees, error) per entry."""
    y, p, b = (np.asarray(a, dtype=np.float64).ravel() for a in (ys, ps, bounds))
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(p)
        special = (y == p) | (np.isnan(p) & np.isnan(y))
        err = np.where(finite, np.where(np.isfinite(y), np.abs(y - p), INF), np.where(special, 0.0, INF))
        ok = np.where(finite, np.isfinite(y) & (err <= b), special)
    return ok, err


def zero_or_nan(ys) -> bool:
    ys = [float(y) for y in np.ravel(ys)]
    return all(y == 0 for y in ys) or all(math.isnan(y) for y in ys)


def scaled(factor: float, m) -> np.ndarray:
    """``factor * m`` entrywise, where an entry of magnitude 0 contributes 0 even when ``factor``
    is infinite (a condition number of ∞ on scores such as finfo.min: the term vanishes where the
    exact value does, instead of making the bound NaN, which no error meets)."""
    m = np.asarray(m, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = factor * m
    return np.where(m == 0, 0.0, out)
