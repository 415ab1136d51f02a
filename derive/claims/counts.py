"""Verdict counts and the summary line of a check (``3 claims: 2 proved, 1 refuted, 0 undecided``)."""

from __future__ import annotations

__all__ = ["count_verdicts", "summary_line"]

PROVED, REFUTED, UNDECIDED = "proved", "refuted", "undecided"


def count_verdicts(verdicts, replayed: int | None = None) -> dict[str, int]:
    """``{"claims": 3, "proved": 2, "refuted": 1, "undecided": 0}``, with ``"replayed"`` (how many of
    the proofs the checker replayed) when given."""
    out = {"claims": 0, PROVED: 0, REFUTED: 0, UNDECIDED: 0}
    for v in verdicts:
        out["claims"] += 1
        out[v] += 1
    if replayed is not None:
        out["replayed"] = replayed
    return out


def summary_line(counts: dict[str, int], missed: int | None = None) -> str:
    """``3 claims: 2 proved, 1 refuted, 0 undecided``; with ``missed`` (claims whose verdict is not
    the expected one, given when some claim expects a verdict other than proved):
    ``…; 1 not as expected`` or ``…; all as expected``."""
    n = counts["claims"]
    line = (f"{n} claim{'' if n == 1 else 's'}: {counts[PROVED]} proved, {counts[REFUTED]} refuted, "
            f"{counts[UNDECIDED]} undecided")
    if counts.get("replayed") is not None and counts[PROVED]:  # the proofs the independent checker replayed
        line += f"; {counts['replayed']} of {counts[PROVED]} proof{'' if counts[PROVED] == 1 else 's'} replayed"
    if missed is not None:
        line += f"; {missed} not as expected" if missed else "; all as expected"
    return line
