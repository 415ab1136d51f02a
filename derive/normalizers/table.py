"""The comparison table: every registered normalizer × every property, each cell a verdict.

:func:`build_table` runs the generic provers of :mod:`derive.normalizers.properties` on
every registry entry (in this process and a forked helper when the process may use two
cores, except in a document built beside others in parallel: there the cores are taken and
a helper only adds work). The two take cells, not rows, the costliest first, so that they
finish together; cells that share work are one task. :func:`cell_text` and
:func:`markdown` turn the results into table cells that link to the derivation of each cell
(anchors ``nrm-<normalizer>-<property>``).
"""

from __future__ import annotations


from derive import shared
from derive.normalizers import properties
from derive.progress import note
from derive.shared import cores as _cores
from derive.normalizers.properties import PROPERTIES, derive_property
from derive.normalizers.registry import get, names

__all__ = ["SYMBOL", "anchor", "build_table", "cell_text", "markdown"]

SYMBOL = {"proved": "✅", "refuted": "❌", "undecided": "❓"}


def anchor(name: str, prop: str) -> str:
    return f"nrm-{name}-{prop}".replace("_", "-")


def _row(name: str) -> list:
    return [derive_property(name, prop) for prop in PROPERTIES]


def _task(task: tuple) -> list:
    name, props = task
    return [derive_property(name, prop) for prop in props]


# Cells that share work run in one task: shift_effect reads shift_invariant when the entry
# states no shift effect, and the three Jacobian cells share the entry's derivatives (computed
# once per process).
_TOGETHER = (
    ("shift_invariant", "shift_effect"),
    ("jacobian_diagonal", "jacobian_offdiagonal", "gradient_nonvanishing"),
)
# Rough relative costs, only to order the tasks (the costliest first); a wrong guess costs
# time, never a different result.
_ROW_COST = {"clipped": 4, "softcap": 2}
_PROP_COST = {"ratio_identity": 3, "limit_any_path": 3, "jacobian_diagonal": 3, "k_bias_cancels": 2, "stable_form": 2}


def _tasks(todo: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """(normalizer, properties) tasks covering every cell, the costliest first."""
    groups = [g for g in _TOGETHER if all(p in PROPERTIES for p in g)]
    grouped = {p for g in groups for p in g}
    per_row = groups + [(p,) for p in PROPERTIES if p not in grouped]
    tasks = [(name, props) for name in todo for props in per_row]
    cost = lambda t: _ROW_COST.get(t[0], 1) * sum(_PROP_COST.get(p, 1) for p in t[1])
    return sorted(tasks, key=lambda t: -cost(t))  # stable: ties keep the table's order


def build_table(workers: int | None = None) -> dict:
    """{(normalizer, property): Derivation} for every entry and every property."""
    if workers is None:
        workers = 1 if shared.in_parallel_build() else min(2, _cores())
    todo = names()
    cells: dict[tuple[str, str], object] = {}
    if workers > 1:
        try:
            cells = _shared_build(_tasks(todo), workers - 1)
        except (OSError, ValueError, RuntimeError, ImportError):
            cells = {}
    for name in todo:
        if any((name, prop) not in cells for prop in PROPERTIES):
            cells.update(zip(((name, p) for p in PROPERTIES), _row(name)))
            note("normalizers", f"table row {todo.index(name) + 1}/{len(todo)} ({name})")
    out = {}
    for name in todo:
        for prop in PROPERTIES:
            out[(name, prop)] = der = cells[(name, prop)]
            properties._CACHE.setdefault((name, prop, ()), der)
    return out


def _shared_build(tasks: list, helpers: int) -> dict:
    """Every task's cells, computed by this process and ``helpers`` forked ones, each taking
    the next task of the list whenever it is free. This process works too rather than wait:
    reading a cell back from a helper rebuilds its expressions, which costs a tenth of
    computing it, so the cells computed here are the cheapest to have."""
    import multiprocessing
    import queue

    ctx = multiprocessing.get_context("fork")
    taken, results = ctx.Value("i", 0), ctx.Queue()
    procs = [ctx.Process(target=_helper, args=(tasks, taken, results), daemon=True) for _ in range(helpers)]
    for proc in procs:
        proc.start()
    done: dict[int, list] = {}

    def finished(k: int, ders: list | None) -> None:
        done[k] = ders if ders is not None else _task(tasks[k])  # a helper's failure is met again here
        name, props = tasks[k]
        note("normalizers", f"table {len(done)}/{len(tasks)} ({name}: {', '.join(props)})")

    def receive(wait: bool) -> None:
        while True:
            try:
                finished(*results.get(timeout=0.1) if wait else results.get_nowait())
            except queue.Empty:
                return

    try:
        while (k := _take(taken)) < len(tasks):
            finished(k, _task(tasks[k]))
            receive(False)
        while len(done) < len(tasks) and (any(p.is_alive() for p in procs) or not results.empty()):
            receive(True)
        for k in range(len(tasks)):  # taken by a helper that died on it
            if k not in done:
                finished(k, None)
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
    cells = {}
    for (name, props), ders in zip(tasks, (done[k] for k in range(len(tasks)))):
        cells.update(zip(((name, p) for p in props), ders))
    return cells


def _take(taken) -> int:
    """The index of the next task, taken by exactly one process."""
    with taken.get_lock():
        k = taken.value
        taken.value += 1
    return k


def _helper(tasks: list, taken, results) -> None:
    """A forked worker: compute the next task until none is left, sending back (index, cells)."""
    while (k := _take(taken)) < len(tasks):
        try:
            ders = _task(tasks[k])
        except Exception:  # noqa: BLE001 - the parent computes the task again and meets the error itself
            ders = None
        results.put((k, ders))


def cell_text(der, link: bool = True) -> str:
    text = f"{SYMBOL[der.verdict.status]} {der.value_text()}".strip()
    return f"[{text}](#{anchor(der.normalizer, der.prop)})" if link else text


def markdown(table: dict) -> str:
    """A plain Markdown table (properties × normalizers), for the benchmark and the CLI."""
    cols = names()
    lines = ["| property | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for prop, (title, _) in PROPERTIES.items():
        cells = [cell_text(table[(nm, prop)], link=False).replace("|", "\\|") for nm in cols]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


_ = get
