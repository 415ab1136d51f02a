"""A variant built from its spec: scores, values, weights and outputs as engine objects.

``Variant(spec, rename={"b_k": "b_k'"})`` is the same variant with ``b_k`` replaced by a
fresh object of the same kind, which is how "for all values of NAME" is stated. The variant is
built once from the spec, then the one substitution of :mod:`derive.claims.substitute` is
applied to every part of it (score, mask, normalizer parameters, value, guards), so no part can
keep the old NAME. ``reaches(name)`` says whether the substitution changed anything.

Normalizer parameters: a parameter the spec names (``sink(s0)``, ``sigmoid(b0)``) is the
user's symbol; one it leaves unnamed (the bias of a plain ``sigmoid``) is a symbol of its
own, ``sigmoid.b``, which no declared name can equal (a name has no dot) and which reports
show as the sigmoid's bias. A normalizer with a token of its own (``bias_kv(K_STAR,
V_STAR)``) follows its registry entry's ``token``: the token's score, written in the spec's
language with the given key vector (``dot(q, k_star) / sqrt(d)``: it depends on the query),
is the entry's parameter, and the given value vector is mixed into the output with the
token's weight.
"""

from __future__ import annotations

import sympy as sp

from derive.model.attention import j, mixed_output
from derive.spec.load import Spec
from derive.language.translate import translate

__all__ = ["Variant", "fresh", "internal_parameter"]


def fresh(name: str) -> str:
    return name + "'"


def internal_parameter(normalizer: str, sym: sp.Symbol) -> sp.Symbol:
    """The registry parameter ``sym`` of ``normalizer`` as a symbol no spec name can equal."""
    return sp.Symbol(f"{normalizer}.{sym.name}", **sym.assumptions0)


class Variant:
    def __init__(self, spec: Spec, rename: dict | None = None):
        self.spec, self.rename = spec, {}
        self.binds = spec.binds()
        self.guards: list = []  # the domain as written (see translate): counterexamples stay inside
        self.score_j = translate(spec.score, self.binds, guards=self.guards)[0] if spec.flex is None or \
            spec.flex.score is None else spec.flex.score_expr(self.binds)
        self.value_j = translate(spec.value, self.binds, guards=self.guards)[0]
        self.mask = spec.mask
        # the second score row y_j of a user-defined normalizer (score2 = "…")
        self.score2_j = None if spec.score2 is None else translate(spec.score2, self.binds, guards=self.guards)[0]
        self.params, self.extra = self._normalizer_parts()
        self.guards += [g for g in self.weight_domain() if g not in self.guards]
        for name, label in (rename or {}).items():
            self._substitute(name, label)

    def _substitute(self, name: str, to) -> None:
        """Apply the one substitution NAME ↦ ``to`` to every part (see :mod:`.substitute`)."""
        from derive.claims.substitute import ZERO, substitution

        f = substitution(self.spec, name, to)
        self.score_j, self.value_j = f(self.score_j), f(self.value_j)
        self.score2_j = None if self.score2_j is None else f(self.score2_j)
        self.params = {k: f(v) for k, v in self.params.items()}
        self.extra = None if self.extra is None else f(self.extra)
        self.guards = [(kind, f(g)) for kind, g in self.guards]
        cond = getattr(self.mask, "condition", None)
        if cond is not None and f(cond) != cond:
            from derive.model.masks import Mask

            label = "0" if to is ZERO else to
            text = str(self.mask).replace(f"({name})", f"({label})")
            if text == str(self.mask):
                text = f"{self.mask} with {label} for {name}"
            self.mask = Mask(text, f(cond), getattr(self.mask, "data", None))
        if to is not ZERO:
            self.rename[name] = to
            self.binds = self.spec.binds(self.rename)

    def parts(self) -> tuple:
        """Everything the variant computes from: what a substitution may change."""
        return (self.score_j, self.score2_j, self.value_j, getattr(self.mask, "condition", None), str(self.mask),
                tuple(sorted((str(k), v) for k, v in self.params.items())), self.extra, tuple(self.guards))

    def reaches(self, other: Variant) -> bool:
        """Does ``other`` (this variant after a substitution) differ from this one?"""
        return self.parts() != other.parts()

    def same_mask(self, other: Variant) -> bool:
        return str(self.mask) == str(other.mask) and \
            getattr(self.mask, "condition", None) == getattr(other.mask, "condition", None)

    def _normalizer_parts(self) -> tuple[dict, sp.Expr | None]:
        """(registry parameter → value, the value vector of the normalizer's own token)."""
        from derive.normalizers.registry import get

        entry = get(self.spec.normalizer)
        given = self.spec.norm_params()
        named = {p: self.binds[name].obj for p, name in given.items()}
        extra = None
        token = entry.token
        if token is not None and given:
            from derive.language.parser import parse

            key, value = token.key[0], token.value[0]
            binds = {**self.binds, key: self.binds[given[key]]}
            named = {token.logit: translate(parse(token.score), binds)[0]}
            extra = self.binds[given[value]].obj
        params = {}
        for p, default in entry.symbols().items():
            if p in named:
                params[p] = named[p]
            else:
                params[p] = default.xreplace({s: internal_parameter(entry.name, s) for s in default.free_symbols})
        return params, extra

    @property
    def property_params(self) -> dict:
        """The parameters for a normalizer property: the ones the spec names as scalars. A
        property quantifies over every parameter value, so the registry's own symbol stands
        for the others (s*_i = ⟨q_i, k*⟩/√d takes every real value, as q_i does)."""
        named = self.spec.norm_params()
        return {p: v for p, v in self.params.items() if p in named and isinstance(v, sp.Symbol)}

    def expr(self, node, guards: list | None = None) -> sp.Expr:
        """A claim's expression in this variant; its domain goes to ``guards``."""
        return translate(node, self.binds, guards=guards)[0]

    def score(self, key: sp.Expr = j, score_j: sp.Expr | None = None) -> sp.Expr:
        base = self.score_j if score_j is None else score_j
        return base if key == j else base.xreplace({j: key})

    def value(self, key: sp.Expr = j) -> sp.Expr:
        return self.value_j if key == j else self.value_j.xreplace({j: key})

    def score2(self, key: sp.Expr = j) -> sp.Expr:
        return self.score2_j if key == j else self.score2_j.xreplace({j: key})

    def weight(self, key: sp.Expr = j, score_j: sp.Expr | None = None) -> sp.Expr:
        second = None if self.score2_j is None else self.score2
        return normalizer_weight(self.spec.normalizer, lambda x: self.score(x, score_j), key, self.params, second)

    def weight_domain(self, score_j: sp.Expr | None = None) -> list:
        """Guards that keep a counterexample where the normalizer's weight as written has a value,
        where its symbolic reading has a wider domain (:mod:`derive.normalizers.partial`)."""
        from derive.normalizers.partial import domain, over
        from derive.normalizers.registry import get

        second = None if self.score2_j is None else self.score2
        return domain(over(get(self.spec.normalizer).definition_of, self.params), lambda x: self.score(x, score_j), score2=second,
                      params=self.params)

    def extra_weight(self) -> sp.Expr:
        """The weight of the normalizer's own token in row i."""
        from derive.normalizers.registry import get

        return get(self.spec.normalizer).extra_weight(lambda x: self.score(x), **self.params)

    def output(self) -> sp.Expr:
        out = mixed_output(lambda x: self.weight(x), self.value)
        if self.extra is not None:
            out = out + self.extra_weight() * self.extra
        return out

    def with_zero(self, name: str) -> Variant:
        """The variant with the vector ``name`` set to 0 (everywhere it occurs)."""
        from derive.claims.substitute import ZERO

        other = Variant(self.spec, self.rename)
        other._substitute(name, ZERO)
        return other


def normalizer_weight(name: str, score, key, params: dict, score2=None) -> sp.Expr:
    from derive.normalizers.registry import get

    if score2 is not None:  # y_j of a user-defined normalizer
        return get(name).weight(score, key=key, score2=score2, **params)
    return get(name).weight(score, key=key, **params)
