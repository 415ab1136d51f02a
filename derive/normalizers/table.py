"""The comparison table: every registered normalizer × every property, each cell a verdict.

:func:`build_table` runs the generic provers of :mod:`derive.normalizers.properties` on
every registry entry (in two worker processes when the process may use two cores, except in a
document built beside others in parallel: there the cores are taken and a pool only adds
work); :func:`cell_text` and :func:`markdown` turn the results into table cells that link to the derivation of each
cell (anchors ``nrm-<normalizer>-<property>``).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

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


def build_table(workers: int | None = None) -> dict:
    """{(normalizer, property): Derivation} for every entry and every property."""
    if workers is None:
        workers = 1 if shared.in_parallel_build() else min(2, _cores())
    todo = names()
    rows: dict[str, list] = {}
    if workers > 1:
        try:
            import multiprocessing

            ctx = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                # the slowest entries first, so the two workers finish together
                order = sorted(todo, key=lambda nm: nm not in ("softcap", "clipped"))
                for k, (name, row) in enumerate(zip(order, pool.map(_row, order))):
                    rows[name] = row
                    note("normalizers", f"table row {k + 1}/{len(order)} ({name})")
        except (OSError, ValueError, RuntimeError, ImportError):
            rows = {}
    for name in todo:
        if name not in rows:
            rows[name] = _row(name)
            note("normalizers", f"table row {len(rows)}/{len(todo)} ({name})")
    out = {}
    for name in todo:
        for prop, der in zip(PROPERTIES, rows[name]):
            out[(name, prop)] = der
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
