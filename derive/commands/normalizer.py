"""``derive normalizer FILE.toml``: the property table of a spec's normalizer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from derive.errors import InputError

HELP = "the property table of a spec's normalizer (or of a built-in one, by name)"
DESCRIPTION = """Decide every property of the normalizer of FILE.toml (its [normalizer] table, or the
built-in it names) with the generic provers of docs/normalizers.md: the same code path and
the same table as for the built-in normalizers. NAME instead of a file gives a built-in's
table. Also says whether the normalizer is of the softmax family (and so has online, split
and backward kernel forms), and what it gives on a row with no allowed key.

Each property is bounded by --time-limit (CPU seconds); one that hits it is undecided.
Exit code: 0 (the table was made), 2 for bad input, 3 when derive's own engine failed on some
property (its row says "internal error" with the exception: no verdict; please report it)."""


def add_arguments(parser) -> None:
    parser.add_argument("file", metavar="FILE", help="a spec file (*.toml), or the name of a built-in normalizer")
    parser.add_argument("--format", choices=("md", "json"), default="md", help="output format (default md)")
    parser.add_argument("--time-limit", type=float, default=20.0, metavar="SECONDS",
                        help="CPU-time bound of each property, in seconds (default 20)")


def _entry(arg: str):
    from derive.normalizers.registry import REGISTRY, get

    if not arg.endswith(".toml") and arg in REGISTRY:
        return get(arg), {}
    if not Path(arg).is_file():
        raise InputError(f"{arg}: no such spec file (or built-in normalizer: {', '.join(sorted(REGISTRY))})")
    from derive.claims.variant import Variant
    from derive.spec import load_spec

    spec = load_spec(arg)
    return get(spec.normalizer), Variant(spec).property_params


def table(entry, params: dict, limit: float) -> dict:
    """{"normalizer", "title", "formula", "properties": [{property, title, verdict, value, reason, error}],
    "softmax_family", "fully_masked_row"}."""
    from derive.impl.exact.masked import rule
    from derive.normalizers.family import recognise, row_ratio
    from derive.normalizers.properties import PROPERTIES, derive_property
    from derive.timeout import TimeLimit, time_limit
    from derive.render.markup import plain_math

    rows = []
    for prop, (title, *_) in PROPERTIES.items():
        try:
            with time_limit(limit):
                der = derive_property(entry.name, prop, **params)
            seal = der.verdict.seal
            rows.append({"property": prop, "title": plain_math(title), "verdict": der.verdict.status,
                         "replay": None if seal is None else "replayed" if seal.replayed else "not replayed",
                         "value": plain_math(der.value_text()), "reason": der.verdict.reason, "error": None})
        except TimeLimit:
            rows.append({"property": prop, "title": plain_math(title), "verdict": "undecided", "value": "?",
                         "reason": f"hit the time limit ({limit:g} s)", "error": None})
        except Exception as exc:  # noqa: BLE001 - the engine failed: this row is an error, never a verdict
            from derive.errors import describe, error_text

            info = describe(exc)
            rows.append({"property": prop, "title": plain_math(title), "verdict": "error", "value": "?",
                         "reason": error_text(info), "error": info})
    fam, why = recognise(entry)
    ratio, how = row_ratio(entry) if fam is None else (None, "")
    family = {"member": fam is not None,
              "extra_logit": None if fam is None or fam.logit is None else str(fam.logit),
              "kernel_forms": ["online", "split", "backward"] if fam is not None else
              ["online", "split"] if ratio is not None else [],
              "why_not": plain_math(why) if why else "",
              "ratio": plain_math(how) if ratio is not None else ""}
    masked = rule(entry)
    return {"normalizer": entry.name, "title": entry.title, "formula": entry.formula,
            "parameters": list(entry.params), "properties": rows, "softmax_family": family,
            "fully_masked_row": {"defined": masked.defined, "gives": plain_math(masked.says),
                                 "undefined_where": plain_math(masked.unless)}}


_MARK = {"proved": "✅", "refuted": "❌", "undecided": "❓", "error": "💥"}


def markdown(t: dict) -> str:
    lines = [f"### Normalizer `{t['normalizer']}`", "", f"weight: `{t['formula']}`", "",
             "| property | verdict | value | reason |", "|---|---|---|---|"]
    for r in t["properties"]:
        shown = "internal error" if r["verdict"] == "error" else \
            "proved (not replayed)" if r.get("replay") == "not replayed" else r["verdict"]
        cells = [r["title"], f"{_MARK[r['verdict']]} {shown}", r["value"], r["reason"]]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    fam = t["softmax_family"]
    if fam["member"]:
        logit = fam["extra_logit"]
        lines += ["", "softmax family: " + ("no extra logit" if logit is None else f"extra logit σ = {logit}") +
                  "; kernel forms online, split and backward"]
    elif fam["kernel_forms"]:
        lines += ["", f"not of the softmax family; {fam['ratio']}: kernel forms online and split"]
    else:
        lines += ["", f"not of the softmax family, and no online form derived: {fam['why_not']}"]
    lines.append(f"row with no allowed key: {t['fully_masked_row']['gives']}")
    return "\n".join(lines) + "\n"


def run(args) -> int:
    if not 0 < args.time_limit <= 3600:
        raise InputError(f"--time-limit must be in (0, 3600], got {args.time_limit:g}")
    entry, params = _entry(args.file)
    t = table(entry, params, args.time_limit)
    sys.stdout.write(json.dumps(t, indent=2, ensure_ascii=False) + "\n" if args.format == "json" else markdown(t))
    return 3 if any(r["verdict"] == "error" for r in t["properties"]) else 0
