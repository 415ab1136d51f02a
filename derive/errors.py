"""The exception tree. ``DeriveError`` is the base; each kind says who must act.

* :class:`InputError` — the user's input is wrong (exit code 2, one line per error, no traceback).
* :class:`KindError` — a vector where a scalar is needed, or the reverse (an input error).
* :class:`Unsupported` — a construct the engine cannot decide yet (gives *undecided*).
* :class:`StepFailed` — a derivation step did not verify; the build stops (exit 1).
* :class:`InternalError` — derive's own engine failed: never a verdict (exit 3), reported with
  the exception and a request to report it.

An exception that is none of these, raised while derive decides something, is an engine
failure too: the claim, the normalizer property or the build that met it ends in the *error*
outcome (:func:`describe` says what and where), never in a verdict.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["REPORT", "DeriveError", "InputError", "InternalError", "KindError", "StepFailed", "Unsupported",
           "describe", "error_text", "internal", "where"]


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


class InternalError(DeriveError):
    """derive's own engine failed (an exception it did not expect, or two of its parts that
    contradict each other): no verdict, exit code 3, with a request to report it."""

    exit_code = 3


REPORT = "this is a fault in derive, not in the input: please report it"
_PACKAGE = Path(__file__).resolve().parent


def where(exc: BaseException) -> str:
    """The innermost frame of derive's own code in the traceback of ``exc``:
    ``derive/normalizers/algebra.py:201 in row_form``; "" when no frame is derive's."""
    tb, found = exc.__traceback__, ""
    while tb is not None:
        code = tb.tb_frame.f_code
        try:
            rel = Path(code.co_filename).resolve().relative_to(_PACKAGE.parent)
        except ValueError:
            rel = None
        if rel is not None and rel.parts[:1] == (_PACKAGE.name,):
            found = f"{rel.as_posix()}:{tb.tb_lineno} in {code.co_name}"
        tb = tb.tb_next
    return found


def describe(exc: BaseException) -> dict:
    """An engine failure as data: ``{"type", "message", "where"}`` (``where`` from :func:`where`).
    An :class:`InternalError` raised on purpose keeps the description of the exception it wraps."""
    info = getattr(exc, "info", None)
    if isinstance(info, dict):
        return dict(info)
    message = " ".join(str(exc).split())
    if len(message) > 300:
        message = message[:299] + "…"
    return {"type": type(exc).__name__, "message": message, "where": where(exc)}


def error_text(info: dict) -> str:
    """One line: ``internal error: AttributeError: 'Mul' object has no attribute 'function'
    (at derive/normalizers/algebra.py:201 in row_form); this is a fault in derive, …: please
    report it``."""
    what = info["type"] + (f": {info['message']}" if info.get("message") else "")
    at = f" (at {info['where']})" if info.get("where") else ""
    return f"internal error: {what}{at}; {REPORT}"


def internal(exc: BaseException, context: str = "") -> InternalError:
    """An :class:`InternalError` for the engine failure ``exc`` (raise it ``from exc``), carrying
    its description; ``context`` (``spec.toml: claim k``) leads the message."""
    info = describe(exc)
    out = InternalError((f"{context}: " if context else "") + error_text(info))
    out.info = info
    return out
