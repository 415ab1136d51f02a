"""The comparison table: every registered normalizer × every property, each cell a verdict.

:func:`build_table` runs the generic provers of :mod:`derive.normalizers.properties` on
every registry entry. :func:`cell_text` and :func:`markdown` turn the results into table
cells that link to the derivation of each cell (anchors ``nrm-<normalizer>-<property>``).
"""

from __future__ import annotations

from derive.progress import note
from derive.normalizers.properties import PROPERTIES, derive_property
from derive.normalizers.registry import get, names

__all__ = ["LEGEND", "SYMBOL", "anchor", "build_table", "cell_text", "markdown", "symbol"]

SYMBOL = {"proved": "✅", "refuted": "❌", "undecided": "❓"}
NOT_REPLAYED = "†"  # after ✅: proved (not replayed), the claim is outside the checker's language
LEGEND = ("✅ proved symbolically and replayed by derive's independent checker from its certificate "
          "([spec.md](spec.md#certificates)), ✅† proved (not replayed): a range, a sign or a limit along every path, "
          "outside the checker's language, resting on the symbolic proof alone")


def symbol(verdict) -> str:
    """The icon of a verdict: ✅, ✅† (proved, not replayed), ❌ or ❓."""
    seal = getattr(verdict, "seal", None)
    return SYMBOL[verdict.status] + (NOT_REPLAYED if verdict.status == "proved" and seal is not None
                                     and not seal.replayed else "")


def anchor(name: str, prop: str) -> str:
    return f"nrm-{name}-{prop}".replace("_", "-")


def build_table() -> dict:
    """{(normalizer, property): Derivation} for every entry and every property."""
    todo = names()
    out = {}
    for k, name in enumerate(todo):
        for prop in PROPERTIES:
            out[(name, prop)] = derive_property(name, prop)
        note("normalizers", f"table row {k + 1}/{len(todo)} ({name})")
    return out


_SAID_BY_ICON = ("yes", "no", "?")


def cell_text(der, link: bool = True) -> str:
    value = der.value_text()
    # the icon already says yes, no or undecided: a value that only repeats it is left out
    head, _, rest = value.partition(": ")
    value = "" if value in _SAID_BY_ICON else rest if head in _SAID_BY_ICON and rest else value
    text = f"{symbol(der.verdict)} {value}".strip()
    return f"[{text}](#{anchor(der.normalizer, der.prop)})" if link else text


def markdown(table: dict) -> str:
    """A plain Markdown table (properties × normalizers), for the benchmark and the CLI."""
    cols = names()
    lines = ["| property | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for prop, (title, *_) in PROPERTIES.items():
        cells = [cell_text(table[(nm, prop)], link=False).replace("|", "\\|") for nm in cols]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


_ = get
