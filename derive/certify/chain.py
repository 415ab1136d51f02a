"""The search for a certificate's chain of steps: the engine's side of the de Bruijn criterion.

Each side is rewritten bottom-up, every subterm before the term around it, by the checker's
own rules (:data:`derive.replay.rules.RULES`) wherever one changes the normal form: definitions
unfolded, ⟨·,·⟩ expanded, exp split, sums split into terms with their constant factors taken
out. Each rewrite is one step of the certificate; the checker replays them independently.
"""

from __future__ import annotations

from fractions import Fraction

from derive.replay.algebra import Rejected, Ring, _bind
from derive.replay.rules import RULES, Env, term_of
from derive.replay.signs import Scope
from derive.replay.terms import children, get, put, write

__all__ = ["chain"]

ORDER = {
    "apply": ("unfold",), "sigmoid": ("unfold",), "softplus": ("unfold",), "tanh": ("unfold",),
    "dot": ("bilinear",), "sqrt": ("sqrt_square",), "exp": ("exp_log", "exp_add"), "log": ("log_exp",), "pow": ("pow_exp",),
    "sum": ("sum_empty", "sum_linear", "sum_factor"), "cases": ("cases_same",), "mask": ("allowed",), "fn": ("sign", "homogeneous"),
}
MAX_STEPS = 4000  # a deterministic bound on the search


class _Search:
    def __init__(self, ring: Ring, defs: dict, sides: dict, scope: Scope, later=None):
        self.ring, self.defs, self.sides, self.steps = ring, defs, dict(sides), []
        self.env = Env(defs, scope, eventually=later)

    def norm(self, side: str, path: tuple) -> None:
        t = get(self.sides[side], path)
        if t[0] != "apply":
            for k, c, _ in children(t):
                if isinstance(c, tuple) and isinstance(c[0], str) and c[0] not in ("lam",):
                    self.norm(side, path + (k,))
                elif isinstance(c, tuple):  # a case's (value, condition)
                    for j, x, _ in children(c):
                        self.norm(side, path + (k, j))
            t = get(self.sides[side], path)
        env = self.env
        if t[0] in ("fn", "mask"):  # rules that read the facts where the term is (its sums, its guards)
            from derive.replay.check import _context

            env = Env(self.defs, self.env.scope.inside(*_context(self.sides[side], path, "")), eventually=env.eventually)
        for rule in ORDER.get(t[0], ()):
            if t[0] == "pow" and t[2][0] == "num" and t[2][1].denominator == 1:
                continue
            try:
                value = RULES[rule][1](self.ring, t, env)
            except Rejected:
                continue
            value = value[0] if isinstance(value, tuple) else value
            before = self.ring.nf(t)
            if type(value) is type(before) and value.key == before.key:
                continue
            to = term_of(self.ring, value)
            if len(self.steps) >= MAX_STEPS:
                raise Rejected(f"the search for a chain took more than {MAX_STEPS} steps")
            self.steps.append({"side": side, "at": list(path), "rule": rule, "result": write(to)})
            self.sides[side] = put(self.sides[side], path, to)
            self.norm(side, path)
            return


    def sums(self, side: str, path=(), t=None) -> list:
        t = self.sides[side] if t is None else t
        if not isinstance(t, tuple) or not isinstance(t[0], str) or t[0] == "apply":
            return [x for k, c in enumerate(t) if isinstance(c, tuple) for x in self.sums(side, path + (k,), c)] \
                if isinstance(t, tuple) and not isinstance(t[0], str) else []
        out = [(path, t)] if t[0] == "sum" else []
        return out + [x for k, c, _ in children(t) for x in self.sums(side, path + (k,), c)]

    def split(self) -> bool:
        """Split one sum of a side at a point where the other side has two sums of the same body
        over the two parts of its range (the tiles of an online softmax)."""
        ring = self.ring
        key = lambda s: (ring.nf(_bind(s[4], s[1])).key, ring.nf(s[2]).key, ring.nf(s[3]).key)  # noqa: E731
        for a, b in (("lhs", "rhs"), ("rhs", "lhs")):
            theirs = [key(s) for _, s in self.sums(b)]
            for path, s in self.sums(a):
                body, lo, hi = key(s)
                for _, s1 in self.sums(b):
                    b1, lo1, m = key(s1)
                    after = ("add", s1[3], ("num", Fraction(1)))
                    if (b1, lo1) == (body, lo) and m != hi and (body, ring.nf(after).key, hi) in theirs:
                        to = ("add", ("sum", s[1], s[2], s1[3], s[4]), ("sum", s[1], after, s[3], s[4]))
                        self.steps.append({"side": a, "at": list(path), "rule": "sum_split", "result": write(to)})
                        self.sides[a] = put(self.sides[a], path, to)
                        self.norm(a, path)
                        return True
        return False


def chain(lhs, rhs, defs: dict, ring: Ring, scope: Scope, later=None) -> list[dict]:
    """The steps that bring ``lhs`` and ``rhs`` (terms) to their normal forms (``scope``: the
    claim's facts; ``later``: a limit's signs for large values of its variable)."""
    search = _Search(ring, defs, {"lhs": lhs, "rhs": rhs}, scope, later)
    for side in ("lhs", "rhs"):
        search.norm(side, ())
    for _ in range(8):
        a, b = (search.ring.nf(search.sides[s]) for s in ("lhs", "rhs"))
        if a.key == b.key or not search.split():
            break
    return search.steps
