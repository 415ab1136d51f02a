"""Rendering checked documents to Markdown, LaTeX and JSON."""

from derive.render.output import Rendered, render_document, template_dir

__all__ = ["Rendered", "render_document", "template_dir"]
