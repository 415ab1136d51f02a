"""``decreasing_in_distance``: for a fixed query i and a fixed s = ⟨q_i, k_j⟩/√d, the score is
non-increasing in |i − j| over the allowed keys.

Proved when, with j = i ∓ e (the side(s) the mask allows, e ≥ 0 real), the derivative of the
score in e is ≤ 0 by SymPy's assumptions (for a mask allowing both sides, the score symmetric in
i − j); for a score piecewise in the distance, when each piece is non-increasing and no integer
step across a threshold goes up; for a score reading a modifier's tables, at each head of the
model on the tables' real entries. An inner product without the key (⟨q_i, b_k⟩/√d of a key bias)
is one number of the row, r_1, r_2, …. Refuted by a certified violation: a row i and two allowed
keys j_1, j_2 with |i − j_1| ≤ |i − j_2| and a larger score at j_2.
"""

from __future__ import annotations

import sympy as sp

from derive.claims import show
from derive.claims.modifiers import _allowed, _data, _heads
from derive.claims.numeric import instantiate, interpretations
from derive.claims.result import Outcome, step
from derive.crosscheck.witness import find_witness
from derive.flex.spec import plain_score
from derive.flex.tree import SCORE
from derive.model.attention import i, j
from derive.model.masks import mask_side
from derive.model.tables import concrete_data
from derive.model.vectors import expand_dot
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED

__all__ = ["E", "decreasing_in_distance", "modifier", "row_constants"]

E = sp.Symbol("e", nonnegative=True)  # the distance |i − j| as a real variable


def modifier(spec, variant) -> sp.Expr | None:
    """The score as a function of s = ⟨q_i, k_j⟩/√d, i, j (and parameters), or None when the
    score involves the key's vector otherwise (then distance alone does not fix it)."""
    if spec.flex is not None and spec.flex.score is not None:
        return spec.flex.score.expr
    dot = plain_score()
    score = sp.expand(expand_dot(variant.score()))
    f = sp.expand(score.subs(dot, SCORE))
    f = f.xreplace(row_constants(f))
    if any(getattr(a, "base", None) is not None for a in f.atoms(sp.Indexed)):
        return None
    return f


def row_constants(f: sp.Expr) -> dict:
    """Each inner product in ``f`` that does not involve the key j (⟨q_i, b_k⟩/√d of a key bias)
    as a real number r_1, r_2, … of the row (≥ 0 for a squared norm ⟨a, a⟩): the query i is fixed,
    so it is one number on every key of the row, any number as q_i and the bias vary."""
    from derive.model.vectors import Dot

    dots = sorted((a for a in f.atoms(Dot) if j not in a.free_symbols), key=sp.default_sort_key)
    return {a: sp.Symbol(f"r_{k}", real=True, nonnegative=True if a.args[0] == a.args[1] else None)
            for k, a in enumerate(dots, 1)}


def decreasing_in_distance(ctx, claim) -> Outcome:
    spec = ctx.spec
    f = modifier(spec, ctx.base)
    if f is None:
        return Outcome(UNDECIDED, "the score involves the keys' vectors beyond ⟨q_i, k_j⟩/√d, so the distance "
                                  "alone does not fix it")
    mask = spec.mask
    side = mask_side(mask)
    steps = [step("the score as a function of s = ⟨q_i, k_j⟩/√d, i and j (r_1, …: terms without the key, one "
                  "number on every key of the row)" if any(str(x).startswith("r_") for x in f.free_symbols)
                  else "the score as a function of s = ⟨q_i, k_j⟩/√d, i and j", show.latex(f))]
    proved, why = _monotone_every_head(f, side, steps, _data(spec), _heads(spec))
    if proved:
        return Outcome(PROVED, why, steps)
    wit = _violation(f, mask, _data(spec), _heads(spec), ctx.cfg)
    if wit is not None:
        return Outcome(REFUTED, "a farther allowed key gets a larger score", steps, witness=wit)
    return Outcome(UNDECIDED, f"no proof ({why}) and no counterexample were found", steps)


def _monotone_every_head(f, side, steps, data: dict, heads: int) -> tuple[bool, str]:
    """:func:`_monotone` for the score, else for each head of the model on its tables' real entries
    (slopes 0 and 1/2: neither sign is every entry's, yet every head's score is non-increasing)."""
    proved, why = _monotone(f, side, steps)
    if proved or not data:
        return proved, why
    whys = []
    for head in range(heads):
        ok, w = _monotone(concrete_data(f, data, head), side, steps)
        if not ok:
            return False, why
        whys.append(w)
    return True, f"at each of the model's {heads} heads (on the real entries of its tables): {whys[-1]}"


def _monotone(f, side, steps) -> tuple[bool, str]:
    sides = {"past": (-1,), "future": (1,), None: (1, -1)}[side]
    if side is None:
        sym = sp.simplify(f.xreplace({j: i + E}) - f.xreplace({j: i - E}))
        steps.append(step("f(i + e) − f(i − e), e ≥ 0 (both sides allowed)", show.latex(sym)))
        if sym != 0:
            return False, "the mask allows keys on both sides and the score is not symmetric in i − j"
    for sgn in sides[:1]:
        g = f.xreplace({j: i + sgn * E})
        if g.has(sp.Piecewise) and not g.has(sp.Max, sp.Min, sp.Abs, sp.Heaviside, sp.sign, sp.floor, sp.ceiling):
            ok = _piecewise_monotone(g, steps)
            if ok:
                where = "" if side is None else \
                    f" and the mask allows only keys {'before' if side == 'past' else 'after'} the query"
                return True, f"each piece of the score is non-increasing in the distance and no step between " \
                             f"pieces goes up{where}"
        if g.has(sp.Piecewise, sp.Max, sp.Min, sp.Abs, sp.Heaviside, sp.sign, sp.floor, sp.ceiling):
            # a derivative that is ≤ 0 on every piece says nothing about the jumps between pieces
            steps.append(step("the score is not smooth in the distance (a branch, max, min or abs of it)",
                              show.latex(g)))
            return False, "the score is not smooth in the distance, so its derivative proves nothing"
        dg = sp.simplify(sp.diff(g, E))
        steps.append(step(f"d/de of the score at j = i {'+' if sgn > 0 else '−'} e, e ≥ 0", show.latex(dg)))
        if dg.is_nonpositive:
            where = "for every allowed key" if side is None else \
                f"and the mask allows only keys {'before' if side == 'past' else 'after'} the query"
            return True, f"the derivative in the distance is ≤ 0 {where}"
        return False, "the sign of the derivative in the distance is not proved"
    return False, ""


def _piecewise_monotone(g, steps) -> bool:
    """Is ``g`` (the score at the distance e ≥ 0, a piecewise expression whose conditions compare
    e with numbers) non-increasing on the integer distances? The conditions' thresholds cut the
    distances into intervals; on each, the piece in force must have a derivative ≤ 0, and at each
    threshold the steps between the integers next to it must not go up."""
    g = g.replace(lambda e: isinstance(e, sp.core.relational.Relational),
                  lambda r: r.func(sp.expand(r.lhs - r.rhs), 0))  # i > j + 2 at j = i − e: e − 2 > 0
    rels = g.atoms(sp.core.relational.Relational)
    if not rels or any(r.free_symbols - {E} for r in rels):
        return False
    points = set()
    for r in rels:
        try:
            sol = sp.solve(r.lhs - r.rhs, E)
        except NotImplementedError:
            return False
        if not all(p.is_number and p.is_real for p in sol):
            return False
        points |= set(sol)
    points = sorted(p for p in points if p >= 0)
    cuts = [sp.S.Zero] + points
    probes = [(a + b) / 2 for a, b in zip(cuts, cuts[1:])] + [cuts[-1] + 1]
    for c in probes:  # the piece in force on each interval
        piece = _in_force(g, c)
        if piece is None or sp.simplify(sp.diff(piece, E)).is_nonpositive is not True:
            return False
    for p in points:  # the integer steps around each threshold
        for k in range(max(0, int(sp.floor(p)) - 1), int(sp.floor(p)) + 2):
            step_ = sp.simplify(g.xreplace({E: k + 1}) - g.xreplace({E: k}))
            if step_.is_nonpositive is not True:
                return False
    steps.append(step("the score is piecewise in the distance e; thresholds at e = "
                      + ", ".join(sp.sstr(p) for p in points) + "; every piece has a derivative ≤ 0 in e and every "
                      "integer step across a threshold is ≤ 0", show.latex(g)))
    return True


def _stepped(lhs, j1, j2) -> dict | None:
    """A violation of a piecewise score searched on the grid of positions (the random search rarely
    draws three positions far enough apart to cross a threshold): i, j_1, j_2 up to 8, the other
    scalars 0, judged in order, the first certified one (the counterexample dict of find_witness)."""
    from derive.crosscheck.witness import witness_at

    others = sorted(lhs.free_symbols - {i, j1, j2}, key=str)
    if any(not s.is_real or s.is_integer for s in others):
        return None
    put = {s: sp.S.Zero for s in others}
    for row in range(1, 9):
        for a in range(1, 9):
            for b in range(1, 9):
                if abs(row - a) > abs(row - b) or a == b:
                    continue
                wit = witness_at(lhs.xreplace(put), sp.S.Zero, 8, {i: row, j1: a, j2: b})
                if wit is not None:
                    for s in others:
                        wit["_instance"].scalars[s] = sp.S.Zero
                    return wit
    return None


def _in_force(g, c):
    """``g`` with each piecewise part replaced by its piece in force at e = c (None if not decided)."""
    def pick(pw):
        for expr, cond in pw.args:
            v = cond.xreplace({E: c}) if isinstance(cond, sp.Basic) else cond
            if v == sp.true or v is True:
                return expr
            if v not in (sp.false, False):
                return None
        return None

    out = g
    while out.has(sp.Piecewise):
        pw = next(iter(sorted(out.atoms(sp.Piecewise), key=sp.count_ops)))
        piece = pick(pw)
        if piece is None:
            return None
        out = out.xreplace({pw: piece})
    return out


def _violation(f, mask, data, heads, cfg) -> dict | None:
    j1, j2 = sp.Symbol("j_1", integer=True, positive=True), sp.Symbol("j_2", integer=True, positive=True)
    for head in range(heads):
        g = concrete_data(f, data, head) if data else f
        # a declared function by a concrete member of its family (a claim holds for all functions)
        f1, f2 = (instantiate(g.xreplace({j: jk})) for jk in (j1, j2))
        guard = sp.Mul(_allowed(mask, j1), _allowed(mask, j2),
                       sp.Piecewise((1, sp.Abs(i - j1) <= sp.Abs(i - j2)), (0, True)))
        lhs = guard * sp.Max(0, f2 - f1)
        wit = find_witness(lhs, sp.S.Zero, cfg=cfg) or (_stepped(lhs, j1, j2) if g.has(sp.Piecewise) else None)
        if wit is None:
            continue
        from derive.crosscheck.witness import certify, rounded

        inst, env = wit["_instance"], wit["_env"]
        for sym in sorted((f1 + f2).free_symbols - set(inst.scalars) - set(env), key=str):
            if not sym.is_integer:  # cancels in the difference (s, for a bias): any value; 0 shown
                inst.scalars[sym] = sp.S.Zero
        # the two scores themselves, certified apart: the enclosures of the sides compared (the
        # search certified the violation max(0, far − near) > 0, not these)
        cert = certify(f1, f2, inst, env)
        if cert is None:
            continue
        near, far = rounded(cert.lhs), rounded(cert.rhs)
        values = {k: v for k, v in inst.describe().items() if k not in ("d", "n")}
        if data:
            values["head"] = head
            for key, vals in data.items():
                if isinstance(key, sp.Symbol) and key in f.free_symbols:
                    values[key.name] = str(vals[min(head, len(vals) - 1)])
        return {"d": wit["instance"]["d"], "n": wit["instance"]["n"], "mask": str(mask),
                "indices": wit["indices"], "values": values, "functions": interpretations(g) or None,
                "original": near, "changed": far, "enclosures": cert.as_json(),
                "compared": ["score at the nearer key j_1", "score at the farther key j_2"]}
    return None
