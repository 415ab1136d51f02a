"""Helpers for a user's own pytest suite."""

from __future__ import annotations

from derive.impl import DEFAULT_DTYPES, Report, check_implementation

__all__ = ["assert_implements"]


def assert_implements(fn, normalizer: str, *, params: dict | None = None, dim: int = -1,
                      dtypes=DEFAULT_DTYPES, examples: int | None = None) -> Report:
    """Assert that ``fn`` implements ``normalizer`` (differential testing, as ``derive impl``).

    ``fn`` is a callable or a ``FILE.py:func`` / ``module:func`` string. Raises
    :class:`AssertionError` carrying the Markdown report (counterexample and diagnosis) when
    it disagrees; raises :class:`derive.errors.InputError` on bad usage. Returns the report.
    """
    report = check_implementation(fn, normalizer, params=params, dim=dim, dtypes=dtypes,
                                  examples=examples)
    if not report.agrees:
        raise AssertionError(report.to_markdown())
    return report
