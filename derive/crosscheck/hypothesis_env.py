"""Hypothesis draws that depend on derive's inputs alone.

Recent Hypothesis versions mix constants found in "local" modules (any imported module whose
file is not in site-packages or the standard library) into their draws. Which modules count
as local depends on how derive is installed (a checkout, an editable install, a wheel) and on
what else the process imported (pytest imports ``tests/``), so the same derandomized search
would draw different instances, find different counterexamples and print different documents
on different machines. derive's searches run with no local constants.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["no_local_constants"]


@contextmanager
def no_local_constants() -> Iterator[None]:
    """Run Hypothesis with an empty set of local constants (a no-op on versions without them)."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without the providers module
        yield
        return
    get = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if get is None or not hasattr(providers, "Constants"):
        yield
        return
    empty = providers.Constants()
    providers._get_local_constants = lambda: empty
    if cache is not None:
        cache.cache.clear()  # constants cached before the switch must not be drawn
    try:
        yield
    finally:
        providers._get_local_constants = get
        if cache is not None:
            cache.cache.clear()
