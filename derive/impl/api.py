"""``check_implementation``: load or wrap a callable, check it, diagnose, build the report."""

from __future__ import annotations

import math

from hypothesis.errors import Flaky

from derive.errors import InputError, InternalError, internal
from derive.impl.judge.row import Checker
from derive.impl.faults.diagnose import diagnose
from derive.impl.forms.attention import check_attention
from derive.impl.cases.contract import parse_contract, row_form_contract
from derive.impl.forms.kernel import FORMS, HEADS, LSE_CONVENTIONS, SEARCH_EXAMPLES, check_kernel
from derive.impl.numbers import round_to
from derive.impl.exact.masked import rule
from derive.impl.report.row import Report
from derive.impl.run.target import DEFAULT_TIMEOUT, ImplRaised, load
from derive.impl.exact.tolerance import DTYPES, tolerance
from derive.impl.run.triton_env import interpreted
from derive.normalizers.registry import get
from derive.settings import DEFAULT, Settings

__all__ = ["DEFAULT_DTYPES", "check_implementation"]

DEFAULT_DTYPES = ("float64", "float32")

def _params(norm, given: dict, accepted: tuple[str, ...], target: str) -> tuple[dict, tuple[str, ...]]:
    """(fixed, varied): a parameter the function takes as a keyword is passed to it, with the
    value of --param or drawn by Hypothesis within its domain; one it does not take cannot be."""
    fixed, free = {}, []
    for p in norm.params:
        if p in given:
            value = float(given[p])
            if not math.isfinite(value):
                raise InputError(f"parameter {p} must be a finite number, got {given[p]!r}")
            if p not in accepted:
                raise InputError(f"--param {p}={given[p]:g}: {target} does not take a keyword argument {p}, "
                                 f"so the value cannot be passed to it; give the function a keyword argument {p}")
            fixed[p] = value
        elif p in accepted:
            free.append(p)
        else:
            raise InputError(f"normalizer {norm.name!r} needs its parameter {p}, which {target} does not take as "
                             f"a keyword: give the function a keyword argument {p} (derive then varies it, or "
                             f"passes --param {p}=VALUE)")
    return fixed, tuple(free)


def check_implementation(fn_or_spec, normalizer: str, *, params: dict | None = None, dim: int = -1,
                         dtypes=DEFAULT_DTYPES, examples: int | None = None,
                         cfg: Settings = DEFAULT, name: str | None = None,
                         timeout: float = DEFAULT_TIMEOUT, form: str = "row", lse: str = "natural",
                         env: dict | None = None, per_head: bool = False, assume=(),
                         attention: dict | None = None, param_grad: bool = True):
    """Differentially test ``fn_or_spec`` (a callable or ``FILE.py:func``/``module:func``).

    The function is imported and called only in a child process (:mod:`derive.impl.run.target`), whose
    environment gets ``env`` on top of ours before it imports anything. ``form`` is ``row``
    (fn(x) → weights: a :class:`Report`) or a kernel form, ``online``, ``split`` or
    ``backward`` (:mod:`derive.impl.forms.kernel`: a :class:`~derive.impl.forms.kernel.KernelReport`); ``lse`` is the
    convention of a returned log-sum-exp there (``natural``, ``base2`` or ``kv-only``). With
    ``per_head`` (kernel forms) the normalizer's parameters are passed as arrays of shape (H,),
    one per head, along the last leading axis of the scores (…, H, n). ``assume`` is the
    contract (:mod:`derive.impl.cases.contract`, ``--assume`` items); ``attention`` the settings of the attention
    form (:func:`derive.impl.forms.attention.check_attention`: layout, scale, causal, ...).
    ``param_grad=False``
    (``--no-param-grad``) leaves the gradient of the normalizer's parameters unchecked in the
    backward form; by default a backward that returns none disagrees.
    """
    contract = parse_contract(list(assume or ()), DTYPES)
    if form not in ("row", "attention") + FORMS:
        raise InputError(f"unknown --form {form!r}: expected one of row, attention, {', '.join(FORMS)}")
    if form != "attention" and attention:
        raise InputError("--layout, --out-layout, --lse-layout, --scale, --causal, --start-q, --window, --mask, "
                         "--mask-value, --gqa, --backward, --kw, --set, --tensor and --device apply to --form attention")
    if lse not in LSE_CONVENTIONS:
        raise InputError(f"unknown --lse {lse!r}: expected one of {', '.join(LSE_CONVENTIONS)}")
    if per_head and form in ("row", "attention"):
        raise InputError(f"--per-head applies to a kernel form (--form online, split or backward), not {form}"
                         + (" (the attention form passes the sinks per head always)" if form == "attention" else ""))
    if lse != "natural" and form in ("row", "backward"):
        raise InputError(f"--lse {lse} applies to --form online, split or attention, not {form}")
    if env is not None and not (isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                              for k, v in env.items())):
        raise InputError(f"env must map names to strings (e.g. {{'TRITON_INTERPRET': '1'}}), got {env!r}")
    norm = normalizer_of(normalizer)
    if form == "row":
        contract = row_form_contract(contract, tuple(norm.params))
    dtypes = tuple(dtypes)
    if not dtypes:
        raise InputError("no dtype given")
    tols = [tolerance(d) for d in dtypes]
    if len(set(dtypes)) != len(dtypes):
        raise InputError(f"dtype given twice: {', '.join(dtypes)}")
    searched = SEARCH_EXAMPLES if examples is None else int(examples)  # kernel forms
    examples = cfg.examples if examples is None else int(examples)
    if examples < (1 if form == "row" else 0):  # a kernel or attention form may run its fixed list alone
        raise InputError(f"--examples must be at least {1 if form == 'row' else 0}, got {examples}")
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise InputError(f"--timeout must be a positive number of seconds, got {timeout!r}")
    if isinstance(fn_or_spec, str):
        label = name or fn_or_spec
    elif callable(fn_or_spec):
        label = name or getattr(fn_or_spec, "__qualname__", None) or repr(fn_or_spec)
    else:
        raise InputError(f"expected a callable or MODULE_OR_FILE:FUNCTION, got {fn_or_spec!r}")
    _check_given(norm, dict(params or {}))
    if form != "row" and dim != -1:
        raise InputError(f"--dim applies to --form row; in {form} form the keys are the last axis of the scores")
    target = load(fn_or_spec, label, norm.params, dim, dtypes[0], timeout, form=form, env=env,
                  heads=HEADS if per_head and norm.params else 0)
    try:
        if form == "attention":
            report = check_attention(target, norm, tols, cfg, contract=contract, rounder=round_to,
                                     examples=searched, thin=interpreted(env, fn_or_spec), params=dict(params or {}),
                                     lse=lse, **(attention or {}))
        elif form != "row":
            for tol in tols:
                if target.api == "numpy" and not tol.numpy:
                    raise InputError(f"dtype {tol.dtype} needs a torch implementation; {target.name} takes numpy "
                                     f"arrays")
            report = check_kernel(target, norm, tols, dict(params or {}), form, lse, cfg, per_head,
                                  searched, thin=interpreted(env, fn_or_spec), contract=contract,
                                  param_grad=param_grad)
        else:
            report = _check(target, norm, tols, dict(params or {}), dim, examples, cfg, contract)
        report.to_markdown(), report.to_json()  # rendering is part of the engine: fail here, not later
        return report
    except (InputError, InternalError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - derive's own engine failed: never a verdict (exit 3)
        raise internal(exc, f"{target.name} as {norm.name}") from exc
    finally:
        target.close()


def normalizer_of(name: str):
    """The registry entry ``name``, or the normalizer of the spec file ``name`` (``--as FILE.toml``:
    its ``[normalizer]`` weight formula, or the built-in it names)."""
    if isinstance(name, str) and name.endswith(".toml"):
        from derive.spec import load_spec

        return get(load_spec(name).normalizer)
    return get(name)


def _check(target, norm, tols, params, dim, examples, cfg, contract) -> Report:
    notes = [f"{tol.dtype} was not tested: outside the contract (dtypes {', '.join(contract.dtypes)})"
             for tol in tols if not contract.dtype_ok(tol.dtype)]
    tols = [tol for tol in tols if contract.dtype_ok(tol.dtype)]
    if not tols:
        raise InputError("no dtype of --dtype lies inside the contract: nothing to test")
    for tol in tols:
        if target.api == "numpy" and not tol.numpy:
            raise InputError(f"dtype {tol.dtype} needs a torch implementation; {target.name} takes numpy arrays")
    fixed, free = _params(norm, params, target.param_kws, target.name)
    for p, value in fixed.items():
        if not contract.sink_ok(value):
            raise InputError(f"--param {p}={value:g} lies outside the contract (--assume finite-sinks)")
    checker = Checker(norm, target, dim, cfg.mp_dps, free, fixed, contract)
    results, diagnosis = [], None
    for tol in tols:
        try:
            result = checker.run(tol, examples)
            results.append(result)
            if result.failure is not None and diagnosis is None and result.failure.what != "complex":
                diagnosis = diagnose(checker, result.failure, tol)
        except ImplRaised as exc:
            raise InputError(f"{target.name} raised {exc} on a valid {tol.dtype} input of shape "
                             f"{list(exc.shape)}: {exc.values}") from None
        except InputError:
            raise
        except Flaky:
            raise InputError(f"{target.name} is not deterministic: the same {tol.dtype} input gave "
                             f"different results on two calls; no verdict") from None
        except Exception as exc:  # noqa: BLE001 - derive's own engine failed: never a verdict (exit 3)
            raise internal(exc, f"{target.name} as {norm.name} ({tol.dtype})") from exc
    return Report(target=target.name, normalizer=norm.name, title=norm.title, params=fixed,
                  free_params=free, api=target.api, dim=dim, examples=examples, results=results,
                  diagnosis=diagnosis, keywords=_passed(target, free), warnings=_warnings(target),
                  masked_rule=rule(norm), contract=contract, notes=notes)


def _check_given(norm, given: dict) -> None:
    unknown = sorted(set(given) - set(norm.params))
    if unknown:
        expected = ", ".join(norm.params) if norm.params else "none"
        raise InputError(f"unknown parameter {unknown[0]!r} for normalizer {norm.name!r} "
                         f"(its parameters: {expected})")


def _warnings(target) -> list[str]:
    out = []
    if target.mutates:
        out.append("the function modifies its input array in place (the scores passed to it changed): "
                   "callers that reuse the scores will see them changed")
    return out


def _passed(target, free) -> list[str]:
    """The keywords passed to the function besides the scores, as the report states them."""
    out = [f"{target.dim_kw}=dim"] if target.dim_kw else []
    if target.takes_mask:
        out.append("mask (bool, True = allowed; a masked score is passed as 0)")
    out += [f"{p} (fixed)" for p in target.param_kws if p not in free]
    out += [f"{p} (varied by Hypothesis)" for p in free]
    return out

