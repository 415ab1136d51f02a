"""The terms of certificates: JSON arrays headed by their kind, read into tuples (docs/spec.md,
Certificates, lists them). Nothing here is evaluated: terms are read, walked and printed."""

from __future__ import annotations

from fractions import Fraction

from derive.errors import InputError

__all__ = ["Malformed", "children", "free", "fresh", "get", "put", "read", "show", "subst", "write"]

BINDERS = ("sum", "prod", "max_t", "min_t")  # ["sum", "t", LO, HI, BODY]: they bind an index over a range
VECTOR_HEADS = ("vec", "vfn", "rot")
NAMED = ("at", "vec", "fn", "vfn")  # [HEAD, "name", TERM…]
OPS = ("<", "<=", ">", ">=", "==", "!=")
# head → number of term arguments (None: any number, at least one)
ARITY = {"sym": 0, "mask": 2, "pow": 2, "dot": 2, "rot": 2, "exp": 1, "log": 1, "sqrt": 1, "sigmoid": 1,
         "softplus": 1, "tanh": 1, "ind": 1, "not": 1, "true": 0, "false": 0, "add": None, "mul": None,
         "and": None, "or": None, **dict.fromkeys(NAMED, None), **dict.fromkeys(BINDERS, 3)}


class Malformed(InputError):
    """A certificate that is not well formed (wrong shape, unknown head): exit 2 of derive replay."""


def _name(x) -> str:
    if not isinstance(x, str) or not x or x.startswith("#"):
        raise Malformed(f"expected a name, got {x!r:.40}")
    return x


def read(j) -> tuple:
    """A term from its JSON form, its shape checked."""
    if not isinstance(j, list) or not j or not isinstance(j[0], str):
        raise Malformed(f"a term is a list headed by its kind, got {j!r:.80}")
    h, args = j[0], j[1:]
    try:
        if h == "num" and len(args) == 1 and isinstance(args[0], str):
            return ("num", Fraction(args[0]))
        if h == "cmp" and len(args) == 3 and args[0] in OPS:
            return ("cmp", args[0], read(args[1]), read(args[2]))
        if h == "cases" and args and all(isinstance(b, list) and len(b) == 2 for b in args):
            return ("cases", *((read(v), read(c)) for v, c in args))
        if h == "apply" and len(args) == 5 and isinstance(args[4], dict):
            lam = [None if f is None else ("lam", _name(f[1]), read(f[2])) if isinstance(f, list) and len(f) == 3
                   else _bad(f) for f in args[2:4]]
            return ("apply", _name(args[0]), read(args[1]), *lam,
                    tuple(("param", _name(k), read(v)) for k, v in sorted(args[4].items())))
        n = ARITY.get(h, -1)
        named = h in NAMED or h in BINDERS or h == "sym"
        rest = args[1:] if named else args
        if n == -1 or (len(rest) != n if n is not None else not rest and h not in NAMED) or named and not args:
            raise Malformed(f"unknown term head or wrong arity: {j!r:.80}")
        return (h, *([_name(args[0])] if named else []), *map(read, rest))
    except (ValueError, ZeroDivisionError, TypeError, AttributeError) as exc:
        if isinstance(exc, Malformed):
            raise
        raise Malformed(f"bad {h!r} term: {exc}") from None


def _bad(f):
    raise Malformed(f"expected [\"lam\", VAR, BODY] or null, got {f!r:.60}")


def write(t):
    """The JSON form of a term (inverse of :func:`read`)."""
    if isinstance(t, Fraction):
        return str(t)
    if t is None or isinstance(t, str):
        return t
    if t[0] == "apply":
        return ["apply", t[1], write(t[2]), write(t[3]), write(t[4]), {k: write(v) for _, k, v in t[5]}]
    return [write(a) for a in t]


def children(t) -> list[tuple[int, tuple, str | None]]:
    """(position, subterm, the index it binds there or None) of each subterm of ``t``."""
    h = t[0]
    if h in BINDERS or h == "lam":
        return [(k, t[k], t[1] if k == len(t) - 1 else None) for k in range(2, len(t))]
    return [(k, a, None) for k, a in enumerate(t) if isinstance(a, tuple) and a and (k or not isinstance(h, str))]


def free(t) -> frozenset:
    """The names of the symbols free in ``t``."""
    if t[0] == "sym":
        return frozenset((t[1],))
    out = set()
    for _, c, bound in children(t):
        out |= free(c) - {bound}
    return frozenset(out)


def fresh(base: str, taken) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}{k}"
    return name


def subst(t, m: dict):
    """``t`` with each free symbol named in ``m`` replaced by its term (bound names renamed apart)."""
    if not m:
        return t
    if t[0] == "sym":
        return m.get(t[1], t)
    out = list(t)
    if t[0] in BINDERS or t[0] == "lam":
        inner = {k: e for k, e in m.items() if k != t[1]}
        outer = frozenset().union(*map(free, inner.values()))
        if t[1] in outer:  # the bound name would capture a free one: rename it
            out[1] = fresh(t[1], outer | free(t[-1]) | set(inner))
            inner[t[1]] = ("sym", out[1])
        out[-1] = subst(t[-1], inner)
        out[2:-1] = [subst(a, m) for a in t[2:-1]]
        return tuple(out)
    for k, c, _ in children(t):
        out[k] = subst(c, m)
    return tuple(out)


def get(t, path):
    for k in path:
        if not isinstance(k, int) or not 0 <= k < len(t) or not isinstance(t[k], tuple):
            raise Malformed(f"the path {list(path)} does not lead to a subterm")
        t = t[k]
    return t


def put(t, path, new):
    return new if not path else t[:path[0]] + (put(t[path[0]], path[1:], new),) + t[path[0] + 1:]


def show(t, width: int = 200) -> str:
    """``t`` as short text for messages: (x[i,t] + c), Σ_{t=1}^{n} …, ⟨q_i, k_t⟩."""
    s = _show(t)
    return s if len(s) <= width else s[: width - 1] + "…"


def _show(t) -> str:
    h, a = t[0], t[1:]
    if h in ("num", "sym"):
        return str(a[0])
    if h in ("add", "mul"):
        return "(" + (" + " if h == "add" else "·").join(map(_show, a)) + ")"
    if h in ("at", "mask"):
        return f"{'M' if h == 'mask' else a[0]}[{','.join(map(_show, a if h == 'mask' else a[1:]))}]"
    if h in BINDERS:
        return f"{ {'sum': 'Σ', 'prod': 'Π'}.get(h, h[:3])}_{{{a[0]}={_show(a[1])}}}^{{{_show(a[2])}}} {_show(a[3])}"
    if h == "pow":
        return f"{_show(a[0])}^{_show(a[1])}"
    if h == "dot":
        return f"⟨{_show(a[0])}, {_show(a[1])}⟩"
    if h == "cmp":
        return f"{_show(a[1])} {a[0]} {_show(a[2])}"
    if h == "ind":
        return f"[{_show(a[0])}]"
    if h == "vec":
        return a[0] + "".join(f"_{_show(x)}" for x in a[1:])
    if h == "apply":
        return f"{a[0]}[{a[2][1]} ↦ {_show(a[2][2])}]_{_show(a[1])}"
    return f"{h if h not in NAMED else a[0]}({', '.join(_show(x) for x in (a if h not in NAMED else a[1:]) if isinstance(x, tuple))})"
