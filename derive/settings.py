"""One frozen settings object; an unknown key is an error, not a silent default."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from derive.errors import InputError

__all__ = ["DEFAULT", "Settings"]


@dataclass(frozen=True)
class Settings:
    examples: int = 60  # Hypothesis examples per numeric cross-check
    rtol: float = 1e-12  # relative tolerance of a float64 comparison
    atol: float = 1e-12  # absolute tolerance of a float64 comparison
    max_d: int = 64  # head dimensions drawn from 1..max_d
    max_n: int = 64  # numbers of keys drawn from 1..max_n
    bound: float = 2.0  # entries of random vectors lie in [-bound, bound]
    mp_dps: int = 60  # decimal digits of the mpmath reference
    witness_examples: int = 300  # Hypothesis examples when searching a counterexample
    time_limit: float = 20.0  # CPU seconds for one symbolic proof attempt

    def merge(self, **changes) -> Settings:
        known = {f.name for f in fields(self)}
        for key in changes:
            if key not in known:
                raise InputError(f"unknown setting {key!r}; expected one of {', '.join(sorted(known))}")
        return replace(self, **changes)


DEFAULT = Settings()
