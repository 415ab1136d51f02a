"""Variant specs: TOML loading, names and kinds (the expression language is :mod:`derive.language`).

The loader's names are imported on first use: it reads the normalizer registry.
"""

from derive.lazy import exports

_EXPORTS = {name: "derive.spec.load" for name in ("ClaimSpec", "Spec", "load_spec", "load_specs", "parse_spec")}
__getattr__, __dir__ = exports(globals(), _EXPORTS)

__all__ = ["ClaimSpec", "Spec", "load_spec", "load_specs", "parse_spec"]
