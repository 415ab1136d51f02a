"""A variant built from its spec: scores, values, weights and outputs as engine objects.

``Variant(spec, rename={"b_k": "b_k'"})`` is the same variant with ``b_k`` replaced by a
fresh object of the same kind, which is how "for all values of NAME" is stated.
"""

from __future__ import annotations

import sympy as sp

from derive.model.attention import i, j, mixed_output
from derive.spec.load import Spec
from derive.spec.translate import translate

__all__ = ["Variant", "fresh"]


def fresh(name: str) -> str:
    return name + "'"


class Variant:
    def __init__(self, spec: Spec, rename: dict | None = None):
        self.spec, self.rename = spec, dict(rename or {})
        self.binds = spec.binds(self.rename)
        self.score_j = translate(spec.score, self.binds)[0]
        self.value_j = translate(spec.value, self.binds)[0]
        self.params = {}
        if spec.norm_arg:
            self.params["s"] = self.binds[spec.norm_arg].obj

    def expr(self, node) -> sp.Expr:
        return translate(node, self.binds)[0]

    def score(self, key: sp.Expr = j, score_j: sp.Expr | None = None) -> sp.Expr:
        base = self.score_j if score_j is None else score_j
        return base if key == j else base.xreplace({j: key})

    def value(self, key: sp.Expr = j) -> sp.Expr:
        return self.value_j if key == j else self.value_j.xreplace({j: key})

    def weight(self, key: sp.Expr = j, score_j: sp.Expr | None = None) -> sp.Expr:
        return normalizer_weight(self.spec.normalizer, lambda x: self.score(x, score_j), key, self.params)

    def output(self) -> sp.Expr:
        return mixed_output(lambda x: self.weight(x), self.value)

    def with_zero(self, name: str) -> Variant:
        """The variant with the vector ``name`` set to 0."""
        other = Variant(self.spec, self.rename)
        obj = self.binds[name].obj
        other.score_j = self.score_j.xreplace({obj: sp.S.Zero})
        other.value_j = self.value_j.xreplace({obj: sp.S.Zero})
        return other


def normalizer_weight(name: str, score, key, params: dict) -> sp.Expr:
    from derive.normalizers.registry import get

    return get(name).weight(score, key=key, **params)


_ = i
