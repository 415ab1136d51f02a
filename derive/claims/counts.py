"""Verdict counts and the summary line of a check (``3 claims: 2 proved, 1 refuted, 0 undecided``)."""

from __future__ import annotations

__all__ = ["count_verdicts", "summary_line"]

PROVED, REFUTED, UNDECIDED, ERROR = "proved", "refuted", "undecided", "error"


def count_verdicts(verdicts) -> dict[str, int]:
    """``{"claims", "proved", "refuted", "undecided", "error"}``: ``error`` counts the claims on
    which the engine failed (no verdict)."""
    out = {"claims": 0, PROVED: 0, REFUTED: 0, UNDECIDED: 0, ERROR: 0}
    for v in verdicts:
        out["claims"] += 1
        out[v] += 1
    return out


def summary_line(counts: dict[str, int], missed: int | None = None) -> str:
    """``3 claims: 2 proved, 1 refuted, 0 undecided``, then ``, 1 internal error`` when the engine
    failed on some claim; with ``missed`` (claims whose verdict is not the expected one, given when
    some claim expects a verdict other than proved): ``…; 1 not as expected`` or ``…; all as
    expected``."""
    n = counts["claims"]
    line = (f"{n} claim{'' if n == 1 else 's'}: {counts[PROVED]} proved, {counts[REFUTED]} refuted, "
            f"{counts[UNDECIDED]} undecided")
    errors = counts.get(ERROR, 0)
    if errors:
        line += f", {errors} internal error{'' if errors == 1 else 's'}"
    if missed is not None:
        line += f"; {missed} not as expected" if missed else "; all as expected"
    return line
