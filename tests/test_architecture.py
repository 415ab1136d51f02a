"""Small modules and no import circles, read from the source by an AST scan (nothing is imported)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "derive"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _graph(top_level_only: bool) -> dict[str, set[str]]:
    """module → the derive modules it imports (at module level only, or anywhere in it)."""
    mods = _modules()

    def target(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in (tree.body if top_level_only else ast.walk(tree)):
            names = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("derive"):
                names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                         for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("derive")]
            graph[mod].update(t for t in map(target, names) if t and t != mod)
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


def test_no_module_over_600_lines():
    long = {m: n for m, p in _modules().items() if (n := len(p.read_text(encoding="utf-8").splitlines())) >= 600}
    assert long == {}


def test_no_import_circle_at_module_level():
    assert _cycles(_graph(top_level_only=True)) == []


def test_the_evaluator_has_no_import_circle_even_through_imports_in_functions():
    graph = _graph(top_level_only=False)
    assert not [c for c in _cycles(graph) if any(m.startswith("derive.crosscheck") for m in c)]
    assert "derive.crosscheck.evaluate" not in graph["derive.crosscheck.compiled"]
    assert "derive.crosscheck.compiled" not in graph["derive.crosscheck.instance"]


def test_the_scan_sees_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
