"""Known faulty forms of the softmax family, as data.

Each entry names a bug seen in real implementations, gives its formula (evaluated
exactly with mpmath, or in the implementation's dtype where the fault is numerical) and
the explanation and fix a reviewer can act on. The softmax family is written with a sink
term: p_k = exp(x_k) / (exp(s) + Σ_j exp(x_j)), with no sink term for softmax, s = 0 for
softmax₁ and s the parameter for ``sink``; :data:`SINKS` says which normalizer is which.
A normalizer not in :data:`SINKS` has no known faulty forms (diagnosis then describes
the error pattern instead).
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

# normalizer name → its sink term: None (no term), a number, or a parameter name.
SINKS: dict[str, object] = {"softmax": None, "softmax1": 0.0, "sink": "s"}


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


def _unshifted(row, sink, dtype, **_):
    finite = [v for v in row if v != -math.inf]
    if not finite:
        return [math.nan] * len(row)  # x − m = −inf − (−inf)
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
        "{term} to the denominator unshifted. So it computes {name}(x − max x), not {name}(x): "
        "the result changes when all scores are shifted by a constant, and its weights always sum "
        "to at least 1/2.",
        "Shift the {term} too: use {shifted} in place of {term} (and take m = {mmax} "
        "so that an all-masked row stays finite).",
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


def words(name: str, sink) -> dict[str, str]:
    """The wording fields of the explanations for normalizer ``name``."""
    if sink is None:
        return {"name": name, "term": "0", "shifted": "0", "mmax": "max x", "plus": "",
                "plus_shifted": "", "including": "", "only": ""}
    if name == "softmax1":
        return {"name": "softmax₁", "term": "1", "shifted": "exp(−m)", "mmax": "max(0, max x)", "plus": "1 + ",
                "plus_shifted": "exp(−m) + ", "including": ", including the 1 (which becomes exp(−m))",
                "only": " only"}
    return {"name": name, "term": "sink term exp(s)", "shifted": "exp(s − m)", "mmax": "max(s, max x)",
            "plus": "exp(s) + ", "plus_shifted": "exp(s − m) + ", "including": ", including the sink's",
            "only": " only"}


def variants(name: str):
    """(entry, variant fields, evaluate(row, params, dtype)) for every form that applies."""
    if name not in SINKS:
        return
    has_sink = SINKS[name] is not None
    for entry in FAULTS:
        if entry.needs_sink is not None and entry.needs_sink != has_sink:
            continue
        for fields in entry.variants:
            if entry.name == "sink-scaled" and name != "sink":
                continue
            if fields.get("where") == "sink logit" and name != "sink":
                continue

            def evaluate(row, params, dtype, entry=entry, fields=fields):
                return entry.form(list(row), sink_of(name, params)[1], dtype, **fields)

            yield entry, fields, evaluate
