"""Mutation benchmark of the proof checker (derive/replay/): the share of its mutants that its own
tests (tests/test_replay.py) kill (target ≥ 95%).

Mutants are made mechanically from each module's AST, one change each, in the style of
``benchmarks/bench_mutants.py``: + ↔ −, × ↔ ÷ (also in ``+=``), one operand of a binary operation
dropped, < ↔ ≤, > ↔ ≥, == ↔ !=, ``in`` ↔ ``not in``, ``is`` ↔ ``is not``, ``and`` ↔ ``or``, a
``not`` dropped, the test of an ``if`` negated, a ``raise`` (a rejection) replaced by ``pass``,
an integer replaced by 0, 1 or itself ± 1, True ↔ False. Each mutant is written into a copy of
the package in a temporary folder and the tests run against it in a fresh interpreter (``pytest
-x``); a mutant is killed when they fail (or time out). Survivors are listed with their change:
each is a behaviour the tests do not pin, or a mutant equivalent to the original.

Run from the repository root: ``python benchmarks/bench_replay_mutants.py [--limit N] [--only MODULE]``
(``--limit N`` runs N mutants spread evenly over the list, deterministic). The machine is shared:
a mutant takes about 4 s of wall time there.
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "derive" / "replay"
TESTS = ("tests/test_replay.py",)
TARGET = 0.95
TIMEOUT = 120
SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult}
CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
       ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


class Mutator(ast.NodeTransformer):
    """Visits a module in a fixed order; the ``target``-th possible change is made (``target`` −1:
    only counts them, with their descriptions in ``seen``). Docstrings and annotations are left alone."""

    def __init__(self, target: int = -1):
        self.target, self.count, self.seen, self.done = target, 0, [], ""

    def _offer(self, node, options):
        for what, new in options:
            where = f"line {getattr(node, 'lineno', '?')}: {what}"
            if self.count == self.target:
                self.done = where
                self.count += 1
                return ast.copy_location(new, node) if isinstance(new, ast.AST) else new
            self.seen.append(where)
            self.count += 1
        return None

    def visit_BinOp(self, node):
        self.generic_visit(node)
        opts = []
        if type(node.op) in SWAP:
            new = copy.deepcopy(node)
            new.op = SWAP[type(node.op)]()
            opts.append((f"{type(node.op).__name__} → {SWAP[type(node.op)].__name__}", new))
        opts += [("drop the right operand", copy.deepcopy(node.left)), ("drop the left operand", copy.deepcopy(node.right))]
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

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        return self._offer(node, [(f"{type(node.op).__name__} → {type(new.op).__name__}", new)]) or node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return self._offer(node, [("drop a not", copy.deepcopy(node.operand))]) or node
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        new = copy.deepcopy(node)
        new.test = ast.UnaryOp(ast.Not(), new.test)
        return self._offer(node, [("negate an if", new)]) or node

    def visit_Raise(self, node):
        self.generic_visit(node)
        return self._offer(node, [("a raise replaced by pass", ast.Pass())]) or node

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, bool):
            return self._offer(node, [(f"{v} → {not v}", ast.Constant(not v))]) or node
        if not isinstance(v, int):
            return node
        opts = [(f"{v!r} → {r!r}", ast.Constant(r)) for r in sorted({0, 1, v + 1, v - 1} - {v})]
        return self._offer(node, opts) or node


def _plain(tree):
    """The module without annotations (never evaluated, under ``from __future__ import annotations``:
    a change there would be a mutant equivalent to the original)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
            for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg,
                      node.args.kwarg):
                if a is not None:
                    a.annotation = None
    body = [ast.Assign([n.target], n.value, lineno=n.lineno) if isinstance(n, ast.AnnAssign) and n.value is not None
            else n for n in tree.body]
    tree.body = [n for n in body if not isinstance(n, ast.AnnAssign)]
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        cls.body = [ast.Assign([n.target], n.value, lineno=n.lineno) if isinstance(n, ast.AnnAssign) and n.value
                    else n for n in cls.body if not (isinstance(n, ast.AnnAssign) and n.value is None)] or [ast.Pass()]
    return tree


def mutants(path: Path):
    """[(description, module source)] of every one-change mutant of the module ``path``."""
    tree = _plain(ast.parse(path.read_text(encoding="utf-8")))
    counter = Mutator()
    counter.visit(copy.deepcopy(tree))
    out = []
    for k in range(counter.count):
        m = Mutator(k)
        new = m.visit(copy.deepcopy(tree))
        ast.fix_missing_locations(new)
        out.append((m.done, ast.unparse(new) + "\n"))
    return out


def _workspace() -> Path:
    """A copy of the package and of the tests the mutants run against."""
    tmp = Path(tempfile.mkdtemp(prefix="derive-replay-mutants-"))
    shutil.copytree(ROOT / "derive", tmp / "derive", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp / "tests").mkdir()
    for t in (*TESTS, "tests/conftest.py"):
        shutil.copy(ROOT / t, tmp / t)
    shutil.copy(ROOT / "pyproject.toml", tmp / "pyproject.toml")
    return tmp


def killed(work: Path, module: Path, source: str) -> bool:
    target = work / module.relative_to(ROOT)
    original = target.read_text(encoding="utf-8")
    target.write_text(source, encoding="utf-8")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(work)}
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider",
                               *TESTS], cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT,
                              check=False)
        return proc.returncode != 0
    except subprocess.TimeoutExpired:
        return True
    finally:
        target.write_text(original, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="run N mutants spread evenly over the list")
    parser.add_argument("--only", default=None, help="the mutants of one module (e.g. rules)")
    args = parser.parse_args()
    modules = [p for p in sorted(PACKAGE.glob("*.py")) if p.name != "__init__.py" and
               (args.only is None or p.stem == args.only)]
    todo = [(p, what, src) for p in modules for what, src in mutants(p)]
    if args.limit is not None and args.limit < len(todo):
        step = len(todo) / args.limit
        todo = [todo[int(k * step)] for k in range(args.limit)]
    work = _workspace()
    start = time.perf_counter()
    survivors, done = [], 0
    try:
        for module, what, src in todo:
            done += 1
            if not killed(work, module, src):
                survivors.append(f"{module.name} {what}")
                print(f"survived: {module.name} {what}", flush=True)
            if done % 25 == 0:
                print(f"{done}/{len(todo)} mutants, {len(survivors)} survived "
                      f"({time.perf_counter() - start:.0f} s)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rate = 1 - len(survivors) / max(len(todo), 1)
    print(f"{len(todo)} mutants of {', '.join(p.name for p in modules)}: {len(todo) - len(survivors)} killed "
          f"({100 * rate:.1f}%, target {100 * TARGET:.0f}%), {len(survivors)} survived")
    return 0 if rate >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
