"""``check_implementation``: load or wrap a callable, check it, diagnose, build the report."""

from __future__ import annotations

import math

from derive.errors import InputError
from derive.impl.check import Checker
from derive.impl.diagnose import diagnose
from derive.impl.faults import SINKS
from derive.impl.report import Report
from derive.impl.target import ImplRaised, load, wrap
from derive.impl.tolerance import tolerance
from derive.normalizers.registry import get
from derive.settings import DEFAULT, Settings

__all__ = ["DEFAULT_DTYPES", "check_implementation"]

DEFAULT_DTYPES = ("float64", "float32")

# Normalizers whose parameters Hypothesis may vary over all reals (when the function takes
# them as keywords); any other parameter must be fixed with --param NAME=VALUE.
VARIABLE = frozenset(SINKS)


def _params(norm, given: dict, accepted: tuple[str, ...]) -> tuple[dict, tuple[str, ...]]:
    unknown = sorted(set(given) - set(norm.params))
    if unknown:
        expected = ", ".join(norm.params) if norm.params else "none"
        raise InputError(f"unknown parameter {unknown[0]!r} for normalizer {norm.name!r} "
                         f"(its parameters: {expected})")
    fixed, free = {}, []
    for p in norm.params:
        if p in given:
            value = float(given[p])
            if not math.isfinite(value):
                raise InputError(f"parameter {p} must be a finite number, got {given[p]!r}")
            fixed[p] = value
        elif p in accepted and norm.name in VARIABLE:
            free.append(p)
        else:
            raise InputError(f"normalizer {norm.name!r} needs its parameter {p}: give --param {p}=VALUE "
                             f"(or let the function take {p} as a keyword so it can be varied)")
    return fixed, tuple(free)


def check_implementation(fn_or_spec, normalizer: str, *, params: dict | None = None, dim: int = -1,
                         dtypes=DEFAULT_DTYPES, examples: int | None = None,
                         cfg: Settings = DEFAULT, name: str | None = None) -> Report:
    """Differentially test ``fn_or_spec`` (a callable or ``FILE.py:func``/``module:func``)."""
    norm = get(normalizer)
    dtypes = tuple(dtypes)
    if not dtypes:
        raise InputError("no dtype given")
    tols = [tolerance(d) for d in dtypes]
    if len(set(dtypes)) != len(dtypes):
        raise InputError(f"dtype given twice: {', '.join(dtypes)}")
    examples = cfg.examples if examples is None else int(examples)
    if examples < 1:
        raise InputError(f"--examples must be at least 1, got {examples}")
    if isinstance(fn_or_spec, str):
        target = load(fn_or_spec, norm.params, dim, dtypes[0])
    elif callable(fn_or_spec):
        label = name or getattr(fn_or_spec, "__qualname__", None) or repr(fn_or_spec)
        target = wrap(fn_or_spec, label, norm.params, dim, dtypes[0])
    else:
        raise InputError(f"expected a callable or MODULE_OR_FILE:FUNCTION, got {fn_or_spec!r}")
    for tol in tols:
        if target.api == "numpy" and not tol.numpy:
            raise InputError(f"dtype {tol.dtype} needs a torch implementation; {target.name} takes numpy arrays")
    fixed, free = _params(norm, dict(params or {}), target.param_kws)
    checker = Checker(norm, target, dim, cfg.mp_dps, free, fixed)
    results, diagnosis = [], None
    for tol in tols:
        try:
            result = checker.run(tol, examples)
        except ImplRaised as exc:
            raise InputError(f"{target.name} raised {exc} on a valid {tol.dtype} input of shape "
                             f"{list(exc.shape)}: {exc.values}") from None
        results.append(result)
        if result.failure is not None and diagnosis is None:
            diagnosis = diagnose(checker, result.failure, tol)
    return Report(target=target.name, normalizer=norm.name, title=norm.title, params=fixed,
                  free_params=free, api=target.api, dim=dim, examples=examples, results=results,
                  diagnosis=diagnosis, keywords=_passed(target, free))


def _passed(target, free) -> list[str]:
    """The keywords passed to the function besides the scores, as the report states them."""
    out = [f"{target.dim_kw}=dim"] if target.dim_kw else []
    if target.takes_mask:
        out.append("mask (bool, True = allowed; a masked score is passed as 0)")
    out += [f"{p} (fixed)" for p in target.param_kws if p not in free]
    out += [f"{p} (varied by Hypothesis)" for p in free]
    return out

