"""The term language of certificates: JSON arrays read into tuples, each headed by its kind.

    ["num", "3/4"]                  an exact rational
    ["sym", "c"]                    a symbol; its type is in the certificate's symbol table
    ["at", "x", I, T]               an entry of a table of reals (the scores x[i, t])
    ["mask", I, T]                  M[i, t] ∈ {0, 1}: is key t allowed in row i
    ["vec", "q", I] / ["vec", "b"]  a vector (q_i; b of no index)
    ["add", A, B, …] ["mul", A, B, …] ["pow", A, E]
    ["exp", A] ["log", A] ["sqrt", A] ["sigmoid", A] ["softplus", A] ["tanh", A]
    ["dot", A, B]                   the inner product ⟨a, b⟩ of two vectors
    ["fn", "f", A, …] ["vfn", "g", A, …]   an opaque real (vector) function
    ["rot", P, V]                   the rotation R_P V (RoPE), opaque
    ["sum", "t", LO, HI, BODY]      Σ_{t=LO}^{HI} BODY (Karr's convention when HI < LO − 1)
    ["prod", …] ["max_t", …] ["min_t", …]  Π, max, min over t = LO..HI of BODY's factors other than its
                                    mask entries and brackets, at the t where those are 1
    ["ind", C]                      [C] ∈ {0, 1}, C a condition: ["cmp", OP, A, B], ["and", C, …],
                                    ["or", C, …], ["not", C], ["true"], ["false"]
    ["cases", [A, C], …, [Z, ["true"]]]    A where C holds, …, else Z
    ["apply", "softmax", KEY, ["lam", "t", S], ["lam", "t", S2] | null, {"s": A}]
                                    the weight of key KEY of a normalizer for the scores t ↦ S

Nothing here is evaluated: terms are read, checked for shape, walked and printed.
"""

from __future__ import annotations

from fractions import Fraction

from derive.errors import InputError

__all__ = ["Malformed", "free", "fresh", "get", "kind", "put", "read", "show", "subst", "write"]

UNARY = ("exp", "log", "sqrt", "sigmoid", "softplus", "tanh")
BINDERS = ("sum", "prod", "max_t", "min_t")  # the heads that bind an index over a range
VECTOR_HEADS = ("vec", "vfn", "rot")
CONDITIONS = ("cmp", "and", "or", "not", "true", "false")
OPS = ("<", "<=", ">", ">=", "==", "!=")


class Malformed(InputError):
    """A certificate that is not well formed (wrong shape, unknown head): exit 2 of derive replay."""


def _name(x) -> str:
    if not isinstance(x, str) or not x or x.startswith("#"):
        raise Malformed(f"expected a name, got {x!r}")
    return x


def read(j) -> tuple:
    """A term from its JSON form, its shape checked."""
    if not isinstance(j, list) or not j or not isinstance(j[0], str):
        raise Malformed(f"a term is a list headed by its kind, got {j!r:.80}")
    h, args = j[0], j[1:]
    try:
        if h == "num" and len(args) == 1 and isinstance(args[0], str):
            return ("num", Fraction(args[0]))
        if h == "sym" and len(args) == 1:
            return ("sym", _name(args[0]))
        if h in ("at", "vec", "fn", "vfn") and args:
            return (h, _name(args[0]), *map(read, args[1:]))
        if h in ("add", "mul") and len(args) >= 2:
            return (h, *map(read, args))
        if (h in ("mask", "pow", "dot", "rot", "cmp") or h in UNARY or h in ("ind", "not")) and \
                len(args) == {"mask": 2, "pow": 2, "dot": 2, "rot": 2, "cmp": 3}.get(h, 1):
            if h == "cmp":
                if args[0] not in OPS:
                    raise Malformed(f"unknown comparison {args[0]!r}")
                return ("cmp", args[0], read(args[1]), read(args[2]))
            return (h, *map(read, args))
        if h in ("and", "or") and args:
            return (h, *map(read, args))
        if h in ("true", "false") and not args:
            return (h,)
        if h in BINDERS and len(args) == 4:
            return (h, _name(args[0]), read(args[1]), read(args[2]), read(args[3]))
        if h == "cases" and args and all(isinstance(b, list) and len(b) == 2 for b in args):
            return ("cases", *((read(v), read(c)) for v, c in args))
        if h == "apply" and len(args) == 5 and isinstance(args[4], dict):
            return ("apply", _name(args[0]), read(args[1]), _lam(args[2]),
                    None if args[3] is None else _lam(args[3]),
                    tuple(("param", _name(k), read(v)) for k, v in sorted(args[4].items())))
    except (ValueError, ZeroDivisionError, TypeError) as exc:
        if isinstance(exc, Malformed):
            raise
        raise Malformed(f"bad {h!r} term: {exc}") from None
    raise Malformed(f"unknown term head or wrong arity: {j!r:.80}")


def _lam(j) -> tuple:
    if not (isinstance(j, list) and len(j) == 3 and j[0] == "lam"):
        raise Malformed(f"expected [\"lam\", VAR, BODY], got {j!r:.80}")
    return ("lam", _name(j[1]), read(j[2]))


def write(t):
    """The JSON form of a term (inverse of :func:`read`)."""
    h = t[0]
    if h == "num":
        return ["num", str(t[1])]
    if h in ("sym",):
        return list(t)
    if h in ("at", "vec", "fn", "vfn", *BINDERS):
        head = list(t[:2])
        return head + [write(a) for a in t[2:]]
    if h == "cmp":
        return ["cmp", t[1], write(t[2]), write(t[3])]
    if h == "cases":
        return ["cases", *([write(v), write(c)] for v, c in t[1:])]
    if h == "apply":
        lam = lambda f: None if f is None else ["lam", f[1], write(f[2])]  # noqa: E731
        return ["apply", t[1], write(t[2]), lam(t[3]), lam(t[4]), {k: write(v) for _, k, v in t[5]}]
    return [h, *map(write, t[1:])]


def kind(t) -> str:
    """"vector" or "scalar"."""
    h = t[0]
    if h in VECTOR_HEADS:
        return "vector"
    if h == "add":
        return kind(t[1])
    if h == "mul":
        return "vector" if any(kind(a) == "vector" for a in t[1:]) else "scalar"
    if h in BINDERS:
        return kind(t[4])
    if h == "cases":
        return kind(t[1][0])
    return "scalar"


def children(t) -> list[tuple[int, tuple, str | None]]:
    """(position, child term, variable it binds or None) of each subterm of ``t``."""
    h = t[0]
    if h in ("num", "sym", "true", "false"):
        return []
    if h in ("at", "vec", "fn", "vfn"):
        return [(k, t[k], None) for k in range(2, len(t))]
    if h == "cmp":
        return [(2, t[2], None), (3, t[3], None)]
    if h in BINDERS:
        return [(2, t[2], None), (3, t[3], None), (4, t[4], t[1])]
    if h == "cases":
        return [(k, t[k], None) for k in range(1, len(t))]
    if h == "apply":
        out = [(2, t[2], None)] + [(k, t[k], None) for k in (3, 4) if t[k] is not None]
        return out + ([(5, t[5], None)] if t[5] else [])
    if h == "lam":
        return [(2, t[2], t[1])]
    if h == "param":
        return [(2, t[2], None)]
    if not isinstance(h, str):  # a pair (cases branch, parameter) or the parameter list
        return [(k, a, None) for k, a in enumerate(t) if isinstance(a, tuple)]
    return [(k, t[k], None) for k in range(1, len(t))]


def free(t) -> frozenset:
    """The names of the symbols free in ``t``."""
    if t[0] == "sym":
        return frozenset((t[1],))
    out = set()
    for _, c, bound in children(t):
        f = free(c)
        out |= f - {bound} if bound else f
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
    h = t[0]
    if h == "sym":
        return m.get(t[1], t)
    if h in BINDERS or h == "lam":
        v = t[1]
        inner = {k: e for k, e in m.items() if k != v}
        outer = frozenset().union(*(free(e) for e in inner.values())) if inner else frozenset()
        if v in outer:  # the bound name would capture a free one: rename it
            w = fresh(v, outer | free(t[-1]) | set(inner))
            inner[v] = ("sym", w)
            v = w
        if h == "lam":
            return ("lam", v, subst(t[2], inner))
        return (h, v, subst(t[2], m), subst(t[3], m), subst(t[4], inner))
    out = list(t)
    for k, c, _ in children(t):
        out[k] = subst(c, m)
    return tuple(out)


def get(t, path):
    for k in path:
        if not isinstance(t, tuple) or not isinstance(k, int) or not 0 <= k < len(t) or not isinstance(t[k], tuple):
            raise Malformed(f"the path {list(path)} does not lead to a subterm")
        t = t[k]
    return t


def put(t, path, new):
    if not path:
        return new
    k = path[0]
    return t[:k] + (put(t[k], path[1:], new),) + t[k + 1:]


_INFIX = {"add": " + ", "mul": "·"}


def show(t, width: int = 200) -> str:
    """``t`` as short text for messages: exp(x[i,t]), Σ_{t=1}^{n}(…), ⟨q_i, k_t⟩."""
    s = _show(t)
    return s if len(s) <= width else s[: width - 1] + "…"


def _show(t) -> str:
    h = t[0]
    if h == "num":
        return str(t[1])
    if h == "sym":
        return t[1]
    if h == "at":
        return f"{t[1]}[{','.join(map(_show, t[2:]))}]"
    if h == "mask":
        return f"M[{_show(t[1])},{_show(t[2])}]"
    if h == "vec":
        return t[1] + (f"_{_show(t[2])}" if len(t) > 2 else "")
    if h in _INFIX:
        return "(" + _INFIX[h].join(map(_show, t[1:])) + ")"
    if h == "pow":
        return f"{_show(t[1])}^{_show(t[2])}"
    if h == "dot":
        return f"⟨{_show(t[1])}, {_show(t[2])}⟩"
    if h in BINDERS:
        sign = {"sum": "Σ", "prod": "Π", "max_t": "max", "min_t": "min"}[h]
        return f"{sign}_{{{t[1]}={_show(t[2])}}}^{{{_show(t[3])}}} {_show(t[4])}"
    if h == "cmp":
        return f"{_show(t[2])} {t[1]} {_show(t[3])}"
    if h == "ind":
        return f"[{_show(t[1])}]"
    if h in ("fn", "vfn"):
        return f"{t[1]}({', '.join(map(_show, t[2:]))})"
    if h == "apply":
        return f"{t[1]}[{t[3][1]} ↦ {_show(t[3][2])}]_{_show(t[2])}"
    if h == "cases":
        return "{" + "; ".join(f"{_show(v)} if {_show(c)}" for v, c in t[1:]) + "}"
    if h in ("true", "false"):
        return h
    return f"{h}({', '.join(map(_show, t[1:]))})"
