"""An instance certificate: both sides evaluated at exact inputs in ball arithmetic (python-flint's
``arb``), shown different when the two balls do not overlap (at 64 bits, then more).

The instance gives n, d and exact rational values: ``values`` (symbols, the indices i, j),
``tables`` (x[i][t], 1-based), ``vectors`` (a list, or a list per position) and ``mask`` (rows of
0/1); an opaque function is written out as its member of a family (docs/spec.md). Indices are
computed exactly; a division by a ball that contains 0, a log of a ball not certainly positive,
or a condition that is not decided is a rejection, never a guess.
"""

from __future__ import annotations

from fractions import Fraction

import flint
from flint import arb

from derive.replay.algebra import Rejected
from derive.replay.definitions import BUILTIN, FUNCTIONS, Outside, unfold
from derive.replay.terms import Malformed

__all__ = ["differ"]


def differ(lhs, rhs, inst: dict, defs: dict) -> int:
    """The precision (bits) at which ``lhs`` and ``rhs`` are certainly different at ``inst``."""
    old = flint.ctx.prec
    try:
        for bits in (64, 128, 256, 512, 1024):
            flint.ctx.prec = bits
            ev = _Eval(inst, defs)
            try:
                if not (ev.run(lhs, {}) - ev.run(rhs, {})).contains(0):
                    return bits
            except (KeyError, TypeError, ValueError) as exc:
                raise Malformed(f"the instance does not give what its terms use: {type(exc).__name__} {exc}") from None
    finally:
        flint.ctx.prec = old
    raise Rejected("the two sides are not certainly different at the instance (their balls overlap at 1024 bits)")


def _ball(x) -> arb:
    q = Fraction(x)
    return arb(q.numerator) / arb(q.denominator)


class _Eval:
    def __init__(self, inst: dict, defs: dict):
        self.inst, self.defs = inst, defs
        self.n = int(inst["n"])

    def exact(self, t, env) -> Fraction:
        h = t[0]
        if h == "num":
            return t[1]
        if h == "sym":
            v = env.get(t[1], self.inst.get("values", {}).get(t[1]))
            if v is None and t[1] in ("n", "d"):
                v = self.inst[t[1]]
            if v is None:
                raise Rejected(f"the instance gives no value of {t[1]}")
            return Fraction(v)
        if h in ("add", "mul"):
            out = Fraction(h == "mul")
            for a in t[1:]:
                out = out + self.exact(a, env) if h == "add" else out * self.exact(a, env)
            return out
        raise Rejected(f"an index or argument that is not exact: {h}")

    def index(self, t, env) -> int:
        v = self.exact(t, env)
        if v.denominator != 1:
            raise Rejected(f"an index that is not an integer: {v}")
        return int(v)

    def entry(self, seq, t, env):
        """The entry of a table row, mask row or vector list at the (1-based) index ``t``."""
        k = self.index(t, env)
        if not isinstance(seq, list) or not 1 <= k <= len(seq):
            raise Rejected(f"the instance has no entry {k} there")
        return seq[k - 1]

    def holds(self, c, env) -> bool:
        """A condition of indices, decided exactly."""
        h = c[0]
        if h in ("true", "false", "not"):
            return h == "true" or h == "not" and not self.holds(c[1], env)
        if h in ("and", "or"):
            return (all if h == "and" else any)(self.holds(x, env) for x in c[1:])
        a, b = self.exact(c[2], env), self.exact(c[3], env)
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[c[1]]

    def run(self, t, env):
        h = t[0]
        if h in ("num", "sym"):
            return _ball(self.exact(t, env))
        if h == "at":
            row = self.inst["tables"][t[1]]
            for a in t[2:]:
                row = self.entry(row, a, env)
            return _ball(row)
        if h == "mask":
            return _ball(self.entry(self.entry(self.inst["mask"], t[1], env), t[2], env))
        if h == "vec":
            v = self.inst["vectors"][t[1]]
            for a in t[2:]:
                v = self.entry(v, a, env)
            return [_ball(x) for x in v]
        if h == "rot" and int(self.inst["d"]) == 1:  # RoPE rotates pairs of coordinates: one has none
            return self.run(t[2], env)
        if h == "add":
            parts = [self.run(a, env) for a in t[1:]]
            if isinstance(parts[0], list):
                return [sum(xs, arb(0)) for xs in zip(*parts)]
            return sum(parts, arb(0))
        if h == "mul":
            scale, vec = arb(1), None
            for a in t[1:]:
                x = self.run(a, env)
                if isinstance(x, list):
                    vec = x
                else:
                    scale = scale * x
            return scale if vec is None else [scale * x for x in vec]
        if h == "pow":
            e = self.exact(t[2], env)
            base = self.run(t[1], env)
            if e.denominator != 1:
                raise Rejected("a power with an exponent that is not an integer")
            if e < 0 and base.contains(0):
                raise Rejected("a division by a value that may be 0 at the instance")
            return base ** int(e)
        if h == "dot":
            a, b = self.run(t[1], env), self.run(t[2], env)
            return sum((x * y for x, y in zip(a, b)), arb(0))
        if h == "exp":
            return self.run(t[1], env).exp()
        if h in ("log", "sqrt"):
            x = self.run(t[1], env)
            if not (x > 0 if h == "log" else x >= 0):
                raise Rejected(f"{h} of a value not certainly in its domain at the instance")
            return x.log() if h == "log" else x.sqrt()
        if h in FUNCTIONS:
            return self.run(FUNCTIONS[h](t[1]), env)
        if h == "sum":  # of scalars, Karr's convention for a range that ends before it starts
            lo, hi = self.index(t[2], env), self.index(t[3], env)
            sign, (lo, hi) = (1, (lo, hi)) if hi >= lo - 1 else (-1, (hi + 1, lo - 1))
            return sign * sum((self.run(t[4], {**env, t[1]: k}) for k in range(lo, hi + 1)), arb(0))
        if h == "ind":
            return arb(1 if self.holds(t[1], env) else 0)
        if h == "apply":
            text = self.defs.get(t[1])
            if text is None or (t[1] in BUILTIN and text != BUILTIN[t[1]]):
                raise Rejected(f"no trusted definition of {t[1]!r}")
            try:
                return self.run(unfold(text, t[2], t[3], t[4], {k: v for _, k, v in t[5]}), env)
            except Outside as exc:
                raise Rejected(str(exc)) from None
        raise Rejected(f"the checker does not evaluate {h}")
