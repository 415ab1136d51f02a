"""The exception tree. ``DeriveError`` is the base; each kind says who must act.

* :class:`InputError` — the user's input is wrong (exit code 2, one line per error, no traceback).
* :class:`KindError` — a vector where a scalar is needed, or the reverse (an input error).
* :class:`Unsupported` — a construct the engine cannot decide yet (gives *undecided*).
* :class:`StepFailed` — a derivation step did not verify; the build stops (exit 1).
"""

from __future__ import annotations

__all__ = ["DeriveError", "InputError", "KindError", "StepFailed", "Unsupported"]


class DeriveError(Exception):
    """Base class of every error derive raises on purpose."""


class InputError(DeriveError, ValueError):
    """Bad input: says what was given, what was expected, and where."""

    exit_code = 2


class KindError(InputError, TypeError):
    """A value of the wrong kind (vector vs scalar)."""


class Unsupported(DeriveError):
    """The engine cannot decide this; the honest verdict is *undecided*."""


class StepFailed(DeriveError):
    """A derivation step failed its symbolic or numeric check."""

    exit_code = 1
