"""Reports of ``derive check``: Markdown (pull-request comment), JSON and LaTeX."""

from derive.report.render import SCHEMA_VERSION, render, to_json

__all__ = ["render", "to_json", "SCHEMA_VERSION"]
