"""``derive check --baseline REF``: compare each spec with the same spec at a git revision.

Nothing is checked out in the work tree: the tree of REF is read (``git ls-tree``, ``git cat-file``)
into a temporary directory, so a spec that refers to other files (``equivalent_to("other.derive.toml")``,
``score_mod = "mods.py:NAME"``) is loaded at REF with those files as they were at REF. A file
renamed since REF (``git mv``, with or without edits) is compared with its old name; one
rewritten beyond git's rename detection, with the deleted spec of the same ``name``. Results
are cached by everything a verdict depends on: the spec's text and the text of every file it
refers to (transitively), so a spec whose inputs did not change is proved once.
Each claim's change gets a status:

* ``refuted`` — refuted now, not before (a new refutation);
* ``undecided`` — undecided now, proved or absent before;
* ``fixed`` — refuted before, proved now;
* ``proved`` — proved now, undecided or absent before;
* ``changed`` — refuted before, undecided now, or the verdict is the same but the claim no longer
  meets its expectation (``expect``);
* ``regressed`` — proved now, but the claim no longer meets its expectation (a claim with
  ``expect = "refuted"`` that flips to proved): never ``fixed`` or ``proved``;
* ``error`` — the engine failed on the claim now (no verdict: listed on every run, exit 3);
* ``removed`` — the claim is gone (also every claim of a spec deleted since REF).

A change fails the check when the claim's verdict now is not the one it expects (see
:meth:`Baseline.failing`). An engine error at REF only counts as no verdict there.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from derive.errors import InputError
from derive.claims.counts import count_verdicts
from derive.paths import repo_path, repo_root
from derive.spec.inputs import inputs

__all__ = ["Baseline", "SpecChanges", "check_against", "classify", "compare"]

PROVED, REFUTED, UNDECIDED, ERROR = "proved", "refuted", "undecided", "error"
ORDER = (ERROR, REFUTED, "regressed", UNDECIDED, "changed", "fixed", PROVED, "removed")


def _git(args: list[str], cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)
    except FileNotFoundError:
        raise InputError("--baseline needs git, which is not installed") from None


def verify_ref(ref: str, file: str | None) -> Path:
    """The repository root of ``file`` (None: of the working directory); exit 2 (InputError)
    unless ``ref`` names a commit of it."""
    if not ref or ref.startswith("-"):
        raise InputError(f"--baseline: {ref!r} is not a git revision")
    where = file if file is not None else "the working directory"
    root = repo_root(file if file is not None else Path.cwd() / "-")
    if root is None:
        raise InputError(f"--baseline: {where} is not in a git repository")
    if _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root).returncode != 0:
        raise InputError(f"--baseline: unknown revision {ref!r} (in the repository of {where})")
    return root


def compare(old, new) -> list[dict]:
    """The claims of two results side by side, by name: old and new verdicts (None: absent)."""
    before = {c.name: c for c in old.claims}
    after = {c.name: c for c in new.claims}
    rows = []
    for name in list(before) + [n for n in after if n not in before]:
        a, b = before.get(name), after.get(name)
        va, vb = (a.verdict if a else None), (b.verdict if b else None)
        rows.append({"name": name, "claim": (b or a).claim, "old": va, "new": vb, "changed": va != vb,
                     "reason": (b or a).reason})
    return rows


def classify(old: str | None, new: str | None, was_ok: bool = True, is_ok: bool = True) -> str | None:
    """The status of a claim whose verdict went from ``old`` to ``new`` (None: no change);
    ``was_ok``/``is_ok``: whether it met its expectation before and now. A claim proved now
    that misses its expectation is ``regressed``, whatever it was before."""
    if new == ERROR:
        return ERROR
    if old == new:
        return "changed" if new is not None and was_ok and not is_ok else None
    if new is None:
        return "removed"
    if new == REFUTED:
        return REFUTED
    if new == UNDECIDED:
        return "changed" if old == REFUTED else UNDECIDED
    if not is_ok:
        return "regressed"
    return "fixed" if old == REFUTED else PROVED


def cache_key(path: Path) -> str:
    """A hash of everything the verdicts of the spec at ``path`` depend on: its text and the text
    of every file it refers to, named relative to the spec (not where the spec itself lies, so
    a renamed spec with the same inputs is not proved again)."""
    h = hashlib.sha256()
    path = path.resolve()
    for p in (path, *inputs(path)):
        rel = os.path.relpath(p, path.parent) if p != path else ""
        try:
            content = p.read_bytes()
        except OSError:
            content = b"\0missing"
        h.update(f"{rel}\0{len(content)}\0".encode() + content)
    return h.hexdigest()


@dataclass
class SpecChanges:
    file: str  # relative to the repository root
    name: str
    at_ref: str  # "present", "absent" (new file), "invalid" (not a valid spec at REF), "deleted" (gone now)
    note: str = ""
    changes: list[dict] = field(default_factory=list)
    unchanged: dict = field(default_factory=dict)  # verdict counts of the unchanged claims
    renamed_from: str | None = None

    def as_json(self) -> dict:
        return {"file": self.file, "name": self.name, "at_ref": self.at_ref, "renamed_from": self.renamed_from,
                "note": self.note, "changes": self.changes, "unchanged": self.unchanged}


@dataclass
class Baseline:
    ref: str
    specs: list[SpecChanges]
    verdicts: dict  # (repository path, claim name) -> verdict at REF
    gone: list = field(default_factory=list)  # claims refuted at REF that no longer exist

    def statuses(self) -> list[str]:
        return [c["status"] for s in self.specs for c in s.changes]

    def failing(self, fail_on: str) -> bool:
        """A changed claim whose verdict now is not the expected one (an undecided one only with
        ``--fail-on undecided``; an engine error always)."""
        return any(c["fails"] and (c["new"] != UNDECIDED or fail_on == UNDECIDED)
                   for s in self.specs for c in s.changes)

    def unchanged(self) -> dict:
        total = count_verdicts(())
        for s in self.specs:
            for k, v in s.unchanged.items():
                total[k] += v
        return total


def _changes(old, new) -> tuple[list[dict], dict]:
    rows, same = [], []
    now = {c.name: c for c in new.claims} if new is not None else {}
    was = {c.name: c for c in old.claims} if old is not None else {}
    for row in compare(old or _Empty(), new or _Empty()):
        c, b = now.get(row["name"]), was.get(row["name"])
        status = classify(row["old"], row["new"], b.as_expected if b else True, c.as_expected if c else True)
        if status is None:
            same.append(row["new"])
            continue
        rows.append({"name": row["name"], "claim": row["claim"], "status": status, "old": row["old"],
                     "new": row["new"], "expected": c.expected if c else None,
                     "fails": bool(c is not None and not c.as_expected), "reason": row["reason"],
                     "counterexample": c.counterexample if c is not None else None,
                     "error": c.error if c is not None else None})
    rows.sort(key=lambda r: ORDER.index(r["status"]))  # stable: file order within a status
    return rows, count_verdicts(same)


class _Empty:
    claims = ()


class _Snapshot:
    """The tree of REF, extracted once into a temporary directory (read-only use)."""

    def __init__(self, root: Path, ref: str):
        self.root, self.ref, self._dir, self._renames = root, ref, None, None

    def path(self) -> Path:
        """The files of REF's tree as committed: read with ls-tree and cat-file, not git archive,
        whose export-ignore / export-subst attributes would leave out or rewrite files."""
        if self._dir is None:
            proc = _git(["ls-tree", "-r", "-z", "--full-tree", self.ref], self.root)
            if proc.returncode != 0:
                raise InputError(f"--baseline: cannot read {self.ref}: {proc.stderr.decode(errors='replace').strip()}")
            blobs = []  # (object id, path, mode) of each file; submodules are left out
            for record in filter(None, proc.stdout.split(b"\0")):
                meta, _, name = record.partition(b"\t")
                mode, kind, oid = meta.split()
                if kind == b"blob" and ".." not in Path(os.fsdecode(name)).parts:
                    blobs.append((oid, os.fsdecode(name), mode))
            batch = _git(["cat-file", "--batch"], self.root, b"".join(oid + b"\n" for oid, _, _ in blobs)).stdout
            self._dir = tempfile.TemporaryDirectory(prefix="derive-baseline-")
            top, at = Path(self._dir.name), 0
            for _oid, name, mode in blobs:
                header_end = batch.index(b"\n", at)
                size = int(batch[at:header_end].split()[2])
                content, at = batch[header_end + 1:header_end + 1 + size], header_end + 2 + size
                target = top / name
                target.parent.mkdir(parents=True, exist_ok=True)
                if mode == b"120000":  # a symbolic link, kept only when it stays inside the tree
                    if (target.parent / os.fsdecode(content)).resolve().is_relative_to(top.resolve()):
                        target.symlink_to(os.fsdecode(content))
                else:
                    target.write_bytes(content)
        return Path(self._dir.name)

    def changes(self) -> tuple[dict, list]:
        """(new path -> old path for renames, deleted paths), relative to the root."""
        if self._renames is None:
            proc = _git(["diff", "--find-renames", "--name-status", "-z", self.ref, "--"], self.root)
            fields = proc.stdout.decode("utf-8", errors="replace").split("\0")
            renames, deleted, k = {}, [], 0
            while k < len(fields) and fields[k]:
                status = fields[k]
                if status.startswith(("R", "C")):
                    if status.startswith("R"):
                        renames[fields[k + 2]] = fields[k + 1]
                    k += 3
                else:
                    if status == "D":
                        deleted.append(fields[k + 1])
                    k += 2
            self._renames = (renames, deleted)
        return self._renames

    def close(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()


def _check(path: Path, label: str, cfg, cache: dict, spec=None):
    from dataclasses import replace

    from derive.claims.run import check_spec
    from derive.spec import load_spec

    key = cache_key(path)
    if key not in cache:
        cache[key] = check_spec(spec if spec is not None else load_spec(path), cfg, file=label)
    res = cache[key]
    return res if res.file == label else replace(res, file=label)


def _is_spec_name(rel: str, dirs: set) -> bool:
    return rel.endswith(".derive.toml") or (rel.endswith(".toml") and str(Path(rel).parent) in dirs)


def check_against(ref: str, files: list[str], cfg) -> tuple[list, Baseline]:
    """Check ``files`` and their versions at ``ref``; every spec is proved at most once per set of
    inputs. Input errors come first (the new specs, the revision), then the proofs."""
    from derive.spec import load_specs

    specs = load_specs(files)
    roots = [verify_ref(ref, f) for f in files]
    # no FILE (every spec deleted, say): the specs deleted since REF in the working directory's repository
    snapshots = {r: _Snapshot(r, ref) for r in dict.fromkeys(roots or [verify_ref(ref, None)])}
    cache: dict = {}
    try:
        results = [_check(Path(f), f, cfg, cache, spec) for f, spec in zip(files, specs)]
        out, verdicts, gone, followed = [], {}, [], {}
        for f, root, new in zip(files, roots, results):
            snap = snapshots[root]
            rel = repo_path(f)
            renames, deleted = snap.changes()
            old_rel = renames.get(rel, rel)
            if old_rel == rel and not (snap.path() / rel).exists():  # edited too much for git to see a rename
                old_rel = _same_name(snap, deleted, new.name, followed.get(root, set())) or rel
            followed.setdefault(root, set()).add(old_rel)
            old, at, note = _at_ref(snap, old_rel, ref, cfg, cache)
            if old is not None:
                verdicts.update({(rel, c.name): c.verdict for c in old.claims})
            rows, same = _changes(old, new)
            gone += [{"file": rel, "name": r["name"], "claim": r["claim"], "why": "the claim was removed"}
                     for r in rows if r["status"] == "removed" and r["old"] == REFUTED]
            out.append(SpecChanges(rel, new.name, at, note, rows, same, old_rel if old_rel != rel else None))
        for root, snap in snapshots.items():  # the files given in this repository, by repository path
            given = {repo_path(f) for f, r in zip(files, roots) if r == root}
            dirs = {str(Path(g).parent) for g in given}
            for rel in snap.changes()[1]:
                if rel in given or rel in followed.get(root, ()) or not _is_spec_name(rel, dirs):
                    continue
                old, at, note = _at_ref(snap, rel, ref, cfg, cache)
                if old is None:
                    continue  # not a spec at REF: nothing to report
                rows, _ = _changes(old, None)
                gone += [{"file": rel, "name": r["name"], "claim": r["claim"], "why": "its spec file was deleted"}
                         for r in rows if r["old"] == REFUTED]
                verdicts.update({(rel, c.name): c.verdict for c in old.claims})
                out.append(SpecChanges(rel, old.name, "deleted", "", rows, count_verdicts(())))
    finally:
        for snap in snapshots.values():
            snap.close()
    return results, Baseline(ref, out, verdicts, gone)


def _same_name(snap: _Snapshot, deleted: list, name: str, taken: set) -> str | None:
    """The spec deleted since REF whose ``name`` is ``name``: a spec moved and rewritten (git's
    rename detection needs half of the text unchanged) is still compared with its old self."""
    for rel in deleted:
        if rel in taken or not rel.endswith(".toml"):
            continue
        try:
            data = tomllib.loads((snap.path() / rel).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if data.get("name") == name:
            return rel
    return None


def _at_ref(snap: _Snapshot, rel: str, ref: str, cfg, cache: dict):
    """(result at REF or None, "present" / "absent" / "invalid", note)."""
    path = snap.path() / rel
    if not path.is_file():
        return None, "absent", ""
    try:
        return _check(path, f"{ref}:{rel}", cfg, cache), "present", ""
    except InputError as exc:
        top = str(snap.path())  # the temporary directory never shows: REF:path (REF: alone for the root)
        return None, "invalid", str(exc).replace(top + "/", f"{ref}:").replace(top, f"{ref}:")
