"""Every failure class of a kernel-form check, not the first failure only.

A kernel that is wrong on rows it never receives (a sink of −∞, rows of −∞ scores) and right
everywhere else, or wrong only past its 64th key, deserves a report that says so. The check
therefore runs the whole fixed list and compares every row. A row belongs to every class whose
feature it has (:func:`row_classes`: a long row with masked keys in many tiles is of three); a
failing row is *filed* under the first of them in the order of :data:`KERNEL_CLASSES`, which
keeps the first row filed under it (the fixed list goes from short rows to long ones, so that is
the class's smallest counterexample), and every other class it belongs to fails too, with a
pointer to the class it is filed under (:data:`RULE`, :func:`file_failure`). A class passes
only when rows of it were judged and none of them failed.

The contract (:mod:`derive.impl.cases.contract`) is applied here too: a call outside it is not made
(a tile size, a split count, a sink value, a row length the kernel does not accept), a masked
key is passed as the contract's finite mask value under ``finite-scores``, and a row outside it
(``no-fully-masked``) is not judged.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from derive.impl.numbers import listed, num

__all__ = ["KERNEL_CLASSES", "RULE", "admitted", "unjudged_classes", "verdict", "cell", "class_lines", "file_failure", "overall", "prepare", "record_call",
           "calls_classes", "row_class", "row_classes", "status"]

INF = math.inf
EXTREME = 30.0  # a sink logit this large in magnitude (or −∞) is an extreme one
# the rule of every form's failure classes, as the reports state it
RULE = ("An input belongs to every class whose feature it has; a failing input is shown under the first of "
        "them in the table's order, and every other class it belongs to fails with it (\"fails, see …\"): "
        "a class passes only when none of its inputs failed.")
KERNEL_CLASSES: dict[str, str] = {  # in the order a failing row is filed: the first that applies
    "empty": "empty rows (no keys)",
    "fully-masked": "fully masked rows",
    "sinks": "extreme sinks (|s| ≥ 30, −∞, or a bound of the contract's range)",
    "masked": "masked rows (some keys masked, not all)",
    "tiles": "many tiles (4 or more)",
    "splits": "several splits (2 or more)",
    "long": "long rows (17 keys or more)",
    "late": "rows late in a call (the 9th on)",
    "layout": "batch and head layouts (rows as (1, R, n), or per head)",
    "param-grad": "a parameter's gradient (the sum over rows)",
    "finite": "finite rows (none of the above)",
}


def file_failure(classes: dict, failed_in: dict, members, fail) -> None:
    """File ``fail`` by :data:`RULE`: under the first class of ``members`` (the first failure filed
    there is kept: its smallest counterexample), and mark every class of ``members`` as failing,
    pointing to the class its first failure is filed under (``failed_in``: class → filing class)."""
    members = list(members)
    if not getattr(fail, "cls", None):
        fail.cls = members[0]
    classes.setdefault(members[0], fail)
    for cls in members:
        failed_in.setdefault(cls, members[0])


def status(cls: str, classes: dict, failed_in: dict, counted: dict) -> str:
    """``fails`` (a counterexample of its own), ``fails-with`` (only inputs filed under another
    class failed), ``passes`` or ``not tested``."""
    if cls in classes:
        return "fails"
    if cls in failed_in:
        return "fails-with"
    return "passes" if counted.get(cls) else "not tested"


def cell(cls: str, classes: dict, failed_in: dict, counted: dict, titles: dict, unit: str = "") -> str:
    """A table cell by :data:`RULE`."""
    st = status(cls, classes, failed_in, counted)
    if st == "fails":
        return "**fails**"
    if st == "fails-with":
        return f"**fails**, see {titles[failed_in[cls]]}"
    return f"passes ({counted[cls]}{unit})" if st == "passes" else "not tested"


def _masked(checker, x: np.ndarray) -> np.ndarray:
    c = checker.contract
    if c is None or not c.finite_scores:
        return x == -INF
    return (x == -INF) | (x <= -65504.0)  # −∞, or the contract's finite mask value (finfo.min)


def _extreme(checker, value: float) -> bool:
    """−∞, |s| ≥ 30, or a bound of the contract's sink range (the most extreme sink it admits)."""
    bounds = () if checker.contract is None or checker.contract.sinks is None else checker.contract.sinks
    return value == -INF or abs(value) >= EXTREME or value in bounds


def row_classes(checker, call, r: int) -> list[str]:
    """Every class a row (r ≥ 0) or a whole call (r = −1: a parameter's gradient) belongs to, in the
    order of :data:`KERNEL_CLASSES` (the first is the one it is filed under)."""
    if r < 0:
        params = [float(v) for v in np.ravel(list(call.params.values()))]
        return ["sinks", "param-grad"] if any(_extreme(checker, v) for v in params) else ["param-grad"]
    return calls_classes(checker, call, (r,))[0]


def calls_classes(checker, call, rows) -> list[list[str]]:
    """:func:`row_classes` of each row in ``rows`` (r ≥ 0), the masks of the call's rows found at once."""
    n = call.x.shape[-1]
    masked = _masked(checker, call.x)
    every, some = masked.all(axis=-1).tolist(), masked.any(axis=-1).tolist()
    extremes: dict = {}  # the parameters of row r are those of its head (r mod H), or the call's
    shared = []  # the classes every row of the call has or lacks alike, after masked
    if call.form == "online" and n and -(-n // int(call.third)) >= 4:
        shared.append("tiles")
    if call.form == "split" and n >= 2 and int(call.third) >= 2:
        shared.append("splits")
    if n >= 17:
        shared.append("long")
    out = []
    for r in rows:
        slot = r % call.heads if call.heads else 0
        if slot not in extremes:
            extremes[slot] = any(_extreme(checker, v) for v in call.row_params(r).values())
        extreme = extremes[slot]
        if n == 0:
            out.append(["empty"] + (["sinks"] if extreme else []))
            continue
        cls = []
        if every[r]:
            cls.append("fully-masked")
        if extreme:
            cls.append("sinks")
        if some[r] and not every[r]:
            cls.append("masked")
        cls += shared
        if r >= 8:
            cls.append("late")
        if len(call.lead) > 1:
            cls.append("layout")
        out.append(cls or ["finite"])
    return out


def row_class(checker, call, r: int) -> str:
    """The class a row (r ≥ 0) or a whole call (r = −1) is filed under: the first it belongs to."""
    return row_classes(checker, call, r)[0]


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
        call.masked = call.x == -INF
        call.x = np.where(call.masked, c.masked_as(dtype), call.x)
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
    """Compare every row of ``call``; file each failure by :data:`RULE` (:func:`file_failure`)."""
    R = call.x.shape[0]
    classes = calls_classes(checker, call, range(R))
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
            failed.add(r)
            file_failure(result.classes, result.failed_in, classes[r] if r >= 0 else row_classes(checker, call, r), fail)
            if result.failure is None:
                result.failure, result.source = fail, source
        if r < 0:
            break
        start = r + 1
    result.max_ratio = max(result.max_ratio, tally.max_ratio)
    for conv, count in tally.conventions.items():
        result.conventions[conv] = result.conventions.get(conv, 0) + count
    result.plus_inf_lse += tally.plus_inf_lse
    kaps = checker.passing_rows(call, got, tol)[2]
    vacuous = [r for r in range(R) if not _outside(checker, call, r) and r not in failed
               and checker.exact(call, r).defined and tol.vacuous(kaps[r])]  # passed a bound that cannot fail
    if vacuous:
        result.vacuous_rows += len(vacuous)
        result.vacuous_reason = result.vacuous_reason or tol.vacuous_reason(kaps[vacuous[0]])
        for r in vacuous:
            for cls in classes[r]:
                result.class_unjudged[cls] = result.class_unjudged.get(cls, 0) + 1
    judged = [r for r in range(R) if not _outside(checker, call, r) and r not in vacuous]
    result.rows += len(judged)
    result.undefined_rows += sum(not checker.exact(call, r).defined for r in judged)
    for r in judged:
        for cls in classes[r]:
            result.class_rows[cls] = result.class_rows.get(cls, 0) + 1


def unjudged_classes(judged: dict, unjudged: dict) -> list:
    """The classes that had rows but none judged: every one of them was a row whose comparison could
    not fail or whose exact value was out of reach (``judged``, ``unjudged``: class → rows)."""
    return [cls for cls, n in unjudged.items() if n and not judged.get(cls, 0)]


def verdict(failed: bool, judged: dict, unjudged: dict) -> str:
    """The verdict of one dtype, for every form: disagrees on a failure; else agrees when every class
    that had rows has judged rows (the rows not judged are counted in a note, they are no evidence
    either way), undecided when a class has none (:func:`unjudged_classes`)."""
    if failed:
        return "disagrees"
    return "undecided" if unjudged_classes(judged, unjudged) else "agrees"


def overall(verdicts) -> str:
    """The verdict of a report from those of its dtypes (:func:`verdict`): disagrees if one does,
    else undecided if one is, else agrees."""
    verdicts = list(verdicts)
    return next((v for v in ("disagrees", "undecided") if v in verdicts), "agrees")


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
        cells = [cell(cls, r.classes, r.failed_in, r.class_rows, KERNEL_CLASSES, " rows") for r in results]
        if any(c != "not tested" for c in cells):
            lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines.append("")
    if any(r.failed_in for r in results):
        lines += [RULE, ""]
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
