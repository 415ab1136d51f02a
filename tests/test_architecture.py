"""Small modules and no import circles, read from the source by an AST scan (nothing is imported)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "derive"


def _modules(root: Path = ROOT) -> dict[str, Path]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _exports(tree: ast.Module) -> dict[str, str]:
    """A package's names imported on first use (``derive.lazy.exports``): its ``_EXPORTS`` table."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets):
            table = node.value
            if isinstance(table, ast.Dict):
                return {ast.literal_eval(k): ast.literal_eval(v) for k, v in zip(table.keys, table.values)}
            if isinstance(table, ast.DictComp):  # {name: "module" for name in (...)}
                module = ast.literal_eval(table.value)
                return {name: module for name in ast.literal_eval(table.generators[0].iter)}
    return {}


def _imports(nodes, mods: dict, exports: dict, here: str = "derive") -> set[str]:
    """The derive modules that the import statements among ``nodes`` name (``here``: the package a
    relative import starts from)."""

    def target(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    out = set()
    for node in nodes:
        names = []
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # from .x import y: from the package here, one level up per further dot
                base = here.split(".")[: len(here.split(".")) - node.level + 1]
                module = ".".join(base + ([module] if module else []))
            if not module.startswith("derive"):
                continue
            for a in node.names:
                full = f"{module}.{a.name}"
                names.append(full if full in mods else exports.get(module, {}).get(a.name, module))
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("derive")]
        out.update(t for t in map(target, names) if t)
    return out


@functools.cache  # the tests only read it: derive's sources are scanned once per graph
def _graph(top_level_only: bool, root: Path = ROOT) -> dict[str, set[str]]:
    """module → the derive modules it imports (at module level only, or anywhere in it: an import
    inside a function is a dependency too). Importing ``derive.p.q`` also runs the module-level
    imports of the package ``derive.p`` (unless the importer is inside it), and a name a package
    imports on first use (``_EXPORTS``) stands for the module it comes from."""
    mods = _modules(root)
    trees = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in mods.items()}
    exports = {m: _exports(tree) for m, tree in trees.items()}
    here = {m: m if p.name == "__init__.py" else m.rpartition(".")[0] for m, p in mods.items()}
    top = {m: _imports(tree.body, mods, exports, here[m]) for m, tree in trees.items()}
    graph: dict[str, set[str]] = {}
    for mod, tree in trees.items():
        direct = top[mod] if top_level_only else _imports(ast.walk(tree), mods, exports, here[mod])
        deps = set(direct)
        for dep in direct:
            parts = dep.split(".")
            for k in range(2, len(parts)):  # the packages above dep (the root derive imports nothing itself)
                package = ".".join(parts[:k])
                if package in mods and not f"{mod}.".startswith(f"{package}."):
                    deps |= top[package]
        graph[mod] = {d for d in deps if d != mod and not f"{mod}.".startswith(f"{d}.")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# The floors of derive, lowest first: a module imports (at module level or inside a function)
# only modules of its own floor and of the floors below. A package is listed whole unless some of
# its modules sit lower than the rest (the longest listed prefix of a module's name decides).
FLOORS = (
    # no derive imports but among themselves: errors, settings, paths, the lazy re-exports, the
    # sandbox for user code, the wall-clock guard and the bibliography (data)
    ("foundation", ("derive", "derive.lazy", "derive.errors", "derive.routes", "derive.paths", "derive.settings",
                    "derive.shared",
                    "derive.floats", "derive.progress", "derive.sandbox", "derive.timeout",
                    "derive.references", "derive.replay")),
    ("model", ("derive.model",)),  # the row, the mask, vectors
    ("numbers", ("derive.crosscheck",)),  # evaluation, instances, certified counterexamples
    ("proofs", ("derive.prove", "derive.certify")),  # verdicts: proved by rewriting (and its certificate), refuted by a counterexample
    ("language", ("derive.language", "derive.flex")),
    ("rendering", ("derive.render",)),  # LaTeX, Markdown, figures
    ("normalizers", ("derive.normalizers", "derive.kernels")),
    ("documents", ("derive.document",)),
    ("specs", ("derive.spec",)),  # the loader and the claim kinds
    ("claims", ("derive.claims",)),
    # derive impl, its pipeline in order: the inputs (and the numbers every step prints), running the
    # code, the exact reference, judging the outputs, the known faults, the reports, then the forms,
    # the entry point and the document, which run them all (on the reports floor)
    ("impl cases", ("derive.impl.numbers", "derive.impl.cases")),
    ("impl run", ("derive.impl.run",)),
    ("impl exact", ("derive.impl.exact",)),
    ("impl judge", ("derive.impl.judge",)),
    ("impl faults", ("derive.impl.faults",)),
    ("impl report", ("derive.impl.report",)),
    ("reports", ("derive.report", "derive.impl")),
    ("catalogues", ("derive.atlas", "derive.build", "derive.testing", "derive.pytest_plugin")),
    ("commands", ("derive.commands", "derive.cli", "derive.__main__")),
)


def _floor(module: str) -> int:
    best, floor = -1, None
    for k, (_, prefixes) in enumerate(FLOORS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, floor = len(p), k
    assert floor is not None, f"{module} is on no floor: add it to FLOORS"
    return floor


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} ({FLOORS[_floor(a)][0]}) imports {b} ({FLOORS[_floor(b)][0]})"
                  for a, deps in graph.items() for b in deps if _floor(b) > _floor(a))


def test_no_module_over_600_lines():
    long = {m: n for m, p in _modules().items() if (n := len(p.read_text(encoding="utf-8").splitlines())) >= 600}
    assert long == {}


def test_no_import_circle_at_module_level():
    assert _cycles(_graph(top_level_only=True)) == []


def test_no_import_circle_even_through_imports_in_functions():
    assert _cycles(_graph(top_level_only=False)) == []


def test_no_import_runs_back_up_a_floor():
    assert _upward(_graph(top_level_only=False)) == []


def test_the_evaluator_stays_below_its_compiled_form():
    graph = _graph(top_level_only=False)
    assert "derive.crosscheck.evaluate" not in graph["derive.crosscheck.compiled"]
    assert "derive.crosscheck.compiled" not in graph["derive.crosscheck.instance"]


def test_the_scan_sees_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "derive"
    for name, text in {"__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_the_scan_sees_a_circle_through_an_import_in_a_function(tmp_path):
    root = _package(tmp_path, {
        "a.py": "from derive.b import g\n",
        "b.py": "def g():\n    from derive.c import h\n    return h()\n",
        "c.py": "def h():\n    import derive.a\n",
    })
    assert _cycles(_graph(top_level_only=True, root=root)) == []
    assert _cycles(_graph(top_level_only=False, root=root)) == [["derive.a", "derive.b", "derive.c"]]


def test_the_scan_follows_a_package_init_lazy_names_and_relative_imports(tmp_path):
    """Importing derive.p.low runs derive/p/__init__.py, whose import of derive.p.high makes a
    circle with derive.q; a lazily exported name stands for the module it comes from; a relative
    import counts like an absolute one."""
    root = _package(tmp_path, {
        "p/__init__.py": "from derive.p.high import f\n",
        "p/low.py": "X = 1\n",
        "p/high.py": "def f():\n    from derive.q import g\n",
        "q.py": "from derive.p.low import X\n",
        "r/__init__.py": "_EXPORTS = {name: 'derive.r.impl' for name in ('k',)}\n",
        "r/impl.py": "from derive.s import k2\n",
        "s.py": "def k2():\n    from derive.r import k\n",
        "t/__init__.py": "",
        "t/one.py": "def f():\n    from . import two\n",
        "t/two.py": "from ..t.one import f\n",
    })
    graph = _graph(top_level_only=False, root=root)
    assert graph["derive.q"] == {"derive.p.low", "derive.p.high"}
    assert graph["derive.s"] == {"derive.r.impl"}
    assert graph["derive.t.one"] == {"derive.t.two"} and graph["derive.t.two"] == {"derive.t.one"}
    assert _cycles(graph) == [["derive.p.high", "derive.q"], ["derive.r.impl", "derive.s"],
                              ["derive.t.one", "derive.t.two"]]


def test_the_floors_see_an_import_up_a_floor():
    graph = {"derive.model.attention": {"derive.prove.equality"}, "derive.prove.equality": {"derive.model.vectors"},
             "derive.crosscheck.witness": {"derive.timeout"}, "derive.timeout": set()}
    assert _upward(graph) == ["derive.model.attention (model) imports derive.prove.equality (proofs)"]


def test_the_imports_by_a_computed_name_are_these():
    """Imports the scan cannot follow, each named with what it imports (none runs up a floor: a claim
    kind's record, on the specs floor, names its prover as text; the claims import it)."""
    known = {
        "derive.lazy": "a package's names on first use; the scan reads each package's _EXPORTS table",
        "derive.cli": "derive.commands.<name>: the command floor itself",
        "derive.build": "PRELOAD, modules imported before forking the documents' processes (catalogues floor)",
        "derive.impl.run.worker": "the user's implementation, in the child process",
        "derive.claims.provers": "a claim kind's prover, named in its record as derive.claims.provers:NAME "
                                 "or derive.claims.modifiers:NAME or derive.claims.distance:NAME (the claims floor)",
    }
    found = {m for m, p in _modules().items() if "import_module(" in p.read_text(encoding="utf-8")}
    assert found == set(known)


def test_the_checker_shares_nothing_with_the_engine():
    """derive/replay imports python-flint, json and the standard library, and of derive only
    itself and the foundation's errors: not SymPy, numpy or anything of the engine, even inside
    a function (the scan reads every import statement)."""
    import sys

    allowed = set(sys.stdlib_module_names) | {"flint"}
    found = {}
    for path in sorted((ROOT / "replay").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            for name in names:
                top = name.split(".")[0]
                ok = top in allowed or name in ("derive.errors",) or name.startswith("derive.replay")
                if not ok:
                    found.setdefault(path.name, []).append(name)
            if isinstance(node, ast.ImportFrom) and node.level:
                found.setdefault(path.name, []).append("a relative import")
    assert found == {}
    graph = _graph(top_level_only=False)
    assert {d for m, deps in graph.items() if m.startswith("derive.replay") for d in deps} <= \
        {m for m in graph if m.startswith("derive.replay")} | {"derive.errors"}


def test_the_isolation_scan_sees_an_engine_import(tmp_path):
    root = _package(tmp_path, {"replay/__init__.py": "", "replay/check.py": "def f():\n    import sympy\n"})
    tree = ast.parse((root / "replay" / "check.py").read_text())
    assert [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names] == ["sympy"]
