"""Trace a FlexAttention modifier in a child process; the parent only reads a JSON tree.

``FILE.py:NAME`` names a modifier, ``FILE.py:FACTORY(ARGS)`` one a factory returns (the
arguments are Python literals, read with :func:`ast.literal_eval`, never run). The child
(:mod:`derive.flex.child`) imports the file and traces the function with ``torch.fx``, in
the sandbox of ``derive impl`` (:class:`derive.sandbox.process.Worker`: its own session, a
timeout, standard output watched). What comes back is a tree of whitelisted ops, which
:mod:`derive.flex.tree` turns into SymPy; no reply is unpickled or evaluated.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from derive.errors import InputError
from derive.sandbox.child import INSTALL

__all__ = ["CHILD", "DEFAULT_TIMEOUT", "Traced", "parse_ref", "trace"]

CHILD = Path(__file__).with_name("child.py")
DEFAULT_TIMEOUT = 60.0
IMPORT_TIMEOUT = 300.0  # importing torch, before any user code runs
NO_TORCH = f"tracing a FlexAttention modifier needs torch: {INSTALL['torch']}"


@dataclass(frozen=True)
class Traced:
    """What the child sent: the op tree, and where in the user's file the result is made."""

    ref: str  # as written in the spec: mods.py:alibi
    kind: str  # score | mask
    tree: dict
    file: str  # the path of the modifier's file
    line: int | None
    source: str  # that line, stripped
    cpu_seconds: float = field(default=0.0, compare=False)  # the child's CPU time tracing (benchmarks only)


def parse_ref(text: str) -> tuple[str, str, list | None]:
    """``"mods.py:generate_alibi_bias(8)"`` → ``("mods.py", "generate_alibi_bias", [8])``.

    Raises ``ValueError`` with the reason when the text is not FILE.py:NAME[(LITERALS)].
    """
    where, sep, call = text.rpartition(":")
    if not sep or not where.endswith(".py") or not call.strip():
        raise ValueError("expected FILE.py:FUNCTION or FILE.py:FACTORY(ARGS), e.g. mods.py:alibi")
    try:
        node = ast.parse(call.strip(), mode="eval").body
    except SyntaxError:
        raise ValueError(f"cannot read {call.strip()!r}: expected NAME or NAME(ARGS)") from None
    if isinstance(node, ast.Name):
        return where, node.id, None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        args = []
        for a in node.args:
            try:
                v = ast.literal_eval(a)
            except ValueError:
                raise ValueError(f"the arguments of {node.func.id}(...) must be literals (numbers, strings, "
                                 f"lists), got {ast.unparse(a)!r}") from None
            args.append(v)
        return where, node.func.id, args
    raise ValueError(f"cannot read {call.strip()!r}: expected NAME or NAME(ARGS) with literal arguments")


def trace(text: str, kind: str, base: Path, timeout: float = DEFAULT_TIMEOUT) -> Traced:
    """Trace the modifier ``text`` (relative to the folder ``base``); InputError when it cannot be."""
    from derive.sandbox.process import Worker

    where, name, args = parse_ref(text)
    path = (base / where).resolve()
    if not path.is_file():
        raise InputError(f"no file {where} (looked in {base})" if str(base) not in ("", ".") else f"no file {where}")
    if importlib.util.find_spec("torch") is None:
        raise InputError(NO_TORCH)
    sys_path = [str(path.parent)] + [p for p in sys.path if p]
    worker = Worker(f"the {kind}_mod {text}", max(timeout, IMPORT_TIMEOUT), None, CHILD)
    try:
        reply = worker.request(("hello",), "importing torch")
        if reply[0] == "ok":
            worker.timeout = timeout  # the user's code runs from here on
            reply = worker.request(("trace", str(path), name, args, kind, sys_path), "being traced")
    finally:
        worker.close()
    if reply[0] == "notorch":
        raise InputError(NO_TORCH)
    if reply[0] == "error":
        line, message = reply[1], reply[2]
        where_line = f"{where}, line {line}: " if isinstance(line, int) else f"{where}: "
        raise InputError(f"{where_line}{message}")
    if reply[0] != "ok" or len(reply) != 3 or not isinstance(reply[1], dict):
        raise InputError(f"the process tracing {text} sent a malformed reply; no verdict")
    tree = reply[1]
    line = tree.get("line")
    cpu = reply[2] if isinstance(reply[2], float) else 0.0
    return Traced(text, kind, tree, os.path.relpath(path, base), line if isinstance(line, int) else None,
                  str(tree.get("source", ""))[:200], cpu)
