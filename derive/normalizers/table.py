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
from derive.normalizers import equivalences, properties
from derive.progress import note
from derive.normalizers.properties import PROPERTIES, derive_property
from derive.normalizers.registry import get, names

__all__ = ["SYMBOL", "anchor", "build_table", "cell_text", "markdown"]

SYMBOL = {"proved": "✅", "refuted": "❌", "undecided": "❓"}


def anchor(name: str, prop: str) -> str:
    return f"nrm-{name}-{prop}".replace("_", "-")


def _task(task: tuple) -> list:
    name, props = task
    if name == _EQUIVALENCE:
        return [equivalences.decide(k) for k in props]
    return [derive_property(name, prop) for prop in props]


_EQUIVALENCE = "equivalence"  # the task of deciding token equivalences (indices, not properties)


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


def _tasks(cells, token_equivalences: bool = False) -> list[tuple[str, tuple]]:
    """(normalizer, properties) tasks covering ``cells``, and (with ``token_equivalences``) one
    task per token equivalence; the costliest first."""
    wanted = set(cells)
    rows = list(dict.fromkeys(name for name, _ in cells))
    groups = [g for g in _TOGETHER if all(p in PROPERTIES for p in g)]
    grouped = {p for g in groups for p in g}
    per_row = groups + [(p,) for p in PROPERTIES if p not in grouped]
    tasks = [(name, tuple(p for p in props if (name, p) in wanted)) for name in rows for props in per_row]
    tasks = [t for t in tasks if t[1]]
    if token_equivalences:
        tasks += [(_EQUIVALENCE, (k,)) for k in range(len(equivalences.EQUIVALENCES))]
    cost = lambda t: (3 if t[0] == _EQUIVALENCE else
                      _ROW_COST.get(t[0], 1) * sum(_PROP_COST.get(p, 1) for p in t[1]))
    return sorted(tasks, key=lambda t: -cost(t))  # stable: ties keep the given order


def prefetch(cells=(), token_equivalences: bool = False, helpers: int | None = None, doc: str = "normalizers") -> None:
    """Compute table ``cells`` [(normalizer, property), …] and (``token_equivalences``) the
    verdicts of :data:`~derive.normalizers.equivalences.EQUIVALENCES` ahead of their use, in this
    process and a forked helper (:func:`derive.parallel.share`); later calls of
    :func:`~derive.normalizers.properties.derive_property` and
    :func:`~derive.normalizers.equivalences.decide_all` find them computed.

    Only where the document has spare cores (``helpers``: by default
    :func:`derive.parallel.spare_helpers`); otherwise nothing is done here, and each result is
    computed where it is first needed and shared between documents by :mod:`derive.shared`.
    """
    helpers = parallel.spare_helpers() if helpers is None else helpers
    if helpers <= 0:
        return
    cells = [c for c in cells if (c[0], c[1], ()) not in properties._CACHE]
    tasks = _tasks(cells, token_equivalences and len(equivalences._DECIDED) < len(equivalences.EQUIVALENCES))

    def done(k: int) -> None:
        name, what = tasks[k]
        note(doc, f"prefetched {k + 1}/{len(tasks)} ({name}: {', '.join(map(str, what))})")

    for (name, what), results in zip(tasks, parallel.share(tasks, _task, helpers, done)):
        for key, result in zip(what, results):
            if name == _EQUIVALENCE:
                equivalences._DECIDED.setdefault(key, result)
            else:
                properties._CACHE.setdefault((name, key, ()), result)


def build_table(workers: int | None = None, token_equivalences: bool = False) -> dict:
    """{(normalizer, property): Derivation} for every entry and every property; with
    ``token_equivalences`` the equivalences are decided alongside (see :func:`prefetch`)."""
    todo = names()
    prefetch([(name, prop) for name in todo for prop in PROPERTIES], token_equivalences,
             None if workers is None else workers - 1)
    out = {}
    for k, name in enumerate(todo):
        for prop in PROPERTIES:
            out[(name, prop)] = derive_property(name, prop)
        note("normalizers", f"table row {k + 1}/{len(todo)} ({name})")
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
