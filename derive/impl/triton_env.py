"""The child's environment for Triton kernels: ``TRITON_INTERPRET=1`` without a GPU.

Triton reads ``TRITON_INTERPRET`` when ``@triton.jit`` decorates a kernel, i.e. while the
user's module is imported, so it must be in the child process's environment from the
start (the child imports the module first thing). With it, Triton's own CPU interpreter
runs the real kernel code on CPU tensors.

``child_env(True, target)`` sets it (``derive impl --triton-interpret``). Without the flag
it is set anyway, with a one-line note on standard error, when the target's source file
imports ``triton`` (found by reading the file, never by importing it) and torch reports
no CUDA device, since a Triton kernel cannot run there otherwise. A value the user already
exported is left alone.
"""

from __future__ import annotations

import ast
import importlib.machinery
import inspect
import os
import sys
from pathlib import Path

__all__ = ["child_env", "imports_triton"]

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
    """Whether the source file of ``target`` has an ``import triton…``/``from triton… import``."""
    path = _source(target)
    if path is None:
        return False
    try:
        tree = ast.parse(Path(path).read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return False  # the child reports an unreadable module when it imports it
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "triton" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "triton":
            return True
    return False


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
