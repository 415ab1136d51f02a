"""``derive check --baseline REF``: compare each spec with the same file at a git revision.

The old text is read with ``git show REF:./FILE`` (nothing is checked out). Specs are checked
through a cache keyed by their text, so a spec whose text did not change is proved once.
Each claim's change gets a status:

* ``refuted`` — refuted now, not before (a new refutation: the check fails);
* ``undecided`` — undecided now, proved or absent before (fails with ``--fail-on undecided``);
* ``fixed`` — refuted before, proved now;
* ``proved`` — proved now, undecided or absent before;
* ``changed`` — refuted before, undecided now;
* ``removed`` — the claim is gone.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from derive.errors import InputError
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED

__all__ = ["Baseline", "SpecChanges", "check_against", "check_cached", "classify", "git_show"]

ORDER = (REFUTED, UNDECIDED, "changed", "fixed", PROVED, "removed")


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise InputError("--baseline needs git, which is not installed") from None


def verify_ref(ref: str, file: str) -> None:
    """Exit 2 (InputError) unless ``ref`` names a commit of the repository that holds ``file``."""
    if not ref or ref.startswith("-"):
        raise InputError(f"--baseline: {ref!r} is not a git revision")
    cwd = Path(file).resolve().parent
    inside = _git(["rev-parse", "--is-inside-work-tree"], cwd)
    if inside.returncode != 0:
        raise InputError(f"--baseline: {file} is not in a git repository")
    if _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd).returncode != 0:
        raise InputError(f"--baseline: unknown revision {ref!r} (in the repository of {file})")


def git_show(ref: str, file: str) -> str | None:
    """The text of ``file`` at revision ``ref``; None when the file does not exist there."""
    path = Path(file).resolve()
    proc = _git(["show", f"{ref}:./{path.name}"], path.parent)
    if proc.returncode != 0:
        return None
    try:
        return proc.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None


def check_cached(text: str, label: str, cfg, cache: dict):
    """Parse and check ``text``; a text checked before (same settings) is not proved again."""
    from derive.claims.run import check_spec
    from derive.spec import parse_spec

    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if key not in cache:
        cache[key] = check_spec(parse_spec(text, label), cfg)
    return cache[key]


def classify(old: str | None, new: str | None) -> str | None:
    """The status of a claim whose verdict went from ``old`` to ``new`` (None: no change)."""
    if old == new:
        return None
    if new is None:
        return "removed"
    if new == REFUTED:
        return REFUTED
    if new == UNDECIDED:
        return "changed" if old == REFUTED else UNDECIDED
    return "fixed" if old == REFUTED else PROVED


@dataclass
class SpecChanges:
    file: str
    name: str
    at_ref: str  # "present", "absent" (new file) or "invalid" (not a valid spec at REF)
    note: str = ""
    changes: list[dict] = field(default_factory=list)
    unchanged: dict = field(default_factory=dict)  # verdict counts of the unchanged claims

    def as_json(self) -> dict:
        return {"file": self.file, "name": self.name, "at_ref": self.at_ref, "note": self.note,
                "changes": self.changes, "unchanged": self.unchanged}


@dataclass
class Baseline:
    ref: str
    specs: list[SpecChanges]
    verdicts: dict  # (file, claim name) -> verdict at REF

    def statuses(self) -> list[str]:
        return [c["status"] for s in self.specs for c in s.changes]

    def unchanged(self) -> dict:
        from derive.claims.run import count_verdicts

        total = count_verdicts(())
        for s in self.specs:
            for k, v in s.unchanged.items():
                total[k] += v
        return total


def _changes(old, new) -> tuple[list[dict], dict]:
    from derive.claims.run import count_verdicts
    from derive.commands.diff import compare

    rows, same = [], []
    now = {c.name: c for c in new.claims}
    for row in compare(old, new) if old is not None else compare(_Empty(), new):
        status = classify(row["old"], row["new"])
        if status is None:
            same.append(row["new"])
            continue
        c = now.get(row["name"])
        rows.append({"name": row["name"], "claim": row["claim"], "status": status, "old": row["old"],
                     "new": row["new"], "reason": row["reason"],
                     "counterexample": c.counterexample if c is not None else None})
    rows.sort(key=lambda r: ORDER.index(r["status"]))  # stable: file order within a status
    return rows, count_verdicts(same)


class _Empty:
    claims = ()


def check_against(ref: str, files: list[str], cfg) -> tuple[list, Baseline]:
    """Check ``files`` and their versions at ``ref``; every text is proved at most once.

    Input errors come first (the new specs, the revision, the reads), then the proofs.
    """
    from dataclasses import replace

    from derive.spec import load_spec

    specs = [load_spec(f) for f in files]
    texts = [Path(f).read_text(encoding="utf-8") for f in files]
    for f in files:
        verify_ref(ref, f)
    olds = [git_show(ref, f) for f in files]
    cache: dict = {}
    results = []
    for f, spec, text in zip(files, specs, texts):
        res = check_cached(text, f, cfg, cache)
        results.append(res if res.file == f else replace(res, file=f, spec=spec))
    out, verdicts = [], {}
    for f, text, new in zip(files, olds, results):
        note, old = "", None
        if text is None:
            at = "absent"
        else:
            try:
                old = check_cached(text, f"{ref}:{f}", cfg, cache)
                at = "present"
            except InputError as exc:
                at, note = "invalid", str(exc)
        if old is not None:
            verdicts.update({(f, c.name): c.verdict for c in old.claims})
        rows, same = _changes(old, new)
        out.append(SpecChanges(f, new.name, at, note, rows, same))
    return results, Baseline(ref, out, verdicts)
