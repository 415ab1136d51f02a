"""Numbers for claims: concrete stand-ins for opaque functions, masks, witnesses, cross-checks.

A declared function is opaque to the proofs. To evaluate, each one gets a concrete
member of a family with drawn coefficients — scalar ``f(x) = f.a0 + f.a1·x + f.a2·x²``,
vector ``F(x) = F.a·x + ⟨x, x⟩·F.c + F.b`` — which is sound for counterexamples (a claim
"for all f" fails if it fails for one f) and fine as evidence for cross-checks.
The mask of the spec is made concrete (``none`` → all keys, ``causal`` → t ≤ i) so a
counterexample is an instance of the variant as specified.
"""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample
from sympy.core.function import AppliedUndef

from derive.prove.timeout import TimeLimit, time_limit
from derive.crosscheck.check import cross_check
from derive.crosscheck.evaluate import evaluate
from derive.crosscheck.instances import signature
from derive.crosscheck.witness import _instances, certified_difference
from derive.model.attention import M, j
from derive.model.vectors import Dot, VectorFunction, VectorSymbol
from derive.settings import Settings

__all__ = ["check_numeric", "concrete_mask", "find_certified", "instantiate", "interpretations", "row_values"]


def _scalar_fn(e: AppliedUndef) -> sp.Expr:
    name = type(e).__name__
    a0, a1, a2 = (sp.Symbol(f"{name}.a{k}", real=True) for k in range(3))
    x = e.args[0]
    return a0 + a1 * x + a2 * x**2


def _vector_fn(e: VectorFunction) -> sp.Expr:
    name = type(e).__name__
    a = sp.Symbol(f"{name}.a", real=True)
    b, c = VectorSymbol(f"{name}.b"), VectorSymbol(f"{name}.c")
    x = e.args[0]
    return a * x + Dot(x, x) * c + b


def instantiate(expr: sp.Expr) -> sp.Expr:
    """``expr`` with every opaque function replaced by its concrete family member."""
    expr = expr.replace(lambda e: isinstance(e, VectorFunction), _vector_fn)
    return expr.replace(lambda e: isinstance(e, AppliedUndef), _scalar_fn)


def interpretations(expr: sp.Expr) -> dict[str, str]:
    out = {}
    for e in expr.atoms(VectorFunction):
        nm = type(e).__name__
        out[nm] = f"{nm}(x) = {nm}.a·x + ⟨x, x⟩·{nm}.c + {nm}.b"
    for e in expr.atoms(AppliedUndef):
        nm = type(e).__name__
        out[nm] = f"{nm}(x) = {nm}.a0 + {nm}.a1·x + {nm}.a2·x²"
    return dict(sorted(out.items()))


def concrete_mask(expr: sp.Expr, mask: str) -> sp.Expr:
    def repl(e):
        row, col = e.indices
        return sp.S.One if mask == "none" else sp.Piecewise((1, sp.Le(col, row)), (0, True))

    return expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base == M, repl)


def _prepare(expr, mask):
    return concrete_mask(instantiate(sp.sympify(expr)), mask)


def find_certified(lhs, rhs, mask: str, cfg: Settings, *, fixed: dict | None = None,
                   below: bool = False) -> dict | None:
    """A small certified instance with lhs ≠ rhs (``below``: lhs < rhs), JSON-ready; or None."""
    a, b = _prepare(lhs, mask), _prepare(rhs, mask)
    fixed = dict(fixed or {})
    strategy = _instances(signature(a, b), fixed, 3, 3, 3)

    budget = {"calls": 0, "found": None}
    seen: dict = {}

    def differs(ie):
        # Shrinking stops after SHRINK_CALLS further tries once an instance is found (a
        # count, not a clock, so the result is deterministic); instances already judged
        # keep their answer, so Hypothesis' final replay agrees.
        key = _key(ie)
        if key in seen:
            return seen[key]
        if budget["found"] is not None and budget["calls"] - budget["found"] > SHRINK_CALLS:
            return False
        budget["calls"] += 1
        seen[key] = ok = _differs(ie)
        if ok and budget["found"] is None:
            budget["found"] = budget["calls"]
        return ok

    guards = _domain_guards(a, b)

    def _differs(ie):
        if _float_equal(a, b, ie) or not _in_domain(guards, ie):
            return False
        got = certified_difference(a, b, ie[0], ie[1])
        if got is None:
            return False
        return not below or float(got[0]) < float(got[1])

    try:
        with time_limit(cfg.time_limit):
            inst, env = find(strategy, differs, settings=settings(
                max_examples=cfg.witness_examples, derandomize=True, database=None, deadline=None,
                phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck)))
    except (NoSuchExample, TimeLimit):
        return None
    except Exception:  # noqa: BLE001 - an evaluation failure is not a counterexample
        return None
    try:
        with time_limit(cfg.time_limit):
            va, vb = certified_difference(a, b, inst, env)
    except (TimeLimit, TypeError):
        return None
    return {
        "instance": inst.describe(),
        "indices": {s.name: v for s, v in sorted(env.items(), key=lambda kv: kv[0].name)},
        "lhs": _plain(va),
        "rhs": _plain(vb),
        "_instance": inst,
        "_env": env,
        "_exprs": (a, b),
    }


SHRINK_CALLS = 60


EXP_BOUND = 1e6  # |x| of every exp(x) in a counterexample: beyond, mpmath may take ages


def _domain_guards(*exprs) -> list[tuple[sp.Expr, str]]:
    """(argument, kind) of every log (x > 0), fractional power (x ≥ 0) and exp (|x| ≤ bound)."""
    out = set()
    for e in exprs:
        for node in sp.preorder_traversal(e):
            if isinstance(node, sp.log):
                out.add((node.args[0], "log"))
            elif isinstance(node, sp.Pow) and not node.exp.is_integer:
                out.add((node.base, "root"))
            elif isinstance(node, sp.exp):
                out.add((node.args[0], "exp"))
    return sorted(out, key=lambda g: (sp.default_sort_key(g[0]), g[1]))


def _in_domain(guards, ie) -> bool:
    """A counterexample must lie where the spec is defined: no log of x ≤ 0, no √ of x < 0."""
    import itertools

    from derive.model.attention import t, u

    inst, env = ie
    # innermost first: an exp tower is rejected at its first oversized argument
    for arg, kind in sorted(guards, key=lambda g: sp.count_ops(g[0])):
        loops = [s for s in (t, u) if s in arg.free_symbols]
        for values in itertools.product(range(1, inst.n + 1), repeat=len(loops)):
            local = {**env, **dict(zip(loops, values))}
            try:
                with np.errstate(all="ignore"):
                    x = float(evaluate(arg, inst, "float", local))
            except Exception:  # noqa: BLE001
                return False
            if not np.isfinite(x) or (kind == "exp" and abs(x) > EXP_BOUND):
                return False
            if (kind == "log" and x <= 0) or (kind == "root" and x < 0):
                return False
    return True


def _key(ie) -> str:
    inst, env = ie
    return repr((inst.describe(), sorted((s.name, v) for s, v in env.items())))


def _float_equal(a, b, ie) -> bool:
    """A cheap float64 pre-test: clearly equal values are not worth certifying."""
    try:
        with np.errstate(all="ignore"):
            x = np.ravel(np.asarray(evaluate(a, ie[0], "float", ie[1]), dtype=float))
            y = np.ravel(np.asarray(evaluate(b, ie[0], "float", ie[1]), dtype=float))
    except Exception:  # noqa: BLE001 - fall through to the exact evaluation
        return False
    if x.shape != y.shape or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        return False
    return bool(np.all(np.abs(x - y) <= 1e-9 * (1 + np.abs(x) + np.abs(y))))


def _plain(x):
    if isinstance(x, np.ndarray):
        return [_round(v) for v in x]
    return _round(x)


def _round(x) -> float:
    return float(f"{float(mpmath.mpf(x)):.6g}")


def row_values(witness: dict, which: int, mask: str) -> list | None:
    """The weights of the witness row for every key (lhs: which=0, rhs: 1)."""
    expr = witness["_exprs"][which]
    if j not in expr.free_symbols:
        return None
    inst, env = witness["_instance"], dict(witness["_env"])
    out = []
    try:
        with time_limit(5.0):
            for key in range(1, inst.n + 1):
                env[j] = key
                out.append(_plain(evaluate(expr, inst, "mp", env, 30)))
    except (TimeLimit, Exception):  # noqa: BLE001
        return None
    return out


def check_numeric(name: str, lhs, rhs, cfg: Settings) -> dict | None:
    """Cross-check figures for a proved identity (random masks, d and n up to 8)."""
    small = cfg.merge(max_d=min(cfg.max_d, 8), max_n=min(cfg.max_n, 8))
    try:
        with time_limit(cfg.time_limit):
            res = cross_check(name, instantiate(lhs), instantiate(rhs), small)
    except (TimeLimit, Exception):  # noqa: BLE001
        return None
    out = res.as_json()
    out.pop("kind", None)
    out.pop("name", None)
    return out
