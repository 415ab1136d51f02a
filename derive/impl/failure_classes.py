"""Every failure class of a kernel-form check, not the first failure only.

A kernel that is wrong on rows it never receives (a sink of −∞, rows of −∞ scores) and right
everywhere else, or wrong only past its 64th key, deserves a report that says so. The check
therefore runs the whole fixed list, compares every row, and files each failing row under one
class (:data:`KERNEL_CLASSES`, the first that applies in that order), keeping the first failure
of each class: the fixed list goes from short rows to long ones, so that is the class's
smallest counterexample. A class passes when rows of it were judged and none failed.

The contract (:mod:`derive.impl.contract`) is applied here too: a call outside it is not made
(a tile size, a split count, a sink value, a row length the kernel does not accept), a masked
key is passed as the contract's finite mask value under ``finite-scores``, and a row outside it
(``no-fully-masked``) is not judged.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from derive.impl.numbers import listed, num

__all__ = ["KERNEL_CLASSES", "admitted", "class_lines", "prepare", "record_call", "row_class"]

INF = math.inf
EXTREME = 30.0  # a sink logit this large in magnitude (or −∞) is an extreme one
KERNEL_CLASSES: dict[str, str] = {  # in the order a failing row is filed: the first that applies
    "empty": "empty rows (no keys)",
    "fully-masked": "fully masked rows",
    "sinks": "extreme sinks (|s| ≥ 30, −∞, or a bound of the contract's range)",
    "masked": "masked rows (some keys masked)",
    "tiles": "many tiles (4 or more)",
    "splits": "several splits (2 or more)",
    "long": "long rows (17 keys or more)",
    "late": "rows late in a call (the 9th on)",
    "layout": "batch and head layouts (rows as (1, R, n), or per head)",
    "param-grad": "a parameter's gradient (the sum over rows)",
    "finite": "finite rows",
}


def _masked(checker, x: np.ndarray) -> np.ndarray:
    c = checker.contract
    if c is None or not c.finite_scores:
        return x == -INF
    return (x == -INF) | (x <= -65504.0)  # −∞, or the contract's finite mask value (finfo.min)


def _extreme(checker, value: float) -> bool:
    """−∞, |s| ≥ 30, or a bound of the contract's sink range (the most extreme sink it admits)."""
    bounds = () if checker.contract is None or checker.contract.sinks is None else checker.contract.sinks
    return value == -INF or abs(value) >= EXTREME or value in bounds


def row_class(checker, call, r: int) -> str:
    """The class a row (r ≥ 0) or a whole call (r = −1: a parameter's gradient) is filed under."""
    params = [float(v) for v in np.ravel(list(call.params.values()))] if r < 0 else list(call.row_params(r).values())
    if r < 0:
        return "sinks" if any(_extreme(checker, v) for v in params) else "param-grad"
    x = call.x[r]
    n = x.shape[-1]
    masked = _masked(checker, x)
    if n == 0:
        return "empty"
    if masked.all():
        return "fully-masked"
    if any(_extreme(checker, v) for v in params):
        return "sinks"
    if masked.any():
        return "masked"
    if call.form == "online" and n and -(-n // int(call.third)) >= 4:
        return "tiles"
    if call.form == "split" and n >= 2 and int(call.third) >= 2:
        return "splits"
    if n >= 17:
        return "long"
    if r >= 8:
        return "late"
    if len(call.lead) > 1:
        return "layout"
    return "finite"


def prepare(checker, call, dtype: str):
    """The call as the contract allows it, or None when the contract rules it out."""
    c = checker.contract
    if c is None or c.empty:
        return call
    if call.form == "online" and not c.block_ok(int(call.third)):
        return None
    if call.form == "split" and not c.splits_ok(int(call.third)):
        return None
    if call.x.shape[-1] < c.min_keys:
        return None
    if not all(c.sink_ok(float(v)) for v in np.ravel(list(call.params.values()))):
        return None
    if c.finite_scores:
        call.x = np.where(call.x == -INF, c.masked_as(dtype), call.x)
    return call


def admitted(checker, calls, dtype: str):
    for call in calls:
        call = prepare(checker, call, dtype)
        if call is not None:
            yield call


def _outside(checker, call, r: int) -> bool:
    c = checker.contract
    return (r >= 0 and c is not None and c.no_fully_masked and call.x.shape[-1] > 0
            and bool(_masked(checker, call.x[r]).all()))


def record_call(checker, call, got: dict, tol, result, source: str = "fixed list") -> None:
    """Compare every row of ``call``; file each failure under its class (the first per class)."""
    R = call.x.shape[0]
    start = 0
    # rows are counted once below; each compare covers rows start..(its failing row), so the masked-row
    # conventions and +∞ lse it notes are of disjoint rows
    tally = SimpleNamespace(rows=0, undefined_rows=0, max_ratio=0.0, conventions={}, plus_inf_lse=0)
    failed = set()
    while start <= R:
        with np.errstate(over="ignore"):  # an error over a tiny bound: the ratio of a failing row is inf
            fail = checker.compare(call, got, tol, tally, start)
        if fail is None:
            break
        r = fail.row
        if not _outside(checker, call, r):
            cls = row_class(checker, call, r)
            fail.cls = cls
            failed.add(r)
            if cls not in result.classes:
                result.classes[cls] = fail
            if result.failure is None:
                result.failure, result.source = fail, source
        if r < 0:
            break
        start = r + 1
    result.max_ratio = max(result.max_ratio, tally.max_ratio)
    for conv, count in tally.conventions.items():
        result.conventions[conv] = result.conventions.get(conv, 0) + count
    result.plus_inf_lse += tally.plus_inf_lse
    judged = [r for r in range(R) if not _outside(checker, call, r)]
    result.rows += len(judged)
    result.undefined_rows += sum(not checker.exact(call, r).defined for r in judged)
    for r in judged:
        cls = row_class(checker, call, r)
        result.class_rows[cls] = result.class_rows.get(cls, 0) + 1


def _six(v) -> str:
    """A summary's number: 6 significant digits (the full ones are in the failure's own lines; the
    last digits of a kernel's output depend on the numpy build, and documents must not)."""
    return num(v, 6)


def class_lines(results, contract) -> list[str]:
    """The report's section: what was assumed, and every class by dtype (fails / passes / not tested),
    with each failing class's smallest counterexample."""
    lines = []
    if contract is not None and not contract.empty:
        lines += ["Assumed (contract): " + "; ".join(contract.describe()) + ". Inputs outside it were not made.", ""]
    lines.append("| class | " + " | ".join(r.dtype for r in results) + " |")
    lines.append("|---|" + "---|" * len(results))
    for cls, title in KERNEL_CLASSES.items():
        cells = []
        for r in results:
            if cls in r.classes:
                cells.append("**fails**")
            elif r.class_rows.get(cls):
                cells.append(f"passes ({r.class_rows[cls]} rows)")
            else:
                cells.append("not tested")
        if any(c != "not tested" for c in cells):
            lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines.append("")
    for r in results:
        for cls in KERNEL_CLASSES:
            f = r.classes.get(cls)
            if f is None:
                continue
            where = (f"row {f.row}: x = `{listed(f.call.x[f.row], num)}`" if f.row >= 0
                     else "the gradient summed over the rows")
            lines.append(f"- fails, {KERNEL_CLASSES[cls]} ({r.dtype}): {f.call.describe()}, {where}; {f.what} "
                         f"returned `{listed(f.output[:4], _six)}`, exact `{listed(f.exact[:4], _six)}`")
    for r in results:
        if r.stopped:
            lines.append(f"- the fixed list stopped early ({r.dtype}): {r.stopped}; the inputs after it were not "
                         f"tested")
    if any(r.classes or r.stopped for r in results):
        lines.append("")
    return lines
