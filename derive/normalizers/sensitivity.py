"""Where a normalizer's formula cancels and where it is not differentiable, read off its tree.

Both feed the exact comparison of ``derive impl`` (:mod:`derive.impl.exact.reference`) and hold for
any formula, built-in or user-defined:

* :func:`scales` — per key, the magnitude a weight's rounding error is relative to: |p_j|,
  except where the formula's last step (through min, max, relu, abs and a sign around it) is
  a sum or difference, which may cancel: then the sum of its terms' magnitudes (clipped
  softmax: |ζ − γ|·softmax(x)_j + |γ|, near the clip at 0 much larger than p_j). A number
  among the arguments of min or max (the clip's 0 and 1) is exact and adds nothing.
* :func:`kink_rows` — rows (a, 0, …, 0) that put the first key's weight exactly on a kink
  (found by bisection in a), and just beside it: where an implementation's rounding decides
  the branch (clipped softmax at (ζ − γ)p + γ = 0 and = 1).
* :func:`kink_distances` — the relative distances of a row from the points where the weights
  are not differentiable: |z| over the magnitude of z's terms for relu(z) and abs(z); for
  max, min, max_t and min_t the gap between the two arguments that compete for the result
  over their magnitudes. A gradient within rounding of such a point is one-sided.

The magnitude of a node is |value| for anything but a sum, a difference, a sign, relu, abs,
max and min, whose terms it adds up (max and min: the largest of their non-number
arguments'): cancellation inside an exp, a quotient or a product is the implementation's to
avoid, and is not excused.
"""

from __future__ import annotations

import mpmath

from derive.normalizers.exact import REDUCTIONS, Undecided, Undefined, keyless
from derive.language.parser import Binary, Call, Num, Unary, walk

__all__ = ["kink_distances", "kink_rows", "kinked", "scales"]

_THROUGH = ("relu", "abs", "max", "min")  # operations a weight's last sum may sit under
_KINKED = ("relu", "abs", "max", "min", "max_t", "min_t")
_NO_VALUE = (Undefined, Undecided)  # a node with no real value, or none that can be enclosed


def _last_step_sums(node) -> bool:
    if isinstance(node, Unary):
        return _last_step_sums(node.operand)
    if isinstance(node, Binary):
        return node.op in ("+", "-")
    if isinstance(node, Call) and node.func in _THROUGH:
        return any(_last_step_sums(a) for a in node.args)
    return False


def kinked(formula) -> bool:
    """Does the formula have a point where it is not differentiable (relu, abs, max, min)?"""
    return any(isinstance(nd, Call) and nd.func in _KINKED for nd in walk(formula.node))


def _magnitude(ev, node):
    if isinstance(node, Unary):
        return _magnitude(ev, node.operand)
    if isinstance(node, Binary) and node.op in ("+", "-"):
        return _magnitude(ev, node.left) + _magnitude(ev, node.right)
    if isinstance(node, Call) and node.func in ("relu", "abs"):
        return _magnitude(ev, node.args[0])
    if isinstance(node, Call) and node.func in ("max", "min"):
        return max((_magnitude(ev, a) for a in node.args if not isinstance(a, Num)), default=mpmath.mpf(0))
    return abs(ev.run(node))


def scales(formula, x, mask=None, **params) -> list[float] | None:
    """Per key the magnitude of the terms of its weight's last step (0 for a masked key), or
    None when that step is not a sum (each weight's own magnitude |p_j| is the scale) or the
    row has no value there."""
    if not _last_step_sums(formula.node):
        return None
    evs = formula.evaluators(x, mask, **params)
    try:
        return [float(_magnitude(evs[k], formula.node)) if k in evs else 0.0 for k in range(1, len(x) + 1)]
    except _NO_VALUE:
        return None


def kink_distances(formula, x, mask=None, **params) -> list:
    """The relative distance (mpf, 0 = on the kink) of every kink the row's weights pass
    through, over every allowed key and every key of a reduction; [] for a smooth formula."""
    if not kinked(formula):
        return []
    out: list = []
    seen: set = set()  # reductions that do not depend on the key: walked once per row
    for ev in formula.evaluators(x, mask, **params).values():
        try:
            _walk(ev, formula.node, out, seen)
        except _NO_VALUE:  # no kink to measure at this key
            ev.var = None
    return out


def _on_kink(ev, node):
    """The argument of relu or abs, 0 where no precision up to the cap tells it from 0."""
    try:
        return ev.run(node)
    except Undecided:
        return mpmath.mpf(0)


def _relative(gap, magnitude):
    if magnitude == 0:
        return mpmath.mpf(0) if gap == 0 else None
    return abs(gap) / magnitude


def _competing(ev, args) -> list:
    """(value, magnitude) of the two arguments nearest the top (max) or bottom (min)."""
    return [(ev.run(a), mpmath.mpf(0) if isinstance(a, Num) else _magnitude(ev, a)) for a in args]


def _record(out, pairs, largest: bool) -> None:
    if len(pairs) < 2:
        return
    first, second = sorted(pairs, key=lambda vm: vm[0], reverse=largest)[:2]
    d = _relative(first[0] - second[0], first[1] + second[1])
    if d is not None:
        out.append(d)


def _walk(ev, node, out, seen, signed: bool = False) -> None:
    """Append the distance of every kink under ``node`` to ``out`` (``signed``: the signed
    quantity that is 0 at the kink instead: the argument of relu and abs, the first of two
    arguments of max or min minus the second)."""
    if isinstance(node, Unary):
        _walk(ev, node.operand, out, seen, signed)
        return
    if isinstance(node, Binary):
        _walk(ev, node.left, out, seen, signed)
        _walk(ev, node.right, out, seen, signed)
        return
    if not isinstance(node, Call):
        return
    if node.func in REDUCTIONS:
        if all(keyless(a) for a in node.args):
            if id(node) in seen:
                return
            seen.add(id(node))
        body, pairs = node.args[0], []
        for t in ev.indices(node.args):
            ev.var = t
            try:
                _walk(ev, body, out, seen, signed)
                if node.func in ("max_t", "min_t") and not signed:
                    pairs.append((ev.run(body), _magnitude(ev, body)))
            finally:
                ev.var = None
        _record(out, pairs, node.func == "max_t")
        return
    for a in node.args:
        _walk(ev, a, out, seen, signed)
    if signed:
        if node.func in ("relu", "abs"):
            out.append(_on_kink(ev, node.args[0]))
        elif node.func in ("max", "min") and len(node.args) == 2:
            out.append(ev.run(node.args[0]) - ev.run(node.args[1]))
        return
    if node.func in ("relu", "abs"):
        d = _relative(_on_kink(ev, node.args[0]), _magnitude(ev, node.args[0]))
        if d is not None:
            out.append(d)
    elif node.func in ("max", "min"):
        _record(out, _competing(ev, node.args), node.func == "max")


_GRID = [mpmath.mpf(k) for k in range(-30, 31)]  # a from −30 to 30
_ROWS: dict = {}  # (formula, parameters, lengths) → its kink rows


def _switches(formula, a, length: int, params: dict) -> list | None:
    """The signed kink quantities of the first key's weight on the row (a, 0, …, 0)."""
    ev = formula.evaluators([a] + [0] * (length - 1), keys=(1,), **params)[1]
    out: list = []
    try:
        _walk(ev, formula.node, out, set(), signed=True)
    except _NO_VALUE:
        return None
    return out


def kink_rows(formula, params: dict, lengths=(2, 3, 8, 64), nudge: float = 1e-7) -> list[tuple[float, ...]]:
    """Rows (a, 0, …, 0) of each length whose first weight sits on a kink of the formula (every
    sign change of a kink's quantity over a in [−30, 30], bisected), each also with a ± nudge."""
    if not kinked(formula) or any(p not in params for p in formula.params):
        return []
    own = {p: params[p] for p in formula.params}
    key = (formula.text, formula.score2, tuple(sorted(own.items())), tuple(lengths), nudge)
    if key not in _ROWS:
        _ROWS[key] = [(float(root) + d,) + (0.0,) * (length - 1) for length in lengths
                      for root in _roots(formula, length, own) for d in (0.0, nudge, -nudge)]
    return list(_ROWS[key])


def _roots(formula, length: int, params: dict) -> list:
    out = []
    with mpmath.workdps(30):
        prev = None
        for a in _GRID:
            cur = _switches(formula, a, length, params)
            if prev is not None and cur is not None and len(cur) == len(prev[1]):
                for k, (u, v) in enumerate(zip(prev[1], cur)):
                    root = None
                    if v == 0 and u != 0:
                        root = a
                    elif (u < 0 < v) or (v < 0 < u):
                        root = _bisect(formula, prev[0], a, k, u, length, params)
                    if root is not None and root not in out:
                        out.append(root)
            prev = None if cur is None else (a, cur)
    return out


def _bisect(formula, lo, hi, k, f_lo, length, params, steps: int = 64):
    for _ in range(steps):
        mid = (lo + hi) / 2
        cur = _switches(formula, mid, length, params)
        if cur is None or len(cur) <= k:
            return None
        if cur[k] == 0:
            return mid
        if (cur[k] < 0) == (f_lo < 0):
            lo, f_lo = mid, cur[k]
        else:
            hi = mid
    return (lo + hi) / 2
