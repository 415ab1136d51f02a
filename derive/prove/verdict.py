"""Three-valued answers: proved, refuted (with a counterexample), undecided (with a reason)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PROVED", "REFUTED", "UNDECIDED", "Verdict"]

PROVED, REFUTED, UNDECIDED = "proved", "refuted", "undecided"


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str
    method: str = ""
    witness: dict | None = field(default=None, compare=False)
    # the certificate of a proof and whether it replayed (derive.certify.seal.Seal), None if not sought
    seal: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.status not in (PROVED, REFUTED, UNDECIDED):
            raise ValueError(f"verdict must be proved, refuted or undecided, got {self.status!r}")
        if self.status == REFUTED and self.witness is None:
            raise ValueError("a refuted verdict needs a concrete counterexample")

    @property
    def proved(self) -> bool:
        return self.status == PROVED
