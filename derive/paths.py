"""Paths as reports name them: relative to the root of the git repository that holds the file."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

__all__ = ["repo_files", "repo_path", "repo_root"]


@lru_cache(maxsize=64)
def _toplevel(directory: str) -> str | None:
    import subprocess

    try:
        proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=directory, capture_output=True,
                              text=True, check=False)
    except (FileNotFoundError, NotADirectoryError, OSError):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def repo_root(file: str | Path) -> Path | None:
    """The root of the git work tree that holds ``file``; None outside a repository."""
    directory = Path(file).resolve().parent
    top = _toplevel(str(directory)) if directory.is_dir() else None
    return Path(top).resolve() if top else None


def repo_path(file: str | Path) -> str:
    """``file`` as reports name it: relative to the root of its git repository (POSIX separators),
    the same whether derive runs from a subdirectory, with ``./x.toml`` or with an absolute path.
    Outside a repository: relative to the working directory when inside it, else absolute."""
    path = Path(file).resolve()
    root = repo_root(path)
    for base in (root, Path.cwd().resolve()):
        if base is not None:
            try:
                return path.relative_to(base).as_posix()
            except ValueError:
                continue
    return path.as_posix()


def repo_files(root: Path, pattern: str) -> list[Path]:
    """The files under ``root`` that match the git pathspec ``pattern`` (``*.derive.toml``), tracked
    or not but never ignored, sorted; outside a repository, those ``Path.glob`` finds (``**/``
    prepended)."""
    import subprocess

    try:
        proc = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", pattern],
                              cwd=root, capture_output=True, check=False)
    except (FileNotFoundError, OSError):
        proc = None
    if proc is None or proc.returncode != 0:
        return sorted(p.resolve() for p in Path(root).glob(f"**/{pattern}") if p.is_file())
    names = {name for name in proc.stdout.decode("utf-8", errors="replace").split("\0") if name}
    return sorted((Path(root) / name).resolve() for name in names if (Path(root) / name).is_file())
