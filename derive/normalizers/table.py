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

from derive import parallel
from derive.normalizers import properties
from derive.progress import note
from derive.normalizers.properties import PROPERTIES, derive_property
from derive.normalizers.registry import get, names

__all__ = ["SYMBOL", "anchor", "build_table", "cell_text", "markdown"]

SYMBOL = {"proved": "✅", "refuted": "❌", "undecided": "❓"}


def anchor(name: str, prop: str) -> str:
    return f"nrm-{name}-{prop}".replace("_", "-")


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
    helpers = parallel.spare_helpers() if workers is None else workers - 1
    todo = names()
    tasks = _tasks(todo)

    def done(k: int) -> None:
        name, props = tasks[k]
        note("normalizers", f"table {k + 1}/{len(tasks)} ({name}: {', '.join(props)})")

    cells = {}
    for (name, props), ders in zip(tasks, parallel.share(tasks, _task, helpers, done)):
        cells.update(zip(((name, p) for p in props), ders))
    out = {}
    for name in todo:
        for prop in PROPERTIES:
            out[(name, prop)] = der = cells[(name, prop)]
            properties._CACHE.setdefault((name, prop, ()), der)
    return out


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
