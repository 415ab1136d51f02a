"""Vectors of symbolic dimension d and the bilinear form between them.

A vector is never expanded into components. Vector-valued expressions are linear
combinations of *vector atoms* with scalar coefficients:

* :class:`VectorSymbol` — a vector shared by all tokens (a bias ``b_K``);
* an :class:`sympy.Indexed` over a :class:`VectorBase` — one vector per token (``k[j]``);
* :class:`Rot` — a rotation R(pos) applied to a vector (rotary position embedding).

``Dot(a, b)`` is the symmetric bilinear form ⟨a, b⟩ on R^d. It stays unevaluated until
:func:`expand_dot` expands it by bilinearity, so an expansion is derived by the engine,
not typed in.
"""

from __future__ import annotations

import sympy as sp
from sympy.core.sorting import default_sort_key

from derive.errors import KindError

__all__ = [
    "Dot",
    "Rot",
    "VectorBase",
    "VectorFunction",
    "VectorSymbol",
    "expand_dot",
    "vector_function",
    "is_vector_atom",
    "linear_parts",
    "vector",
    "vectors",
]


class VectorSymbol(sp.Symbol):
    """A vector of dimension d shared by every token (e.g. a bias)."""

    is_commutative = True


class VectorBase(sp.IndexedBase):
    """A family of vectors, one per token: ``k[j]`` is the key of token j."""


def vector(name: str) -> VectorSymbol:
    return VectorSymbol(name)


def vectors(names: str) -> tuple[VectorSymbol, ...]:
    return tuple(VectorSymbol(n) for n in names.split())


def is_vector_atom(expr: sp.Basic) -> bool:
    if isinstance(expr, (VectorSymbol, Rot, VectorFunction)):
        return True
    return isinstance(expr, sp.Indexed) and isinstance(expr.base, VectorBase)


def linear_parts(expr: sp.Expr) -> dict[sp.Expr, sp.Expr]:
    """Split a vector expression into ``{atom: scalar coefficient}``.

    Raises :class:`KindError` when the expression is not a linear combination of
    vector atoms (a scalar where a vector is needed, or a product of two vectors).
    """
    parts: dict[sp.Expr, sp.Expr] = {}
    for term in sp.Add.make_args(sp.expand(expr, power_exp=False, log=False)):
        if term == 0:
            continue
        atoms = [f for f in sp.Mul.make_args(term) if is_vector_atom(f)]
        scalars = [f for f in sp.Mul.make_args(term) if not is_vector_atom(f)]
        if len(atoms) != 1:
            kind = "a scalar" if not atoms else "a product of vectors"
            raise KindError(f"expected a vector, got {kind}: {sp.sstr(term)}")
        if any(_contains_vector(s) for s in scalars):
            raise KindError(f"a vector cannot appear inside a scalar coefficient: {sp.sstr(term)}")
        atom, coeff = atoms[0], sp.Mul(*scalars)
        if isinstance(atom, Rot) and not is_vector_atom(atom.args[1]):
            # R(p) is linear: R(p)(Σ c·a) = Σ c·R(p)a
            for inner, c in linear_parts(atom.args[1]).items():
                key = Rot(atom.args[0], inner)
                parts[key] = parts.get(key, sp.S.Zero) + coeff * c
            continue
        parts[atom] = parts.get(atom, sp.S.Zero) + coeff
    return {a: c for a, c in parts.items() if c != 0}


def _contains_vector(expr: sp.Basic) -> bool:
    if is_vector_atom(expr):
        return True
    if isinstance(expr, Dot):
        return False
    return any(_contains_vector(a) for a in expr.args)


class Rot(sp.Function):
    """R(pos)·x: rotation by position ``pos`` (rotary embedding), linear in x.

    The rule R(a)ᵀR(b) = R(b − a) is applied by :func:`expand_dot`.
    """

    nargs = 2

    @classmethod
    def eval(cls, pos, vec):
        if pos == 0 or vec == 0:
            return vec
        if isinstance(vec, Rot):
            return Rot(pos + vec.args[0], vec.args[1])
        return None

    def _latex(self, printer):
        return rf"R_{{{printer._print(self.args[0])}}}\,{printer.parenthesize(self.args[1], 60)}"


class VectorFunction(sp.Function):
    """f(x) for an opaque declared function f applied to a vector: a vector atom.

    Nothing is known about f except that f(x) depends on x only, so f(x) is never
    expanded (f need not be linear). Each name gets one subclass, see
    :func:`vector_function`.
    """

    nargs = 1
    is_commutative = True


_VECTOR_FUNCTIONS: dict[str, type] = {}


def vector_function(name: str) -> type:
    """The (cached) :class:`VectorFunction` subclass named ``name``: ``norm(k[j])``."""
    if name not in _VECTOR_FUNCTIONS:
        _VECTOR_FUNCTIONS[name] = type(name, (VectorFunction,), {"__module__": __name__})
    return _VECTOR_FUNCTIONS[name]


class Dot(sp.Function):
    """The symmetric bilinear form ⟨a, b⟩ of two vectors (scaled by nothing)."""

    nargs = 2
    is_real = True

    @classmethod
    def eval(cls, a, b):
        if a == 0 or b == 0:
            return sp.S.Zero
        if default_sort_key(a) > default_sort_key(b):
            return cls(b, a)
        return None

    def _eval_expand_dot(self, **hints):
        return _expand_one(self.args[0], self.args[1])


def _expand_one(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    total = sp.S.Zero
    for x, cx in linear_parts(a).items():
        for y, cy in linear_parts(b).items():
            total += cx * cy * _atom_dot(x, y)
    return total


def _atom_dot(x: sp.Expr, y: sp.Expr) -> sp.Expr:
    """⟨x, y⟩ for two atoms, moving rotations to one side: ⟨R_a u, R_b w⟩ = ⟨u, R_{b−a} w⟩."""
    if isinstance(x, Rot) or isinstance(y, Rot):
        a, u = (x.args if isinstance(x, Rot) else (sp.S.Zero, x))
        b, w = (y.args if isinstance(y, Rot) else (sp.S.Zero, y))
        inner = Rot(sp.expand(b - a), w)
        return Dot(u, inner) if not isinstance(inner, Rot) else _sorted_rot_dot(u, inner)
    return Dot(x, y)


def _sorted_rot_dot(u: sp.Expr, rw: Rot) -> sp.Expr:
    # ⟨u, R_c w⟩ = ⟨w, R_{-c} u⟩: keep the form whose unrotated vector sorts first,
    # so that equal terms written either way cancel.
    c, w = rw.args
    if default_sort_key(w) < default_sort_key(u):
        return Dot(w, Rot(sp.expand(-c), u))
    return Dot(u, rw)


def expand_dot(expr: sp.Expr) -> sp.Expr:
    """Expand every ⟨·,·⟩ in ``expr`` by bilinearity (and the rotation rule)."""
    return expr.replace(lambda e: isinstance(e, Dot), lambda e: e._eval_expand_dot())
