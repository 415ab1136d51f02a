"""The softmax-family row in arb balls: the one place its exact weights are formed.

For the scores x_t of a row (a masked key — None or −∞ — has the term 0) and the extra term
E ≥ 0 of its extra logits σ (E = e^σ: a sink, softmax₁'s and the zero token's e^0; E = 0 for
plain softmax):

    den = E + Σ_t e^{x_t},   lse = log den,   P_t = e^{x_t} / den,   P_σ = E / den,

every quantity a ball at python-flint's current precision (``ctx.prec``). The inputs are
exact (floats, or balls the caller formed exactly). Three references take their weights from
here: a formula's exact reference when it is of the family and its weight reads
``exp(x_j) / (E + sum_t(exp(x_t)))`` (:func:`softmax_extra`; :mod:`derive.normalizers.formula`, at
an adaptive precision), and ``derive impl``'s
attention and kernel references (:mod:`derive.impl.exact.reference`, from ``4·dps`` bits, raised by :func:`enclosed` until the
row is tight; the kernel one caches the terms of a row and sums them by value row).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from flint import arb, ctx

from derive.normalizers.exact import CAP, Undecided, tight
from derive.normalizers.family import recognise_formula
from derive.language.parser import Binary, Call, Name, walk

__all__ = ["BITS", "SoftmaxRow", "enclosed", "exps", "extra_of", "softmax_extra", "softmax_row"]

_ZERO = arb(0)
BITS = 64  # the relative accuracy a weight needs to be rounded to a float64 (and far inside every tolerance)


def _masked(x) -> bool:
    return x is None or (isinstance(x, float) and x == -math.inf)


def exps(scores) -> list[arb]:
    """e^{x_t} per key: an exact 0 for a masked key (None or −∞)."""
    return [_ZERO if _masked(x) else (x if isinstance(x, arb) else arb(x)).exp() for x in scores]


def extra_of(sigma) -> arb:
    """E = e^σ of one extra logit σ (a float; None or −∞: no extra logit, E = 0)."""
    return _ZERO if _masked(sigma) else arb(float(sigma)).exp()


@dataclass(frozen=True)
class SoftmaxRow:
    terms: list  # e^{x_t} per key (0 where masked)
    keys: arb  # Σ_t e^{x_t}
    extra: arb  # E

    @property
    def den(self) -> arb:
        return self.keys + self.extra

    def lse(self) -> arb | None:
        """log(E + Σ_t e^{x_t}), None where the sum is 0 (every key masked, no extra logit)."""
        den = self.den
        return den.log() if den > 0 else None

    def share(self, part: arb) -> arb:
        """``part`` (a sum of terms, or E) over the denominator."""
        return part / self.den

    def weights(self) -> list[arb]:
        den = self.den
        return [q / den for q in self.terms]

    def tight(self, parts=None, bits: int = BITS) -> bool:
        """Are lse (to 2^−bits of max(1, |lse|), the magnitude its tolerance is relative to) and
        the weights (or the shares ``parts``) enclosed tightly enough to round to a float?"""
        lse = self.lse()
        if lse is None:  # an exact 0 sum (every key masked, no extra logit): no value to enclose
            return self.den.is_zero()
        if not (lse.is_finite() and lse.rad() <= arb(2) ** -bits * max(arb(1), abs(lse))):
            return False
        return all(tight(w, bits) for w in (self.weights() if parts is None else parts))


def enclosed(make):
    """``make()`` (a :class:`SoftmaxRow`, or a pair whose first item is one and whose second are
    the shares to check) at the current precision, then at twice it up to
    :data:`~derive.normalizers.exact.CAP` bits until it is tight; the precision is restored.
    Raises :class:`~derive.normalizers.exact.Undecided` at the cap (finite scores never get there)."""
    saved = ctx.prec
    try:
        while True:
            out = make()
            row, parts = out if isinstance(out, tuple) else (out, None)
            if row.tight(parts):
                return out
            if ctx.prec >= CAP:
                raise Undecided(f"no ball up to {CAP} bits of precision encloses the softmax row tightly")
            ctx.prec = min(2 * ctx.prec, CAP)
    finally:
        ctx.prec = saved


def softmax_row(scores=None, extra: arb = _ZERO, terms=None, keys=None) -> SoftmaxRow:
    """The row of ``scores`` (or of its ``terms`` e^{x_t}, and their sum ``keys``, when the
    caller has them) with the extra term ``extra``."""
    terms = exps(scores) if terms is None else terms
    return SoftmaxRow(terms, sum(terms, _ZERO) if keys is None else keys, extra)


def _is_call(node, func: str, arg: str | None = None) -> bool:
    if not (isinstance(node, Call) and node.func == func and len(node.args) == 1):
        return False
    return arg is None or (isinstance(node.args[0], Name) and node.args[0].id == arg)


def _free_of_scores(node) -> bool:
    return not any(isinstance(nd, Name) and nd.id in ("x_j", "x_t", "y_j", "y_t", "j", "t") or
                   isinstance(nd, Call) and nd.func.endswith("_t") for nd in walk(node))


def softmax_extra(formula):
    """(True, the node of E or None) when the exact softmax row computes ``formula``'s weights;
    else (False, None).

    That needs two things. The formula is of the softmax family, as
    :func:`derive.normalizers.family.recognise_formula` decides it (the one recogniser: the weight
    equals e^{x_j}/(E + Σ_t e^{x_t}) symbolically, E free of the row and E = 0 or E > 0 over the
    parameters' domain). And its tree reads literally ``exp(x_j) / sum_t(exp(x_t))`` or
    ``exp(x_j) / (E + sum_t(exp(x_t)))`` (either order) with the node E free of the scores, keys
    and reductions, so the row computes the tree's own expression (E's node evaluated once per row,
    as every key would evaluate it) and never a simplification of it. A member written otherwise
    is evaluated by the tree, node by node."""
    node = formula.node
    if not (isinstance(node, Binary) and node.op == "/" and _is_call(node.left, "exp", "x_j")):
        return False, None
    den, extra = node.right, None
    if not _keysum(den):
        if not (isinstance(den, Binary) and den.op == "+"):
            return False, None
        found = [a for a, b in ((den.left, den.right), (den.right, den.left)) if _keysum(b) and _free_of_scores(a)]
        if not found:
            return False, None
        extra = found[0]
    return (True, extra) if recognise_formula(formula)[0] is not None else (False, None)


def _keysum(node) -> bool:
    return _is_call(node, "sum_t") and _is_call(node.args[0], "exp", "x_t")
