"""A certificate written and replayed: what makes a "proved" verdict.

:func:`seal` assembles a certificate (the claim, its chain of steps found by
:func:`derive.certify.chain.chain`, the side conditions the chain needs) and replays it with the
checker alone (:func:`derive.replay.replay`, on the certificate's JSON data). The outcome is a
:class:`Seal`: ``replayed``, or ``rejected`` with the checker's reason (the verdict becomes
undecided), or ``outside`` with the reason the claim is not in the checker's language (the
verdict stays proved, labelled "proved (not replayed)").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from derive.certify import Outside
from derive.replay import FORMAT, Malformed, Rejected, conditions, replay
from derive.replay.definitions import Outside as Unreadable
from derive.replay.definitions import unfold
from derive.replay.terms import write

__all__ = ["NOT_REPLAYED", "REPLAYED", "Seal", "seal"]

REPLAYED, REJECTED, OUTSIDE = "replayed", "rejected", "outside"
NOT_REPLAYED = "proved (not replayed)"


@dataclass(frozen=True)
class Seal:
    status: str  # replayed | rejected | outside
    reason: str = ""
    certificate: dict | None = field(default=None, compare=False, repr=False)

    @property
    def replayed(self) -> bool:
        return self.status == REPLAYED

    @property
    def label(self) -> str:
        """How the verdict reads: "proved", "proved (not replayed)", or the reason it is not one."""
        return {REPLAYED: "proved", OUTSIDE: NOT_REPLAYED}.get(self.status, f"the proof did not replay: {self.reason}")


def outside(reason: str) -> Seal:
    return Seal(OUTSIDE, reason)


def certificate(kind: str, text: str, lhs, rhs, types: dict, *, mask=None, rows: str = "nonempty",
                definitions: dict | None = None, extra: dict | None = None, chain: bool = True,
                allowed=()) -> dict:
    """The certificate of a claim about the terms ``lhs`` and ``rhs`` (its steps and conditions found)."""
    from derive.certify.chain import chain as find

    defs = dict(definitions or {})
    for name, formula in defs.items():
        why = unreadable(formula)
        if why:
            raise Outside(f"the definition of {name}: {why}")
    cert = {"format": FORMAT, "claim": {"kind": kind, "text": text, "lhs": write(lhs), "rhs": write(rhs), **(extra or {})},
            "symbols": dict(sorted(types.items())), "mask": mask, "rows": rows, "allowed": [write(a) for a in allowed],
            "definitions": defs, "steps": [], "conditions": []}
    if chain:
        from derive.replay.check import Eventually, _read

        _, _, ring, scope, _ = _read(cert)
        later = Eventually(cert["claim"]["var"], ring, defs) if kind == "limit" else None
        try:
            cert["steps"] = find(lhs, rhs, defs, ring, scope, later)
            cert["conditions"] = conditions(cert, ring)  # the search's atoms; seal replays with a ring of its own
        except Rejected:  # no chain the checker accepts (a divisor whose normal form is 0, the search's
            cert["steps"], cert["conditions"] = [], []  # bound): the replay says why, and the claim is undecided
    return cert


class _Any(dict):
    """Every name a parameter (only whether the checker reads a formula is asked)."""

    def __contains__(self, key):
        return True

    def __missing__(self, key):
        return ("sym", key)


def unreadable(text: str) -> str:
    """Why the checker cannot read the formula ``text`` ("" if it can)."""
    try:
        unfold(text, ("sym", "j"), ("lam", "t", ("sym", "t")), ("lam", "t", ("sym", "t")), _Any())
    except Unreadable as exc:
        return str(exc)
    except Malformed:
        return ""
    return ""


# What the checker says when the claim needs reasoning outside its language (a sum over a mask's
# row written over a range, a bound): not that the proof used a value the claim does not have
GAPS = ("do not reduce to one normal form", "otherwise than through exp")


def seal(cert: dict) -> Seal:
    """Replay ``cert`` with the checker alone. A claim whose sides the checker cannot bring to one
    normal form (or whose limit it cannot read) is outside its language when every side condition
    of each side replays on its own (each divisor nonzero, each log's argument positive): proved
    (not replayed); a side condition that fails leaves the proof rejected."""
    try:
        replay(cert)
    except Rejected as exc:
        if any(g in str(exc) for g in GAPS) and cert["claim"]["kind"] in ("identity", "limit") and _domain(cert):
            return Seal(OUTSIDE, f"the checker does not decide the claim itself ({exc}); "
                                 "the side conditions of both its sides replayed")  # no certificate to write
        return Seal(REJECTED, str(exc), cert)
    except Malformed as exc:  # the engine wrote a certificate the checker cannot read: a bug, said as such
        return Seal(REJECTED, f"the certificate is malformed ({exc}); please report this", cert)
    return Seal(REPLAYED, "", cert)


def _domain(cert: dict) -> bool:
    """Does each side of ``cert``'s claim, compared with itself, replay (its side conditions)?"""
    from derive.replay.terms import read

    try:
        for side in ("lhs", "rhs"):
            t = read(cert["claim"][side])
            one = certificate("identity", "domain", t, t, cert["symbols"], mask=cert.get("mask"), rows=cert["rows"],
                              definitions=cert["definitions"], allowed=[read(a) for a in cert.get("allowed", [])])
            replay(one)
    except (Rejected, Malformed, Outside):
        return False
    return True


def identity(lhs, rhs, text: str, *, rows: str = "nonempty") -> Seal:
    """The seal of ``lhs = rhs`` for two SymPy expressions as given (a document's step)."""
    from derive.certify.sympy_terms import Outside, Terms

    tr = Terms()
    try:
        a, b = tr.term(lhs), tr.term(rhs)
    except Outside as exc:
        return outside(str(exc))
    return seal(certificate("identity", text, a, b, tr.types, rows=rows))
