"""``derive impl --form attention``: an attention kernel with its real signature.

The function is called as ``fn(q, k, v, **params)`` with q (…, M, d), k (…, N, d) and v
(…, N, dv) in the layout given by ``--layout`` (:mod:`derive.kernels.layouts`; k and v with fewer
heads than q under ``--gqa``), and returns ``out`` (the layout of q with dv) or ``(out, lse)``. The
keywords it takes are found in its signature and matched to their roles by name
(:data:`ROLE_NAMES`; ``--kw ROLE=NAME`` names one explicitly): the softmax scale, a causal flag, a
mask, the sinks (one logit per head), the decode offset ``start_q``, a sliding window, a tile size
and a split count. A role the kernel does not take is a property of the kernel that the user
states (``--causal [top-left|bottom-right]``, ``--start-q``, ``--window W|L,R``, ``--scale``), is
carried by its mask (:mod:`derive.impl.cases.masks`: the one mask, lowered to what the kernel
takes, ``--mask``), or is not tested (the report says which classes that leaves out).

The calls come from the one call model (:mod:`derive.impl.cases.attention`, the fixed list of
:mod:`derive.impl.cases.fixed` and the search of :mod:`derive.impl.cases.attention_search`), inside
the contract; every output is compared with the exact definition on the arrays actually passed
(:func:`derive.impl.exact.reference.exact_attention`). It does not stop at the first failure:
every case belongs to one failure class, and the report lists each class that fails with its
smallest counterexample, the classes that pass, and what ran (the coverage, read off the calls).
With ``--backward`` (torch functions) the gradients of ⟨out, g⟩ with respect to q, k, v and the
sinks, by torch autograd in the child, are compared as well.
"""

from __future__ import annotations

import math

from derive.errors import InputError
from derive.impl.cases.attention import Setup, with_dtype_mask
from derive.impl.cases.fixed import cases
from derive.impl.cases.masks import MASK_FORMS, parse_window, window_text
from derive.impl.judge.attention import GENERIC_ENTRIES, AttentionChecker
from derive.impl.report.attention import AttentionReport
from derive.impl.run.roles import DEVICES, DTYPE, ROLE_NAMES, parse_kw, roles_of, window_form
from derive.impl.faults.attention import diagnose
from derive.kernels.layouts import parse_layout

__all__ = ["ALIGNMENTS", "ROLE_NAMES", "AttentionReport", "check_attention", "kernel_extra", "parse_kw"]

INF = math.inf


def kernel_extra(norm) -> tuple[bool, object]:
    """(supported, the extra logit: None, a number, "sinks" for a parameter passed per head, or
    "generic"), read off the normalizer's formula: a member of the softmax family with no value of
    its own whose extra logit is none, a number or one parameter; any other normalizer whose
    weights are all the output mixes (no token with a value of its own) is "generic": its
    parameters are keywords of the kernel and its output is judged against the exact weights of
    its definition (:func:`derive.impl.exact.reference.generic_row`)."""
    from derive.normalizers.family import kernel_form

    facts = kernel_form(norm)
    if not facts.checked:
        two = norm.definition_of is not None and norm.definition_of.score2  # y_j: a second score, no kernel passes it
        return (False, None) if norm.extra_value or two else (True, "generic")
    if facts.logit is None or isinstance(facts.logit, float):
        return True, facts.logit
    return (True, "sinks") if isinstance(facts.logit, str) else (False, None)


def _supported() -> list[str]:
    from derive.normalizers.registry import REGISTRY

    return [name for name, entry in REGISTRY.items() if kernel_extra(entry)[0]]


def _param_values(norm, given: dict, roles: dict, target: str) -> tuple[list, list]:
    """The parameter sets the calls of a generic normalizer take in turn: --param's values, and for
    the others the entry's edge values (:func:`derive.impl.cases.rows.param_sets`, as the kernel forms
    take them); a parameter the kernel takes no keyword for must be given (its built-in value).
    Also what the report states about them."""
    from derive.impl.cases.rows import param_sets

    for p in norm.params:
        if p not in given and p not in roles:
            raise InputError(f"--as {norm.name} has the parameter {p}; {target} takes no keyword {p}: name its "
                             f"keyword with --kw {p}=NAME, or give the value the kernel uses with --param {p}=VALUE")
    free = tuple(p for p in norm.params if p not in given)
    sets = [{**{p: float(given[p]) for p in norm.params if p in given}, **c} for c in param_sets(norm, free, "edge")]
    said = [f"{p} = " + ", ".join(dict.fromkeys(f"{c[p]:g}" for c in sets))
            + (f" (passed as {roles[p]}=…)" if p in roles else " (built into the kernel: not passed)")
            + (", in turn over the calls" if p in free and len(sets) > 1 else "") for p in norm.params]
    return sets, said


ALIGNMENTS = ("top-left", "bottom-right")


def _window(window) -> tuple:
    """--window as the model's (left, right): an int W is a window of W keys, a pair or "L,R" itself."""
    if not window:
        return ()
    if isinstance(window, (tuple, list)):
        window = ",".join(str(int(v)) for v in window)
    try:
        return parse_window(window)
    except ValueError as exc:
        raise InputError(f"--window {window}: {exc}") from None


def check_attention(target, norm, tols, cfg, *, layout: str, out_layout: str | None, scale, causal,
                    start_q, window, mask_value: str, backward: bool, kw_names: dict, contract,
                    rounder, examples: int = 0, thin: bool = False, mask: str = "additive",
                    gqa: bool = False, lse_layout: str | None = None, params: dict | None = None,
                    lse: str = "natural", fixed: dict | None = None, tensors=(),
                    device: str = "cpu") -> AttentionReport:
    known, extra = kernel_extra(norm)
    if not known:
        raise InputError(f"--form attention supports the normalizers {', '.join(_supported())}; not {norm.name}")
    L = parse_layout(layout)
    OL = parse_layout(out_layout, "--out-layout") if out_layout else L
    if set(OL.axes) != set(L.axes):
        raise InputError(f"--out-layout {OL.text} has other axes than --layout {L.text}")
    LL = None
    if lse_layout:
        want = OL.axes.replace("d", "")
        if sorted(lse_layout) != sorted(want) or len(set(lse_layout)) != len(lse_layout):
            raise InputError(f"--lse-layout {lse_layout!r}: expected the axes of out without d ({want}), in any order")
        LL = parse_layout(lse_layout + "d", "--lse-layout")
    signature = target.extra.get("signature")
    generic = extra == "generic"
    fixed = dict(fixed or {})
    roles = roles_of(signature, kw_names, target.name, tuple(norm.params) if generic else (), fixed)
    if generic and backward:
        raise InputError(f"--backward in the attention form compares the gradients of the softmax family; "
                         f"{norm.name} is checked forward only (its row form checks its Jacobian)")
    if params and not generic:
        raise InputError(f"--param applies to --form attention only for a normalizer outside the softmax family; "
                         f"{norm.name}'s " + ("sinks are drawn per head" if extra == "sinks" else "has none"))
    for name, value in (params or {}).items():
        if not math.isfinite(float(value)):
            raise InputError(f"--param {name}={value}: a parameter's value is a finite number")
    values, said = _param_values(norm, dict(params or {}), roles, target.name) if generic else ({}, [])
    if generic:
        extra = None
    if extra != "sinks":
        roles.pop("sinks", None)  # an optional sinks keyword is left at its default
    for p in norm.params if generic else ():
        clash = next((r for r in ROLE_NAMES if roles.get(r) == roles.get(p, object())), None)
        if clash:
            raise InputError(f"--as {norm.name}: its parameter {p} would be passed as {roles[p]}=…, the keyword of the "
                             f"role {clash}; name the parameter's keyword with --kw {p}=NAME")
    if extra == "sinks" and "sinks" not in roles and "module" not in roles:
        raise InputError(f"--as {norm.name} passes one extra logit per head; {target.name} takes no sinks keyword "
                         f"(one of {', '.join(ROLE_NAMES['sinks'])}, or name it with --kw sinks=NAME)")
    if mask not in MASK_FORMS:
        raise InputError(f"--mask {mask!r}: expected one of {', '.join(MASK_FORMS)}")
    if mask_value not in ("-inf", "finfo-min"):
        try:
            value = float(mask_value)
        except ValueError:
            raise InputError(f"--mask-value {mask_value!r}: expected a number, -inf or finfo-min") from None
        if math.isnan(value) or value > 0 or value == INF:
            raise InputError(f"--mask-value {mask_value!r}: a masked key's additive value is negative")
    if contract.finite_scores and float(with_dtype_mask(mask_value, "float64")) == -INF:
        mask_value = "finfo-min"  # the contract: no −∞ reaches the kernel
    align = causal if causal in ALIGNMENTS else None
    if causal not in (False, True, None) + ALIGNMENTS:
        raise InputError(f"--causal {causal!r}: expected no value, top-left or bottom-right")
    if start_q is not None and start_q != "end" and start_q < 0:
        raise InputError(f"--start-q {start_q}: a position is at least 0")
    if align == "bottom-right":
        if start_q not in (None, "end"):
            raise InputError(f"--causal bottom-right places the queries at N − M; --start-q {start_q} contradicts it")
        start_q = "end"
    elif align == "top-left" and start_q == "end":
        raise InputError("--causal top-left places the queries at 0; --start-q end contradicts it")
    causal = bool(causal)
    window = _window(window)
    stated = []
    if causal:
        stated.append("causal" + (" (passed as " + roles["causal"] + "=True)" if "causal" in roles else "")
                      + (f", aligned {align}" if align else ""))
    if start_q is not None:
        stated.append(f"queries start at position {'N − M' if start_q == 'end' else start_q}")
    if window:
        stated.append(f"sliding window (left, right) = {window_text(window)}")
    if scale is not None:
        stated.append(f"scale {scale!r}")
    elif "scale" not in roles:
        stated.append("the kernel's scale is 1/√d")
    if "mask" in roles:
        stated.append(f"masked keys carry {mask_value} in the additive mask" if mask == "additive" else
                      f"the mask is {MASK_FORMS[mask]}")
    if gqa:
        stated.append("k and v may have fewer heads than q (query head h reads kv head h // (H / Hkv))")
    stated += said
    stated += [f"{name} = {'the call dtype' if value == DTYPE else repr(value)} on every call (--set)"
               for name, value in fixed.items()]
    passed = set(roles.values()) | set(fixed)
    for name in tensors:
        if name not in passed:
            raise InputError(f"--tensor {name}: {target.name} is passed no keyword {name} (--tensor names a keyword "
                             f"of a role or of --set: {', '.join(sorted(passed)) or 'none'})")
    stated += [f"{name} is passed as a 0-d tensor (int32 for a whole number) (--tensor)" for name in tensors]
    if device not in DEVICES:
        raise InputError(f"--device {device!r}: expected one of {', '.join(DEVICES)}")
    if device != "cpu":
        stated.append(f"its inputs are torch tensors on {device} (--device); the exact reference is computed on the CPU")
    setup = Setup(extra=extra, takes=frozenset(roles), causal=causal, start_q=start_q, window=window, thin=thin,
                  has_batch=L.has_batch, has_heads=L.has_heads, contract=contract, gqa=gqa, mask_form=mask,
                  window_form=window_form(signature, roles, window), backward=backward)
    case_list = cases(setup)
    if lse != "natural":
        if generic:
            raise InputError(f"--lse {lse}: {norm.name} has no log-sum-exp (only the softmax family has one)")
        stated.append("a returned lse is " + ("in base 2, log₂ of the row's sum" if lse == "base2" else
                                             "of the keys alone, without the extra logit"))
    checker = AttentionChecker(target, norm, L, OL, roles, setup, scale, mask_value, backward, cfg.mp_dps,
                               lse_layout=LL, diagnose=diagnose, values=values if generic else None, lse_units=lse,
                               fixed=fixed, tensors=tuple(tensors), device=device)
    results = []
    notes = []
    halves = [t.dtype for t in tols if t.sums != 1.0]
    if contract.half_accumulation:
        tols = [t.own_sums() for t in tols]
    elif halves:
        notes.append(f"{' and '.join(halves)} {'are' if len(halves) > 1 else 'is'} judged as summing in float32, as "
                     f"fused kernels and PyTorch's attention do (--assume half-accumulation for a kernel that sums in "
                     f"{'them' if len(halves) > 1 else 'it'})")
    for tol in tols:
        if not contract.dtype_ok(tol.dtype):
            notes.append(f"{tol.dtype} was not tested: outside the contract (dtypes {', '.join(contract.dtypes)})")
            continue
        results.append(checker.run(tol, lambda a, d=tol.dtype: rounder(a, d), case_list, examples))
    if not results:
        raise InputError("no dtype of --dtype lies inside the contract: nothing to test")
    failures = [f for r in results for f in r.failures.values()]
    if failures and all(f.what in ("raised", "crashed") for f in failures) and not any(r.rows for r in results):
        broke = failures[0]  # no call of any dtype returned (a wrong device, a missing extension): no verdict
        raise InputError(f"{target.name} {'raised ' + broke.note if broke.what == 'raised' else 'crashed'} on every "
                         f"call ({broke.case.describe()}, {broke.dtype}, the first): no output was compared; no "
                         f"verdict")
    for dtype, count in checker.sampled.items():
        notes.append(f"{dtype}: {count} call{'s' if count > 1 else ''} of more than {GENERIC_ENTRIES} query–key pairs "
                     f"{'were' if count > 1 else 'was'} judged on the first 8 queries, every k-th and the last 8 "
                     f"(the weights of {norm.name} are enclosed one by one)")
    for dtype, count in checker.nan_calls.items():
        notes.append(f"{dtype}: on {count} call{'s' if count > 1 else ''} a row without a value (every key masked, "
                     f"no finite extra logit) returned NaN, a convention the forward may take; its NaN reaches the gradient "
                     f"of every key and of the sinks through autograd, so there only dq was judged")
    if target.mutates:
        notes.append("the function modifies one of its input arrays in place")
    return AttentionReport(target=target.name, normalizer=norm.name, title=norm.title, layout=L.text,
                           out_layout=OL.text, api=checker.api or target.api, roles=roles, stated=stated,
                           contract=contract, skipped=dict(setup.skipped), results=results, backward=backward,
                           notes=notes, examples=examples)
