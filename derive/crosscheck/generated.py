"""Engine expressions as one generated Python function each, for the float backend.

A cross-check evaluates the same two sides on 240 instances, each a few hundred nodes once
its sums over keys are unrolled; through the closures of :mod:`derive.crosscheck.compiled`
every node costs a Python call. Here an expression is written once as the body of one
function, a flat sequence of statements (one loop per sum), and compiled by Python:

- the same floating-point operations as the closures, in the same order, on the same
  operands (an ``Add`` or ``Mul`` folds left to right, an integer is ``float(k)``, a rational
  ``p / q``, ``exp`` and ``log`` keep their overflow guards, a sum starts from its first
  term and an empty one is ``0.0``), so every value is the same double;
- the symbols no loop binds (d, n, scalars, vectors, indices of ``env``), the tables and the
  vector families are looked up once, in the function's prologue;
- a subexpression that does not use the variable of the loop it sits in (the denominator
  Σ_t exp(s_t) inside Σ_j) is computed once per iteration of the innermost loop it does use,
  lazily (at its first use, as the closures' cache does), and equal subexpressions (SymPy
  equality, which respects the order of the arguments) are computed once.

Only the node types the cross-checks use are written (numbers, symbols, tables, vectors,
``+ × ^``, ``exp log tanh sin cos abs max min``, dot products, sums, comparisons, Piecewise
and its conditions: ``and or not``, each tested in order and only as far as the closures test
it); for any other, :func:`generated` gives None and the closures evaluate it. When the generated function
raises (a symbol with no value, a table that is not a float64 array of the expected shape,
0.0 to a negative power, …), the caller evaluates the expression again through the closures,
which give their own value or exception: the generated function only ever returns a value
the closures would return.

The source is built from this module's templates alone: every number, symbol, table name and
SymPy object is passed to the function as a value of its namespace (``c3``, ``s1``…), never
written into the text, so nothing of an expression (nor any text a user wrote) is parsed by
Python. The expressions themselves are SymPy trees derive built (the engine's, or a spec's
through derive's own parser); ``compile`` only sees the templates' identifiers and operators.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from derive.crosscheck.compiled import canon
from derive.model.vectors import Dot, VectorBase
from derive.model.attention import LabelBase

__all__ = ["generated"]

_U = object()  # a lazily computed value not yet computed
_COMPARE = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}
_UNARY = {sp.tanh: "tanh", sp.sin: "sin", sp.cos: "cos"}


class _Unwritten(Exception):
    """A node type this module does not write: the closures evaluate the expression."""


class _NoBranch(Exception):
    """A Piecewise with no branch whose condition holds: the closures raise their error."""


class _Shape(Exception):
    """An instance whose tables the generated function does not read (the closures do)."""


def _family(inst, name):
    fam = inst.families[name]
    if type(fam) is not np.ndarray or fam.dtype != np.float64 or fam.ndim != 2:
        raise _Shape(name)
    return fam


def _table(inst, name, rank):
    tab = inst.tables[name]
    if type(tab) is not np.ndarray or tab.dtype != np.float64 or tab.ndim != rank:
        raise _Shape(name)
    return tab


def generated(e: sp.Basic):
    """The generated function ``f(ev, env)`` of ``e`` (float backend), or None when ``e`` has a
    node type it does not write."""
    try:
        return _Writer(e).function()
    except Exception:  # noqa: BLE001 - _Unwritten, or a tree the closures judge (e.g. a malformed range)
        return None


class _Writer:
    def __init__(self, e: sp.Basic):
        self.root = e
        self.ns: dict = {"_U": _U, "_int": int, "_float": float, "_exp": math.exp, "_log": math.log,
                         "_sqrt": math.sqrt, "_inf": math.inf, "_math": math, "_dot": np.dot,
                         "_max": max, "_min": min, "_abs": abs, "_bool": bool,
                         "_family": _family, "_table": _table, "_NoBranch": _NoBranch}
        self.count = 0
        self.prologue: list[str] = ["inst = ev.inst"]
        self.symbols: dict = {}  # canon key -> local of a symbol no loop binds
        self.reads: dict = {}  # (kind, name, rank) -> local of a table or family
        self.lazy: dict = {}  # (expr, home loop) -> local computed at first use
        self.used: dict = {}  # expr -> keys of the symbols it uses (see uses)
        self.done: dict = {}  # (expr, id of block) -> local computed earlier in that block
        self.blocks: list = []  # every block, kept alive so that their ids stay unique
        self.resets: dict = {0: self.prologue}  # loop id -> lines where its lazy locals are reset

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, value) -> str:
        name = self.fresh("c")
        self.ns[name] = value
        return name

    def function(self):
        body: list[str] = []
        self.blocks.append(body)
        result = self.emit(self.root, (), body)
        lines = ["def _generated(ev, env):"]
        lines += ["    " + line for line in self.prologue + body + [f"return {result}"]]
        code = compile("\n".join(lines), "<derive.crosscheck.generated>", "exec")
        exec(code, self.ns)  # noqa: S102 - the text is this module's templates (see the module doc)
        return self.ns["_generated"]

    # ---- where a value is computed -------------------------------------------------------

    def home(self, e: sp.Basic, scope: tuple) -> int:
        """The depth of the innermost enclosing loop whose variable ``e`` uses (0: none)."""
        keys, depth = self.uses(e), 0
        for pos in range(len(scope) - 1, -1, -1):
            if scope[pos][1] in keys:
                depth = pos + 1
                break
        return depth

    def uses(self, e: sp.Basic) -> frozenset:
        """The keys of the symbols ``e``'s value depends on, at most: its free symbols, a
        table's through its indices (a base's name is no value), a sum's less its variables."""
        found = self.used.get(e)
        if found is None:
            if isinstance(e, sp.Symbol):
                found = frozenset((canon(e),))
            elif isinstance(e, sp.Indexed):
                found = frozenset().union(*(self.uses(a) for a in e.indices))
            elif isinstance(e, sp.Sum):
                bound = {canon(var) for var, *_ in e.limits}
                found = (self.uses(e.function) - bound).union(*(self.uses(a) for _, *ends in e.limits for a in ends))
            else:
                found = frozenset().union(*(self.uses(a) for a in e.args))
            self.used[e] = found
        return found

    def emit(self, e: sp.Basic, scope: tuple, out: list) -> str:
        atom = self.atom(e, scope)
        if atom is not None:
            return atom
        return self.place(e, self.home(e, scope), scope, out, lambda block: self.compute(e, scope, block))

    def place(self, key, depth: int, scope: tuple, out: list, compute) -> str:
        """The local holding the value ``compute(block)`` writes, computed at loop depth
        ``depth`` (0: once per call): in ``out`` if that is the innermost loop (or the value
        was computed earlier in ``out``), else at its first use in an iteration of that loop."""
        if depth == len(scope):  # uses the innermost loop's variable (or there is no loop)
            name = self.done.get((key, id(out)))
            if name is None:
                name = self.done[key, id(out)] = compute(out)
            return name
        loop = scope[depth - 1][0] if depth else 0
        name = self.lazy.get((key, loop))
        if name is None:
            name = self.lazy[key, loop] = self.fresh("m")
            self.resets[loop].append(f"{name} = _U")
        block: list[str] = []
        self.blocks.append(block)
        value = compute(block)
        out.append(f"if {name} is _U:")
        out.extend("    " + line for line in block + [f"{name} = {value}"])
        return name

    def line(self, out: list, text: str) -> str:
        t = self.fresh("t")
        out.append(f"{t} = {text}")
        return t

    # ---- atoms: no statement ----------------------------------------------------------------

    def atom(self, e: sp.Basic, scope: tuple) -> str | None:  # noqa: PLR0911 - one per atom
        if isinstance(e, sp.Symbol):
            key = canon(e)
            for _, loop_key, local in reversed(scope):
                if loop_key == key:
                    return local
            name = self.symbols.get(key)
            if name is None:
                name = self.symbols[key] = self.fresh("s")
                k, sym = self.const(key), self.const(e)
                self.prologue += [f"{name} = env.get({k}, _U)", f"if {name} is _U:",
                                  f"    {name} = ev.symbol({sym})"]
            return name
        if isinstance(e, sp.Integer):
            return self.const(float(int(e)))
        if isinstance(e, sp.Rational):
            return self.const(int(e.p) / int(e.q))
        if isinstance(e, sp.Float):
            return self.const(float(e))
        if e is sp.pi:
            return self.const(math.pi)
        if e is sp.E:
            return self.const(math.e)
        return None

    # ---- compound nodes: statements, then the local holding the value ------------------------

    def compute(self, e: sp.Basic, scope: tuple, out: list) -> str:  # noqa: C901 - one branch per node
        t = self.fresh("t")
        if isinstance(e, sp.Indexed):
            return self.indexed(e, scope, out, t)
        if isinstance(e, (sp.Add, sp.Mul)):
            args = [self.emit(a, scope, out) for a in e.args]
            out.append(f"{t} = " + (" + " if isinstance(e, sp.Add) else " * ").join(args))
            return t
        if isinstance(e, sp.Pow):
            base, ex = self.emit(e.base, scope, out), e.exp
            if ex == sp.Rational(1, 2):
                out.append(f"{t} = _sqrt({base})")
            elif ex == -sp.Rational(1, 2):
                out.append(f"{t} = 1 / _sqrt({base})")
            elif isinstance(ex, sp.Integer):
                out.append(f"{t} = {base} ** {self.const(int(ex))}")
            else:
                out.append(f"{t} = {base} ** {self.emit(ex, scope, out)}")
            return t
        if isinstance(e, (sp.exp, sp.log, sp.tanh, sp.sin, sp.cos)):
            a = self.emit(e.args[0], scope, out)
            if isinstance(e, sp.exp):
                out.append(f"{t} = _exp({a}) if {a} < 709.0 else _inf")
            elif isinstance(e, sp.log):
                out.append(f"{t} = _log({a}) if {a} > 0 else -_inf")
            else:
                out.append(f"{t} = _math.{_UNARY[type(e)]}({a})")
            return t
        if isinstance(e, sp.Abs):
            out.append(f"{t} = _abs({self.emit(e.args[0], scope, out)})")
            return t
        if isinstance(e, (sp.Max, sp.Min)):
            args = [self.emit(a, scope, out) for a in e.args]
            out.append(f"{t} = {'_max' if isinstance(e, sp.Max) else '_min'}([{', '.join(args)}])")
            return t
        if isinstance(e, Dot):
            a, b = (self.emit(x, scope, out) for x in e.args)
            out.append(f"{t} = _float(_dot({a}, {b}))")
            return t
        if isinstance(e, sp.Sum):  # SymPy's first range is the innermost
            return self.sum(e.function, tuple(reversed(e.limits)), scope, out)
        if isinstance(e, sp.Piecewise):
            self.branches(list(e.args), scope, out, t)
            return t
        if isinstance(e, sp.core.relational.Relational) and e.rel_op in _COMPARE:
            a, b = self.emit(e.lhs, scope, out), self.emit(e.rhs, scope, out)
            out.append(f"{t} = _bool({a} {_COMPARE[e.rel_op]} {b})")
            return t
        if isinstance(e, (sp.And, sp.Or)):  # all(...) or any(...): stops at the first that decides
            out.append(f"{t} = {isinstance(e, sp.And)}")
            self.connective(list(e.args), isinstance(e, sp.And), scope, out, t)
            return t
        if isinstance(e, sp.Not):
            out.append(f"{t} = not {self.emit(e.args[0], scope, out)}")
            return t
        if e in (sp.true, sp.false):
            out.append(f"{t} = {bool(e)}")
            return t
        raise _Unwritten(type(e).__name__)

    def block(self) -> list:
        block: list[str] = []
        self.blocks.append(block)
        return block

    def branches(self, pairs: list, scope: tuple, out: list, t: str) -> None:
        """Piecewise: the value of the first branch whose condition holds (conditions tested in
        order, only the chosen value computed); none: the closures raise their error."""
        if not pairs:
            out.append("raise _NoBranch")
            return
        (value, cond), rest = pairs[0], pairs[1:]
        if cond == sp.true:
            out.append(f"{t} = {self.emit(value, scope, out)}")
            return
        test = self.emit(cond, scope, out)
        then, other = self.block(), self.block()
        then.append(f"{t} = {self.emit(value, scope, then)}")
        self.branches(rest, scope, other, t)
        out.append(f"if {test}:")
        out.extend("    " + line for line in then)
        out.append("else:")
        out.extend("    " + line for line in other)

    def connective(self, args: list, conjunction: bool, scope: tuple, out: list, t: str) -> None:
        """``t`` is already the answer if every argument is tested without deciding; an argument
        that decides (false for And, true for Or) sets the other answer and stops."""
        if not args:
            return
        test = self.emit(args[0], scope, out)
        rest = self.block()
        self.connective(args[1:], conjunction, scope, rest, t)
        if conjunction:  # and: go on while true; all true: True
            out.append(f"if {test}:")
            out.extend("    " + line for line in rest or ["pass"])
            out += ["else:", f"    {t} = False"]
        else:  # or: go on while false; one true: True
            out.append(f"if {test}:")
            out.append(f"    {t} = True")
            out.append("else:")
            out.extend("    " + line for line in rest or ["pass"])

    def indexed(self, e: sp.Indexed, scope: tuple, out: list, t: str) -> str:
        """A vector of a family (one index) or an entry of a table (one or two indices), read
        as the closures read it: the index through ``int``, the entry through ``float``. A row
        of a two-index table read inside a loop that does not change it is read once per
        iteration of the loop that does, as a list of floats (``tolist``: the same doubles as
        ``float`` of each entry)."""
        rank, vector = len(e.indices), isinstance(e.base, VectorBase)
        if isinstance(e.base, LabelBase):
            raise _Unwritten("document ids, whose positions past the sequence the closures refuse")
        if rank not in (1, 2) or vector and rank != 1:
            raise _Unwritten("a table with more than two indices, or a vector family with two")
        key = ("family" if vector else "table", e.base.name, rank)
        read = self.reads.get(key)
        if read is None:
            read = self.reads[key] = self.fresh("r")
            call = f"_family(inst, {self.const(e.base.name)})" if vector else \
                f"_table(inst, {self.const(e.base.name)}, {rank})"
            self.prologue.append(f"{read} = {call}")
        idx = [self.index(a, scope, out) for a in e.indices]
        if vector:
            out.append(f"{t} = {read}[{idx[0]}]")
        elif rank == 1:
            out.append(f"{t} = _float({read}[{idx[0]}])")
        elif self.home(e.indices[0], scope) == len(scope):  # the row changes with the innermost loop
            out.append(f"{t} = _float({read}[{idx[0]}, {idx[1]}])")
        else:
            first = e.indices[0]
            row = self.place(("row", read, first), self.home(first, scope), scope, out,
                             lambda block: self.line(block, f"{read}[{idx[0]}].tolist()"))
            out.append(f"{t} = {row}[{idx[1]}]")
        return t

    def index(self, a: sp.Basic, scope: tuple, out: list) -> str:
        """An index as an int: a loop variable is one; anything else through ``int``, once
        where its value is fixed."""
        v = self.emit(a, scope, out)
        if isinstance(a, sp.Symbol) and any(local == v for _, _, local in scope):
            return v
        return self.place(("int", a), self.home(a, scope), scope, out, lambda block: self.line(block, f"_int({v})"))

    def sum(self, body: sp.Basic, limits: tuple, scope: tuple, out: list) -> str:
        """Σ over ``limits`` (outermost first), as the closures add: the first term, then each
        next one; an empty sum is 0.0."""
        var, lo, hi = limits[0]
        lo_v, hi_v = self.emit(lo, scope, out), self.emit(hi, scope, out)
        self.count += 1
        loop, local, total = self.count, self.fresh("j"), self.fresh("t")
        inner = scope + ((loop, canon(var), local),)
        self.resets[loop] = []
        block: list[str] = []
        self.blocks.append(block)
        if len(limits) > 1:
            term = self.sum(body, limits[1:], inner, block)
        else:
            term = self.emit(body, inner, block)
        out.append(f"{total} = None")
        out.append(f"for {local} in range(_int({lo_v}), _int({hi_v}) + 1):")
        lines = self.resets.pop(loop) + block + [f"{total} = {term} if {total} is None else {total} + {term}"]
        out.extend("    " + line for line in lines)
        out += [f"if {total} is None:", f"    {total} = 0.0"]
        return total
