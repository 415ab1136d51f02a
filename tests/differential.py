"""An independent evaluator of claims, for the differential test of ``derive check``.

Nothing here imports derive. Each input form is written twice: as a spec (TOML, and a
``mods.py`` for the FlexAttention forms) and as plain Python on mpmath numbers (50 digits).
The evaluator computes a claim's meaning from the definitions in ``docs/spec.md`` on random
instances (d and n larger than derive's searches), with every name drawn independently:

* ``invariant(X)``: the weights of every row, with X and with an independent X';
* ``output_invariant(X)``: the outputs, the same way; ``depends(X)``: not ``invariant(X)``;
* ``equivalent(EXPR)``: the weights with the score and with EXPR;
* ``weights_sum_to_one``: every row's weights sum to 1 (a row with no allowed key has
  weights 0, as FlexAttention defines it);
* ``shift_invariant``: the weights with the scores of a row all shifted by one constant.

A "proved" claim must never be contradicted; a "refuted" one must be confirmed, on derive's
own counterexample when its values can be read, else on the evaluator's instances.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath as mp

mp.mp.dps = 50
TOL = mp.mpf(10) ** -35

# evaluator kinds of a name: per-token vectors, a shared vector, a scalar (with a sign), a real
# table of an integer argument, a document-id table, a per-head table (its captured entries)
TOKVEC, VEC, SCALAR, POS, TABLE, LABELS, PER_HEAD = "tokvec", "vec", "scalar", "scalar+", "table", "labels", "per_head"


@dataclass
class Form:
    key: str
    spec: dict  # TOML keys (score or score_mod, mask or mask_mod, value, normalizer, symbols)
    score: Callable  # (env, i, j) -> mpf; env["h"] is the head
    kinds: dict  # every name the spec declares or captures → evaluator kind (q, k, v included)
    claims: list  # claim texts
    mask: Callable = lambda env, i, j: True
    value: Callable = lambda env, j: env["v"][j - 1]
    exprs: dict = field(default_factory=dict)  # EXPR source → (env, i, j) -> mpf
    mods: str = ""  # mods.py, for score_mod / mask_mod
    heads: int = 1
    data: dict = field(default_factory=dict)  # a captured per-head table → its entries


def dot(a, b):
    return mp.fsum(x * y for x, y in zip(a, b))


def add(a, b):
    return [x + y for x, y in zip(a, b)]


def qk(env, i, j):
    return dot(env["q"][i - 1], env["k"][j - 1]) / mp.sqrt(env["d"])


class Table:
    """An opaque function of an integer, drawn lazily and memoized (one function per draw)."""

    def __init__(self, rng, labels: bool = False, fixed: Callable | None = None):
        self.rng, self.labels, self.fixed, self.memo = rng, labels, fixed, {}

    def __call__(self, x):
        x = int(x)
        if x not in self.memo:
            if self.fixed is not None:
                self.memo[x] = self.fixed(x)
            else:
                self.memo[x] = self.rng.randrange(2) if self.labels else mp.mpf(self.rng.gauss(0, 1))
        return self.memo[x]


def _draw(kind, rng, d, n, base=None):
    g = lambda: mp.mpf(rng.gauss(0, 1))  # noqa: E731
    if kind == TOKVEC:
        return [[g() for _ in range(d)] for _ in range(n)]
    if kind == VEC:
        return [g() for _ in range(d)]
    if kind == SCALAR:
        return g()
    if kind == POS:
        return abs(g()) + mp.mpf("0.01")
    if kind in (TABLE, LABELS):
        return Table(rng, labels=kind == LABELS)
    if kind == PER_HEAD:
        return list(base) if base is not None else [g() for _ in range(8)]
    raise ValueError(kind)


def draw(form: Form, norm: str, rng, d: int, n: int) -> dict:
    env = {"d": d, "n": n, "h": rng.randrange(form.heads)}
    for name, kind in form.kinds.items():
        env[name] = _draw(kind, rng, d, n, form.data.get(name))
    env["sigmoid.b"] = mp.mpf(rng.gauss(0, 1))  # the bias of a plain sigmoid: one value, both sides
    return env


def redraw(form: Form, env: dict, name: str, rng) -> dict:
    out = dict(env)
    kind = form.kinds[name]
    out[name] = _draw(kind, rng, env["d"], env["n"]) if kind != PER_HEAD else \
        [mp.mpf(rng.gauss(0, 1)) for _ in env[name]]
    return out


def _normalize(norm: str, env: dict, i: int, scores: dict) -> tuple[dict, mp.mpf, list | None]:
    """(weights of the allowed keys, weight of the normalizer's own token, its value)."""
    if not scores:
        return {}, mp.mpf(0), None  # no allowed key: weights 0, output 0
    name, _, args = norm.partition("(")
    args = [a.strip() for a in args.rstrip(")").split(",")] if args else []
    if name == "sigmoid":
        b = env[args[0]] if args else env["sigmoid.b"]
        return {j: 1 / (1 + mp.exp(-(s + b))) for j, s in scores.items()}, mp.mpf(0), None
    extra, xv = None, None
    if name == "softmax1":
        extra = mp.mpf(0)
    elif name == "sink":
        extra = env[args[0]]
    elif name == "bias_kv":
        extra = dot(env["q"][i - 1], env[args[0]]) / mp.sqrt(env["d"])
        xv = env[args[1]]
    elif name != "softmax":
        raise ValueError(norm)
    top = max(list(scores.values()) + ([extra] if extra is not None else []))
    e = {j: mp.exp(s - top) for j, s in scores.items()}
    den = mp.fsum(e.values()) + (mp.exp(extra - top) if extra is not None else 0)
    w_extra = mp.exp(extra - top) / den if extra is not None else mp.mpf(0)
    return {j: x / den for j, x in e.items()}, w_extra, xv


def rows(form: Form, norm: str, env: dict, score=None, shift=0) -> list:
    """Per row i: (weights of keys 1..n, output vector)."""
    score = score or form.score
    n, d, out = env["n"], env["d"], []
    for i in range(1, n + 1):
        allowed = [j for j in range(1, n + 1) if form.mask(env, i, j)]
        w, wx, xv = _normalize(norm, env, i, {j: score(env, i, j) + shift for j in allowed})
        weights = [w.get(j, mp.mpf(0)) for j in range(1, n + 1)]
        o = [mp.mpf(0)] * d
        for j in allowed:
            o = add(o, [w[j] * x for x in form.value(env, j)])
        if xv is not None:
            o = add(o, [wx * x for x in xv])
        out.append((weights, o))
    return out


def _differ(a, b) -> bool:
    if isinstance(a, (list, tuple)):
        return any(_differ(x, y) for x, y in zip(a, b))
    return abs(a - b) > TOL * (1 + abs(a) + abs(b))


def holds(form: Form, norm: str, claim: str, env: dict, rng, env2: dict | None = None) -> bool:
    """The claim's meaning on one instance (``env2``: the changed side, else drawn here)."""
    kind, _, arg = claim.partition("(")
    arg = arg.rstrip(")").strip().strip("'\"")
    if kind in ("invariant", "depends", "output_invariant"):
        other = env2 if env2 is not None else redraw(form, env, arg, rng)
        part = 1 if kind == "output_invariant" else 0
        same = not _differ([r[part] for r in rows(form, norm, env)], [r[part] for r in rows(form, norm, other)])
        return same if kind != "depends" else not same
    if kind == "equivalent":
        return not _differ([r[0] for r in rows(form, norm, env)],
                           [r[0] for r in rows(form, norm, env, score=form.exprs[arg])])
    if kind == "weights_sum_to_one":
        return not any(_differ(mp.fsum(r[0]), mp.mpf(1)) for r in rows(form, norm, env))
    if kind == "shift_invariant":
        c = mp.mpf(rng.gauss(0, 2))
        return not _differ([r[0] for r in rows(form, norm, env)], [r[0] for r in rows(form, norm, env, shift=c)])
    raise ValueError(claim)


def search(form: Form, norm: str, claim: str, rng, trials: int, dims: tuple, sizes: tuple) -> dict | None:
    """An instance on which the claim fails (depends: holds), or None. ``depends`` is
    existential, so the search for ``depends(X)`` looks for an instance where it holds."""
    want = not claim.startswith("depends")
    for _ in range(trials):
        d, n = rng.choice(dims), rng.choice(sizes)
        env = draw(form, norm, rng, d, n)
        if holds(form, norm, claim, env, rng) != want:
            return env
    return None


# -- derive's counterexample as an instance of the evaluator ---------------------------------

def _num(x):
    f = Fraction(x) if isinstance(x, (int, str)) else Fraction(float(x))
    return mp.mpf(f.numerator) / f.denominator


def _family(values: dict, name: str):
    """The documented stand-in for an opaque scalar function: a0 + a1·x + a2·x² + a3·x³ + a4·exp(x)."""
    a = [_num(values.get(f"{name}.a{k}", 0)) for k in range(5)]
    return lambda x: a[0] + a[1] * x + a[2] * x**2 + a[3] * x**3 + a[4] * mp.exp(x)


def _read(form: Form, values: dict, name: str, prime: str, d: int, n: int, head: int):
    kind, key = form.kinds[name], name + prime
    if kind == TOKVEC:
        got = values.get(key)
        return [[_num(x) for x in row] for row in got] if got is not None else [[mp.mpf(0)] * d for _ in range(n)]
    if kind == VEC:
        got = values.get(key)
        return [_num(x) for x in got] if got is not None else [mp.mpf(0)] * d
    if kind in (SCALAR, POS):
        return _num(values.get(key, 0))
    if kind == LABELS:
        got = values.get(key)
        if got is None:
            return Table(None, fixed=lambda x: 0)
        return Table(None, fixed=lambda x, got=got: int(got[x]))  # label of 0-based position x
    if kind == TABLE:
        if key in values:  # a table read at one index (traced): not this family
            raise KeyError(key)
        return Table(None, fixed=_family(values, key))
    if kind == PER_HEAD:
        entries = list(form.data.get(name, [mp.mpf(0)] * form.heads))
        shown = values.get(f"{key}_h")
        if shown is not None:
            entries[head] = _num(shown)
        elif prime:
            raise KeyError(key)
        return entries
    raise KeyError(name)


def witness_envs(form: Form, witness: dict, changed: str | None) -> tuple[dict, dict | None]:
    """(the instance, the changed side) of derive's counterexample; KeyError when unreadable."""
    values = dict(witness.get("values") or {})
    d, n = int(witness["d"]), int(witness["n"])
    head = int(values.pop("head", 0))
    known = set(form.kinds) | {f"{k}'" for k in form.kinds} | {f"{k}_h" for k in form.kinds} | \
        {f"{k}'_h" for k in form.kinds} | {"sigmoid"}
    for key in values:
        if key.split(".")[0] not in known:
            raise KeyError(key)  # a name the evaluator does not model (a normalizer's own table)
    env = {"d": d, "n": n, "h": head, "sigmoid.b": mp.mpf(0)}
    for name in form.kinds:
        env[name] = _read(form, values, name, "", d, n, head)
    if "sigmoid.b" in values:
        env["sigmoid.b"] = _num(values["sigmoid.b"])
    if changed is None:
        return env, None
    other = dict(env)
    other[changed] = _read(form, values, changed, "'", d, n, head)
    return env, other
