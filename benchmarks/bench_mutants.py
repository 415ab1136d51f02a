"""Mutation benchmark of ``derive impl``: the share of behaviour-changing mutants of correct
kernels that it kills (target ≥ 99%).

The originals are correct kernels of the zoo (:data:`ORIGINALS`): the online and split-KV
forwards with a sink and the sink backward that tiles its keys by 64, an attention kernel as
written with grouped kv heads, a sink per head, an additive mask and tiles of 64 keys
(``tests/zoo/mutation_kernels.py``, checked with ``--form attention --gqa``), and the row softmax₁
(``tests/zoo/softmax1_numpy.py``).
Mutants are made mechanically from each function's AST, one change each (:class:`Mutator`):
+ ↔ −, × ↔ ÷ (also in ``+=``), < ↔ ≤, > ↔ ≥, == ↔ !=, an integer bound of a ``range`` or a slice
± 1, a number replaced by 0, 1 or −∞ (and ``np.inf`` by 0), one operand of a binary operation
dropped, max ↔ min. A mutant whose outputs equal the original's on random and edge inputs
(:func:`behaviour`: short and long rows, masked and fully masked rows, extreme sinks, empty rows,
several tile sizes and split counts, batch shapes; for the attention kernel, calls with 1, 2 and 4
query heads per kv head, key lengths around the tile of 64, a masked first tile, score spreads of
thousands, every score near −1000 with −∞ or very negative sinks, and a row's output where the
definition has none (every key masked, every sink −∞) compared by the convention it follows, 0,
NaN or the mean of the values, as derive accepts them) is equivalent and discarded; every other one is
checked with ``derive impl`` in its form (float64, the default search) and counts as killed when
the verdict is "disagrees" (exit 1) or derive refuses it with an error on a valid input (exit 2:
it raised, returned the wrong shape, NaN where a number is due...). The kill rate is
killed / behaviour-changing; the survivors are listed, each with its change.

Run from the repository root: ``python benchmarks/bench_mutants.py [--limit N] [--only NAME]``;
``--limit N`` checks N mutants spread evenly over the list (deterministic), for iteration.
The machine is shared: the run takes about 15 s of wall time per mutant there.

A full run (251 behaviour-changing mutants, 6 equivalent discarded; 30 min on a loaded 2-core
machine) killed 250 (99.6%, 112 of them by an error on a valid input). The attention kernel alone
(``--only attention``): 88 behaviour-changing mutants, all killed (30 by an error on a valid input),
9 equivalent: the tile of 64 made 1 (the same online softmax, other roundings), and changes that
touch only a state no row reaches or wipes out — the initial running sum of a head whose sink is
−∞ (0 → 1, > → ≥: the first visible key multiplies it by e^−∞ = 0), the shift of a row with no
key so far (0 → 1), and the output guard ``ell > 0`` (ell is 0 or at least 1, e^0 of the top key). The survivor changes the
row softmax₁'s default ``axis=-1`` to ``axis=0``: derive passes the axis explicitly, so it cannot
see a default (the filter, calling ``fn(x)``, does).
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib.util
import math
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from derive.errors import InputError  # noqa: E402
from derive.impl import check_implementation  # noqa: E402

# name → (zoo file, function, --as, --form)
ORIGINALS = {
    "online": ("tests/zoo/mutation_kernels.py", "sink_online", "sink", "online"),
    "split": ("tests/zoo/mutation_kernels.py", "sink_split", "sink", "split"),
    "backward": ("tests/zoo/mutation_kernels.py", "sink_backward", "sink", "backward"),
    "row": ("tests/zoo/softmax1_numpy.py", "softmax1", "softmax1", "row"),
    "attention": ("tests/zoo/mutation_kernels.py", "attention_gqa_sinks", "sink", "attention"),
}
ATTENTION = {"layout": "bhnd", "out_layout": None, "scale": None, "causal": False, "start_q": None, "window": 0,
             "mask_value": "-inf", "backward": False, "kw_names": {}, "gqa": True}  # derive impl --form attention --gqa
TARGET = 0.99
SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
MAXMIN = {"max": "min", "min": "max", "maximum": "minimum", "minimum": "maximum"}
NEG_INF = ast.UnaryOp(ast.USub(), ast.Attribute(ast.Name("np", ast.Load()), "inf", ast.Load()))


def _num(v):
    return ast.Constant(v)


class Mutator(ast.NodeTransformer):
    """Visits one function in a fixed order; the ``target``-th possible change is made (with
    ``target`` = −1 it only counts them, in ``self.seen``, with their descriptions)."""

    def __init__(self, target: int = -1):
        self.target, self.count, self.seen, self.done = target, 0, [], ""
        self.bounds = 0  # > 0 inside a range() argument or a slice bound

    def _offer(self, node, options):
        """options: [(description, replacement)]; returns the replacement when it is the target."""
        for what, new in options:
            if self.count == self.target:
                self.done = f"line {getattr(node, 'lineno', '?')}: {what}"
                self.count += 1
                return ast.copy_location(new, node) if isinstance(new, ast.AST) else new
            self.seen.append(f"line {getattr(node, 'lineno', '?')}: {what}")
            self.count += 1
        return None

    def visit_BinOp(self, node):
        self.generic_visit(node)
        opts = []
        if type(node.op) in SWAP:
            new = copy.deepcopy(node)
            new.op = SWAP[type(node.op)]()
            opts.append((f"{type(node.op).__name__} → {SWAP[type(node.op)].__name__}", new))
        opts.append(("drop the right operand", copy.deepcopy(node.left)))
        opts.append(("drop the left operand", copy.deepcopy(node.right)))
        return self._offer(node, opts) or node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if type(node.op) in SWAP:
            new = copy.deepcopy(node)
            new.op = SWAP[type(node.op)]()
            return self._offer(node, [(f"{type(node.op).__name__}= → {SWAP[type(node.op)].__name__}=", new)]) or node
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and type(node.ops[0]) in CMP:
            new = copy.deepcopy(node)
            new.ops = [CMP[type(node.ops[0])]()]
            return self._offer(node, [(f"{type(node.ops[0]).__name__} → {CMP[type(node.ops[0])].__name__}",
                                       new)]) or node
        return node

    def visit_Name(self, node):
        if node.id in MAXMIN and isinstance(node.ctx, ast.Load):
            return self._offer(node, [(f"{node.id} → {MAXMIN[node.id]}", ast.Name(MAXMIN[node.id], ast.Load()))]) \
                or node
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr in MAXMIN:
            new = copy.deepcopy(node)
            new.attr = MAXMIN[node.attr]
            return self._offer(node, [(f".{node.attr} → .{MAXMIN[node.attr]}", new)]) or node
        if node.attr == "inf":
            return self._offer(node, [("inf → 0", _num(0.0))]) or node
        return node

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return node
        opts = [(f"{v!r} → {r!r}", _num(type(v)(r))) for r in (0, 1) if r != v]
        if isinstance(v, float):
            opts.append((f"{v!r} → -inf", copy.deepcopy(NEG_INF)))
        return self._offer(node, opts) or node

    def _bound(self, expr):
        """An integer bound: itself ± 1 (off by one), then its own mutations."""
        if expr is None:
            return None
        opts = [("bound + 1", ast.BinOp(copy.deepcopy(expr), ast.Add(), _num(1))),
                ("bound − 1", ast.BinOp(copy.deepcopy(expr), ast.Sub(), _num(1)))]
        new = self._offer(expr, opts)
        return new if new is not None else self.visit(expr)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "range":
            node.args = [self._bound(a) for a in node.args]
            node.func = self.visit(node.func)
            return node
        self.generic_visit(node)
        return node

    def visit_Slice(self, node):
        node.lower, node.upper = self._bound(node.lower), self._bound(node.upper)
        if node.step is not None:
            node.step = self.visit(node.step)
        return node


def _function(tree, name):
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


def mutants(path: str, name: str):
    """[(description, module source)] of every one-change mutant of function ``name`` in ``path``."""
    source = (ROOT / path).read_text(encoding="utf-8")
    tree = ast.parse(source)
    counter = Mutator()
    counter.visit(copy.deepcopy(_function(tree, name)))
    out = []
    for k in range(counter.count):
        t = copy.deepcopy(tree)
        fn = _function(t, name)
        m = Mutator(k)
        new = m.visit(fn)
        t.body[t.body.index(fn)] = new
        ast.fix_missing_locations(t)
        out.append((m.done, ast.unparse(t) + "\n"))
    return out


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _load(source: str, directory: str, tag: str):
    path = Path(directory) / f"{tag}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(tag, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, str(path)


def _attention_inputs():
    """Random and edge calls of an attention kernel: GQA groups of 1, 2 and 4, key lengths around the
    tile of 64, a masked first tile, a fully masked row, extreme and −∞ sinks."""
    rng = np.random.default_rng(20261202)
    out = []
    for B, H, Hkv, M, N in ((1, 1, 1, 3, 1), (2, 2, 2, 5, 5), (1, 4, 2, 3, 63), (2, 4, 1, 4, 64), (1, 4, 4, 2, 65),
                            (1, 2, 1, 70, 129), (2, 4, 2, 3, 200)):
        q = rng.standard_normal((B, H, M, 8)) * 2.0
        k = rng.standard_normal((B, Hkv, N, 8))
        v = rng.standard_normal((B, Hkv, N, 3))
        mask = np.zeros((B, 1, M, N))
        mask[0, 0, :, : min(N - 1, 64)] = -np.inf  # the first tile masked before a visible key
        mask[-1, 0, -1, :] = -np.inf  # a fully masked row
        low = np.full((B, 1, M, N), -1000.0)  # every score near −1000: e^x underflows unless shifted
        for sinks in (np.linspace(-1.0, 1.0, H), np.full(H, 40.0), np.full(H, -np.inf), np.array([0.5, -np.inf] * H)[:H]):
            out.append(((q, k, v), {"scale": 0.35, "sinks": sinks}))
            out.append(((q * 30.0, k, v), {"scale": 0.35, "sinks": sinks, "mask": mask}))
            out.append(((q * 300.0, k, v), {"scale": 0.35, "sinks": sinks}))  # score spreads of thousands
            out.append(((q, k, v), {"scale": 0.35, "sinks": sinks - 1000.0, "mask": low}))
    return out


def _inputs(form: str):
    """Random and edge inputs of the form: (args, kwargs)."""
    if form == "attention":
        return _attention_inputs()
    rng = np.random.default_rng(20261201)
    out = []
    for n in (0, 1, 2, 3, 5, 17, 63, 64, 65, 129, 200):
        for lead in ((3,), (2, 3)):
            rows = int(np.prod(lead))
            x = rng.standard_normal(lead + (n,)) * 3.0
            flat = x.reshape(rows, n)  # a view
            flat[0] *= 10.0  # large scores
            if n >= 2:
                flat[1:, 0] = -np.inf  # a masked key
                flat[-1] = -np.inf  # a fully masked row
            v = rng.standard_normal(lead + (n, 3))
            g = rng.standard_normal(lead + (3,))
            for s in (0.5, -2.0, 40.0, -np.inf):
                if form == "online":
                    out += [((x, v, b), {"s": s}) for b in (1, 3, 16, 64, 128)]
                elif form == "split":
                    out += [((x, v, k), {"s": s}) for k in (1, 2, 3, 8, 2 * n + 3, 64)]
                elif form == "backward":
                    out.append(((x, v, g), {"s": s}))
            if form == "row":
                out.append(((x,), {}))
                out.append(((x * 100.0,), {}))
    return out


def _flat(result) -> list:
    if isinstance(result, dict):
        return [np.asarray(result[k], dtype=np.float64) for k in sorted(result)]
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in _flat(r)]
    return [np.asarray(result, dtype=np.float64)]


def _undefined_as_zero(result, args, kw):
    """An attention output with its rows of no value (every key masked, every sink −∞: 0/0) set to 0
    where they follow an accepted convention (0, NaN, or the mean of the values over every key or
    the visible ones), as ``derive impl`` accepts them: a mutant that differs from the original only
    there computes the same definition."""
    out = np.array(result, dtype=np.float64)
    q, k, v = args
    B, H, M, _ = q.shape
    N, groups = k.shape[2], H // k.shape[1]
    mask = kw.get("mask")
    visible = np.ones((B, M, N), dtype=bool) if mask is None else np.isfinite(mask[:, 0])
    for b in range(B):
        for h in range(H):
            if np.isfinite(kw["sinks"][h]):
                continue
            vals = v[b, h // groups]
            for i in range(M):
                if visible[b, i].any():
                    continue
                y = out[b, h, i]
                means = [vals.mean(axis=0)] if N else []
                if np.all(y == 0) or np.all(np.isnan(y)) or any(np.allclose(y, m, rtol=1e-9) for m in means):
                    out[b, h, i] = 0.0
    return [out]


def behaviour(fn, inputs, form: str = "") -> list:
    """fn's outputs on every input (an exception's type where it raises); in the attention form, rows
    where the definition has no value are compared by the convention they follow
    (:func:`_undefined_as_zero`)."""
    out = []
    with np.errstate(all="ignore"):
        for args, kw in inputs:
            signal.alarm(5)
            try:
                result = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args], **kw)
                if form == "attention" and isinstance(result, np.ndarray) and result.shape[:3] == args[0].shape[:3]:
                    out.append(_undefined_as_zero(result, args, kw))
                    continue
                out.append(_flat(result))
            except _Timeout:
                out.append("timeout")
            except Exception as exc:  # noqa: BLE001 - a mutant may raise anything
                out.append(type(exc).__name__)
            finally:
                signal.alarm(0)
    return out


def _same(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return len(a) == len(b) and all(x.shape == y.shape and np.allclose(x, y, rtol=1e-9, atol=1e-12, equal_nan=True)
                                    for x, y in zip(a, b))


def verdict(path: str, name: str, norm: str, form: str) -> str:
    try:
        report = check_implementation(f"{path}:{name}", norm, form=form, dtypes=("float64",),
                                      attention=ATTENTION if form == "attention" else None)
    except InputError as exc:
        return "error: " + str(exc).splitlines()[0][:160]
    return "agrees" if report.agrees else "disagrees"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=0, help="check this many mutants, spread evenly (0: all)")
    ap.add_argument("--only", choices=sorted(ORIGINALS), action="append", help="these originals only")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGALRM, _alarm)
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="derive-mutants-") as tmp:
        pool = []  # (original, description, source)
        equivalent = {}
        for key in args.only or ORIGINALS:
            path, name, norm, form = ORIGINALS[key]
            original, _ = _load((ROOT / path).read_text(encoding="utf-8"), tmp, f"orig_{key}")
            inputs = _inputs(form)
            base = behaviour(getattr(original, name), inputs, form)
            for k, (what, source) in enumerate(mutants(path, name)):
                try:
                    module, _ = _load(source, tmp, f"probe_{key}_{k}")
                    changed = not all(_same(a, b) for a, b in zip(base, behaviour(getattr(module, name), inputs, form)))
                except Exception:  # noqa: BLE001 - a mutant that does not even load changes behaviour
                    changed = True
                if changed:
                    pool.append((key, what, source))
                else:
                    equivalent[key] = equivalent.get(key, 0) + 1
        chosen = pool
        if args.limit and args.limit < len(pool):
            chosen = [pool[int(i * len(pool) / args.limit)] for i in range(args.limit)]
        per = ", ".join(f"{k} {sum(p[0] == k for p in pool)}" for k in args.only or ORIGINALS)
        print(f"behaviour-changing mutants: {len(pool)} ({per}); equivalent, discarded: {sum(equivalent.values())}; "
              f"checking {len(chosen)}", flush=True)
        killed, survivors, errors = 0, [], 0
        for i, (key, what, source) in enumerate(chosen):
            path, name, norm, form = ORIGINALS[key]
            mpath = Path(tmp) / f"mutant_{i}.py"
            mpath.write_text(source, encoding="utf-8")
            v = verdict(str(mpath), name, norm, form)
            if v == "agrees":
                survivors.append(f"{key} {what}")
            else:
                killed += 1
                errors += v.startswith("error")
            print(f"  [{i + 1}/{len(chosen)}] {key:8s} {what:40s} {v[:100]}", flush=True)
    rate = killed / len(chosen) if chosen else math.nan
    print(f"\nkilled {killed} of {len(chosen)} behaviour-changing mutants: {100 * rate:.1f}% "
          f"({errors} by an error on a valid input); target {100 * TARGET:.0f}%; {time.time() - start:.0f} s")
    for s in survivors:
        print(f"  survived: {s}")
    return 0 if rate >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
