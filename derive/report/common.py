"""What every report format of ``derive check`` shares: counts, the summary line, the level of a
claim, its position in the spec file, the counterexample on one line and repository paths.

The formats (``render``, ``github``, ``sarif``, ``baseline``) import this module and never one
another, so there is no import circle among them. It imports nothing heavy (no SymPy).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

__all__ = ["claim_level", "claim_position", "claim_region", "count_verdicts", "counterexample_line",
           "expectation_note", "repo_path", "summary_line", "total_counts"]

PROVED, REFUTED, UNDECIDED = "proved", "refuted", "undecided"


def count_verdicts(verdicts) -> dict[str, int]:
    out = {"claims": 0, PROVED: 0, REFUTED: 0, UNDECIDED: 0}
    for v in verdicts:
        out["claims"] += 1
        out[v] += 1
    return out


def summary_line(counts: dict[str, int], missed: int | None = None) -> str:
    """``3 claims: 2 proved, 1 refuted, 0 undecided``; with ``missed`` (claims whose verdict is not
    the expected one, given when some claim expects a verdict other than proved):
    ``…; 1 not as expected`` or ``…; all as expected``."""
    n = counts["claims"]
    line = (f"{n} claim{'' if n == 1 else 's'}: {counts[PROVED]} proved, {counts[REFUTED]} refuted, "
            f"{counts[UNDECIDED]} undecided")
    if missed is not None:
        line += f"; {missed} not as expected" if missed else "; all as expected"
    return line


def total_counts(results: list) -> dict[str, int]:
    """The verdict counts of every claim of every spec (``SpecResult.counts`` summed)."""
    return count_verdicts(c.verdict for r in results for c in r.claims)


def expectation_note(claims) -> int | None:
    """The number of claims not as expected, or None when every claim expects proved (the summary
    line then says nothing about expectations)."""
    claims = list(claims)
    if all(c.expected == PROVED for c in claims):
        return None
    return sum(not c.as_expected for c in claims)


def results_summary(results: list) -> str:
    """The summary line of a whole report."""
    claims = [c for r in results for c in r.claims]
    return summary_line(total_counts(results), expectation_note(claims))


def claim_level(claim) -> str | None:
    """``error`` for a claim whose verdict is not the expected one (``warning`` when it is merely
    undecided), ``note`` for a refuted or undecided claim that meets its expectation, None for a
    claim proved as expected."""
    if not claim.as_expected:
        return "warning" if claim.verdict == UNDECIDED else "error"
    return None if claim.verdict == PROVED else "note"


def claim_position(result, claim_name: str) -> tuple[int, int]:
    """(line, column) of the claim's key in its spec file; (1, 1) when the spec has no positions."""
    positions = getattr(result.spec, "positions", None) or {}
    return positions.get(("claims", claim_name)) or positions.get(("claims",)) or (1, 1)


@lru_cache(maxsize=256)
def _lines(file: str) -> tuple[str, ...]:
    try:
        return tuple(Path(file).read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return ()


def claim_region(result, claim_name: str) -> dict:
    """The SARIF region of a claim: from its key to the end of that line of the spec file."""
    line, col = claim_position(result, claim_name)
    region = {"startLine": line, "startColumn": col}
    lines = _lines(str(getattr(result.spec, "file", "") or ""))
    if 0 < line <= len(lines):
        region.update(endLine=line, endColumn=max(col, len(lines[line - 1].rstrip()) + 1))
    return region


def counterexample_line(ce: dict | None) -> str:
    """The counterexample in one line: sizes, mask, indices and the values of every input."""
    if not ce:
        return ""
    parts = [f"d = {ce.get('d')}", f"n = {ce.get('n')}", f"mask {ce.get('mask')}"]
    parts += [f"{k} = {v}" for k, v in (ce.get("indices") or {}).items()]
    values = ce.get("values") or {}
    text = "counterexample: " + ", ".join(parts)
    if values:
        text += "; " + "; ".join(f"{k} = {json.dumps(v)}" for k, v in values.items())
    if ce.get("functions"):
        text += "; " + "; ".join(f"{k} = {v}" for k, v in ce["functions"].items())
    return text


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
