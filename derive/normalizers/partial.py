"""Where a formula has no value, and which of those places SymPy's reading of it drops.

The symbolic weight (:meth:`~derive.normalizers.formula.Formula.weight`) is SymPy's reading
of the tree, and SymPy evaluates as it builds: ``0/x_j`` and ``0*log(x_j)`` are 0, ``x_j/x_j``
is 1, ``exp(2*log(p))`` is p². Where both have a value they agree, but the reading has a
value at rows where the formula as written has none, so a proof about the reading is no proof
about the formula there. :func:`dropped` lists the subterms of a formula that may have no value
(a log, sqrt, division or negative power that :meth:`Formula.total` cannot show defined, a
max_t or min_t over a condition) whose operand no longer appears, as such, in SymPy's reading
of the whole weight. A formula with such a subterm gets no proof of a claim on its weights
(:func:`why_no_proof`); a counterexample is certified only inside its domain
(:func:`domain`: the guards of the counterexample search).

A subterm whose operand survives (``exp(x_j) / (sum_t(exp(x_t)) - 1)``) keeps its place in the
reading, which then has no value there either; such formulas are decided as before, unless the
operand has a factor free of the scores (a function of n, i, j and the parameters) that may be 0: n − 1 in
``(1 - exp(x_j)/sum_t(exp(x_t))) / (n - 1)``, a parameter ``a`` declared without a sign in
``exp(x_j / a)``, j − 1. Then whole rows (every row of one key, every row with key 1) or a parameter value have no weights
whatever the scores, and the proofs, which cancel a common factor as rational functions do
(Σ_j (1 − p_j)/(n − 1) = (n − 1)/(n − 1) = 1), would state a claim about rows that have no
weights: such a subterm is listed too (:attr:`Dropped.whole`).
"""

from __future__ import annotations

import dataclasses

import sympy as sp

from derive.model.attention import X, i, j, t
from derive.model.reductions import RowMax, RowMin
from derive.normalizers.formula import _POS, REDUCTIONS, Y, Formula, _free, _safe, _sign, _Symbolic
from derive.language.parser import Binary, Call, Name, Num, Unary, walk

__all__ = ["Dropped", "domain", "dropped", "over", "text", "why_no_proof"]

_CACHE: dict = {}
# the guard kind (derive.crosscheck.witness.in_domain) that keeps an instance where the subterm has a value
_KIND = {"/": "nonzero", "**": "nonzero", "log": "positive", "sqrt": "nonnegative"}
_WHERE = {"nonzero": "{} = 0", "positive": "{} ≤ 0", "nonnegative": "{} < 0"}


class Dropped:
    """A subterm that may have no value, dropped by SymPy's reading: ``text`` as written,
    ``where`` it has no value, the guard ``kind`` and ``operand`` node (None for a
    reduction that may have no term), ``inside`` a reduction (t bound). ``whole``: a factor of
    the operand free of the row that may make it undefined whatever the scores (the subterm is
    then kept by the reading, but not by a proof that cancels the factor), else None."""

    def __init__(self, node, operand, kind, inside, whole=None, where=None, condition=None):
        self.text, self.operand, self.kind, self.inside, self.whole = text(node), operand, kind, inside, whole
        self.condition = condition  # a reduction's condition that may leave it without a term (t <= i)
        if isinstance(node, Binary) and len(self.text) > 40:  # the division or power, shortened
            self.text = f"…{node.op}{text(node.right, 21)}"
        self.scored = where is not None  # a factor that depends on the scores: undefined at some scores only
        self.where = where or (_WHERE[kind].format(text(whole if whole is not None else operand)) if kind
                               else f"the reduction {self.text} has no term")


def dropped(f: Formula) -> tuple[Dropped, ...]:
    """The subterms of ``f`` that may have no value and that SymPy's reading of the weight dropped."""
    key = (f.text, f.score2, tuple((p, str(v), str(sorted(v.assumptions0.items()))) for p, v in f.defaults.items()))
    if key not in _CACHE:
        _CACHE[key] = tuple({(d.text, d.where): d for d in _dropped(f)}.values())
    return _CACHE[key]


def _dropped(f: Formula):
    if f.total():
        return
    whole = f.weight(lambda k: X[i, k])
    for node, reduction in _nodes(f.node, None):
        if _safe(node, f):
            continue
        inside = reduction is not None
        if isinstance(node, Call) and node.func in ("max_t", "min_t"):
            # without a condition it has key j, and so with one that holds at t = j (t <= j)
            if len(node.args) > 1 and not _has_key_j(node.args[1]) and not whole.has(RowMax, RowMin):
                yield Dropped(node, None, None, inside)
            continue
        op = node.args[0] if isinstance(node, Call) else node.right if node.op == "/" else node.left
        kind = _KIND[node.func if isinstance(node, Call) else node.op]
        if inside:  # kept only in the reduction's own terms, the reduction itself kept in the weight
            operand = _reading_in(f, op)
            total = _reading(f, reduction, False, lambda k: X[i, k])
            kept = whole.has(total) and any(_kept(operand, kind, r.function)
                                            for r in _outside(total, (sp.Sum, sp.Product), inner=True))
        else:
            kept = _kept(_reading(f, op, False, lambda k: X[i, k]), kind, whole)
        if not kept:
            yield Dropped(node, op, kind, inside)
            continue
        factor = _row_free_zero(op, kind, f)
        if factor is not None:
            yield Dropped(node, op, kind, inside, factor)
            continue
        found = _score_zero(node, op, kind, inside, f)
        if found is not None:
            cond = found[0].args[1] if isinstance(found[0], Call) and found[0].func == "sum_t" else None
            yield Dropped(node, op, kind, inside, found[0], where=found[1], condition=cond and text(cond))


def _factors(node):
    """The factors of a node as written: a product's, a negation's, a positive power's base, a quotient's numerator."""
    if isinstance(node, Unary) and node.op == "-":
        yield from _factors(node.operand)
    elif isinstance(node, Binary) and node.op == "*":
        yield from _factors(node.left)
        yield from _factors(node.right)
    elif isinstance(node, Binary) and node.op == "/":
        yield from _factors(node.left)
    elif isinstance(node, Binary) and node.op == "**" and isinstance(node.right, Num):
        yield from _factors(node.left)
    else:
        yield node


def _score_free(node) -> bool:
    """Is ``node`` free of the scores and of the bound index t (a function of n, i, j and the parameters)?"""
    return not any(isinstance(nd, Name) and nd.id in ("x_j", "x_t", "y_j", "y_t", "t")
                   or isinstance(nd, Call) and nd.func in REDUCTIONS for nd in walk(node))


def _row_free_zero(op, kind: str, f: Formula):
    """A factor of the operand ``op`` free of the scores (n, i, j and the parameters only) that may put the
    operand out of its domain (``kind``), or None: where it does, the formula has no value whatever the scores."""
    parts = [op] if kind == "nonnegative" else list(_factors(op)) + ([op] if kind == "positive" else [])
    for part in parts:
        if not _score_free(part):
            continue
        v = _free(part, f)
        ok = v.is_nonnegative if kind == "nonnegative" else v.is_positive if part is op and kind == "positive" \
            else v.is_nonzero
        if ok is not True:
            return part
    return None


def _score_zero(node, op, kind: str, inside: bool, f: Formula):
    """A factor of the divisor ``op`` that depends on the scores and may be 0 where a proof could
    give the weight a value, as (factor node, where the weight has no value), or None.

    A reduction with a condition that may leave it without a term (``sum_t(exp(x_t), t != j)`` on a
    row of one key, ``t < j`` at the row's first key; not ``t <= j``, which has key j) is 0 on
    whole rows, whatever the scores. Any other factor that depends on the scores is harmless when
    it is never 0 (its sign read off the tree; ``1 + x_j**2`` by SymPy's real zeros of it), when
    the numerator is positive (the weight grows without bound next to the factor's zeros: no
    rewriting of it has a value there), or when the numerator shares no score with it (no proof
    cancels x_t against x_j, or a sum over the row against a function of x_j). Otherwise
    (``(x_j**2 - 1)/((x_j - 1)*(x_j + 1))``, whose zeros a proof cancels) its zeros are named,
    exactly where SymPy finds them all, and a factor whose zeros cannot be told is listed too."""
    if kind != "nonzero":
        return None

    def read(nd):
        return _reading_in(f, nd) if inside else _reading(f, nd, False, lambda k: X[i, k])

    numerator = node.left if isinstance(node, Binary) and node.op == "/" else None
    found = []
    for part in _factors(op):
        if _score_free(part) or _sign(part, f) == _POS:
            continue
        if isinstance(part, Call) and part.func == "sum_t" and len(part.args) > 1:
            if not _has_key_j(part.args[1]):
                return part, (f"the reduction {text(part)} has no term (a row where no allowed key t has "
                              f"{text(part.args[1])})")
            continue
        if numerator is not None and (_sign(numerator, f) == _POS
                                      or not _row_atoms(read(part)) & _row_atoms(read(numerator))):
            continue  # a pole, or nothing to cancel against: the reading keeps the factor's zeros
        zeros = _zeros(read(part), text(part), "x_t" if inside else "x_j")
        if zeros != "":
            found.append((part, zeros))
    return (found[0][0], "; or ".join(z for _, z in found)) if found else None


def _has_key_j(cond) -> bool:
    """Does the condition hold at t = j (``t <= j``, ``t >= j``, ``t == j``), so that a reduction
    over the allowed keys with it has key j's term?"""
    if not (isinstance(cond, Binary) and cond.op in ("<=", ">=", "==")):
        return False
    sides = {(type(a).__name__, getattr(a, "id", None)) for a in (cond.left, cond.right)}
    return sides == {("Name", "t"), ("Name", "j")}


def _row_atoms(e: sp.Expr) -> set:
    """The parts of ``e`` through which it depends on the row: each sum or product over it, and
    each score outside them."""
    out = set()
    stack = [e]
    while stack:
        a = stack.pop()
        if isinstance(a, (sp.Sum, sp.Product)):
            out.add(a)
        elif isinstance(a, sp.Indexed) and a.base in (X, Y):
            out.add(a)
        else:
            stack.extend(a.args)
    return out


def _zeros(g: sp.Expr, written: str, score: str) -> str:
    """Where ``g`` (the reading of the factor ``written``, in the score x_j; ``score`` is how the
    formula writes it) is 0, as text: "" when it is certainly never 0 (for real scores and every
    parameter value of the domain), its real zeros when SymPy finds them all, else ``written = 0``
    (not known)."""
    if g.is_nonzero:
        return ""
    xj, unknown = X[i, j], f"{written} = 0"
    if g.atoms(sp.Indexed) != {xj} or g.has(sp.Sum, sp.Product):
        return unknown
    v = sp.Dummy("v", real=True)
    try:
        found = sp.solveset(g.xreplace({xj: v}), v, sp.S.Reals)
    except (NotImplementedError, ValueError, TypeError):  # SymPy cannot solve it: its zeros are not known
        return unknown
    if found is sp.S.EmptySet:
        return ""
    if isinstance(found, sp.FiniteSet) and not found.free_symbols:
        at = " and ".join(f"{score} = {sp.sstr(p)}" for p in sorted(found, key=lambda p: float(p)))
        return f"{written} = 0, at {at}"
    return unknown


def _reading_in(f: Formula, node) -> sp.Expr:
    """SymPy's reading of a subterm inside a reduction, with its bound index t."""
    run = _Symbolic(lambda k: X[i, k], lambda k: Y[i, k], j, dict(f.defaults))
    run.var = t
    return run.run(node)


def _nodes(node, reduction):
    """(node, the reduction it is inside or None) for every node of the tree, parents first."""
    yield node, reduction
    if isinstance(node, Unary):
        yield from _nodes(node.operand, reduction)
    elif isinstance(node, Binary):
        yield from _nodes(node.left, reduction)
        yield from _nodes(node.right, reduction)
    elif isinstance(node, Call):
        for a in node.args:
            yield from _nodes(a, reduction or (node if node.func.endswith("_t") else None))


def _outside(e: sp.Expr, kinds, inner: bool = False) -> list:
    """The subexpressions of ``e`` of the given kinds that are not inside a sum or product over the
    row (with ``inner``: the outermost sums and products themselves)."""
    out, stack = [], [e]
    while stack:
        a = stack.pop()
        if isinstance(a, (sp.Sum, sp.Product)):
            if inner:
                out.append(a)
            continue
        if not inner and isinstance(a, kinds):
            out.append(a)
        stack.extend(a.args)
    return out


def _reading(f: Formula, node, inside: bool, score, key=j, score2=None, params=None) -> sp.Expr:
    """SymPy's reading of a subterm at ``key``; inside a reduction, with t = key (every allowed
    key of the row is some key, so a condition demanded at every key covers every t)."""
    params = params or {}
    values = {p: params[p] if p in params else f.defaults[p] for p in f.params}
    run = _Symbolic(score, score2 if score2 is not None else (lambda k: Y[i, k]), key, values)
    run.var = key if inside else None
    return run.run(node)


def _kept(operand: sp.Expr, kind: str, whole: sp.Expr) -> bool:
    """Does the reading ``whole`` still have no value where ``operand`` makes the subterm undefined?"""
    if kind == "positive":
        return operand.is_positive is True or sp.log(operand) in _outside(whole, sp.log)
    powers = _outside(whole, sp.Pow)  # a power inside a sum over the row is there only for some keys
    for factor in sp.Mul.make_args(sp.factor_terms(operand)):
        even = factor.is_Pow and factor.exp.is_Integer and factor.exp % 2 == 0  # of a real value (scores are)
        if kind == "nonnegative" and (factor.is_nonnegative or even):
            continue
        if factor.is_Pow and factor.exp.is_Integer and factor.exp > 0:
            factor = factor.base
        if kind == "nonzero" and (factor.is_nonzero or factor.is_number and factor != 0):
            continue
        if kind == "nonnegative" and factor.is_nonnegative:
            continue
        if factor.is_number:
            return False
        if kind == "nonzero" and any(p.exp.is_negative and p.base in (factor, -factor) for p in powers):
            continue
        if kind == "nonnegative" and any(p.exp.is_Rational and p.exp.q % 2 == 0 and p.base == factor
                                         for p in powers):
            continue
        return False
    return True


def over(f: Formula | None, params: dict | None) -> Formula | None:
    """``f`` with the parameters ``params`` names as symbols (a spec's ``clipped(z, g)``: z and g
    with their declared signs) in place of the formula's own, so that what may have no value is
    judged over the domain the claims quantify over."""
    given = {p: v for p, v in (params or {}).items() if isinstance(v, sp.Symbol) and p in f.defaults} if f else {}
    if not given:
        return f
    return dataclasses.replace(f, defaults={**f.defaults, **given})


def why_no_proof(f: Formula | None, mask=None) -> str | None:
    """The reason no claim on the weights of ``f`` is proved, or None when its reading drops nothing.
    With the spec's ``mask``: a reduction over ``t <= i`` has a term on every row of a mask whose
    rows allow only keys up to i (causal, causal_window(W)): the row's allowed keys all have it."""
    from derive.model.masks import mask_side

    lost = dropped(f) if f is not None else ()
    if mask is not None and mask_side(mask) == "past":
        lost = tuple(d for d in lost if d.condition not in ("t <= i", "i >= t"))
    if not lost:
        return None
    more = f" (and {len(lost) - 1} more such subterm{'s' if len(lost) > 2 else ''})" if len(lost) > 1 else ""
    if lost[0].scored:
        return (f"the weight as written has no value where {lost[0].where} ({lost[0].text}){more}, but a proof "
                "about it may cancel that factor or hold only on the other rows; derive proves claims only about the "
                "weight as written, where it has a value")
    if lost[0].whole is not None:
        return (f"the weight as written has no value where {lost[0].where} ({lost[0].text}){more}, whatever the "
                "scores, but a proof that cancels that factor has one there; derive proves claims only about the "
                "weight as written")
    return (f"the weight as written has no value where {lost[0].where} ({lost[0].text}){more}, but the symbolic "
            "reading the proofs use drops that subterm and has a value there; derive proves claims only about the "
            "weight as written")


def domain(f: Formula | None, score, key=j, score2=None, params=None) -> list:
    """The guards (kind, expression) that keep a counterexample where ``f`` has a value at every
    allowed key, with scores ``score(k)``; a subterm whose domain cannot be stated gets a guard no
    instance satisfies (no counterexample is then certified)."""
    out = []
    for d in dropped(f) if f is not None else ():
        if d.kind is None:
            out.append(("positive", sp.S.NegativeOne))  # no instance is inside
            continue
        g = (d.kind, _reading(f, d.operand, d.inside, score, key, score2, params))
        if g not in out:
            out.append(g)
    return out


# ---- the formula as written -------------------------------------------------------------

_PREC = {"+": 10, "-": 10, "*": 20, "/": 20, "**": 40}


def text(node, outer: int = 0) -> str:
    """A node as the formula language writes it (parentheses only where needed)."""
    if isinstance(node, Num):
        return node.text
    if isinstance(node, Name):
        return node.id
    if isinstance(node, Unary):
        out = f"-{text(node.operand, 30)}"
        return f"({out})" if outer > 30 else out
    if isinstance(node, Call):
        return f"{node.func}({', '.join(text(a) for a in node.args)})"
    p = _PREC.get(node.op, 5)
    sep = f" {node.op} " if p <= 10 else node.op
    # a power is right-associative, and its exponent may be negative as written (x_j**-2)
    right = 0 if node.op == "**" and isinstance(node.right, Unary) else p if node.op == "**" else p + 1
    out = f"{text(node.left, p + 1 if node.op == '**' else p)}{sep}{text(node.right, right)}"
    return f"({out})" if p < outer else out
