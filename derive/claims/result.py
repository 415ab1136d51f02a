"""The result of one claim: verdict, one-line reason, counterexample and steps.

A claim's outcome is one of the three verdicts, or :data:`ERROR`: derive's own engine failed
on it (:class:`~derive.errors.InternalError`), which is no verdict. Such a claim always fails
the check (exit 3) and carries the exception's description (``error``)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ERROR", "ICONS", "ClaimResult", "Outcome", "step"]

ERROR = "error"  # the outcome of a claim on which the engine failed: no verdict
ICONS = {"proved": "✅", "refuted": "❌", "undecided": "❓", ERROR: "💥"}


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
    # two parts of the engine that contradict each other (a proof whose numeric cross-check
    # failed): a claim that ends on such an outcome is an internal error, never a verdict
    fault: str | None = None


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
    # the engine failure of an ERROR outcome: {"type", "message", "where"} (derive.errors.describe)
    error: dict | None = None
    exception: BaseException | None = field(default=None, repr=False, compare=False)  # not serialised

    @classmethod
    def failed(cls, claim, exc: BaseException) -> ClaimResult:
        """The ERROR outcome of ``claim`` (a parsed spec claim) on which the engine raised ``exc``."""
        from derive.errors import describe, error_text

        info = describe(exc)
        return cls(claim.name, claim.text, ERROR, error_text(info), expected=claim.expect, error=info, exception=exc)

    @property
    def icon(self) -> str:
        return ICONS[self.verdict]

    @property
    def as_expected(self) -> bool:
        return self.verdict == self.expected

    @property
    def is_error(self) -> bool:
        return self.verdict == ERROR

    def fails(self, fail_on: str = "undecided") -> bool:
        """Whether this claim fails the check: its verdict is not the expected one, and (with
        ``--fail-on refuted``) the miss is not merely an undecided verdict. An engine error
        always fails."""
        return not self.as_expected and (self.verdict != "undecided" or fail_on == "undecided")

    @property
    def miss(self) -> str:
        """``expected refuted, got proved``; empty when the verdict is the expected one."""
        if self.is_error:
            return f"expected {self.expected}, got an internal error"
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
            "error": self.error,
        }
