"""Names of a package imported on first use (PEP 562), from a table name → module.

A package that re-exports names from its modules does it this way when importing them at once
would cost start-up time (``derive --help`` loads no SymPy) or would import modules that
themselves import the package's neighbours. ``tests/test_architecture.py`` reads the table
(``_EXPORTS``) as the package's dependencies.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

__all__ = ["exports"]


def exports(package: dict, table: dict[str, str]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for the package whose ``globals()`` is ``package``."""

    def getattr_(name: str):
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package['__name__']!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        package[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(package) | set(table))

    return getattr_, dir_
