"""``derive impl --form attention``: an attention kernel with its real signature.

The function is called as ``fn(q, k, v, **params)`` with q (…, M, d), k (…, N, d) and v
(…, N, dv) in the layout given by ``--layout`` (:mod:`derive.kernels.layouts`), and returns
``out`` (the layout of q with dv) or ``(out, lse)``. The keywords it takes are found in its
signature and matched to their roles by name (:data:`ROLE_NAMES`; ``--kw ROLE=NAME`` names
one explicitly): the softmax scale, a causal flag, an additive mask, the sinks (one logit per
head), the decode offset ``start_q``, a sliding window and a tile size. A role the kernel
does not take is a property of the kernel that the user states (``--causal``, ``--start-q``,
``--window``, ``--scale``), or is not tested (the report says which classes that leaves out).

derive builds q and k that realise its rows of scores exactly (:mod:`derive.impl.cases.attention`) and
compares every output with the exact definition on the arrays actually passed
(:func:`derive.impl.exact.reference.exact_attention`). It does not stop at the first failure: every case belongs to one
failure class, and the report lists each class that fails with its smallest counterexample,
and the classes that pass. With ``--backward`` (torch functions) the gradients of ⟨out, g⟩ with
respect to q, k, v and the sinks, by torch autograd in the child, are compared as well.
"""

from __future__ import annotations

import math

from derive.errors import InputError
from derive.impl.cases.attention import Setup, cases, with_dtype_mask
from derive.impl.judge.attention import AttentionChecker
from derive.impl.report.attention import AttentionReport
from derive.impl.run.roles import ROLE_NAMES, parse_kw, roles_of
from derive.kernels.layouts import parse_layout

__all__ = ["ROLE_NAMES", "AttentionReport", "check_attention", "parse_kw"]

INF = math.inf


def _extra(norm) -> tuple[bool, object]:
    """(supported, the extra logit: None, a number, or "sinks" for a parameter passed per head),
    read off the normalizer's formula: a member of the softmax family with no value of its own
    whose extra logit is none, a number or one parameter."""
    from derive.normalizers.family import kernel_form

    facts = kernel_form(norm)
    if not facts.checked:
        return False, None
    if facts.logit is None or isinstance(facts.logit, float):
        return True, facts.logit
    return (True, "sinks") if isinstance(facts.logit, str) else (False, None)


def _supported() -> list[str]:
    from derive.normalizers.registry import REGISTRY

    return [name for name, entry in REGISTRY.items() if _extra(entry)[0]]


def check_attention(target, norm, tols, cfg, *, layout: str, out_layout: str | None, scale, causal: bool,
                    start_q, window: int, mask_value: str, backward: bool, kw_names: dict, contract,
                    rounder, examples: int = 0, thin: bool = False) -> AttentionReport:
    known, extra = _extra(norm)
    if not known:
        raise InputError(f"--form attention supports the normalizers {', '.join(_supported())}; not {norm.name}")
    L = parse_layout(layout)
    OL = parse_layout(out_layout, "--out-layout") if out_layout else L
    if set(OL.axes) != set(L.axes):
        raise InputError(f"--out-layout {OL.axes} has other axes than --layout {L.axes}")
    roles = roles_of(target.extra.get("signature"), kw_names, target.name)
    if extra != "sinks":
        roles.pop("sinks", None)  # an optional sinks keyword is left at its default
    if extra == "sinks" and "sinks" not in roles:
        raise InputError(f"--as {norm.name} passes one extra logit per head; {target.name} takes no sinks keyword "
                         f"(one of {', '.join(ROLE_NAMES['sinks'])}, or name it with --kw sinks=NAME)")
    if mask_value not in ("-inf", "finfo-min"):
        try:
            value = float(mask_value)
        except ValueError:
            raise InputError(f"--mask-value {mask_value!r}: expected a number, -inf or finfo-min") from None
        if math.isnan(value) or value > 0 or value == INF:
            raise InputError(f"--mask-value {mask_value!r}: a masked key's additive value is negative")
    if contract.finite_scores and float(with_dtype_mask(mask_value, "float64")) == -INF:
        mask_value = "finfo-min"  # the contract: no −∞ reaches the kernel
    if start_q is not None and start_q != "end" and start_q < 0:
        raise InputError(f"--start-q {start_q}: a position is at least 0")
    stated = []
    if causal:
        stated.append("causal" + (" (passed as " + roles["causal"] + "=True)" if "causal" in roles else ""))
    if start_q is not None:
        stated.append(f"queries start at position {'N − M' if start_q == 'end' else start_q}")
    if window:
        stated.append(f"sliding window of {window} keys")
    if scale is not None:
        stated.append(f"scale {scale!r}")
    elif "scale" not in roles:
        stated.append("the kernel's scale is 1/√d")
    if "mask" in roles:
        stated.append(f"masked keys carry {mask_value} in the additive mask")
    setup = Setup(extra=extra, takes=frozenset(roles), causal=causal, start_q=start_q, window=window, thin=thin,
                  has_batch=L.has_batch, has_heads=L.has_heads, contract=contract)
    case_list = cases(setup)
    checker = AttentionChecker(target, norm, L, OL, roles, setup, scale, mask_value, backward, cfg.mp_dps)
    results = []
    notes = []
    for tol in tols:
        if not contract.dtype_ok(tol.dtype):
            notes.append(f"{tol.dtype} was not tested: outside the contract (dtypes {', '.join(contract.dtypes)})")
            continue
        results.append(checker.run(tol, lambda a, d=tol.dtype: rounder(a, d), case_list, examples))
    if not results:
        raise InputError("no dtype of --dtype lies inside the contract: nothing to test")
    if target.mutates:
        notes.append("the function modifies one of its input arrays in place")
    return AttentionReport(target=target.name, normalizer=norm.name, title=norm.title, layout=L.axes,
                           out_layout=OL.axes, api=checker.api or target.api, roles=roles, stated=stated,
                           contract=contract, skipped=dict(setup.skipped), results=results, backward=backward,
                           notes=notes, examples=examples)
