"""The result of one claim: verdict, one-line reason, counterexample and steps."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ICONS", "ClaimResult", "Outcome", "step"]

ICONS = {"proved": "✅", "refuted": "❌", "undecided": "❓"}


def step(text: str, latex: str = "", data: dict | None = None) -> dict:
    out = {"text": text, "latex": latex}
    if data is not None:
        out["data"] = data
    return out


@dataclass
class Outcome:
    """What a prover found: a verdict with its evidence (before packaging)."""

    status: str
    reason: str
    steps: list = field(default_factory=list)
    witness: dict | None = None  # a certified counterexample (refuted), JSON-ready
    check: dict | None = None  # numeric cross-check figures (proved)


@dataclass
class ClaimResult:
    name: str
    claim: str
    verdict: str
    reason: str
    counterexample: dict | None = None
    steps: list = field(default_factory=list)
    cross_check: dict | None = None

    @property
    def icon(self) -> str:
        return ICONS[self.verdict]

    def as_json(self) -> dict:
        return {
            "name": self.name,
            "claim": self.claim,
            "verdict": self.verdict,
            "reason": self.reason,
            "counterexample": self.counterexample,
            "steps": self.steps,
            "cross_check": self.cross_check,
        }
