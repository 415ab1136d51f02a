"""What documents cite as evidence: the check numbers of named steps, each of which must exist and
hold (``bound``). A module whose name starts with ``_`` is no document of its own."""

from __future__ import annotations

from derive.document.api import Document
from derive.errors import InputError, StepFailed

__all__ = ["bound"]


def bound(doc: Document, *names_: str) -> str:
    """"✔ checks 5–9" for the steps or checks ``names_``, each of which must exist in ``doc`` with a
    verdict that holds (proved, passed, or refuted for a refutation); else the build stops. A step
    without a numeric check (its two sides are one expression) counts as "proved"."""
    nums = set()
    for name in names_:
        fact = doc.facts.get(name)
        if fact is None or fact.status not in ("proved", "passed", "refuted"):
            raise StepFailed(f"{doc.slug}: a statement cites {name!r}, which is "
                             f"{'no step of this document' if fact is None else fact.status}")
        try:
            k = doc.check_number(name)
        except InputError:  # a fact that names a step's result under another name (one formula for two entries)
            k = None
        if k is not None:
            nums.add(k)
    runs, out = sorted(nums), []
    for k in runs:
        if out and out[-1][1] == k - 1:
            out[-1][1] = k
        else:
            out.append([k, k])
    text = ", ".join(f"{lo}–{hi}" if hi > lo + 1 else f"{lo}, {hi}" if hi > lo else str(lo) for lo, hi in out)
    if not runs:
        return "✔ refuted" if all(doc.facts[nm].status == "refuted" for nm in names_) else "✔ proved"
    return f"✔ check{'s' if len(runs) > 1 else ''} {text}"
