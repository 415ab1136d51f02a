"""Check every claim of a spec: the entry point used by ``derive check`` and the atlas."""

from __future__ import annotations

from dataclasses import dataclass, field

from derive.claims import show
from derive.claims.certify import certify
from derive.claims.provers import PROVERS, Context
from derive.claims.result import ClaimResult
from derive.errors import InternalError
from derive.prove.verdict import UNDECIDED
from derive.settings import Settings
from derive.claims.counts import count_verdicts, summary_line
from derive.spec.load import Spec

__all__ = ["DEFAULT_CHECK", "SpecResult", "check_spec", "count_verdicts", "summary_line"]

DEFAULT_CHECK = Settings(examples=20, witness_examples=200, time_limit=10.0)


@dataclass
class SpecResult:
    file: str
    name: str
    spec: Spec
    claims: list[ClaimResult] = field(default_factory=list)

    @property
    def errors(self) -> list[ClaimResult]:
        """The claims on which the engine failed (the error outcome)."""
        return [c for c in self.claims if c.is_error]

    def raise_errors(self) -> SpecResult:
        """This result, or :class:`~derive.errors.InternalError` (from the engine's exception) when
        the engine failed on a claim: for a document, which renders verdicts only."""
        if self.errors:
            c = self.errors[0]
            raise InternalError(f"{self.file}: claim {c.name} ({c.claim}): {c.reason}") from c.exception
        return self

    @property
    def counts(self) -> dict[str, int]:
        """``{"claims": 3, "proved": 2, "refuted": 1, "undecided": 0, "error": 0, "replayed": 2}``"""
        return count_verdicts((c.verdict for c in self.claims), sum(c.replay == "replayed" for c in self.claims))

    @property
    def traced(self) -> list[dict]:
        """One row per traced modifier (source line and math), as reports show them."""
        return self.spec.flex.display(show.text, show.latex) if self.spec.flex is not None else []

    def as_json(self) -> dict:
        s = self.spec
        return {"file": self.file, "name": self.name, "score": s.score_src, "value": s.value_src,
                "normalizer": s.normalizer_text, "mask": s.mask, "traced": self.traced, "counts": self.counts,
                "claims": [c.as_json() for c in self.claims]}


def _fresh_caches() -> None:
    """Results must not depend on which specs ran before in this process (SymPy's cache
    can change the order of floating-point sums in the cross-checks)."""
    from sympy.core.cache import clear_cache

    from derive.crosscheck.compiled import free_symbols

    clear_cache()
    free_symbols.cache_clear()


def check_spec(spec: Spec, cfg: Settings = DEFAULT_CHECK, file: str | None = None) -> SpecResult:
    from derive.claims.show import apart
    from derive.model.attention import display_apart

    _fresh_caches()
    with apart(display_apart(set(spec.symbols))):  # Σ_τ when the spec has its own t
        return _check(spec, cfg, file)


def _as_written(spec: Spec, claim, out):
    """No proof of a claim on the weights of a normalizer whose symbolic reading has a value where
    the formula as written has none (:mod:`derive.normalizers.partial`): the verdict that rests on
    such a proof becomes undecided, with the subterm named; a certified counterexample (searched
    inside the formula's domain) stands."""
    from derive.claims.modifiers import _no_proof
    from derive.claims.result import Outcome
    from derive.spec.claim_kinds import by_name

    kind = claim.kind
    verdict = by_name(kind).by_proof
    if kind == "row_constant" and out.status == "proved":  # about its EXPR alone, which may have no value
        from derive.claims.score_domain import why_no_proof

        why = why_no_proof(spec, expr=claim.node, parts=("EXPR",))
        return out if why is None else Outcome(UNDECIDED, why, out.steps)
    if not verdict or out.status != verdict:
        return out
    why = _no_proof(spec)
    if why is None and kind not in _OF_THE_NORMALIZER:
        from derive.claims.score_domain import why_no_proof

        why = why_no_proof(spec, outputs=kind.startswith("output_"), expr=claim.node)
    return out if why is None else Outcome(UNDECIDED, why, out.steps)


# the claims about the normalizer alone, for every score (its properties) or about the mask alone:
# a point where the spec's score has no value does not bear on them
_OF_THE_NORMALIZER = ("shift_invariant", "can_abstain", "weights_sum_to_one", "mask_equivalent")




def _shown(spec: Spec, witness: dict | None) -> dict | None:
    """A counterexample as printed: the normalizer's own parameters by the names and values
    docs/spec.md gives them (``clipped.zeta``, not the auxiliary ζ' ≥ 0 the search draws)."""
    from derive.normalizers.registry import get

    if not witness or not isinstance(witness.get("values"), dict):
        return witness
    return {**witness, "values": get(spec.normalizer).shown_parameters(witness["values"])}


def _check(spec: Spec, cfg: Settings, file: str | None) -> SpecResult:
    result = SpecResult(file or spec.file, spec.name, spec)
    try:
        ctx = Context(spec, cfg)
    except Exception as exc:  # noqa: BLE001 - the engine failed on the variant itself: every claim says so
        result.claims += [ClaimResult.failed(claim, exc) for claim in spec.claims]
        return result
    for claim in spec.claims:
        try:
            out = _as_written(spec, claim, PROVERS[claim.kind](ctx, claim))
            if out.fault and out.status == UNDECIDED:
                raise InternalError(out.fault)
            out = certify(ctx, claim, out)  # a proof is a verdict only when its certificate replays
        except Exception as exc:  # noqa: BLE001 - an engine failure is the error outcome, never a verdict
            # (a RecursionError too: the parser bounds a spec's expressions at 40 levels, so one is
            # the engine recursing without end or past Python's stack, not the input being too deep)
            result.claims.append(ClaimResult.failed(claim, exc))
            continue
        result.claims.append(ClaimResult(claim.name, claim.text, out.status, out.reason,
                                         _shown(spec, out.witness) if out.status == "refuted" else None,
                                         out.steps, out.check, claim.expect, seal=out.seal))
    return result
