"""From the child's JSON tree to SymPy, through a whitelist of ops.

Nothing the child sends is evaluated: every node names an op of :data:`OPS`, every leaf is
an exact number, a boolean, an argument of the modifier or a captured table. The modifier's
arguments become engine symbols: ``score`` the symbol s (the caller substitutes
⟨q_i, k_j⟩/√d), ``h`` the head, and the 0-based ``q_idx``, ``kv_idx`` the 1-based rows and
keys of the engine as ``i − 1`` and ``j − 1``.

Captured tensors: a 1-D table indexed by ``h`` alone is a *per-head scalar*, the symbol
``NAME_h`` (its sign, when every entry has it, is an assumption of the symbol, so a proof
for the symbol holds for every head); a table indexed by positions is *opaque*, the
function ``NAME(x)`` (``NAME_h(x)`` for ``NAME[h, x]``), as a declared function of a spec;
a table of more indices is the opaque function of all of them (``NAME_h(x, y)`` for
``NAME[h, q_idx, kv_idx]``, ``NAME(b, h, x)`` for ``NAME[b, h, q_idx - kv_idx]``: the batch
index b, the symbol b, may index a table and nothing else). The entries are kept
(:attr:`Built.functions` …, nested lists) for counterexamples on the real values and the
FlexAttention cross-check.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from derive.model.attention import i, j
from derive.model.tables import BATCH, HEAD, PerHead

__all__ = ["BATCH", "HEAD", "SCORE", "Built", "PerHead", "TreeError", "build", "nested"]

SCORE = sp.Symbol("s", real=True)
LEAVES = {"score": SCORE, "h": HEAD, "q_idx": i - 1, "kv_idx": j - 1}
MAX_NODES = 2000
MAX_TABLE = 1 << 16


def nested(values: list, shape: list) -> list:
    """A flat row-major list as nested lists of ``shape``."""
    if len(shape) == 1:
        return list(values)
    step = len(values) // shape[0] if shape[0] else 0
    return [nested(values[r * step:(r + 1) * step], shape[1:]) for r in range(shape[0])]


class TreeError(Exception):
    def __init__(self, line, text):
        super().__init__(text)
        self.line, self.text = line, text


@dataclass
class Built:
    expr: sp.Basic  # a SymPy expression (score) or boolean (mask)
    per_head: dict = field(default_factory=dict)  # Symbol NAME_h → [exact values per head]
    functions: dict = field(default_factory=dict)  # function name → [exact values], nested by index
    per_head_functions: dict = field(default_factory=dict)  # NAME_h → PerHead(block per head)
    tables: dict = field(default_factory=dict)  # the name of every captured table read → its SymPy objects
    heads: int | None = None  # the fewest entries of a table axis indexed by h alone (the heads a counterexample tries)


def _is_bool(x) -> bool:
    # a Symbol is a Boolean to SymPy too (for logic); a number-valued one is an Expr
    return isinstance(x, (sp.logic.boolalg.Boolean, sp.core.relational.Relational)) and not isinstance(x, sp.Expr)


def _num(x, line):
    """A boolean used as a number (mask · score) is its indicator."""
    if _is_bool(x):
        return sp.Piecewise((1, x), (0, True))
    return x


def _both_bool(a, b) -> bool:
    return _is_bool(a) and _is_bool(b)


def _where(c, a, b, line):
    if not _is_bool(c):
        raise TreeError(line, "the condition of torch.where must be a comparison or a boolean")
    if _both_bool(a, b):
        return sp.Or(sp.And(c, a), sp.And(sp.Not(c), b))
    return sp.Piecewise((_num(a, line), c), (_num(b, line), True))


def _div(a, b, line):
    if b == 0:
        raise TreeError(line, "division by zero")
    return a / b


def _pow(a, b, line):
    if isinstance(b, sp.Integer) or (isinstance(b, sp.Rational) and b.q == 2):
        if b < 0 and a == 0:
            raise TreeError(line, "division by zero")
        return a**b
    raise TreeError(line, "the exponent of ** must be an integer or a half-integer constant")


def _clamp(x, lo, hi, line):
    out = x
    if lo is not None:
        out = sp.Max(out, lo)
    if hi is not None:
        out = sp.Min(out, hi)
    return out


def _sign(x, line):
    return sp.Piecewise((1, x > 0), (-1, x < 0), (0, True))


def _sqrt(x, line):
    return sp.sqrt(x)


def _log(x, line):
    if x.is_number and not x > 0:
        raise TreeError(line, "log() of a constant that is not positive")
    return sp.log(x)


def _logic(name):
    def fn(a, b, line):
        if not _both_bool(a, b):
            raise TreeError(line, f"{'&' if name == 'and' else '|'} needs two booleans (bitwise integer operations "
                                  "are not supported)")
        return sp.And(a, b) if name == "and" else sp.Or(a, b)

    return fn


def _not(a, line):
    if not _is_bool(a):
        raise TreeError(line, "~ needs a boolean (bitwise integer operations are not supported)")
    return sp.Not(a)


def _relation(rel, a, b):
    """``rel(a, b)`` with the terms moved apart by sign: ``i - 1 >= j - 1`` reads ``i >= j``."""
    diff = sp.expand(a - b)
    pos = [t for t in sp.Add.make_args(diff) if not t.could_extract_minus_sign()]
    neg = [-t for t in sp.Add.make_args(diff) if t.could_extract_minus_sign()]
    return rel(sp.Add(*pos), sp.Add(*neg))


def _cmp(rel):
    def fn(a, b, line):
        if _is_bool(a) or _is_bool(b):
            if rel in (sp.Eq, sp.Ne) and _both_bool(a, b):
                return sp.Equivalent(a, b) if rel is sp.Eq else sp.Xor(a, b)
            raise TreeError(line, "cannot compare a boolean with a number")
        return _relation(rel, a, b)

    return fn


def _arith(f):
    def fn(*args):
        *vals, line = args
        return f(*[_num(v, line) for v in vals])

    return fn


OPS = {
    "add": (2, _arith(lambda a, b: a + b)),
    "sub": (2, _arith(lambda a, b: a - b)),
    "mul": (2, _arith(lambda a, b: a * b)),
    "div": (2, lambda a, b, line: _div(_num(a, line), _num(b, line), line)),
    "neg": (1, _arith(lambda a: -a)),
    "pos": (1, _arith(lambda a: a)),
    "pow": (2, lambda a, b, line: _pow(_num(a, line), b, line)),
    "square": (1, _arith(lambda a: a**2)),
    "lt": (2, _cmp(sp.Lt)), "le": (2, _cmp(sp.Le)), "gt": (2, _cmp(sp.Gt)), "ge": (2, _cmp(sp.Ge)),
    "eq": (2, _cmp(sp.Eq)), "ne": (2, _cmp(sp.Ne)),
    "and": (2, _logic("and")), "or": (2, _logic("or")), "not": (1, _not),
    "where": (3, _where),
    "tanh": (1, _arith(sp.tanh)), "exp": (1, _arith(sp.exp)), "exp2": (1, _arith(lambda a: 2**a)),
    "log": (1, lambda a, line: _log(_num(a, line), line)), "abs": (1, _arith(sp.Abs)),
    "sqrt": (1, lambda a, line: _sqrt(_num(a, line), line)),
    "rsqrt": (1, lambda a, line: 1 / _sqrt(_num(a, line), line)),
    "sigmoid": (1, _arith(lambda a: 1 / (1 + sp.exp(-a)))),
    "clamp": (3, _clamp), "sign": (1, lambda a, line: _sign(_num(a, line), line)),
    "min": (2, _arith(sp.Min)), "max": (2, _arith(sp.Max)),
}


def _exact(ref, line):
    if not isinstance(ref, dict) or len(ref) != 1:
        raise TreeError(line, "malformed tree")
    (key, val), = ref.items()
    if key == "int" and isinstance(val, int) and not isinstance(val, bool):
        return sp.Integer(val)
    if key == "float" and isinstance(val, list) and len(val) == 2 and all(isinstance(v, int) for v in val) \
            and val[1] > 0:
        return sp.Rational(val[0], val[1])
    if key == "bool" and isinstance(val, bool):
        return sp.true if val else sp.false
    if key == "inf":
        raise TreeError(line, "an infinite constant: a score_mod that returns −inf masks keys; write the "
                              "condition as a mask_mod instead")
    raise TreeError(line, "malformed tree")


def _values(table, line) -> list[sp.Rational]:
    vals = table.get("values")
    if not isinstance(vals, list) or len(vals) > MAX_TABLE:
        raise TreeError(line, "a captured tensor is too large (limit 65536 entries)")
    out = []
    for v in vals:
        if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) for x in v) and v[1] > 0):
            raise TreeError(line, "malformed tree")
        out.append(sp.Rational(v[0], v[1]))
    return out


def _sign_of(values) -> dict:
    if values and all(v > 0 for v in values):
        return {"positive": True}
    if values and all(v < 0 for v in values):
        return {"negative": True}
    return {}


class _Builder:
    def __init__(self, tree: dict):
        self.tree, self.out = tree, Built(sp.S.Zero)
        self.tables = tree.get("tables") if isinstance(tree.get("tables"), dict) else {}

    def ref(self, r, vals, line):
        if r is None:
            return None
        if isinstance(r, dict) and "n" in r:
            k = r["n"]
            if not isinstance(k, int) or not 0 <= k < len(vals):
                raise TreeError(line, "malformed tree")
            return vals[k]
        if isinstance(r, dict) and "tuple" in r:
            return tuple(self.ref(x, vals, line) for x in r["tuple"])
        return _exact(r, line)

    def table(self, name, idx, line):
        """The entry ``name[idx]``: a number, or for a boolean table the condition "the entry is 1"."""
        entry = self._entry(name, idx, line)
        return sp.Eq(entry, 1) if self.tables[name].get("boolean") is True else entry

    def _entry(self, name, idx, line):
        tab = self.tables.get(name)
        if not isinstance(tab, dict) or not isinstance(tab.get("shape"), list):
            raise TreeError(line, "malformed tree")
        shape, values = tab["shape"], _values(tab, line)
        idx = idx if isinstance(idx, tuple) else (idx,)
        if len(idx) != len(shape) or any(_is_bool(x) or not getattr(x, "is_integer", False) for x in idx):
            raise TreeError(line, f"the captured tensor {name} (shape {shape}) must be indexed by {len(shape)} "
                                  f"integer position{'s' if len(shape) > 1 else ''} or the head h")
        if all(x.is_Integer for x in idx):  # a constant entry
            flat = 0
            for x, size in zip(idx, shape):
                if not 0 <= int(x) < size:
                    raise TreeError(line, f"index {int(x)} out of range for {name} (size {size})")
                flat = flat * size + int(x)
            return values[flat]
        if len(shape) == 1 and idx[0] == HEAD:
            sym = sp.Symbol(f"{name}_h", real=True, **_sign_of(values))
            self.out.per_head[sym] = values
            self.out.tables[name] = sym
            return sym
        if len(shape) == 1:
            if HEAD in idx[0].free_symbols:
                raise TreeError(line, f"{name} is indexed by an expression of the head h; index it by h alone")
            f = sp.Function(name, real=True)
            self.out.functions[name] = values
            self.out.tables[name] = f
            return f(idx[0])
        rows = nested(values, shape)
        sizes = [size for x, size in zip(idx, shape) if x == HEAD] + ([self.out.heads] if self.out.heads else [])
        self.out.heads = min(sizes) if sizes else None  # a head past a table's end is no head of the model
        if idx[0] == HEAD and not any(HEAD in x.free_symbols for x in idx[1:]):  # table[h, ...]: per head
            f = sp.Function(f"{name}_h", real=True)
            self.out.per_head_functions[f"{name}_h"] = PerHead(rows)
            self.out.tables[name] = f
            return f(*idx[1:])
        # any other table of two or more indices (positions, h, the batch b): an opaque function of them
        f = sp.Function(name, real=True)
        self.out.functions[name] = rows
        self.out.tables[name] = f
        return f(*idx)

    def run(self, kind: str) -> Built:
        nodes = self.tree.get("nodes")
        if not isinstance(nodes, list) or len(nodes) > MAX_NODES:
            raise TreeError(None, "the traced modifier is too large (limit 2000 operations)")
        vals: list = []
        for node in nodes:
            if not isinstance(node, dict):
                raise TreeError(None, "malformed tree")
            op, args, line = node.get("op"), node.get("args"), node.get("line")
            line = line if isinstance(line, int) else None
            if not isinstance(args, list):
                raise TreeError(line, "malformed tree")
            if op == "arg":
                name = args[0].get("name") if args and isinstance(args[0], dict) else None
                if name == "b":
                    vals.append(None)  # the batch index: an error only if used
                    continue
                if name not in LEAVES:
                    raise TreeError(line, "malformed tree")
                vals.append(LEAVES[name])
                continue
            if op == "const":
                vals.append(_exact(args[0] if args else None, line))
                continue
            if op == "table":
                name = args[0].get("name") if args and isinstance(args[0], dict) else None
                if not isinstance(name, str) or name not in self.tables or not name.isidentifier():
                    raise TreeError(line, "malformed tree")
                vals.append(("table", name))
                continue
            got = [self.ref(a, vals, line) for a in args]
            if op == "getitem":
                if len(got) != 2 or not (isinstance(got[0], tuple) and got[0][:1] == ("table",)):
                    raise TreeError(line, "only a captured tensor can be indexed")
                index = tuple(BATCH if x is None else x for x in got[1]) if isinstance(got[1], tuple) \
                    else BATCH if got[1] is None else got[1]  # the batch index b may index a table
                vals.append(self.table(got[0][1], index, line))
                continue
            if op not in OPS:
                raise TreeError(line, f"the operation {op!r} is not supported")
            arity, fn = OPS[op]
            if len(got) != arity:
                raise TreeError(line, f"{op} takes {arity} arguments here, got {len(got)}")
            for g in got:
                if g is None and op != "clamp":
                    raise TreeError(line, "the batch index b is not supported: a modifier must not depend on it")
                if isinstance(g, tuple):
                    raise TreeError(line, "a captured tensor must be indexed by positions or the head "
                                          "before it is used")
            vals.append(fn(*got, line))
        out = self.ref(self.tree.get("out"), vals, None)
        if out is None or isinstance(out, tuple):
            raise TreeError(None, "the modifier returns no value")
        if kind == "mask":
            if not _is_bool(out):
                raise TreeError(self.tree.get("line"), "a mask_mod must return a boolean (a comparison), "
                                                       f"got {sp.sstr(out)}")
        else:
            if _is_bool(out):
                raise TreeError(self.tree.get("line"), "a score_mod must return a number, got a boolean")
            if out.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
                raise TreeError(self.tree.get("line"), "the traced score is not finite")
        self.out.expr = out
        return self.out


def build(tree: dict, kind: str) -> Built:
    """The SymPy form of a traced modifier (``kind`` score or mask); TreeError when malformed."""
    if not isinstance(tree, dict):
        raise TreeError(None, "malformed tree")
    return _Builder(tree).run(kind)
