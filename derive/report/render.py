"""Render check results. Output is deterministic: no time, no path of the machine."""

from __future__ import annotations

import json
from pathlib import Path

import jinja2

from derive.claims.result import ICONS

__all__ = ["SCHEMA_VERSION", "environment", "one_line", "render", "to_json"]

SCHEMA_VERSION = "2"  # "2": cross_check has no measured errors (machine-dependent digits)


def _template_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    for cand in (here / "templates", here.parent / "templates"):
        if (cand / "check.md.j2").exists():
            return cand
    raise FileNotFoundError("the derive templates are missing (templates/check.md.j2)")


def one_line(text: str, limit: int = 140) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tex_escape(text: str) -> str:
    repl = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}",
            "⟨": r"$\langle$", "⟩": r"$\rangle$", "·": r"$\cdot$", "′": "'", "ᵀ": r"$^T$",
            "−": "-", "≠": r"$\neq$", "Σ": r"$\Sigma$", "²": r"$^2$", "…": r"\dots{}", "→": r"$\to$",
            "α": r"$\alpha$", "√": r"$\surd$", "Δ": r"$\Delta$", "≤": r"$\leq$", "₁": r"$_1$",
            "✅": "", "❌": "", "❓": ""}
    # other non-ASCII characters (a spec's name may contain any) would stop pdflatex
    return "".join(repl.get(ch, ch if ord(ch) < 128 else "?") for ch in str(text))


def _compact(data) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(", ", ": "))


def anchor(*parts: str) -> str:
    raw = "-".join(parts).lower()
    return "".join(ch if ch.isalnum() else "-" for ch in raw).strip("-")


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(_template_dir())),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             autoescape=False, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(one_line=one_line, tex=_tex_escape, compact=_compact, anchor=anchor)
    env.globals.update(icons=ICONS)
    return env


def to_json(results: list) -> str:
    from derive import __version__

    doc = {"version": __version__, "schema": SCHEMA_VERSION, "specs": [r.as_json() for r in results]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def render(results: list, fmt: str) -> str:
    if fmt == "json":
        return to_json(results)
    from derive import __version__

    template = environment().get_template(f"check.{fmt}.j2")
    return template.render(results=results, version=__version__)
