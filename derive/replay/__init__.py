"""The checker of derive's proofs: a small kernel that shares nothing with the engine.

It imports python-flint, json and the standard library, and of derive only the foundation
(:mod:`derive.errors`, for the exit code of bad input). A certificate written by the engine
(``derive check --certificates DIR``, the documents' build) states a claim about two terms, the
chain of steps that brings them to one normal form, and the side conditions; :func:`replay`
re-applies each step, decides the claim exactly and discharges each condition, or rejects the
certificate naming the step or the condition. Its rules are listed in one place,
:data:`derive.replay.rules.RULES`; the sign rules in :mod:`derive.replay.signs`.
"""

from __future__ import annotations

import json

from derive.replay.algebra import Rejected
from derive.replay.check import FORMAT, conditions, replay
from derive.replay.rules import RULES
from derive.replay.terms import Malformed

__all__ = ["FORMAT", "RULES", "Malformed", "Rejected", "conditions", "replay", "replay_text"]


def replay_text(text: str) -> dict:
    """:func:`replay` of a certificate given as JSON text."""
    try:
        cert = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Malformed(f"not JSON: {exc.msg} at line {exc.lineno}") from None
    return replay(cert)
