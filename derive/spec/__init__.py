"""Variant specs: TOML loading, the expression parser, names and kinds."""

from derive.spec.load import ClaimSpec, Spec, load_spec, load_specs, parse_spec

__all__ = ["ClaimSpec", "Spec", "load_spec", "load_specs", "parse_spec"]
