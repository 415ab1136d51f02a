"""Variant specs: TOML loading, the expression parser, names and kinds.

The loader's names are imported on first use: the expression parser (:mod:`derive.spec.parser`),
which the normalizers' formula language is built on, is imported without the loader, which
itself reads the normalizer registry.
"""

from derive.lazy import exports

_EXPORTS = {name: "derive.spec.load" for name in ("ClaimSpec", "Spec", "load_spec", "load_specs", "parse_spec")}
__getattr__, __dir__ = exports(globals(), _EXPORTS)

__all__ = ["ClaimSpec", "Spec", "load_spec", "load_specs", "parse_spec"]
