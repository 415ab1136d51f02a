"""Render a checked document into its files (Markdown and JSON for ``docs/``, LaTeX and
figure PDFs for ``build/``), as bytes in memory; writing them is the build's job."""

from __future__ import annotations

import functools

from dataclasses import dataclass, field
from pathlib import Path


from derive.render.view import to_json, view

__all__ = ["Rendered", "environment", "render_document", "template_dir"]


def template_dir() -> Path:
    """``derive/templates`` in an installed wheel, the top-level ``templates/`` in a checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "templates", here.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("derive's templates are missing: reinstall derive")


@functools.cache
def environment(reports: bool = False) -> jinja2.Environment:
    """The Jinja environment of derive's templates, one per process and kind, so a template is
    compiled once (the build compiles the documents' templates before it forks, see
    :data:`derive.build.PRELOAD`): the documents' templates keep their whitespace as written, the
    reports' (``check.md.j2``, ``impl-report.md.j2``, …) drop a block tag's line (``trim_blocks``,
    ``lstrip_blocks``). :mod:`derive.report.render` adds the reports' filters."""
    import jinja2  # imported when a document is rendered, not by every command that loads derive

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=reports,
        lstrip_blocks=reports,
    )


@dataclass
class Rendered:
    docs: dict[str, bytes] = field(default_factory=dict)  # file name → content, for docs/
    build: dict[str, bytes] = field(default_factory=dict)  # file name → content, for build/
    steps: int = 0  # checked steps (proved or refuted) behind the files, for the build's log
    checks: int = 0  # numeric cross-checks they passed
    decided: dict = field(default_factory=dict)  # status → count of claims decided outside steps (table cells)
    summary: str = ""  # for the build's log, what a page without steps of its own ran (else the counts)


def render_document(doc, figure_pdfs: bool = True) -> Rendered:
    """Markdown, JSON and SVG figures for ``docs/``; LaTeX and (``figure_pdfs``: only a build that
    makes PDFs needs them) the figures as PDF for ``build/``."""
    env = environment()
    out = Rendered(steps=len(doc.steps()), checks=len(doc.checks), decided=dict(doc.decided))
    md = env.get_template("document.md.j2").render(**view(doc, "md"))
    out.docs[f"{doc.slug}.md"] = _tidy(md).encode()
    out.docs[f"{doc.slug}.json"] = to_json(doc).encode()
    out.build[f"{doc.slug}.tex"] = _tidy(env.get_template("document.tex.j2").render(**view(doc, "tex"))).encode()
    for k, (name, seal) in enumerate(doc.seals(), 1):  # what `derive replay` checks (build/certificates/)
        if seal.certificate is not None:
            out.build[f"certificates/{doc.slug}/{k:03d}.json"] = certificate_bytes(seal.certificate)
    for b in doc.blocks:
        if b.kind == "figure":
            drawn = b.render(("svg", "pdf") if figure_pdfs else ("svg",))
            out.docs[f"{b.slug}.svg"] = drawn["svg"]
            if figure_pdfs:
                out.build[f"{b.slug}.pdf"] = drawn["pdf"]
    return out


def certificate_bytes(cert: dict) -> bytes:
    """A certificate as written to a file: JSON, keys in order, one line per step."""
    import json

    return (json.dumps(cert, ensure_ascii=False, indent=1, sort_keys=False) + "\n").encode()


def _tidy(text: str) -> str:
    """Collapse runs of blank lines left by template control blocks."""
    lines, blank = [], 0
    for line in text.splitlines():
        blank = blank + 1 if not line.strip() else 0
        if blank <= 1:
            lines.append(line.rstrip())
    return "\n".join(lines).strip() + "\n"
