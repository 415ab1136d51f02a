"""Reports of ``derive check``: Markdown (pull-request comment), JSON and LaTeX."""

from derive.report.render import SCHEMA_VERSION, render, to_json

__all__ = ["SCHEMA_VERSION", "render", "to_json"]
