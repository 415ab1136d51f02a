"""The files a spec reads, besides itself: the one answer to "which specs depend on which files".

A spec reads the other specs of its claims (``equivalent_to("other.toml")``,
``mask_equivalent("other.toml")`` or ``mask_equivalent("mods.py:NAME")``), the Python files of
its FlexAttention modifiers (``score_mod`` / ``mask_mod = "mods.py:NAME"``) and the local
modules those import (the modifier's directory comes first on the tracer's ``sys.path``), and
so on transitively. ``derive check --baseline`` keys its cache on their text,
``derive check --list-inputs`` prints them, and ``derive check --changed`` checks the specs
that read a changed file (the pre-commit hook). A data file that a module opens by itself
(``torch.load("table.pt")``) is not seen: derive reads Python code, it does not run it here.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from derive.spec.claim_kinds import CLAIM_ARGS

__all__ = ["MODIFIER_KEYS", "inputs"]

MODIFIER_KEYS = ("score_mod", "mask_mod")
_REF_CLAIM = re.compile(r"\s*([A-Za-z_]\w*)\s*\(\s*([\"'])(.*)\2\s*\)\s*\Z", re.DOTALL)


def inputs(path: Path, seen: set | None = None) -> list[Path]:
    """Every file the spec at ``path`` reads, transitively, resolved, in the order met (a file
    that does not exist is listed too: a spec that names it depends on it)."""
    seen = set() if seen is None else seen
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    refs = [data[k] for k in MODIFIER_KEYS if isinstance(data.get(k), str)]
    claims = data.get("claims") if isinstance(data.get("claims"), dict) else {}
    for value in claims.values():
        text = value.get("claim") if isinstance(value, dict) else value
        m = _REF_CLAIM.match(text) if isinstance(text, str) else None
        if m and CLAIM_ARGS.get(m.group(1)) == "file":
            refs.append(m.group(3).strip())
    out = []
    for ref in refs:
        name = ref if ref.endswith(".toml") else ref.partition(":")[0]
        dep = (Path(path).parent / name).resolve()
        if dep in seen:
            continue
        seen.add(dep)
        out.append(dep)
        if dep.suffix == ".toml":
            out += inputs(dep, seen)
        elif dep.suffix == ".py":
            out += _local_imports(dep, dep.parent, seen)
    return out


def _local_imports(module: Path, top: Path, seen: set) -> list[Path]:
    """The Python files beside a modifier that it imports, transitively (its directory comes
    first on the tracer's sys.path): ``import helper`` → ``helper.py`` or the ``helper`` package."""
    try:
        tree = ast.parse(module.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module}
    out = []
    for name in sorted(names):
        first = top / name.split(".")[0]
        files = [first.with_suffix(".py")] if first.with_suffix(".py").is_file() else \
            sorted(first.rglob("*.py")) if first.is_dir() else []
        for f in files:
            f = f.resolve()
            if f not in seen:
                seen.add(f)
                out += [f, *_local_imports(f, top, seen)]
    return out
