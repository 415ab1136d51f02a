"""Known faulty forms of the softmax family, as data.

Each entry names a bug seen in real implementations, gives its formula (evaluated
exactly with mpmath, or in the implementation's dtype where the fault is numerical) and
the explanation and fix a reviewer can act on. The softmax family is written with a sink
term: p_k = exp(x_k) / (exp(s) + Σ_j exp(x_j)), with no sink term for softmax, s = 0 for
softmax₁ and s the parameter for ``sink``; :data:`SINKS` says which normalizer is which.
The other registered normalizers (sigmoid, clipped, softcap) have their own forms in
:data:`OTHER_FAULTS`, with the same fields; a normalizer in neither table has no known
faulty forms (diagnosis then describes the error pattern instead).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import mpmath
import numpy as np

__all__ = ["FAULTS", "SINKS", "FaultyForm", "sink_of", "sink_row", "variants"]

LN2 = math.log(2.0)
LOG2E = 1.0 / LN2

def sink_spec(name: str):
    """(known, the sink term of normalizer ``name``: None for no term, a number, or a parameter
    name), read off its formula: every normalizer of the softmax family whose extra logit is a
    number or one parameter (zero_token's extra key scores 0, bias_kv's scores s*)."""
    import sympy as sp

    from derive.normalizers.family import recognise
    from derive.normalizers.registry import get

    entry = get(name)
    fam, _ = recognise(entry)
    if fam is None:
        return False, None
    logit = fam.logit
    if logit is None:
        return True, None
    if logit.is_number:
        return True, float(logit)
    if isinstance(logit, sp.Symbol) and logit.name in entry.params:
        return True, logit.name
    return False, None


class _Sinks:
    """normalizer name → its sink term (see :func:`sink_spec`), for every registered entry."""

    def __contains__(self, name) -> bool:
        from derive.normalizers.registry import REGISTRY, USER

        return (name in REGISTRY or name in USER) and sink_spec(name)[0]

    def __getitem__(self, name):
        known, s = sink_spec(name)
        if not known:
            raise KeyError(name)
        return s

    def get(self, name, default=None):
        return self[name] if name in self else default


SINKS = _Sinks()


def sink_of(name: str, params: dict):
    """(known, sink value or None) for normalizer ``name``."""
    if name not in SINKS:
        return False, None
    s = SINKS[name]
    return True, (params[s] if isinstance(s, str) else s)


def _allowed(row):
    return [v != -math.inf for v in row]


def sink_row(row, sink, scale=1.0, dps=60) -> list[float]:
    """exp(scale·x_k) / (exp(sink) + Σ exp(scale·x_j)) exactly; NaN where 0/0."""
    with mpmath.workdps(dps):
        e = [mpmath.exp(mpmath.mpf(scale) * mpmath.mpf(v)) if ok else mpmath.mpf(0)
             for v, ok in zip(row, _allowed(row))]
        den = mpmath.fsum(e) + (mpmath.exp(mpmath.mpf(sink)) if sink is not None else 0)
        return [float(v / den) if den != 0 else math.nan for v in e]


def _unshifted(row, sink, dtype, guarded=False, **_):
    finite = [v for v in row if v != -math.inf]
    if not finite:  # x − m = −inf − (−inf), unless m is replaced by 0 there
        return sink_row(row, sink) if guarded else [math.nan] * len(row)
    m = max(finite)
    return sink_row([v - m for v in row], sink)


def _plain(row, sink, dtype, **_):
    return sink_row(row, None)


def _with_one(row, sink, dtype, **_):
    return sink_row(row, 0.0)


def _sink_scaled(row, sink, dtype, factor, **_):
    return sink_row(row, sink * factor)


def _scores_scaled(row, sink, dtype, factor, **_):
    return sink_row(row, sink, scale=factor)


def _naive(row, sink, dtype, **_):
    if dtype == "bfloat16":
        import torch

        x = torch.tensor(row, dtype=torch.bfloat16)
        e = torch.exp(x)
        den = e.sum() + (torch.exp(torch.tensor(sink, dtype=torch.bfloat16)) if sink is not None else 0)
        return (e / den).to(torch.float64).tolist()
    with np.errstate(all="ignore"):
        x = np.asarray(row, dtype=dtype)
        e = np.exp(x)
        den = e.sum(dtype=dtype)
        if sink is not None:
            den = den + np.exp(np.asarray(sink, dtype=dtype))
        return (e / den).astype(np.float64).tolist()


def _nan_when_all_masked(row, sink, dtype, **_):
    if all(v == -math.inf for v in row):
        return [math.nan] * len(row)
    return sink_row(row, sink)


@dataclass(frozen=True)
class FaultyForm:
    name: str
    title: str
    needs_sink: bool | None  # True: only with a sink term; False: only without; None: any
    formula: str
    form: Callable[..., list[float]]
    explanation: str
    fix: str
    variants: tuple[dict, ...] = ({},)


_D = (2, 4, 8, 16, 32, 64, 128, 256)

FAULTS: tuple[FaultyForm, ...] = (
    FaultyForm(
        "unshifted-sink-term",
        "unshifted +1: the row maximum is subtracted from the scores but not from the {term}",
        True,
        "exp(x_k − m) / ({term} + Σ_j exp(x_j − m)),  m = max x",
        _unshifted,
        "It subtracts the row maximum m = max x from every score for stability, but adds the "
        "{term} to the denominator unshifted. So it computes {name}(x − max x), not {name}(x). "
        "Shifting all scores by a constant leaves x − max x, and so this result, unchanged, while "
        "{name}(x) changes ({name} is not shift-invariant); and since the largest score contributes "
        "exp(0) = 1, its weights always sum to at least {floor}.",
        "Shift the {term} too: use {shifted} in place of {term} (and take m = {mmax} "
        "so that an all-masked row stays finite).",
        ({}, {"guarded": True}),  # NaN on a fully masked row, or m taken as 0 there
    ),
    FaultyForm(
        "softmax-for-softmax1",
        "plain softmax where {name} was meant: the {term} is missing from the denominator",
        True,
        "exp(x_k) / Σ_j exp(x_j)",
        _plain,
        "It computes plain softmax: the denominator has no {term}, so the weights always sum to 1 "
        "and the row cannot put weight on the sink (attend to nothing).",
        "Add the {term} to the denominator: exp(x_k − m) / ({shifted} + Σ_j exp(x_j − m)).",
    ),
    FaultyForm(
        "softmax1-for-softmax",
        "softmax₁ where plain softmax was meant: an extra 1 in the denominator",
        False,
        "exp(x_k) / (1 + Σ_j exp(x_j))",
        _with_one,
        "It adds 1 (exp(0), an implicit zero logit) to the denominator, as softmax₁ does, so its "
        "weights sum to less than 1.",
        "Drop the extra 1 (or the zero key/logit) from the denominator.",
    ),
    FaultyForm(
        "sink-scaled",
        "the sink logit is scaled inconsistently with the scores ({how})",
        True,
        "exp(x_k) / (exp(c·s) + Σ_j exp(x_j)),  c = {c}",
        _sink_scaled,
        "The sink logit enters as {how}: it was scaled by 1/√d (or not) differently from the scores "
        "it competes with, so the sink's weight is wrong whenever s ≠ 0.",
        "Scale the sink logit exactly as the scores: apply 1/√d to q·kᵀ and concatenate the sink "
        "logit on the same side of that scaling everywhere (training and inference).",
        tuple({"factor": 1 / math.sqrt(d), "d": d, "power": -1, "how": f"s/√d with d = {d}",
               "c": f"1/√{d}"} for d in _D)
        + tuple({"factor": math.sqrt(d), "d": d, "power": 1, "how": f"s·√d with d = {d}",
                 "c": f"√{d}"} for d in _D),
    ),
    FaultyForm(
        "exp2-units",
        "exp/exp2 unit mix-up: a factor {c} on the {where}{only}",
        None,
        "the {where} multiplied by {c} inside exp",
        lambda row, sink, dtype, where, factor, **_: (
            _sink_scaled(row, sink, dtype, factor) if where == "sink logit"
            else _scores_scaled(row, sink, dtype, factor)),
        "It mixes exp and exp2 units: a factor {c} appears on the {where}{only} ({why}). Its "
        "weights are those of the definition with the {where} multiplied by {c}.",
        "Use one unit everywhere: either exp(·) on every term, or exp2(· · log₂e) on every term "
        "(scores, maximum and sink alike).",
        (
            {"where": "sink logit", "factor": LN2, "c": "ln 2",
             "why": "exp2(s) was used where exp(s) = exp2(s·log₂e) was meant"},
            {"where": "sink logit", "factor": LOG2E, "c": "log₂e",
             "why": "the sink was converted to base-2 units (s·log₂e) but then passed to exp"},
            {"where": "scores", "factor": LN2, "c": "ln 2",
             "why": "exp2(x) was used where exp(x) = exp2(x·log₂e) was meant"},
            {"where": "scores", "factor": LOG2E, "c": "log₂e",
             "why": "the scores were converted to base-2 units (x·log₂e) but then passed to exp"},
        ),
    ),
    FaultyForm(
        "all-masked-nan",
        "NaN on a fully masked row, where {name} is 0",
        True,
        "NaN when every x_j = −∞, else {name}(x)",
        _nan_when_all_masked,
        "On a row whose every score is masked (−∞) it returns NaN, but {name} of such a row is "
        "exactly 0: the sink takes all the weight. The NaN comes from m = max x = −∞, so "
        "x − m = −∞ − (−∞) = NaN.",
        "Take m = {mmax}, which is finite even when every score is −∞.",
    ),
    FaultyForm(
        "no-max-subtraction",
        "no max subtraction: exp overflows for large scores",
        None,
        "exp(x_k) / ({plus}Σ_j exp(x_j)) evaluated directly in the dtype",
        _naive,
        "It evaluates the definition directly, without subtracting the row maximum: it is exact "
        "in exact arithmetic, but exp(x) overflows to inf once a score exceeds the largest "
        "exponent of the dtype (about 709.8 in float64, 88.7 in float32, 11.1 in float16), and "
        "inf/inf gives NaN (for softmax, a row of very negative scores also underflows to 0/0).",
        "Subtract m = {mmax} from every exponent{including}: "
        "exp(x_k − m) / ({plus_shifted}Σ_j exp(x_j − m)).",
    ),
)


# ---- sigmoid, clipped and soft-capped softmax ----------------------------------------------


def _mp_softmax(row) -> list:
    """softmax of ``row`` (−∞ = masked) as mpf; NaN where 0/0."""
    allowed = _allowed(row)
    e = [mpmath.exp(mpmath.mpf(v)) if ok else mpmath.mpf(0) for v, ok in zip(row, allowed)]
    den = mpmath.fsum(e)
    return [v / den if den != 0 else mpmath.nan for v in e]


def _sigmoid_shifted(row, params, dtype, sign, **_):
    with mpmath.workdps(60):
        b = mpmath.mpf(params["b"]) * sign
        return [0.0 if v == -math.inf else float(1 / (1 + mpmath.exp(-(mpmath.mpf(v) + b)))) for v in row]


def _softmax_plain(row, params, dtype, **_):
    with mpmath.workdps(60):
        return [float(v) for v in _mp_softmax(row)]


def _sigmoid_exp_ratio(row, params, dtype, **_):
    """exp(z)/(1 + exp(z)) in the dtype: inf/inf = NaN once exp overflows."""
    if dtype == "bfloat16":
        import torch

        z = torch.tensor(row, dtype=torch.bfloat16) + torch.tensor(params["b"], dtype=torch.bfloat16)
        e = torch.exp(z)
        return (e / (1 + e)).to(torch.float64).tolist()
    with np.errstate(all="ignore"):
        z = np.asarray(row, dtype=dtype) + np.asarray(params["b"], dtype=dtype)
        e = np.exp(z)
        return (e / (np.asarray(1, dtype=dtype) + e)).astype(np.float64).tolist()


def _clipped_one_sided(row, params, dtype, side, **_):
    with mpmath.workdps(60):
        zeta, gamma = mpmath.mpf(params["zeta"]), mpmath.mpf(params["gamma"])
        out = []
        for v, p in zip(row, _mp_softmax(row)):
            z = (zeta - gamma) * p + gamma
            z = min(mpmath.mpf(1), z) if side == "lower" else max(mpmath.mpf(0), z)
            out.append(0.0 if v == -math.inf else float(z))
        return out


def _softcap_variant(row, params, dtype, inside, outside, **_):
    with mpmath.workdps(60):
        c = mpmath.mpf(params["c"])
        capped = [(c if outside else 1) * mpmath.tanh(mpmath.mpf(v) / (c if inside else 1))
                  if v != -math.inf else -math.inf for v in row]
        return [float(v) for v in _mp_softmax(capped)]


def _softcap_caps_mask(row, params, dtype, **_):
    with mpmath.workdps(60):
        c = mpmath.mpf(params["c"])
        capped = [c * mpmath.tanh(mpmath.mpf(v) / c) if v != -math.inf else -c for v in row]
        return [float(v) for v in _mp_softmax(capped)]


OTHER_FAULTS: dict[str, tuple[FaultyForm, ...]] = {
    "sigmoid": (
        FaultyForm(
            "sigmoid-bias-sign", "the bias enters with the wrong sign: σ(x − b) for σ(x + b)", None,
            "1 / (1 + exp(−(x_k − b)))", _sigmoid_shifted,
            "It subtracts the bias b where the definition adds it, so every weight is σ at a score "
            "shifted by 2b; it is right only when b = 0.",
            "Use σ(x + b) = 1 / (1 + exp(−(x + b))).",
            ({"sign": -1},),
        ),
        FaultyForm(
            "softmax-for-sigmoid", "softmax across the row where an elementwise sigmoid was meant", None,
            "exp(x_k) / Σ_j exp(x_j)", _softmax_plain,
            "It normalizes across the row (softmax), so the weights sum to 1 and depend on the other "
            "keys; sigmoid attention weighs each key on its own, σ(x_k + b).",
            "Apply σ(x + b) to each score separately, with no sum over the row.",
        ),
        FaultyForm(
            "sigmoid-exp-ratio", "σ computed as exp(z) / (1 + exp(z)): it overflows for large scores",
            None, "exp(x_k + b) / (1 + exp(x_k + b)) evaluated directly in the dtype", _sigmoid_exp_ratio,
            "exp(z)/(1 + exp(z)) equals σ(z) in exact arithmetic, but exp(z) overflows to inf once z "
            "exceeds the largest exponent of the dtype (about 709.8 in float64, 88.7 in float32, 11.1 "
            "in float16), and inf/inf gives NaN.",
            "Use 1 / (1 + exp(−z)) for z ≥ 0 and exp(z) / (1 + exp(z)) for z < 0 (e.g. torch.sigmoid).",
        ),
    ),
    "clipped": (
        FaultyForm(
            "clipped-one-sided", "the clip is one-sided: {what}", None,
            "{formula}", _clipped_one_sided,
            "It clips {what_long}, so {effect}.",
            "Clip on both sides: min(1, max(0, (ζ − γ)·softmax(x)_k + γ)).",
            ({"side": "lower", "what": "no clip at 0", "formula": "min(1, (ζ − γ)·softmax(x)_k + γ)",
              "what_long": "at 1 only", "effect": "a small weight goes negative, down to γ"},
             {"side": "upper", "what": "no clip at 1", "formula": "max(0, (ζ − γ)·softmax(x)_k + γ)",
              "what_long": "at 0 only", "effect": "a large weight exceeds 1, up to ζ"}),
        ),
        FaultyForm(
            "softmax-for-clipped", "plain softmax: the stretch (ζ − γ)·p + γ and the clip are missing", None,
            "exp(x_k) / Σ_j exp(x_j)", _softmax_plain,
            "It returns softmax(x) itself: without the stretch to [γ, ζ] and the clip, no weight can be "
            "exactly 0 or 1, which is what clipped softmax is for.",
            "Return min(1, max(0, (ζ − γ)·softmax(x) + γ)).",
        ),
    ),
    "softcap": (
        FaultyForm(
            "softcap-missing", "plain softmax: the soft cap c_cap·tanh(x/c_cap) is missing", None,
            "exp(x_k) / Σ_j exp(x_j)", _softmax_plain,
            "It applies softmax to the raw scores, so large scores are not capped at ±c_cap.",
            "Cap first: softmax(c_cap·tanh(x/c_cap)).",
        ),
        FaultyForm(
            "softcap-misscaled", "the soft cap is mis-scaled: {what}", None,
            "softmax({formula})", _softcap_variant,
            "It computes {formula} instead of c_cap·tanh(x/c_cap): {effect}.",
            "Use c_cap·tanh(x/c_cap): divide by c_cap inside tanh and multiply by c_cap outside.",
            ({"inside": True, "outside": False, "what": "tanh(x/c_cap) without the factor c_cap",
              "formula": "tanh(x/c_cap)", "effect": "the capped scores lie in (−1, 1), not (−c_cap, c_cap)"},
             {"inside": False, "outside": True, "what": "c_cap·tanh(x) without dividing by c_cap",
              "formula": "c_cap·tanh(x)", "effect": "every score above about 2 is capped to c_cap"}),
        ),
        FaultyForm(
            "softcap-caps-the-mask", "the cap is applied to masked scores: c_cap·tanh(−∞/c_cap) = −c_cap", None,
            "softmax(c_cap·tanh(x/c_cap)) with a masked score capped to −c_cap", _softcap_caps_mask,
            "A masked score −∞ goes through the cap and comes out as −c_cap, a finite score, so a masked "
            "key gets weight exp(−c_cap)/Σ.",
            "Apply the mask after the cap (masked_fill the capped scores with −∞).",
        ),
    ),
}


def words(name: str, sink) -> dict[str, str]:
    """The wording fields of the explanations for normalizer ``name``."""
    if name not in SINKS:
        return {"name": name}
    if sink is None:
        return {"name": name, "term": "0", "shifted": "0", "mmax": "max x", "plus": "",
                "plus_shifted": "", "including": "", "only": ""}
    if SINKS[name] == 0.0:
        display = {"softmax1": "softmax₁", "zero_token": "zero-token attention"}.get(name, name)
        return {"name": display, "term": "1", "shifted": "exp(−m)", "mmax": "max(0, max x)", "plus": "1 + ",
                "plus_shifted": "exp(−m) + ", "including": ", including the 1 (which becomes exp(−m))",
                "only": " only", "floor": "1/2"}
    s = {"s_star": "s*"}.get(SINKS[name], SINKS[name]) if isinstance(SINKS[name], str) else mpmath.nstr(SINKS[name], 6)
    term = "sink term exp(s)" if name == "sink" else "learned key's term exp(s*)"
    return {"name": name, "term": term, "shifted": f"exp({s} − m)", "mmax": f"max({s}, max x)",
            "plus": f"exp({s}) + ", "plus_shifted": f"exp({s} − m) + ",
            "including": ", including the sink's" if name == "sink" else ", including the learned key's",
            "only": " only", "floor": f"1/(1 + exp({s}))"}


def variants(name: str):
    """(entry, variant fields, evaluate(row, params, dtype)) for every form that applies."""
    if name in OTHER_FAULTS:
        for entry in OTHER_FAULTS[name]:
            for fields in entry.variants:

                def evaluate(row, params, dtype, entry=entry, fields=fields):
                    return entry.form(list(row), params, dtype, **fields)

                yield entry, fields, evaluate
        return
    if name not in SINKS:
        return
    has_sink = SINKS[name] is not None
    for entry in FAULTS:
        if entry.needs_sink is not None and entry.needs_sink != has_sink:
            continue
        for fields in entry.variants:
            if entry.name == "sink-scaled" and not isinstance(SINKS[name], str):
                continue
            if fields.get("where") == "sink logit" and not isinstance(SINKS[name], str):
                continue

            def evaluate(row, params, dtype, entry=entry, fields=fields):
                return entry.form(list(row), sink_of(name, params)[1], dtype, **fields)

            yield entry, fields, evaluate
