"""Known faulty forms of a normalizer, as transformations of its weight formula.

Each :class:`Fault` names a bug seen in real implementations and is written once, as a rewrite
of the formula (:mod:`derive.impl.faults.rewrite`): the scores shifted by the row maximum while the
terms free of the scores are not (the unshifted +1), those terms dropped, an exponential's
argument multiplied by ln 2 or log₂e (exp/exp2 units), an extra logit multiplied by the score
scale, a bound of min/max or a tanh cap dropped, a parameter's sign flipped, the formula
evaluated straight in the dtype. From the rewritten formula come both the faulty row a
diagnosis compares with (its exact reference, or its evaluation in the dtype for a numerical
fault) and the symbolic derivation of :mod:`derive.impl.faults.derivations`; the words of the
explanation are read off the formula too (its extra terms, its extra logit). A fault applies to
every normalizer whose formula has the part it transforms and on which it changes a sample row:
a sink, a zero token, softpick and a spec's own normalizer alike. Where a fault of the kernel
forms is the same transformation of the extra logit (a fault of part ``logit`` of
:data:`derive.kernels.faults.FAULTS`), the row form uses that definition.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import mpmath
import sympy as sp

from derive.impl.faults import closed as closed_forms
from derive.impl.faults.rewrite import SCORES, exp_calls, extra_terms, formula_of, has_score, in_dtype, replace, show
from derive.kernels.faults import by_key as kernel_fault
from derive.normalizers.exact import Undecided
from derive.language.parser import Binary, Call, Name, Num, Unary, walk

__all__ = ["FAULTS", "Fault", "Parts", "parts", "pretty", "variants"]

LN2 = math.log(2.0)
LOG2E = 1.0 / LN2
M_, C_ = "__m", "__c"  # the stand-ins a rewrite adds: the shift m, a factor c
_D = (2, 4, 8, 16, 32, 64, 128, 256)
_FACTORS = {"ln 2": (LN2, sp.log(2)), "log₂e": (LOG2E, 1 / sp.log(2))}


def pretty(text: str, factor: str | None = None) -> str:
    """A formula of the language as the reports print it: − for -, m for the shift, the factor's
    own text (e.g. ln 2) for the stand-in c."""
    c = "c" if factor is None else (f"({factor})" if " " in factor or "/" in factor else factor)
    return text.replace(M_, "m").replace(C_, c).replace(" - ", " − ").replace("(-", "(−").replace("exp(-", "exp(−")


# ---- what a formula has -----------------------------------------------------------------------


@dataclass(frozen=True)
class Parts:
    """A normalizer's formula and the parts the faults transform, with the words they are told in."""

    entry: object
    node: object
    label: str  # the display name, e.g. softmax₁
    terms: tuple  # the terms free of the scores beside an exponential of the scores (extra_terms)
    logit: str | None  # the extra logit σ of the softmax family as text ("0", "s"), None without one

    def term_words(self) -> dict:
        shown = {pretty(show(tm)): _shifted_text(tm) for tm in self.terms}  # each term once, in order
        texts = list(shown)
        term = " and ".join(texts)
        shifted = " and ".join(shown.values())
        bare = all(isinstance(nd.args[0], Name) for nd in exp_calls(self.node, True))
        mmax = (f"max({self.logit}, max x)" if self.logit is not None else "max x") if bare else \
            "the largest exponent of the row"
        return {"name": self.label, "term": term or "0", "plus": (("+" + term) if len(texts) == 1 else term),
                "shifted": shifted, "mmax": mmax, "is": "are" if len(texts) > 1 else "is",
                "only": " only" if self.terms else "", "logit": self.logit or "s"}


def _shifted_text(tm) -> str:
    if isinstance(tm, Call) and tm.func == "exp":
        return pretty(f"exp({show(tm.args[0])} - m)")
    if isinstance(tm, Num) and tm.text == "1":
        return "exp(−m)"
    return pretty(f"{show(tm, 20)} * exp(-m)")


@lru_cache(maxsize=256)
def _parts(name: str, formula: str) -> Parts:
    from derive.normalizers.family import recognise
    from derive.normalizers.registry import get

    entry = get(name)
    node = entry.definition_of.node
    fam, _ = recognise(entry)
    logit = None
    if fam is not None and fam.logit is not None:
        logit = "0" if fam.logit == 0 else sp.sstr(fam.logit)
    return Parts(entry, node, entry.label, tuple(extra_terms(node)), logit)


def parts(name: str) -> Parts | None:
    from derive.normalizers.registry import get

    entry = get(name)
    if entry.definition_of is None:
        return None
    return _parts(name, entry.formula)


# ---- the rewrites -----------------------------------------------------------------------------


def _shift_scores(node):
    return replace(node, lambda nd: Binary("-", nd, Name(M_, 0), 0) if isinstance(nd, Name) and nd.id in SCORES
                   else None)


def _stable(p: Parts):
    """Every exponent and every term free of the scores shifted by m: the overflow-free form (the
    fix), equal to the definition for every m (numerator and denominator both times e^−m)."""
    terms, exps = list(p.terms), [nd for nd in exp_calls(p.node, True) if nd.func == "exp"]

    def fn(nd):
        if nd in terms:
            if isinstance(nd, Call) and nd.func == "exp":
                return Call("exp", (Binary("-", nd.args[0], Name(M_, 0), 0),), 0)
            if isinstance(nd, Num) and nd.text == "1":
                return Call("exp", (Unary("-", Name(M_, 0), 0),), 0)
            return Binary("*", nd, Call("exp", (Unary("-", Name(M_, 0), 0),), 0), 0)
        if nd in exps:
            return Call("exp", (Binary("-", nd.args[0], Name(M_, 0), 0),), nd.col)
        return None

    return replace(p.node, fn)


def _drop_terms(p: Parts, f):
    terms = list(p.terms)

    def fn(nd):
        if isinstance(nd, Binary) and nd.op in "+-":
            if nd.right in terms:
                return replace(nd.left, fn)
            if nd.left in terms:
                rest = replace(nd.right, fn)
                return rest if nd.op == "+" else Unary("-", rest, 0)
        return None

    return replace(p.node, fn)


def _bare_sums(node) -> list:
    return [nd.right for nd in walk(node) if isinstance(nd, Binary) and nd.op == "/" and isinstance(nd.right, Call)
            and nd.right.func == "sum_t" and has_score(nd.right)]


def _add_one(p: Parts, f):
    sums = _bare_sums(p.node)
    return replace(p.node, lambda nd: Binary("+", Num("1", 0), nd, 0) if nd in sums else None)


class _Logit:
    """A tree node that Python arithmetic builds on, so that the kernel forms' definition of a
    fault of the extra logit (a function of s, m, K, c and log) rewrites a formula's logit too."""

    def __init__(self, node):
        self.node = node

    def _op(self, op, other, swap=False):
        other = other.node if isinstance(other, _Logit) else (Num(repr(other), 0) if not isinstance(other, Name)
                                                               else other)
        a, b = (other, self.node) if swap else (self.node, other)
        return _Logit(Binary(op, a, b, 0))

    def __mul__(self, o):
        return self._op("*", o)

    def __rmul__(self, o):
        return self._op("*", o, True)

    def __add__(self, o):
        return self._op("+", o)

    def __radd__(self, o):
        return self._op("+", o, True)


def _logit_rewrite(key: str):
    """The extra logits (the arguments of exponentials free of the scores) rewritten by the kernel
    fault ``key`` of :data:`~derive.kernels.faults.FAULTS` (a fault of its part ``logit``), with the
    factor c a stand-in."""

    def rewrite(p: Parts, f):
        calls = exp_calls(p.node, of_scores=False)

        def fn(nd):
            if nd in calls:
                s = kernel_fault(key).rewrite(_Logit(nd.args[0]), _Logit(Name(M_, 0)), 1, _Logit(Name(C_, 0)),
                                             lambda a: _Logit(Call("log", (Num(repr(a), 0),), 0)))
                return Call(nd.func, (s.node,), nd.col)
            return None

        return replace(p.node, fn)

    return rewrite


def _scale_exponents(p: Parts, f):
    calls = exp_calls(p.node, of_scores=True)
    return replace(p.node, lambda nd: Call(nd.func, (Binary("*", Name(C_, 0), nd.args[0], 0),), nd.col)
                   if nd in calls else None)


def _flip_sign(p: Parts, f):
    """Every occurrence of the parameter ``f["param"]`` negated: −q where the definition has q
    (a + q written a − q, a − q written a + q)."""
    q = f["param"]

    def fn(nd):
        if isinstance(nd, Binary) and nd.op in "+-" and isinstance(nd.right, Name) and nd.right.id == q:
            return Binary("-" if nd.op == "+" else "+", replace(nd.left, fn), nd.right, nd.col)
        return Unary("-", nd, nd.col) if isinstance(nd, Name) and nd.id == q else None

    return replace(p.node, fn)


def _sigmoid_ratio(p: Parts, f):
    return replace(p.node, lambda nd: Binary("/", Call("exp", nd.args, 0), Binary("+", Num("1", 0), Call(
        "exp", nd.args, 0), 0), 0) if isinstance(nd, Call) and nd.func == "sigmoid" else None)


def _to_t(node):
    return replace(node, lambda nd: Name(nd.id[0] + "_t", nd.col) if isinstance(nd, Name) and nd.id in ("x_j", "y_j")
                   else None)


_REDUCTIONS = ("sum_t", "prod_t", "max_t", "min_t")


def _elementwise(node) -> bool:
    """The formula is one function of an expression of the key's own score (no reduction over
    the row): an elementwise weight, e.g. sigmoid(x_j + b)."""
    return (isinstance(node, Call) and len(node.args) == 1 and node.func not in _REDUCTIONS
            and has_score(node.args[0]))


def _softmax_of_argument(p: Parts, f):
    z = p.node.args[0]
    return Binary("/", Call("exp", (z,), 0), Call("sum_t", (Call("exp", (_to_t(z),), 0),), 0), 0)


def _bounds(node) -> list[tuple[str, str]]:
    """(min or max, the bound) of each min(A, E) / max(A, E) in ``node`` with A free of the scores
    and E with one (a bound A on E), each once."""
    out = []
    for nd in walk(node):
        if isinstance(nd, Call) and nd.func in ("min", "max") and len(nd.args) == 2:
            for bound, e in ((nd.args[0], nd.args[1]), (nd.args[1], nd.args[0])):
                if not has_score(bound) and has_score(e) and (nd.func, show(bound)) not in out:
                    out.append((nd.func, show(bound)))
    return out


def _drop_bound(p: Parts, f):
    """Each ``func(bound, E)`` with the bound of the fields replaced by E: the bound left out."""

    def fn(nd):
        if isinstance(nd, Call) and nd.func == f["func"] and len(nd.args) == 2:
            for bound, e in ((nd.args[0], nd.args[1]), (nd.args[1], nd.args[0])):
                if show(bound) == f["bound"] and has_score(e):
                    return replace(e, fn)
        return None

    return replace(p.node, fn)


def _inner(p: Parts, f):
    from derive.normalizers.registry import get

    return get(p.entry.inner).definition_of.node


def _cap(node):
    """(C, E) of a tanh cap C*tanh(E/C) (or tanh(E/C)*C) of an expression E with a score, or None."""
    if isinstance(node, Binary) and node.op == "*":
        for c, t in ((node.left, node.right), (node.right, node.left)):
            if isinstance(t, Call) and t.func == "tanh":
                arg = t.args[0]
                if isinstance(arg, Binary) and arg.op == "/" and show(arg.right) == show(c) and has_score(arg.left):
                    return c, arg.left
    return None


def _uncapped(p: Parts, f):
    def fn(nd):
        cap = _cap(nd)
        if cap is None:
            return None
        c, e = cap
        if f.get("inside") is None:
            return e
        if f["inside"]:
            return Call("tanh", (Binary("/", e, c, 0),), 0)
        return Binary("*", c, Call("tanh", (e,), 0), 0)

    return replace(p.node, fn)


# ---- the faults -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """``rewrite(parts, fields)`` → the tree of the faulty formula; ``numeric``: how its row is
    computed — ``exact`` (the rewritten formula at high precision), ``dtype`` (evaluated straight
    in the implementation's dtype: a numerical fault, the same in exact arithmetic),
    ``masked-nan`` (the definition, NaN on a fully masked row) or ``mask-entered`` (a masked
    key enters the formula with score −∞). ``forms(parts)`` → the variants where it applies
    (fields for the words and the stand-ins). ``closed``: the closed form its derivation names
    (:mod:`derive.impl.faults.closed`); None: a registered normalizer it equals, or the written
    formula itself."""

    name: str
    title: str
    explanation: str
    fix: str
    forms: Callable
    rewrite: Callable | None = None
    numeric: str = "exact"
    closed: Callable | None = None  # (parts, fields, syms, c) → (form, label): derive.impl.faults.closed
    fix_form: bool = False  # the fix is the overflow-free form (every term shifted by m), proved


def _largest_exponents() -> str:
    """ln of the largest finite number of each float dtype: where exp overflows."""
    from derive.floats import FORMATS

    return ", ".join(f"about {math.log(FORMATS[dt].max):.1f} in {dt}" for dt in ("float64", "float32", "float16"))


_LARGEST_EXPONENT = _largest_exponents()


def _when(cond) -> Callable:
    return lambda p: [{}] if cond(p) else []


def _scale_forms(p: Parts) -> list[dict]:
    if not exp_calls(p.node, of_scores=False):
        return []
    return ([{"factor": 1 / math.sqrt(d), "d": d, "power": -1, "how": "/√d", "c": f"1/√{d}"} for d in _D]
            + [{"factor": math.sqrt(d), "d": d, "power": 1, "how": "·√d", "c": f"√{d}"} for d in _D])


_WHY = {("sink logit", "ln 2"): "exp2(s) was used where exp(s) = exp2(s·log₂e) was meant",
        ("sink logit", "log₂e"): "the extra logit was converted to base-2 units (s·log₂e) but then passed to exp",
        ("scores", "ln 2"): "exp2(x) was used where exp(x) = exp2(x·log₂e) was meant",
        ("scores", "log₂e"): "the scores were converted to base-2 units (x·log₂e) but then passed to exp"}


def _exp2_forms(p: Parts) -> list[dict]:
    out = []
    for where, of_scores in (("sink logit", False), ("scores", True)):
        if not exp_calls(p.node, of_scores):
            continue
        only = " only" if (p.terms if of_scores else exp_calls(p.node, True)) else ""
        for c in ("ln 2", "log₂e"):
            out.append({"where": where, "c": c, "factor": _FACTORS[c][0], "only": only, "why": _WHY[where, c],
                        "key": "missing_log2e" if where == "sink logit" and c == "ln 2" else "scale_on_extra"})
    return out


def _exp2_rewrite(p: Parts, f):
    if f["where"] == "sink logit":
        return _logit_rewrite(f["key"])(p, f)
    return _scale_exponents(p, f)


def _param_forms(p: Parts) -> list[dict]:
    """One variant per scalar parameter the formula has, in the entry's order."""
    seen = {nd.id for nd in walk(p.node) if isinstance(nd, Name)}
    return [{"param": q} for q in p.entry.params if q in seen]


_BOUND_WORDS = {"max": "a value below {bound} is not raised to {bound}",
                "min": "a value above {bound} is not lowered to {bound}"}


def _bound_forms(p: Parts) -> list[dict]:
    return [{"func": fn, "bound": b, "effect": _BOUND_WORDS[fn].format(bound=b)} for fn, b in _bounds(p.node)]


def _caps(p: Parts) -> list:
    return [cap for cap in (_cap(nd) for nd in walk(p.node)) if cap is not None]


FAULTS: tuple[Fault, ...] = (
    Fault("unshifted-extra-term",
          "unshifted {plus}: the row maximum is subtracted from the scores but not from the {term}",
          "It subtracts the row maximum m = max x from every score for stability, but leaves the {term} "
          "unshifted. So it computes {name}(x − max x), not {name}(x). Shifting all scores by a constant leaves "
          "x − max x, and so this result, unchanged, while {name}(x) changes ({name} is not shift-invariant).",
          "Shift the {term} too: use {shifted} in place of {term}{guard}.",
          lambda p: [{}, {"guarded": True}] if p.terms else [],  # NaN on a fully masked row, or m taken as 0
          lambda p, f: _shift_scores(p.node), closed=closed_forms.shift, fix_form=True),
    Fault("extra-terms-dropped", "{closed} where {name} was meant: the {term} {is} missing",
          "It computes {closed}: the {term} of the definition {is} missing, so {effect}.",
          "Add the {term} back: {definition}.",
          _when(lambda p: bool(p.terms)), _drop_terms),
    Fault("extra-one-added", "{closed} where {name} was meant: an extra 1 in the denominator",
          "It adds 1 (exp(0), an implicit zero logit) to the denominator, so {effect}.",
          "Drop the extra 1 (or the zero key/logit) from the denominator.",
          lambda p: [{}] if _bare_sums(p.node) else [], _add_one),
    Fault("extra-logit-scaled", "the extra logit is scaled inconsistently with the scores ({logit}{how} with d = {d})",
          "The extra logit enters multiplied by {c}: it was scaled by 1/√d (or not) differently from the scores it "
          "competes with, so its weights are those of {name} with the extra logit multiplied by {c}.",
          "Scale the extra logit exactly as the scores: apply 1/√d to q·kᵀ and concatenate the sink logit on the "
          "same side of that scaling everywhere (training and inference).",
          _scale_forms, _logit_rewrite("scale_on_extra"), closed=closed_forms.logit),
    Fault("exp2-units", "exp/exp2 unit mix-up: a factor {c} on the {where}{only}",
          "It mixes exp and exp2 units: a factor {c} appears on the {where}{only} ({why}). Its weights are those "
          "of the definition with the {where} multiplied by {c}.",
          "Use one unit everywhere: either exp(·) on every term, or exp2(· · log₂e) on every term (scores, maximum "
          "and extra logit alike).",
          _exp2_forms, _exp2_rewrite, closed=closed_forms.units),
    Fault("all-masked-nan", "NaN on a fully masked row, where {name} is 0",
          "On a row whose every score is masked (−∞) it returns NaN, but {name} of such a row is exactly 0{takes}. "
          "The NaN comes from m = max x = −∞, so x − m = −∞ − (−∞) = NaN.",
          "{guard_fix}",
          lambda p: [{}] if _masked_defined(p) else [], numeric="masked-nan"),
    Fault("no-max-subtraction", "no max subtraction: exp overflows for large scores",
          "It evaluates the definition directly, without subtracting the row maximum: it is exact in exact "
          "arithmetic, but exp(x) overflows to inf once a score exceeds the largest exponent of the dtype ("
          + _LARGEST_EXPONENT + "), and inf/inf gives NaN (a row of very negative scores may also underflow to 0/0).",
          "Subtract m = {mmax} from every exponent{including}: {stable}.",
          _when(lambda p: bool(exp_calls(p.node, True)) and any(
              isinstance(nd, Call) and nd.func == "exp" for nd in exp_calls(p.node, True))),
          lambda p, f: p.node, numeric="dtype", fix_form=True),
    Fault("param-sign-flipped", "the sign of {param} is flipped: −{param} where the definition has {param}",
          "It uses −{param} where the definition has {param} (e.g. a bias subtracted where it is added), so it "
          "computes {name} at {param} → −{param}; the two agree only where {param} and −{param} give the same "
          "weights (e.g. {param} = 0).",
          "Use {param} with the sign of the definition: {definition}.",
          _param_forms, _flip_sign, closed=closed_forms.sign),
    Fault("softmax-for-elementwise", "softmax across the row where an elementwise {func} was meant",
          "It normalizes across the row (softmax of the argument of {func}), so the weights sum to 1 and depend "
          "on the other keys; {name} weighs each key on its own.",
          "Apply {func} to each score separately, with no sum over the row: {definition}.",
          lambda p: [{"func": p.node.func}] if _elementwise(p.node) else [], _softmax_of_argument),
    Fault("exp-ratio-overflow", "σ computed as exp(z) / (1 + exp(z)): it overflows for large scores",
          "exp(z)/(1 + exp(z)) equals σ(z) in exact arithmetic, but exp(z) overflows to inf once z exceeds the "
          "largest exponent of the dtype (" + _LARGEST_EXPONENT + "), and inf/inf gives NaN.",
          "Use 1 / (1 + exp(−z)) for z ≥ 0 and exp(z) / (1 + exp(z)) for z < 0 (e.g. torch.sigmoid).",
          _when(lambda p: any(isinstance(nd, Call) and nd.func == "sigmoid" for nd in walk(p.node))),
          _sigmoid_ratio, numeric="dtype"),
    Fault("bound-dropped", "a bound is dropped: no {func}({bound}, ·)",
          "It leaves out the bound {func}({bound}, ·) of the definition, so {effect}.",
          "Apply the bound as the definition does: {definition}.",
          _bound_forms, _drop_bound),
    Fault("outer-function-dropped", "plain {closed}: the outer function of {name} is missing",
          "It returns {closed} itself, the inner normalizer of {name}, without the function applied to it; {name} "
          "is {definition}.",
          "Apply the outer function: {definition}.",
          _when(lambda p: p.entry.inner is not None), _inner),
    Fault("tanh-cap-dropped", "plain {closed}: the tanh cap {cap}·tanh(x/{cap}) is missing",
          "It applies the rest of the formula to the raw scores, so large scores are not capped.",
          "Cap first: {definition}.",
          lambda p: [{"cap": show(_caps(p)[0][0])}] if _caps(p) else [], _uncapped),
    Fault("tanh-cap-misscaled", "the tanh cap is mis-scaled: {what}",
          "It computes {what_long} instead of {cap}·tanh(x/{cap}): {effect}.",
          "Use {cap}·tanh(x/{cap}): divide by {cap} inside tanh and multiply by {cap} outside.",
          lambda p: [] if not _caps(p) else [
              {"inside": True, "cap": (c := show(_caps(p)[0][0])), "what": f"tanh(x/{c}) without the factor {c}",
               "what_long": f"tanh(x/{c})", "effect": f"the capped scores lie in (−1, 1), not (−{c}, {c})"},
              {"inside": False, "cap": c, "what": f"{c}·tanh(x) without dividing by {c}", "what_long": f"{c}·tanh(x)",
               "effect": f"x is not divided by {c} before tanh, so the scores saturate at ±{c} on the scale 1 of x, "
                         f"not on the scale {c}"}],
          _uncapped),
    Fault("mask-inside-formula", "the mask is applied before the formula: a masked key enters it with score −∞",
          "A masked score −∞ goes through the formula as a key of its own ({written} with the masked keys "
          "included), so a masked key changes the other keys' weights.",
          "Leave masked keys out of the formula: apply the mask to its result (masked_fill with −∞ after the "
          "score transformation, or drop the masked keys from every sum).",
          _when(lambda p: True), numeric="mask-entered"),
)
BY_NAME = {f.name: f for f in FAULTS}
assert len(BY_NAME) == len(FAULTS), "two row faults share a name"


def _masked_defined(p: Parts) -> bool:
    from derive.impl.exact.masked import rule

    return rule(p.entry).defined


# ---- the faulty row -----------------------------------------------------------------------------


@lru_cache(maxsize=512)
def faulty_formula(name: str, formula: str, fault: str, fields: tuple):
    """The compiled formula of ``fault`` applied to normalizer ``name`` (None: the definition)."""
    p = _parts(name, formula)
    f = BY_NAME[fault]
    if f.rewrite is None:
        return None
    return formula_of(f.rewrite(p, dict(fields)), p.entry.definition_of, (M_, C_))


def faulty_row(name: str, fault: str, fields: tuple, row, params: dict, dtype: str, dps: int = 60) -> list[float]:
    """The row ``fault`` computes for scores ``row`` (−∞ = masked) and ``params``: NaN where 0/0."""
    from derive.normalizers.registry import get

    entry = get(name)
    f, fd = BY_NAME[fault], dict(fields)
    allowed = [v != -math.inf for v in row]
    xs = [v if ok else 0.0 for v, ok in zip(row, allowed)]
    vals = {k: v for k, v in params.items() if k in entry.params}
    if f.numeric == "dtype":
        node = faulty_formula(name, entry.formula, fault, fields).node
        return in_dtype(node, row, vals, dtype)
    with mpmath.workdps(dps):
        if f.numeric == "masked-nan":
            if row and not any(allowed):
                return [math.nan] * len(row)
            return [float(v) for v in entry.reference(xs, mask=allowed, **vals)]
        if f.numeric == "mask-entered":
            return [float(v) for v in entry.definition_of.reference([mpmath.mpf(v) for v in row], None, **vals)]
        form = faulty_formula(name, entry.formula, fault, fields)
        finite = [v for v in row if v != -math.inf]
        m = max(finite) if finite else (0.0 if fd.get("guarded") else None)
        if m is None and fault == "unshifted-extra-term":
            return [math.nan] * len(row)  # x − m = −∞ − (−∞)
        out = form.reference(xs, allowed, **{**vals, M_: m or 0.0, C_: fd.get("factor", 1.0)})
        return [float(v) for v in out]


def variants(name: str):
    """(fault, fields, evaluate(row, params, dtype)) for every faulty form that applies to
    normalizer ``name``: its formula has the part the fault transforms, and the fault changes
    one of the sample rows."""
    p = parts(name)
    if p is None:
        return
    for fault in FAULTS:
        for fields in _applies(name, p.entry.formula, fault.name):
            def evaluate(row, params, dtype, fault=fault, fields=fields):
                return faulty_row(name, fault.name, fields, list(row), params, dtype)

            yield fault, dict(fields), evaluate


_SAMPLE_ROWS = ((1.0, 0.0), (2.0, -1.0, 0.5), (-3.0, 0.25), (0.5, -math.inf, 1.5), (-math.inf, -math.inf))
_DTYPE_ROWS = ((100.0, 0.0), (1000.0, -1.0), (20.0, 0.0))


@lru_cache(maxsize=512)
def _applies(name: str, formula: str, fault: str) -> list[tuple]:
    """The variants of ``fault`` that change a sample row of ``name`` (two parameter sets)."""
    from derive.normalizers.registry import get

    p = _parts(name, formula)
    entry = get(name)
    base = {q: float(entry.sample.get(q, 0.5)) for q in entry.params}
    sets = [base, {q: 2 * v or 0.75 for q, v in base.items()}]  # off the sample and 0: c = 1, ζ = 1 hide faults
    f = BY_NAME[fault]
    return [key for key in (tuple(sorted(fields.items())) for fields in f.forms(p))
            if _changes(entry, fault, key, sets, f.numeric)]


def _changes(entry, fault, key, sets, numeric) -> bool:
    from derive.impl.exact.reference import exact_row

    rows = _DTYPE_ROWS if numeric == "dtype" else _SAMPLE_ROWS
    dtypes = ("float32", "float16") if numeric == "dtype" else ("float64",)
    for params in sets:
        for row in rows:
            ex = exact_row(entry, list(row), params, 30)
            if ex.undecided:
                continue
            for dt in dtypes:
                try:
                    got = faulty_row(entry.name, fault, key, list(row), params, dt, 30)
                except Undecided:  # no enclosure of the faulty row: this row shows no change
                    continue
                for a, b in zip(got, ex.floats()):
                    if (math.isnan(a) != math.isnan(b)) or (not math.isnan(a) and abs(a - b) > 1e-9 * (1 + abs(b))):
                        return True
    return False
