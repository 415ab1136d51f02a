"""Counterexamples: small exact instances on which two expressions certainly differ.

The one counterexample searcher of derive. Hypothesis draws d and n (1 to 6), the index
values and every entry from a table of exact values (small integers, halves, a few
irrational-looking numbers such as √2 and π/4; a label vector, a document mask's ids, from
0, 1, 2; :mod:`derive.crosscheck.draws`) until an instance is certified; a greedy
shrink (:func:`shrink`) then makes it as simple as it can: smaller d and n, smaller index
values, each entry replaced by the first value of the table that keeps the difference.
Hypothesis's own shrinker found the same kind of witness at several times the cost (it
replays hundreds of choice sequences for a few dozen judged instances). An instance counts as a counterexample only when ball arithmetic
(python-flint's ``arb``) *proves* the difference nonzero: both sides are enclosed in
intervals certain to contain the exact values, at a precision raised from 64 bits until
the enclosure of the difference excludes 0 or the bit cap is reached (then: no
certificate). Agreement of two precisions is never taken as a certificate, and no float
pre-filter decides anything.

Work is bounded by counts (examples, shrink calls, precision steps), so the result is the
same on a slow machine as on a fast one; the wall-clock limit is only a last guard.
"""

from __future__ import annotations

import dataclasses
import decimal
import itertools
import math
import re
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import sympy as sp
from flint import arb
from hypothesis.errors import Unsatisfiable

from derive.crosscheck.draws import LABEL_VALUES, MAX_D, MAX_N, VALUES, generate, satisfies
from derive.crosscheck.draws import allowed as _allowed
from derive.crosscheck.evaluate import Instance, evaluate
from derive.crosscheck.hypothesis_env import no_local_constants
from derive.crosscheck.instances import Signature, first_index, mask_table, signature
from derive.timeout import TimeLimit, time_limit
from derive.routes import NO_VALUE
from derive.settings import DEFAULT, Settings

__all__ = ["VALUES", "Certificate", "certify", "find_witness", "in_domain", "rounded", "satisfies", "show_ball",
           "witness_at"]

START_BITS = 64
SURE_BITS = 256  # below this, a tight ball around 0 is not yet taken as "equal here"
MAX_BITS = 1 << 14  # 16384 bits ≈ 4900 digits: beyond, an instance gives no certificate
SHRINK_CALLS = 60  # instances judged while shrinking a found one (a count, not a clock)
BITS_BUDGET = 64 * 2000  # bits of all evaluations above 64 bits in one search (≈ 8 at the cap)


@dataclass(frozen=True)
class Certificate:
    """Enclosures of both sides whose difference provably excludes 0, at ``bits`` precision."""

    lhs: object  # arb, or an object array of arb
    rhs: object
    bits: int

    def as_json(self) -> dict:
        """Both enclosures, and the enclosure of their difference: the number that is certainly
        not 0 (two sides that read alike to 12 digits still show their difference here)."""
        return {"lhs": show_ball(self.lhs), "rhs": show_ball(self.rhs), "difference": show_difference(self),
                "bits": self.bits}


def show_difference(cert: Certificate):
    """lhs − rhs as enclosures (a list for rows), each with the digits that tell it from 0."""
    xs, ys = _balls(cert.lhs), _balls(cert.rhs)
    diffs = [show_ball(_as_arb(x) - _as_arb(y)) for x, y in zip(xs, ys)]
    return diffs if isinstance(cert.lhs, np.ndarray) else diffs[0]


def _wide() -> decimal.Context:
    """A decimal context wide enough for the mantissas of :func:`_split` (exponents far beyond
    ±999999: e^(−10⁷) ≈ 1.5e−4342945)."""
    return decimal.Context(prec=60, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


_E_NOTATION = re.compile(r"(.*[eE])([+-]?\d+)")
_FAR = 10**6  # beyond this decimal exponent, arb's text is read as a mantissa and an offset


def _split(text: str) -> tuple[Decimal, int]:
    """arb's decimal text (``1.9176e-307…``) as (D, offset) with the value D·10^offset: arb's
    exponents are unbounded (a weight e^(−10³⁰⁰) is about 10^(−4.3·10²⁹⁹)), Decimal's end near
    ±10^18. The offset is 0 unless the exponent is beyond ±10^6; then D's exponent is ±1000, so
    every format below writes D in e-notation and :func:`_shifted` moves its exponent back."""
    m = _E_NOTATION.fullmatch(text)
    k = int(m.group(2)) if m else 0
    if abs(k) <= _FAR:
        return Decimal(text), 0
    offset = k - (1000 if k > 0 else -1000)
    return Decimal(f"{m.group(1)}{k - offset}"), offset


def _shifted(text: str, offset: int) -> str:
    """A Decimal written in e-notation (``1.91760e-1000``), its exponent moved by ``offset``."""
    if not offset:
        return text
    m = _E_NOTATION.fullmatch(text)
    return f"{m.group(1)}{int(m.group(2)) + offset:+d}"


def _balls(x) -> list:
    return list(x) if isinstance(x, np.ndarray) else [x]


def _as_arb(x):
    return x if isinstance(x, arb) else arb(x) if isinstance(x, (int, float)) else None


def certify(lhs, rhs, inst: Instance, env: dict, max_bits: int = MAX_BITS,
            budget: list | None = None) -> Certificate | None:
    """A certificate that ``lhs ≠ rhs`` on ``inst``, or ``None``.

    Precision starts at 64 bits and is multiplied by 4 while the enclosure of the difference
    is too wide to tell (cancellation); it stops without a certificate when the enclosure is
    tight around 0 at :func:`sure_bits` or more (256 bits, more for sides whose constants span
    more: a difference of 1e-300 from a constant 1e-300 is looked for at 4096 bits) or at
    ``max_bits``.
    ``budget`` (a one-element list of bits) is charged for every evaluation above 64 bits;
    once it is spent, no more precision is spent on anything.
    """
    bits, sure = START_BITS, sure_bits(lhs, rhs)
    while bits <= max_bits:
        if bits > START_BITS and budget is not None:
            if budget[0] < bits:
                return None
            budget[0] -= bits
        try:
            a = evaluate(lhs, inst, "arb", env, prec=bits)
            b = evaluate(rhs, inst, "arb", env, prec=bits)
        except NO_VALUE:  # no value at this instance (or none enclosed): it certifies nothing
            return None
        xs, ys = _balls(a), _balls(b)
        if len(xs) != len(ys):
            return None
        xs, ys = [_as_arb(x) for x in xs], [_as_arb(y) for y in ys]
        if any(x is None for x in xs + ys):
            return None
        tight = True
        for x, y in zip(xs, ys):
            diff = x - y
            if diff.is_finite() and not diff.contains(0):
                return Certificate(a, b, bits)
            scale = arb(1) + abs(x.mid()) + abs(y.mid())
            if not diff.is_finite() or not (diff.rad() <= scale * arb(2) ** (-(bits // 2))):
                tight = False
        if tight and bits >= sure:
            return None
        bits *= 4
    return None


def sure_bits(*exprs) -> int:
    """The precision below which a ball tight around 0 is not yet taken as "equal here": 256 bits,
    or twice the binary exponent of the sides' most extreme constant and 128 bits more (2^-400,
    10^-300, e^-1000 or 10^300 in a score make differences of that size, which arb's unbounded
    exponents can certify)."""
    span = 0
    for e in exprs:
        if not isinstance(e, sp.Basic):
            continue
        for r in e.atoms(sp.Rational):
            if r != 0:
                span = max(span, abs(int(r.p).bit_length() - 1), int(r.q).bit_length() - 1)
        for f in e.atoms(sp.exp):
            c = f.args[0].as_coeff_Mul()[0]
            if c.is_Number and c.is_finite:
                span = max(span, int(abs(float(c)) * 1.4427) + 1)
    return max(SURE_BITS, 2 * span + 128)


def show_ball(x) -> str | list[str]:
    """An enclosure as text: 12 significant digits ± one unit of the last, certain to contain
    the value (the ball is first made far narrower than that unit)."""
    if isinstance(x, np.ndarray):
        return [show_ball(v) for v in x]
    if not isinstance(x, arb):
        x = arb(x)
    with decimal.localcontext(_wide()):
        return _show_ball(x)


def _show_ball(x: arb) -> str:
    if not x.is_finite():
        return x.str(12, radius=True)
    if x.is_exact() and x.mid().is_zero():
        return "0"
    mid, offset = _split(x.mid().str(40, radius=False))
    if mid == 0:
        return _wide_ball(x, mid, offset)
    exp10 = mid.adjusted() - 11
    unit = Decimal(1).scaleb(exp10)
    if not x.rad() < arb(f"1e{exp10 + offset}") / 100:
        return _wide_ball(x, mid, offset)
    shown = mid.quantize(unit)
    if x.is_exact() and Decimal(shown) == mid:
        return _shifted(_plain_decimal(shown), offset)
    return f"{_shifted(_plain_decimal(shown), offset)} ± {_shifted(f'{unit:.0e}', offset)}"


def _wide_ball(x: arb, mid: Decimal, offset: int) -> str:
    """A ball too wide for 12 digits, as ``m ± r`` all the same (never flint's ``[m +/- r]``, which
    a reader of "m ± r" cannot read): m to 12 significant digits (0 when the midpoint is 0) and r
    rounded up to 2, so that m ± r still contains the ball. ``mid``·10^``offset`` is the midpoint
    (:func:`_split`)."""
    m = Decimal(0) if mid == 0 else mid.quantize(Decimal(1).scaleb(mid.adjusted() - 11))
    m_text = str(m) if not offset else _shifted(format(m, "e"), offset)
    bound = abs(arb(m_text) - x.mid()) + x.rad()  # every point of the ball is within this of m
    r, r_offset = _split(bound.upper().str(20, radius=False))
    r = (r * Decimal("1.0001")).quantize(Decimal(1).scaleb((r * Decimal("1.0001")).adjusted() - 1),
                                         rounding=decimal.ROUND_UP)
    shown = _shifted(_plain_decimal(m), offset) if m != 0 else "0"
    return f"{shown} ± {_shifted(f'{r:.1e}', r_offset)}"


def _plain_decimal(d: Decimal) -> str:
    s = format(d.normalize(), "f") if abs(d.adjusted()) < 12 else format(d.normalize(), "e")
    return s


def in_domain(guards, inst: Instance, env: dict, allowed=None) -> bool:
    """Is every guard certainly satisfied, for every query row i and key j of the instance?

    With ``allowed`` (the mask's indicator in i and j), a guard on the key is demanded only on
    the keys the mask allows: a masked key's score is never used."""
    from derive.model.attention import i, j

    for kind, arg in guards:
        loops = [s for s in (i, j) if s in arg.free_symbols]
        if allowed is not None and j in loops:
            loops = [i, j]
        for values in itertools.product(range(1, inst.n + 1), repeat=len(loops)):
            here = {**env, **dict(zip(loops, values))}
            if allowed is not None and j in loops and not _allows(allowed, inst, here):
                continue
            try:
                v = evaluate(arg, inst, "arb", here, prec=START_BITS)
                v = v if isinstance(v, arb) else arb(v)
            except NO_VALUE:  # no value here: not inside the domain
                return False
            ok = {"positive": v > 0, "nonnegative": v >= 0, "nonzero": v.is_finite() and not v.contains(0)}[kind]
            if not ok:
                return False
    return True


def _allows(allowed, inst: Instance, env: dict) -> bool:
    """Is the key allowed? A mask that cannot be evaluated here allows it (the guard is then demanded)."""
    try:
        v = evaluate(allowed, inst, "arb", env, prec=START_BITS)
    except NO_VALUE:  # a mask with no value here allows the key (the guard is then demanded)
        return True
    v = v if isinstance(v, arb) else arb(v)
    return not (v.is_exact() and v.mid().is_zero())


def _search(lhs, rhs, sig: Signature, fixed: dict, size: tuple[int, int], examples: int, cfg: Settings,
            guards=(), allowed=None):
    """(instance, env, certificate) of the simplest certified instance a search finds.

    Hypothesis generates instances (d and n up to ``size``) until the first certified one;
    :func:`shrink` then simplifies it greedily over the value table (at most ``SHRINK_CALLS``
    judged instances).
    """
    bits = [BITS_BUDGET]
    seen: dict = {}

    def differs(inst: Instance, env: dict) -> bool:
        # An instance already judged keeps its answer, and its certificate (with a budget,
        # certify gives the certificate it gives without one, or None)
        key = _key((inst, env))
        if key not in seen:
            seen[key] = in_domain(guards, inst, env, allowed) and certify(lhs, rhs, inst, env, budget=bits)
        return bool(seen[key])

    try:
        with time_limit(cfg.time_limit), no_local_constants():  # the clock: a last guard behind the counts
            found = generate(sig, fixed, size, examples, differs)
            if found is None:
                return None
            low = max(1, sig.min_n, max(fixed.values(), default=1))
            inst, env = shrink(*found, differs, low=low, fixed=fixed, masks=frozenset(sig.masks))
            cert = seen[_key((inst, env))]
    except TimeLimit:
        return None
    except Unsatisfiable:  # no instance of this shape can be drawn: none found
        return None
    return (inst, env, cert) if cert else None


def _simpler(v, table) -> list:
    """The entries of ``table`` that come before ``v`` (simplest first); all of it if ``v`` is not in it."""
    for k, w in enumerate(table):
        if w == v:
            return list(table[:k])
    return list(table)


def _copy(inst: Instance) -> Instance:
    return Instance(d=inst.d, n=inst.n, scalars=dict(inst.scalars),
                    vectors={k: v.copy() for k, v in inst.vectors.items()},
                    families={k: v.copy() for k, v in inst.families.items()},
                    tables={k: v.copy() for k, v in inst.tables.items()})


def _cut(inst: Instance, env: dict, d: int, n: int, masks=frozenset()) -> tuple[Instance, dict]:
    """The instance restricted to the first ``d`` components and the first ``n`` keys; index
    values beyond ``n`` become ``n`` and a mask row left without a key keeps key 1."""
    out = Instance(d=d, n=n, scalars=dict(inst.scalars),
                   vectors={k: v[:d].copy() for k, v in inst.vectors.items()},
                   families={k: v[: n + 1, :d].copy() for k, v in inst.families.items()},
                   tables={k: (v[: n + 1] if v.ndim == 1 else v[: n + 1, : n + 1]).copy()
                           for k, v in inst.tables.items()})
    for name, tab in out.tables.items():
        if name in masks:
            for r in range(1, n + 1):
                if not tab[r, 1:].any():
                    tab[r, 1] = 1
    return out, {s: min(v, n) for s, v in env.items()}


def shrink(inst: Instance, env: dict, differs, *, low: int = 1, fixed=(),
           masks=frozenset()) -> tuple[Instance, dict]:
    """A simpler instance on which ``differs`` still holds: greedy, deterministic, bounded.

    Passes, repeated while one of them makes progress: a smaller d, then a smaller n
    (entries cut off), smaller index values, then every scalar and entry replaced by the
    first value of the table before it that keeps the difference (0 first), and every
    mask by all keys, then causal. At most ``SHRINK_CALLS`` instances are judged (repeats
    are free), so the work is a count, the same on every machine.
    """
    judged: set = set()
    best = [(inst, env)]  # the simplest instance so far

    def keeps(cand: Instance, cenv: dict) -> bool:
        key = _key((cand, cenv))
        if key not in judged:
            if len(judged) >= SHRINK_CALLS:
                raise _Spent
            judged.add(key)
        if differs(cand, cenv):
            best[0] = (cand, cenv)
            return True
        return False

    try:
        return _passes(inst, env, keeps, low, fixed, masks)
    except _Spent:
        return best[0]


class _Spent(Exception):
    """The shrink budget is spent: the simplest instance so far is the answer."""


def _passes(inst: Instance, env: dict, keeps, low: int, fixed, masks) -> tuple[Instance, dict]:
    """The passes of :func:`shrink`, repeated while one of them makes progress."""

    def entries(x: Instance) -> list:
        """(dict, key, position) of every entry of ``x``, in drawing order."""
        out = [("vectors", v, (c,)) for v in x.vectors for c in range(x.d)]
        out += [("families", f, (r, c)) for f in x.families for r in range(1, x.n + 1) for c in range(x.d)]
        out += [("tables", t, (r, c)) for t in x.tables if t not in masks and x.tables[t].ndim == 2
                for r in range(1, x.n + 1) for c in range(1, x.n + 1)]
        out += [("tables", t, (r,)) for t in x.tables if x.tables[t].ndim == 1 for r in range(1, x.n + 1)]
        return out

    progress = True
    while progress:
        progress = False
        for d in range(1, inst.d):
            cand = _cut(inst, env, d, inst.n, masks)
            if keeps(*cand):
                (inst, env), progress = cand, True
                break
        for n in range(low, inst.n):
            cand = _cut(inst, env, inst.d, n, masks)
            if keeps(*cand):
                (inst, env), progress = cand, True
                break
        for s in sorted(env, key=lambda s: s.name):
            if s in fixed:
                continue
            for v in range(first_index(s), env[s]):
                cenv = {**env, s: v}
                if keeps(inst, cenv):
                    env, progress = cenv, True
                    break
        for s in sorted(inst.scalars, key=lambda s: s.name):
            for v in _simpler(inst.scalars[s], _allowed(s)):
                cand = _copy(inst)
                cand.scalars[s] = v
                if keeps(cand, env):
                    inst, progress = cand, True
                    break
        for attr, name, pos in entries(inst):
            table = LABEL_VALUES if len(pos) == 1 and attr == "tables" else VALUES
            for v in _simpler(getattr(inst, attr)[name][pos], table):
                cand = _copy(inst)
                getattr(cand, attr)[name][pos] = v
                if keeps(cand, env):
                    inst, progress = cand, True
                    break
        for name in sorted(masks):
            for kind in ("full", "causal"):
                table = mask_table(kind, inst.n, np.random.default_rng(0))
                if np.array_equal(table, inst.tables[name]):
                    break
                cand = _copy(inst)
                cand.tables[name] = table
                if keeps(cand, env):
                    inst, progress = cand, True
                    break
    return inst, env


def _key(ie) -> tuple:
    """An instance and its index values as one hashable value, equal exactly for the same
    entries (every entry is an exact SymPy number of the value tables, or a mask's 0 and 1)."""
    inst, env = ie
    return (inst.d, inst.n, _named(inst.scalars), _named(inst.vectors), _named(inst.families), _named(inst.tables),
            _named(env))


def _named(values: dict) -> tuple:
    out = [(getattr(k, "name", k), (v.shape, tuple(v.ravel().tolist())) if isinstance(v, np.ndarray) else v)
           for k, v in values.items()]
    return tuple(sorted(out, key=lambda kv: kv[0]))


def find_witness(lhs, rhs, *, fixed: dict | None = None, cfg: Settings = DEFAULT,
                 max_d: int = MAX_D, max_n: int = MAX_N, guards=(), allowed=None) -> dict | None:
    """The simplest instance on which ``lhs ≠ rhs`` is certified, as a dict; or ``None``.

    The dict has the instance (exact entries), the index values, both sides rounded for
    reading (``lhs``, ``rhs``) and their certified enclosures (``enclosures``); keys starting
    with ``_`` hold the objects for replaying it. ``guards`` — ``(kind, expr)`` with kind
    ``positive``, ``nonnegative`` or ``nonzero`` — is the domain the instance must lie in,
    for every query row i and key j (certified like the difference); with ``allowed``, the
    mask's indicator in i and j, only for the keys it allows.

    A counterexample found is kept for the same arguments (the atlas's variants share
    claims): the search is deterministic, so it would find the same one again.
    """
    guards = list(guards)
    fixed = dict(fixed or {})
    try:
        key = (lhs, rhs, tuple(sorted(fixed.items(), key=str)), cfg, max_d, max_n, tuple(guards), allowed)
        found = _FOUND.get(key)
    except TypeError:  # an argument that is not hashable: not kept
        key, found = None, None
    if found is None:
        found = _find(lhs, rhs, fixed, cfg, max_d, max_n, guards, allowed)
        if found is None:
            return None
        if key is not None:
            _FOUND[key] = found
    inst, env, cert = found
    return {
        "instance": inst.describe(),
        "indices": {s.name: v for s, v in sorted(env.items(), key=lambda kv: kv[0].name)},
        "lhs": rounded(cert.lhs),
        "rhs": rounded(cert.rhs),
        "enclosures": cert.as_json(),
        "_instance": _copy(inst),
        "_env": dict(env),
        "_certificate": cert,
    }


_FOUND: dict = {}  # find_witness's arguments → (instance, env, certificate) it found


def _find(lhs, rhs, fixed: dict, cfg: Settings, max_d: int, max_n: int, guards: list, allowed):
    sig = signature(lhs, rhs, *(g for _, g in guards))
    # Sizes up to 2 first (their witnesses read best and shrink fast), then up to 3, then the
    # whole range, a third of the budget each.
    sizes = [(min(k, max_d), min(k, max_n)) for k in (2, 3)] + [(max_d, max_n)]
    for size in dict.fromkeys(sizes):
        found = _search(lhs, rhs, sig, fixed, size, max(1, cfg.witness_examples // 3), cfg, guards, allowed)
        if found is not None:
            return found
    longer = _row_length_past(lhs, rhs, *(g for _, g in guards), allowed)
    if longer > max_n:  # a threshold in the row length beyond the sizes above (relu(n − 6), a window of 7)
        found = _search(lhs, rhs, dataclasses.replace(sig, min_n=longer), fixed, (max_d, longer),
                        max(1, cfg.witness_examples // 3), cfg, guards, allowed)
        if found is not None:
            return found
    return _scaled(lhs, rhs, sig, fixed, guards, allowed)


LONGEST = 12  # rows searched at most, for a threshold in the row length


def _row_length_past(*exprs) -> int:
    """One more than the largest integer constant (up to LONGEST − 1) of the sides, the guards and
    the mask: the row length past a threshold such as relu(n − 6) or causal_window(7)."""
    ks = [abs(int(c)) for e in exprs if isinstance(e, sp.Basic) for c in e.atoms(sp.Integer)]
    return min(LONGEST, max(ks, default=0) + 1)


SCALE = 2 ** 64  # a constant beyond this (or within 1/this of 0) sets a scale no table value reaches


def _scaled(lhs, rhs, sig, fixed: dict, guards: list, allowed):
    """(instance, env, certificate) of an instance at the scale of the sides' most extreme
    constant, or None: tanh(1e300·s) and tanh(2e300·s) differ only where |s| is about 1e-300 or
    below, which no entry of the value table makes. Every entry is a small multiple of 1/C (C the
    constant, or its reciprocal when it is tiny); a few sizes and patterns, judged like any
    instance (inside the guards, certified)."""
    from derive.crosscheck.instances import first_index

    mags = {abs(r) for e in (lhs, rhs) if isinstance(e, sp.Basic) for r in e.atoms(sp.Rational)}
    scales = sorted({1 / m if m > SCALE else m for m in mags if m > SCALE or 0 < m < sp.Rational(1, SCALE)})
    if not scales or sig.tables or sig.labels or sig.masks:
        return None
    for small in scales[:2]:
        for n in range(max(2, sig.min_n, max(fixed.values(), default=1)), 4):
            for pattern in range(3):
                vals = [small * (1 + (k + pattern) % 3) * (-1) ** (k // 3) for k in range(64)]
                it = iter(vals)
                inst = Instance(d=1, n=n)
                for v in sig.vectors:
                    inst.vectors[v] = np.array([next(it)], dtype=object)
                for f in sig.families:
                    fam = np.zeros((n + 1, 1), dtype=object)
                    fam[1:, 0] = [sp.Integer(1 + r) if pattern == 0 and str(f) in ("k", "v") else next(it) for r in range(n)]
                    inst.families[f] = fam
                for sc in sig.scalars:
                    ok = [v for v in (next(it), small, 1 / small, sp.S.One) if satisfies(sc, v)]
                    if not ok:
                        return None
                    inst.scalars[sc] = ok[0]
                env = {sc: n if k == 0 else first_index(sc) for k, sc in enumerate(sig.indices) if sc not in fixed}
                env.update(fixed)
                if not in_domain(guards, inst, env, allowed):
                    continue
                cert = certify(lhs, rhs, inst, env)
                if cert is not None:
                    return inst, env, cert
    return None


def witness_at(lhs, rhs, n: int, env: dict, d: int = 1) -> dict | None:
    """The counterexample dict of :func:`find_witness` for one given instance with no entries
    (sizes d and n, index values ``env``: a pair of positions a decision procedure found), or
    None when ball arithmetic does not certify the difference there."""
    inst = Instance(d=d, n=n)
    cert = certify(lhs, rhs, inst, env)
    if cert is None:
        return None
    indices = {s.name: v for s, v in sorted(env.items(), key=lambda kv: kv[0].name)}
    return {"instance": inst.describe(), "indices": indices,
            "lhs": rounded(cert.lhs), "rhs": rounded(cert.rhs), "enclosures": cert.as_json(),
            "_instance": inst, "_env": env, "_certificate": cert}


def rounded(x):
    """A value for reading: 6 significant digits of the enclosure's midpoint (text beyond the
    range of float64, ``None`` for a ball that is not finite; JSON has no NaN)."""
    if isinstance(x, np.ndarray):
        return [rounded(v) for v in x]
    if not isinstance(x, arb):
        return float(x)
    if not x.is_finite():
        return None
    if x.contains(0) and not x.is_exact():  # a ball about 0: its midpoint is noise, its value 0 to the digits shown
        return 0.0
    with decimal.localcontext(_wide()):
        mid, offset = _split(x.mid().str(30, radius=False))
        f = float(mid) if not offset else math.nan
        if math.isfinite(f) and (f != 0 or mid == 0):
            return float(f"{f:.6g}")
        # beyond the range of float64 (too large, or too small to be told from 0): as text
        return _shifted(f"{mid:.6g}", offset)
