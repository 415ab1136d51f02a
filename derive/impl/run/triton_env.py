"""The child's environment for Triton kernels: ``TRITON_INTERPRET=1`` without a GPU.

Triton reads ``TRITON_INTERPRET`` when ``@triton.jit`` decorates a kernel, i.e. while the
user's module is imported, so it must be in the child process's environment from the
start (the child imports the module first thing). With it, Triton's own CPU interpreter
runs the real kernel code on CPU tensors.

``child_env(True, target)`` sets it (``derive impl --triton-interpret``). Without the flag
it is set anyway, with a one-line note on standard error, when the target's source file
imports ``triton`` (found by reading the file and the files of its folder it imports, never by
importing them) and torch reports
no CUDA device, since a Triton kernel cannot run there otherwise. A value the user already
exported is left alone.

Which fixed list a kernel-form check uses is decided here too, in derive's own process, from
what it launched and never from anything the child reports (:func:`interpreted`): the
interpreter list only when the child was started with the interpreter on *and* the target's
own source defines a Triton kernel (its file, or a file of its folder it imports: a function
decorated with ``triton.jit``,
``triton.autotune`` or ``triton.heuristics``, found by reading the file). A numpy kernel gets
the full list whatever its module imports, and code that claims the interpreter (loading a
module named triton, setting the variable at import) changes nothing.
"""

from __future__ import annotations

import ast
import importlib.machinery
import inspect
import os
import sys
from pathlib import Path

__all__ = ["child_env", "defines_kernel", "imports_triton", "interpreted"]

VAR = "TRITON_INTERPRET"


def child_env(triton_interpret: bool, target=None) -> dict:
    """Variables to add to the child's environment for ``target`` (FILE.py:FN, module:FN or
    a callable): ``{"TRITON_INTERPRET": "1"}`` or ``{}``."""
    if triton_interpret:
        return {VAR: "1"}
    if VAR in os.environ or target is None or not imports_triton(target) or _cuda():
        return {}
    print(f"derive impl: no CUDA device, so the Triton kernels of {_label(target)} run under Triton's CPU "
          f"interpreter ({VAR}=1; --triton-interpret says so explicitly)", file=sys.stderr)
    return {VAR: "1"}


def imports_triton(target) -> bool:
    """Whether the source of ``target`` (:func:`_trees`: its file and the files of its folder it imports)
    has an ``import triton…``/``from triton… import``."""
    for node in (n for tree in _trees(target) for n in ast.walk(tree)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "triton" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "triton":
            return True
    return False


ON = ("1", "true", "on", "yes")
DECORATORS = ("jit", "autotune", "heuristics")


def interpreted(env: dict | None, target) -> bool:
    """Whether the child derive launched for ``target`` runs Triton kernels under the CPU
    interpreter: its environment (``env`` on top of ours) turns the interpreter on and the
    target's source file defines a Triton kernel. Decided by the parent alone."""
    value = (env or {}).get(VAR, os.environ.get(VAR, ""))
    return value.strip().lower() in ON and defines_kernel(target)


def defines_kernel(target) -> bool:
    """Whether the source of ``target`` (:func:`_trees`: its file and the files of its folder it imports, a
    wrapper beside its kernels) defines a function decorated with ``triton.jit`` (or ``jit`` imported
    from triton, ``triton.autotune``, ``triton.heuristics``), read, never imported."""
    return any(_defines_kernel(tree) for tree in _trees(target))


def _defines_kernel(tree) -> bool:
    from_triton = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   and not node.level and (node.module or "").split(".")[0] == "triton" for a in node.names}
    triton_names = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for a in node.names if a.name == "triton"}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in node.decorator_list:
            dec = dec.func if isinstance(dec, ast.Call) else dec
            if isinstance(dec, ast.Attribute) and isinstance(dec.value, ast.Name) \
                    and dec.value.id in triton_names and dec.attr in DECORATORS:
                return True
            if isinstance(dec, ast.Name) and dec.id in from_triton and dec.id in DECORATORS:
                return True
    return False


def _parse(path: Path):
    try:
        return ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None  # the child reports an unreadable module when it imports it


FOLLOWED = 32  # files of the target's folder read at most, following its imports


def _trees(target) -> list:
    """The syntax trees of ``target``'s source file and of the files in its folder (and below) that it
    imports, directly or through one another (``from .kernels import …``, ``import kernels``, ``from pkg
    import mod``): a wrapper and the kernels it calls in a file beside it. Read, never imported."""
    path = _source(target)
    if path is None:
        return []
    first = Path(path).resolve()
    home = first.parent
    trees, todo, seen = [], [first], set()
    while todo and len(seen) < FOLLOWED:
        file = todo.pop(0)
        if file in seen:
            continue
        seen.add(file)
        tree = _parse(file)
        if tree is None:
            continue
        trees.append(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                wanted = [(home, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = file.parent if node.level else home
                for _ in range(max(0, node.level - 1)):
                    base = base.parent
                mod = node.module or ""
                wanted = ([(base, mod)] if mod else []) + [(base, f"{mod}.{a.name}".lstrip(".")) for a in node.names]
            else:
                continue
            for base, name in wanted:
                stem = base.joinpath(*name.split("."))
                for candidate in (stem.with_name(stem.name + ".py"), stem / "__init__.py"):
                    if candidate.is_file() and home in candidate.resolve().parents:
                        todo.append(candidate.resolve())
    return trees


def _label(target) -> str:
    return target if isinstance(target, str) else getattr(target, "__qualname__", repr(target))


def _source(target):
    """The file defining ``target``, located without importing any of the user's code."""
    if not isinstance(target, str):
        try:
            return inspect.getsourcefile(target)
        except TypeError:
            return None
    where = target.rpartition(":")[0]
    if where.endswith(".py") or os.sep in where or "/" in where:
        return where if os.path.isfile(where) else None
    search = [os.getcwd()] + [p for p in sys.path if p]
    spec = None
    for part in where.split("."):
        try:
            spec = importlib.machinery.PathFinder.find_spec(part, search)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or [])
    origin = spec.origin if spec is not None else None
    return origin if origin and origin.endswith(".py") else None


def _cuda() -> bool:
    """torch's answer to "is there a CUDA device?" (no torch: no)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
