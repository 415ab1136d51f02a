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
    seal: object = None  # the proof's certificate, replayed or not (derive.certify.seal.Seal)


@dataclass
class ClaimResult:
    name: str
    claim: str
    verdict: str
    reason: str
    counterexample: dict | None = None
    steps: list = field(default_factory=list)
    cross_check: dict | None = None
    expected: str = "proved"  # the verdict the spec expects (``expect = "refuted"``)
    seal: object = field(default=None, repr=False, compare=False)  # a proof's certificate (Seal)

    @property
    def replay(self) -> str:
        """"replayed" or "not replayed" for a proved claim (its certificate), "" otherwise."""
        if self.verdict != "proved" or self.seal is None:
            return ""
        return "replayed" if self.seal.replayed else "not replayed"

    @property
    def shown(self) -> str:
        """The verdict as reports print it: "proved (not replayed)" for a proof outside the checker."""
        return "proved (not replayed)" if self.replay == "not replayed" else self.verdict

    @property
    def icon(self) -> str:
        return ICONS[self.verdict]

    @property
    def as_expected(self) -> bool:
        return self.verdict == self.expected

    def fails(self, fail_on: str = "undecided") -> bool:
        """Whether this claim fails the check: its verdict is not the expected one, and (with
        ``--fail-on refuted``) the miss is not merely an undecided verdict."""
        return not self.as_expected and (self.verdict != "undecided" or fail_on == "undecided")

    @property
    def miss(self) -> str:
        """``expected refuted, got proved``; empty when the verdict is the expected one."""
        return "" if self.as_expected else f"expected {self.expected}, got {self.verdict}"

    def as_json(self) -> dict:
        return {
            "name": self.name,
            "claim": self.claim,
            "verdict": self.verdict,
            "expected": self.expected,
            "as_expected": self.as_expected,
            "reason": self.reason,
            "counterexample": self.counterexample,
            "steps": self.steps,
            "cross_check": self.cross_check,
            "replay": self.replay or None,
        }
