"""Replays a printed counterexample with mpmath, independently of derive's evaluator.

A counterexample is read as it is printed (the JSON report of ``derive check``, or a
document's JSON): its inputs (``values``, ``indices``, ``n``, ``d``, ``mask``), the two values it
compares (``original``, ``changed``, rounded) and their certified enclosures (``enclosures``:
``lhs`` the first, ``rhs`` the second), under the names ``compared`` gives them. This module
computes both sides again from the spec file as written: its own tokenizer and parser for the
spec language (no derive, no SymPy), the spec's score, value and mask, the normalizer's formula
(the built-in ones written out again below), the FlexAttention modifiers of the project's suites
written by hand, at a working precision high enough for the enclosures' radii. A replay returns
the list of its mismatches (empty: the counterexample replays as printed), or raises
:class:`Unsupported` for a case it does not know.
"""

from __future__ import annotations

import math
import re
import tomllib
from fractions import Fraction
from pathlib import Path

import mpmath as mp


class Unsupported(Exception):
    """A counterexample this replay cannot evaluate (said why)."""


# ---- the spec language: tokens and a Pratt parser -------------------------------------------

_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|([A-Za-z_][A-Za-z0-9_.']*)|(\*\*|<=|>=|==|!=|[-+*/(),<>]))")
_BIN = {"<": 5, "<=": 5, ">": 5, ">=": 5, "==": 5, "!=": 5, "+": 10, "-": 10, "*": 20, "/": 20, "**": 40}


def parse(text: str):
    """(num, Fraction) | (name, str) | (neg, a) | (op, sym, a, b) | (call, name, [args])."""
    toks, pos = [], 0
    text = text.replace("−", "-")
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise Unsupported(f"cannot read {text!r} at {pos}")
        pos = m.end()
        if m.group(1):
            toks.append(("num", Fraction(m.group(1))))
        elif m.group(2):
            toks.append(("name", m.group(2)))
        else:
            toks.append(("op", m.group(3)))
    toks.append(("end", None))
    at = [0]

    def peek():
        return toks[at[0]]

    def take():
        at[0] += 1
        return toks[at[0] - 1]

    def expr(rbp=0):
        kind, v = take()
        if kind == "num":
            left = ("num", v)
        elif kind == "name":
            if peek() == ("op", "("):
                take()
                args = []
                if peek() != ("op", ")"):
                    while True:
                        args.append(expr())
                        if peek() == ("op", ","):
                            take()
                            continue
                        break
                assert take() == ("op", ")")
                left = ("call", v, args)
            else:
                left = ("name", v)
        elif (kind, v) == ("op", "("):
            left = expr()
            assert take() == ("op", ")")
        elif (kind, v) == ("op", "-"):
            left = ("neg", expr(30))
        else:
            raise Unsupported(f"unexpected {v!r} in {text!r}")
        while True:
            kind, v = peek()
            if kind != "op" or v not in _BIN or _BIN[v] <= rbp:
                if not (kind == "op" and v == "**" and _BIN[v] > rbp):
                    return left
            take()
            right = expr(_BIN[v] - 1 if v == "**" else _BIN[v])  # ** is right-associative
            left = ("op", v, left, right)

    out = expr()
    if peek()[0] != "end":
        raise Unsupported(f"trailing input in {text!r}")
    return out


# ---- numbers as printed ---------------------------------------------------------------------

def number(v):
    """A printed input value: an int, a float (an exact binary fraction), "1/2", "sqrt(2)", "pi/4"."""
    if isinstance(v, bool):
        return mp.mpf(int(v))
    if isinstance(v, int):
        return mp.mpf(v)
    if isinstance(v, float):
        return mp.mpf(v)
    if isinstance(v, str):
        return Expr({}).eval(parse(v))
    if isinstance(v, list):
        return [number(x) for x in v]
    raise Unsupported(f"value {v!r}")


def ball(text: str):
    """A printed enclosure "m ± r" (or an exact "m") as (m, r)."""
    mid, _, rad = str(text).replace("−", "-").partition(" ± ")
    return mp.mpf(mid), (mp.mpf(rad) if rad else mp.mpf(0))


def digits_needed(ce: dict) -> int:
    """Working digits for a replay: far below the smallest radius and difference printed."""
    need = 40
    for key in ("lhs", "rhs", "difference"):
        for b in _flat((ce.get("enclosures") or {}).get(key)):
            for part in str(b).replace("−", "-").split(" ± "):
                m = re.search(r"[eE]([-+]?\d+)", part)
                if m:
                    need = max(need, -int(m.group(1)) + 40)
    return min(need, 6000)


def _flat(x):
    if x is None:
        return []
    return [y for z in x for y in _flat(z)] if isinstance(x, list) else [x]


# ---- evaluation of an expression tree -------------------------------------------------------

def _dot(a, b):
    return mp.fsum(x * y for x, y in zip(a, b))


def _rope(x, pos):
    """R(pos)·x: pairs (2k, 2k+1) rotated by pos·10000^(−2k/d), an odd last component left alone."""
    d, out = len(x), list(x)
    for k in range(d // 2):
        th = pos * mp.power(10000, mp.mpf(-2 * k) / d)
        c, s = mp.cos(th), mp.sin(th)
        out[2 * k], out[2 * k + 1] = c * x[2 * k] - s * x[2 * k + 1], s * x[2 * k] + c * x[2 * k + 1]
    return out


def _vec(a):
    return isinstance(a, list)


def _add(a, b, sign=1):
    if _vec(a) and _vec(b):
        return [x + sign * y for x, y in zip(a, b)]
    if _vec(a) or _vec(b):
        raise Unsupported("a vector plus a scalar")
    return a + sign * b


def _mul(a, b):
    if _vec(a) and _vec(b):
        raise Unsupported("a vector times a vector")
    if _vec(a):
        return [x * b for x in a]
    if _vec(b):
        return [a * y for y in b]
    return a * b


def binop(op: str, a, b, right=None):
    """``a op b`` (``right``: the tree of b, whose integer literal makes ``**`` a power)."""
    if op == "+":
        return _add(a, b)
    if op == "-":
        return _add(a, b, -1)
    if op == "*":
        return _mul(a, b)
    if op == "/":
        if _vec(b):
            raise Unsupported("a division by a vector")
        if b == 0:
            raise ZeroDivisionError
        return _mul(a, 1 / b)
    if op == "**":
        lit = right[1] if right is not None and right[0] == "neg" else right
        if lit is not None and lit[0] == "num" and lit[1].denominator == 1:
            e = lit[1].numerator * (-1 if lit is not right else 1)
            if a == 0 and e < 0:
                raise ZeroDivisionError
            return mp.power(a, e)
        return mp.power(a, b)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[op]


class Expr:
    """Evaluates a tree: ``names`` binds names (numbers, vectors), ``funcs`` named functions."""

    FUNCS = {"exp": mp.exp, "log": mp.log, "sqrt": mp.sqrt, "tanh": mp.tanh, "abs": abs,
             "relu": lambda z: max(z, 0), "sigmoid": lambda z: 1 / (1 + mp.exp(-z)),
             "softplus": lambda z: mp.log(1 + mp.exp(z)), "max": max, "min": min}

    def __init__(self, names: dict, funcs: dict | None = None):
        self.names, self.funcs = names, funcs or {}

    def eval(self, node):
        tag = node[0]
        if tag == "num":
            v = node[1]
            return mp.mpf(v.numerator) / v.denominator
        if tag == "name":
            if node[1] == "pi":
                return +mp.pi
            if node[1] not in self.names:
                raise Unsupported(f"no value for {node[1]}")
            return self.names[node[1]]
        if tag == "neg":
            return _mul(mp.mpf(-1), self.eval(node[1]))
        if tag == "op":
            return binop(node[1], self.eval(node[2]), self.eval(node[3]), node[3])
        name, args = node[1], node[2]
        if name == "dot":
            return _dot(self.eval(args[0]), self.eval(args[1]))
        if name == "rope":
            return _rope(self.eval(args[0]), self.eval(args[1]))
        if name in self.funcs:
            return self.funcs[name](*[self.eval(a) for a in args])
        if name in self.FUNCS:
            vals = [self.eval(a) for a in args]
            if name == "log" and vals[0] <= 0 or name == "sqrt" and vals[0] < 0:
                raise ValueError(f"{name} of {vals[0]}")
            return self.FUNCS[name](*vals)
        raise Unsupported(f"function {name}")


# ---- normalizers: every weight is a formula (the built-in ones written out again here) ------

BUILTIN = {
    "softmax": ("exp(x_j) / sum_t(exp(x_t))", ()),
    "softmax1": ("exp(x_j) / (1 + sum_t(exp(x_t)))", ()),
    "sink": ("exp(x_j) / (exp(s) + sum_t(exp(x_t)))", ("s",)),
    "zero_token": ("exp(x_j) / (1 + sum_t(exp(x_t)))", ()),
    "bias_kv": ("exp(x_j) / (exp(s_star) + sum_t(exp(x_t)))", ("s_star",)),
    "sigmoid": ("sigmoid(x_j + b)", ("b",)),
    "clipped": ("min(1, max(0, (zeta - gamma) * exp(x_j) / sum_t(exp(x_t)) + gamma))", ("zeta", "gamma")),
    "softcap": ("exp(c * tanh(x_j / c)) / sum_t(exp(c * tanh(x_t / c)))", ("c",)),
    "softpick": ("relu(exp(x_j) - 1) / (sum_t(abs(exp(x_t) - 1)) + eps)", ("eps",)),
    "ssmax": ("exp(s * log(n) * x_j) / sum_t(exp(s * log(n) * x_t))", ("s",)),
    "sigmoid_logn": ("sigmoid(x_j - log(n))", ()),
    "stick_breaking": ("sigmoid(x_j) * prod_t(1 - sigmoid(x_t), t > j)", ()),
    "relu_n": ("relu(x_j) / n", ()),
}


def weights(formula, keys: list, x: dict, y: dict | None, i: int, params: dict) -> dict:
    """The weight of every key of ``keys`` (the row's allowed keys, in order): ``x[t]``, ``y[t]``
    their scores; n = len(keys)."""
    tree = parse(formula) if isinstance(formula, str) else formula
    return {j: _weight(tree, keys, x, y or {}, i, j, params) for j in keys}


def _weight(tree, keys, x, y, i, j, params):
    n = len(keys)

    def ev(node, t=None):
        tag = node[0]
        if tag == "name":
            name = node[1]
            fixed = {"x_j": lambda: x[j], "y_j": lambda: y[j], "x_t": lambda: x[t], "y_t": lambda: y[t],
                     "n": lambda: mp.mpf(n), "i": lambda: mp.mpf(i), "j": lambda: mp.mpf(j), "t": lambda: mp.mpf(t)}
            if name in fixed:
                return fixed[name]()
            return Expr(params).eval(node)
        if tag == "call" and node[1] in ("sum_t", "prod_t", "max_t", "min_t"):
            body, cond = node[2][0], node[2][1] if len(node[2]) > 1 else None
            terms = [ev(body, u) for u in keys if cond is None or ev(cond, u)]
            if node[1] == "sum_t":
                return mp.fsum(terms)
            if node[1] == "prod_t":
                return mp.fprod(terms)
            if not terms:
                raise ValueError("a max_t or min_t with no term")
            return max(terms) if node[1] == "max_t" else min(terms)
        if tag in ("num",):
            return Expr({}).eval(node)
        if tag == "neg":
            return -ev(node[1], t)
        if tag == "op":
            return binop(node[1], ev(node[2], t), ev(node[3], t), node[3])
        if tag == "call":
            vals = [ev(a, t) for a in node[2]]
            return Expr({f"_{k}": v for k, v in enumerate(vals)}).eval(
                ("call", node[1], [("name", f"_{k}") for k in range(len(vals))]))
        raise Unsupported(f"node {tag}")

    return ev(tree)


# ---- masks (allowed keys of row i of n) -------------------------------------------------------

_MODS_MASKS = {  # the mask_mods of the project's suites, by hand (0-based q, kv → 1-based i, j)
    "causal": lambda i, j, ids: i >= j,
    "strictly_later": lambda i, j, ids: j > i,
    "later_or_same": lambda i, j, ids: j >= i,
    "window3": lambda i, j, ids: abs(i - j) < 3,
    "generate_sliding_window(4)": lambda i, j, ids: i >= j and i - j < 4,
    "generate_prefix_lm_mask(3)": lambda i, j, ids: i >= j or j - 1 < 3,
    "generate_doc_mask_mod([0, 0, 0, 1, 1, 2])": lambda i, j, ids: [0, 0, 0, 1, 1, 2][i - 1] == [0, 0, 0, 1, 1, 2][j - 1],
}


def allowed(mask: str, i: int, j: int, values: dict) -> bool:
    mask = mask.strip()
    if mask == "none":
        return True
    if mask == "causal":
        return j <= i
    m = re.fullmatch(r"(sliding_window|causal_window|prefix_lm)\((\d+)\)", mask)
    if m:
        w = int(m.group(2))
        return {"sliding_window": abs(i - j) < w, "causal_window": j <= i and i - j < w,
                "prefix_lm": j <= w or j <= i}[m.group(1)]
    m = re.fullmatch(r"document\((\w+)\)", mask)
    if m:
        ids = values[m.group(1)]
        return ids[i - 1] == ids[j - 1]
    m = re.fullmatch(r"[\w./]+\.py:(.+)", mask)
    if m and m.group(1) in _MODS_MASKS:
        return _MODS_MASKS[m.group(1)](i, j, values)
    raise Unsupported(f"mask {mask}")


# ---- FlexAttention score_mods of the project's suites, by hand -------------------------------

def _alibi(slopes):
    return lambda s, h, i, j: s + slopes[h] * (j - i)


_MODS_SCORES = {
    "generate_alibi_bias(8)": (_alibi([mp.mpf(2) ** (-(k + 1)) for k in range(8)]), "alibi_slopes_h",
                               [mp.mpf(2) ** (-(k + 1)) for k in range(8)]),
    "generate_alibi_flipped(8)": (lambda s, h, i, j: s + (i - j) * mp.mpf(2) ** (-(h + 1)), "alibi_slopes_h",
                                  [mp.mpf(2) ** (-(k + 1)) for k in range(8)]),
    "generate_tanh_softcap(30)": (lambda s, h, i, j: 30 * mp.tanh(s / 30), None, None),
    "alibi_half": (lambda s, h, i, j: s + (j - i) * mp.mpf(1) / 2, None, None),
    "row_shift": (lambda s, h, i, j: s + (i - 1) * mp.mpf(1) / 4, None, None),
    "later_plus_one": (lambda s, h, i, j: s + 1 if j < i else s, None, None),
    "softcap30": (lambda s, h, i, j: 30 * mp.tanh(s / 30), None, None),
    "alibi_zero_slope": (lambda s, h, i, j: s + (j - i) * [0, mp.mpf(1) / 2][h], "_zero_slope_h", [0, mp.mpf(1) / 2]),
    "alibi_signed_slope": (lambda s, h, i, j: s + (j - i) * [mp.mpf(1) / 2, -mp.mpf(1) / 4][h], "_signed_slope_h",
                           [mp.mpf(1) / 2, -mp.mpf(1) / 4]),
    "step_penalty": (lambda s, h, i, j: s - 1 if i - j > 2 else s, None, None),
    "step_bonus": (lambda s, h, i, j: s + 1 if i - j > 2 else s, None, None),
    "heads_a": (_alibi([mp.mpf(1) / 2, mp.mpf(1) / 4]), "slopes_h", [mp.mpf(1) / 2, mp.mpf(1) / 4]),
    "heads_a_again": (_alibi([mp.mpf(1) / 2, mp.mpf(1) / 4]), "slopes_h", [mp.mpf(1) / 2, mp.mpf(1) / 4]),
    "heads_b": (_alibi([mp.mpf(1) / 2, mp.mpf(1) / 8]), "slopes_h", [mp.mpf(1) / 2, mp.mpf(1) / 8]),
    "heads_cap": (lambda s, h, i, j: [30, 50][h] * mp.tanh(s / [30, 50][h]), "_caps_h", [30, 50]),
}


def _score_mod(ref: str):
    m = re.fullmatch(r"[\w./]+\.py:(.+)", ref)
    if not m or m.group(1) not in _MODS_SCORES:
        raise Unsupported(f"score_mod {ref}")
    return _MODS_SCORES[m.group(1)]


# ---- a spec, as written ---------------------------------------------------------------------

class Spec:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.doc = tomllib.loads(self.path.read_text())
        self.symbols = self.doc.get("symbols", {})
        self.mask = self.doc.get("mask", "none")
        if "mask_mod" in self.doc:
            self.mask = self.doc["mask_mod"]
        self.score_mod = self.doc.get("score_mod")
        self.score = None if self.score_mod else parse(self.doc["score"])
        self.score2 = parse(self.doc["score2"]) if "score2" in self.doc else None
        self.value = parse(self.doc.get("value", "v"))
        norm = self.doc.get("normalizer", "softmax")
        if isinstance(norm, dict):
            self.formula, self.params, self.norm_name = norm["weight"], {}, None
        else:
            m = re.fullmatch(r"(\w+)(?:\((.*)\))?", norm.strip())
            self.norm_name = m.group(1)
            if self.norm_name not in BUILTIN:
                raise Unsupported(f"normalizer {norm}")
            self.formula, own = BUILTIN[self.norm_name]
            args = [a.strip() for a in m.group(2).split(",")] if m.group(2) else []
            if self.norm_name == "bias_kv":
                self.params = {"s_star": ("token", args)}
            else:  # a parameter the spec leaves unnamed is printed as NAME.SYMBOL (docs/spec.md)
                shown = {"softcap": {"c": "c_cap"}, "softpick": {"eps": "epsilon"}}.get(self.norm_name, {})
                self.params = {p: (args[k] if k < len(args) else f"{self.norm_name}.{shown.get(p, p)}")
                               for k, p in enumerate(own)}

    def kind(self, name: str) -> str:
        return {"q": "query", "k": "key", "v": "key"}.get(name) or self.symbols.get(name, "")


class Instance:
    """A counterexample's inputs bound for one side (``primed``: NAME → NAME' for the changed one)."""

    def __init__(self, spec: Spec, ce: dict, swap: dict | None = None, zero: str | None = None):
        self.spec, self.ce = spec, ce
        self.values = {k: number(v) for k, v in ce["values"].items() if k not in ("head",) and not isinstance(v, dict)}
        self.head = ce["values"].get("head", 0)
        self.swap, self.zero = swap or {}, zero
        self.n, self.d = ce["n"], ce["d"]

    def value_of(self, name: str):
        name = self.swap.get(name, name)
        if self.zero == name:
            v = self.values.get(name)
            return [mp.mpf(0)] * self.d if isinstance(v, list) or self.spec.kind(name) == "vector" else mp.mpf(0)
        if name not in self.values:
            raise Unsupported(f"no value for {name}")
        return self.values[name]

    def functions(self) -> dict:
        out = {}
        for name, kind in self.spec.symbols.items():
            if kind != "function":
                continue
            f = self.swap.get(name, name)
            out[name] = self._function(f)
        return out

    def _function(self, f):
        def val(key):
            return self.values[f"{f}.{key}"]

        if isinstance(self.values.get(f), list):  # a document's ids: one label per 0-based position
            return lambda x: self.values[f][int(x)]

        def apply(*args):
            x = args[0]
            if _vec(x):  # F(x) = F.a·x + ⟨x, x⟩·F.c + exp(F.e·⟨x, F.b⟩)·F.b
                b = val("b")
                return _add(_add(_mul(val("a"), x), _mul(_dot(x, x), val("c"))), _mul(mp.exp(val("e") * _dot(x, b)), b))
            out = val("a0") + val("a1") * x + val("a2") * x ** 2 + val("a3") * x ** 3 + val("a4") * mp.exp(x)
            for k, y in enumerate(args[1:], 1):
                out += val(f"b{k}") * mp.exp(y)
            return out
        return apply

    def names(self, i: int, j: int) -> dict:
        """The names of the score and value language at query row i and key j."""
        out = {"i": mp.mpf(i), "j": mp.mpf(j), "d": mp.mpf(self.d), "n": mp.mpf(self.n), "h": mp.mpf(self.head)}
        for name in set(self.spec.symbols) | {"q", "k", "v"}:
            kind = self.spec.kind(name)
            if kind == "function":
                continue
            try:
                v = self.value_of(name)
            except Unsupported:
                continue
            if kind == "query":
                v = v[i - 1]
            elif kind == "key":
                v = v[j - 1]
            elif kind.startswith("per_head"):
                v = v[self.head] if isinstance(v, list) else v
            out[name] = v
        return out

    def score(self, i: int, j: int, tree=None):
        spec = self.spec
        if spec.score_mod:
            f, _, _ = _score_mod(spec.score_mod)
            s = _dot(self.value_of("q")[i - 1], self.value_of("k")[j - 1]) / mp.sqrt(self.d)
            return f(s, self.head, i, j)
        return Expr(self.names(i, j), self.functions()).eval(tree or spec.score)

    def params(self, i: int) -> dict:
        out = {}
        for p, given in self.spec.params.items():
            if isinstance(given, tuple) and "bias_kv.s_star" in self.values:  # a property: s* given
                out[p] = self.values["bias_kv.s_star"]
            elif isinstance(given, tuple):  # bias_kv's token: s*_i = ⟨q_i, k*⟩/√d
                k_star = self.value_of(given[1][0])
                out[p] = _dot(self.value_of("q")[i - 1], k_star) / mp.sqrt(self.d)
            else:
                out[p] = self.value_of(given)
        for name, kind in self.spec.symbols.items():  # a user weight's parameters: its declared scalars
            if kind.startswith("scalar") and name not in out:
                try:
                    out[name] = self.value_of(name)
                except Unsupported:
                    pass
        return out

    def row(self, i: int, mask: str | None = None, score_tree=None) -> dict:
        """The weights of every key 1..n of row i (0 for a masked key)."""
        keys = [j for j in range(1, self.n + 1) if allowed(mask or self.spec.mask, i, j, self.ce["values"])]
        x = {j: self.score(i, j, score_tree) for j in keys}
        y = {j: Expr(self.names(i, j), self.functions()).eval(self.spec.score2) for j in keys} if self.spec.score2 else None
        w = weights(self.spec.formula, keys, x, y, i, self.params(i)) if keys else {}
        return {j: w.get(j, mp.mpf(0)) for j in range(1, self.n + 1)}

    def output(self, i: int) -> list:
        w = self.row(i)
        out = [mp.mpf(0)] * self.d
        for j, p in w.items():
            if p != 0:
                out = _add(out, _mul(p, Expr(self.names(i, j), self.functions()).eval(self.spec.value)))
        if self.spec.norm_name == "bias_kv":
            keys = [j for j in range(1, self.n + 1) if allowed(self.spec.mask, i, j, self.ce["values"])]
            s_star = self.params(i)["s_star"]
            total = mp.exp(s_star) + mp.fsum(mp.exp(self.score(i, j)) for j in keys)
            out = _add(out, _mul(mp.exp(s_star) / total, self.value_of(self.spec.params["s_star"][1][1])))
        return out


# ---- the sides of each claim kind -------------------------------------------------------------

def sides(spec_path: Path, claim: str, ce: dict):
    """(first, second): the two compared values (numbers or vectors) of a counterexample of
    ``claim``, computed again from the spec file and the printed inputs."""
    spec = Spec(spec_path)
    idx = ce["indices"]
    i = idx.get("i")
    kind = re.match(r"\w+", claim).group(0)
    arg = re.search(r"\((.*)\)$", claim)
    arg = arg.group(1).strip().strip("\"'") if arg else None
    if kind in ("invariant", "depends", "output_invariant"):
        a, b = Instance(spec, ce), Instance(spec, ce, swap={arg: f"{arg}'"})
        if kind == "output_invariant":
            return a.output(i), b.output(i)
        return a.row(i)[idx["j"]], b.row(i)[idx["j"]]
    if kind == "output_shift":
        a, b = Instance(spec, ce), Instance(spec, ce, zero=arg)
        return a.output(i), _add(b.output(i), a.value_of(arg))
    if kind == "equivalent":
        a = Instance(spec, ce)
        return a.row(i)[idx["j"]], a.row(i, score_tree=parse(arg))[idx["j"]]
    if kind == "equivalent_to":
        other = Spec(spec_path.parent / arg)
        return Instance(spec, ce).row(i)[idx["j"]], Instance(other, ce).row(i)[idx["j"]]
    if kind == "row_constant":
        a = Instance(spec, ce)
        tree = parse(arg)
        one, two = (k for k in idx if k not in ("i",))
        return (Expr(a.names(i, idx[one]), a.functions()).eval(tree),
                Expr(a.names(i, idx[two]), a.functions()).eval(tree))
    if kind == "mask_equivalent":
        ma, mb = ce["mask"].split(" vs ")
        return (mp.mpf(int(allowed(ma, i, idx["j"], ce["values"]))),
                mp.mpf(int(allowed(mb, i, idx["j"], ce["values"]))))
    if kind == "decreasing_in_distance":
        return _distance_sides(spec, ce)
    if kind in ("shift_invariant", "weights_sum_to_one"):
        return _property_sides(spec, kind, ce)
    raise Unsupported(f"claim kind {kind}")


def _distance_sides(spec: Spec, ce: dict):
    idx, vals = ce["indices"], ce["values"]
    s, head = number(vals.get("s", 0)), vals.get("head", 0)
    i = idx["i"]
    if spec.score_mod:
        f, table, entries = _score_mod(spec.score_mod)
        if table is not None and number(vals[table]) != entries[head]:
            return None  # the printed table entry is not the modifier's own: a mismatch
        return tuple(f(s, head, i, idx[k]) for k in ("j_1", "j_2"))
    text = spec.doc["score"]
    # the score with s = ⟨q_i, k_j⟩/√d and r_1 = ⟨q_i, b_k⟩/√d, the one inner product without the key
    # (written out by hand for the suites' scores)
    by_hand = {"dot(q, k + b_k)/sqrt(d) - m*(i - j)": "s + r_1/sqrt(d) - m*(i - j)",
               "dot(q, k + f(j) * b_k)/sqrt(d) - m*(i - j)": "s + f(j)*r_1/sqrt(d) - m*(i - j)"}
    if text in by_hand:
        text = by_hand[text]
    elif "dot(q, k) / sqrt(d)" in text:
        text = text.replace("dot(q, k) / sqrt(d)", "s")
    else:
        raise Unsupported(f"decreasing_in_distance of {text}")
    tree = parse(text)
    inst = Instance(spec, ce)
    extra = {k: number(v) for k, v in vals.items() if k.startswith("r_")}
    return tuple(Expr({**inst.names(i, idx[k]), "s": s, **extra}, inst.functions()).eval(tree) for k in ("j_1", "j_2"))


def _property_sides(spec: Spec, kind: str, ce: dict):
    vals, idx = ce["values"], ce["indices"]
    i = idx.get("i", 1)  # no row given: the sides are the same on every row (a constant), row 1 of all keys
    x, y, m = (next((vals[k] for k in names if k in vals), None)
               for names in (("x_scores", "x"), ("y_scores", "y"), ("M", "𝕄")))
    if m is None and not any(k in vals for k in ("q", "k", "v")):
        mask = ce.get("mask") or spec.mask  # the printed mask's allowed keys (a row may have none)
        m = [[int(allowed(mask, r, t, vals)) for t in range(1, ce["n"] + 1)] for r in range(1, ce["n"] + 1)]
    if m is not None:  # the normalizer's own row of scores x (y) and mask table M: absent scores are 0
        inst = Instance(spec, ce)
        n = ce["n"]
        row = number(x[i - 1]) if x is not None else [mp.mpf(0)] * n
        row2 = number(y[i - 1]) if y is not None else None
        keys = [t for t in range(1, n + 1) if m[i - 1][t - 1]]
        params = inst.params(i)
        shift = number(vals.get("c_shift", vals.get("c", 0)) if "c_shift" in vals or "c" not in spec.symbols else 0)
        y_of = (lambda c: {t: row2[t - 1] + c for t in keys}) if row2 is not None else (lambda c: None)
        w = weights(spec.formula, keys, {t: row[t - 1] for t in keys}, y_of(0), i, params)
        if kind == "weights_sum_to_one":
            return mp.fsum(w.values()), mp.mpf(1)
        w2 = weights(spec.formula, keys, {t: row[t - 1] + shift for t in keys}, y_of(0), i, params)  # x alone
        return w[idx["j"]], w2[idx["j"]]
    inst = Instance(spec, ce)
    if kind == "weights_sum_to_one":
        return mp.fsum(inst.row(i).values()), mp.mpf(1)
    raise Unsupported(f"{kind} without a row of scores")


# ---- comparing a replay with the print --------------------------------------------------------

def check(spec_path: Path, claim: str, ce: dict) -> list[str]:
    """The mismatches between the printed counterexample and its replay (empty: it replays)."""
    with mp.workdps(digits_needed(ce)):
        got = sides(spec_path, claim, ce)
        if got is None:
            return ["the printed table entry differs from the modifier's"]
        return compare(got, ce)


def compare(got, ce: dict) -> list[str]:
    bad = []
    enc = ce.get("enclosures")
    if not enc:
        bad.append("no enclosures printed")
    names = ce.get("compared") or ["(unnamed)", "(unnamed)"]
    for side, value, key in zip(names, got, ("original", "changed")):
        encl = (enc or {}).get("lhs" if key == "original" else "rhs")
        vals, balls, shown = _flat(value if isinstance(value, list) else [value]), _flat(encl), _flat(ce.get(key))
        if encl is not None and len(vals) != len(balls):
            bad.append(f"{side}: {len(vals)} values, {len(balls)} enclosures")
            continue
        for k, v in enumerate(vals):
            if encl is not None:
                m, r = ball(balls[k])
                if abs(v - m) > r + mp.mpf(10) ** (-mp.mp.dps + 10) * max(1, abs(v)):
                    bad.append(f"{side}: the value {mp.nstr(v, 15)} is outside the printed enclosure {balls[k]}")
            if k < len(shown) and shown[k] is not None:
                tol = mp.mpf("5e-6") * max(abs(v), mp.mpf("1e-300")) + mp.mpf(10) ** (-mp.mp.dps + 10)
                if abs(v - mp.mpf(shown[k])) > tol and abs(v) > 1e-290:
                    bad.append(f"{side}: {key} is printed {shown[k]}, the replay gives {mp.nstr(v, 10)}")
    diff = (enc or {}).get("difference")
    if diff is not None:
        lhs, rhs = (_flat(x if isinstance(x, list) else [x]) for x in got)
        for k, dtext in enumerate(_flat(diff)):
            m, r = ball(dtext)
            if abs((lhs[k] - rhs[k]) - m) > r + mp.mpf(10) ** (-mp.mp.dps + 10):
                bad.append(f"the difference {mp.nstr(lhs[k] - rhs[k], 15)} is outside its printed enclosure {dtext}")
        if all(ball(t)[0] == 0 and ball(t)[1] == 0 for t in _flat(diff)):
            bad.append("the printed difference is 0: no counterexample")
    return bad


_ = math


# ---- the normalizer document's counterexamples (docs/normalizers.json, data.table) -----------

def property_sides(name: str, prop: str, w: dict):
    """The two values a property counterexample of normalizer ``name`` compares, from its instance."""
    formula, own = BUILTIN[name]
    params = {p: number(v) for p, v in (w.get("parameters") or {}).items()}
    inst, idx = w["instance"], w["indices"]
    i = idx.get("i", 1)
    if prop == "limit_any_path":
        tau = mp.mpf(400)
        rows = [[-tau, -2 * tau], [-2 * tau, -tau]]
        return tuple([weights(formula, [1, 2], {1: r[0], 2: r[1]}, None, i, params)[k] for k in (1, 2)] for r in rows)
    if prop == "can_abstain":
        return weights(formula, [1], {1: number(inst["x"][0][0])}, None, 1, params)[1], mp.mpf(0)
    if prop in ("jacobian_diagonal", "jacobian_offdiagonal", "gradient_nonvanishing"):
        x = number(inst["x"])
        jj, kk = idx["j"], idx["k"] if prop == "jacobian_offdiagonal" else idx["j"]

        def p_j(v):
            row = {t: (v if t == kk else x[t - 1]) for t in (1, 2)}
            return weights(formula, [1, 2], row, None, i, params)[jj]
        return mp.diff(p_j, x[kk - 1]), None
    n = inst["n"]
    mrow = inst.get("M", [[1] * n] * n)[i - 1]
    keys = [t for t in range(1, n + 1) if mrow[t - 1]]
    if prop == "k_bias_cancels":
        q, k, b = (number(inst[key]) for key in ("q", "k", "b_K"))
        d = mp.mpf(inst["d"])
        with_b = {t: _dot(q[i - 1], _add(k[t - 1], b)) / mp.sqrt(d) for t in keys}
        without = {t: _dot(q[i - 1], k[t - 1]) / mp.sqrt(d) for t in keys}
        return (weights(formula, keys, with_b, None, i, params)[idx["j"]],
                weights(formula, keys, without, None, i, params)[idx["j"]])
    row = number(inst["x"][i - 1])
    x = {t: row[t - 1] for t in keys}
    if prop == "shift_invariant":
        c = number(inst["c"])
        return (weights(formula, keys, x, None, i, params)[idx["j"]],
                weights(formula, keys, {t: v + c for t, v in x.items()}, None, i, params)[idx["j"]])
    if prop == "weights_sum_to_one":
        return mp.fsum(weights(formula, keys, x, None, i, params).values()), mp.mpf(1)
    if prop == "ratio_identity":
        w2 = weights(formula, [1, 2], {1: row[0], 2: row[1]}, None, i, params)
        return w2[1] / w2[2], mp.exp(row[0] - row[1])
    raise Unsupported(f"property {prop}")


def check_property(name: str, prop: str, w: dict) -> list[str]:
    """The mismatches between a printed property counterexample and its replay."""
    with mp.workdps(digits_needed(w)):
        got = property_sides(name, prop, w)
        if prop in ("jacobian_diagonal", "jacobian_offdiagonal", "gradient_nonvanishing"):
            d = got[0]
            sign = "0" if abs(d) < mp.mpf(10) ** -20 else "+" if d > 0 else "-"
            bad = [] if sign == w["sign"] else [f"the derivative is {mp.nstr(d, 10)}, printed sign {w['sign']}"]
            if abs(d - mp.mpf(w["derivative"])) > mp.mpf(10) ** -10:
                bad.append(f"the derivative is {mp.nstr(d, 10)}, printed {w['derivative']}")
            return bad
        if prop in ("limit_any_path", "can_abstain"):  # exact values, no enclosures
            bad = []
            for label, v, shown in zip(w["compared"], got, (w["lhs"], w["rhs"])):
                for a, b in zip(_flat(v if isinstance(v, list) else [v]), _flat(shown if isinstance(shown, list) else [shown])):
                    if abs(a - mp.mpf(b)) > mp.mpf(10) ** -6:
                        bad.append(f"{label}: printed {b}, the replay gives {mp.nstr(a, 10)}")
            return bad
        return compare(got, {**w, "original": w["lhs"], "changed": w["rhs"]})
