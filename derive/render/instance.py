"""A counterexample's inputs as one line of math, for ``derive check`` reports.

A witness (``Outcome.witness``) holds ``d``, ``n``, the mask, the indices, the values of every
input and, where the claim has free functions, their interpretations. The report states
``d``, ``n``, the mask and the indices in its sentence; this line adds the values, each as
``name = value`` in math, so a reader sees the instance once and never as raw JSON.
"""

from __future__ import annotations

from derive.render.markup import to_gfm, to_tex
from derive.render.view import assignment

__all__ = ["instance_md", "instance_tex", "is_instance"]


def is_instance(data) -> bool:
    """Is ``data`` a witness (a dict of input values), not some other record?"""
    return isinstance(data, dict) and isinstance(data.get("values"), dict)


def _markup(w: dict, head: bool) -> str:
    parts = []
    if head:
        parts += [assignment("d", w.get("d")), assignment("n", w.get("n")), f"mask {w.get('mask')}"]
        parts += [assignment(k, v) for k, v in (w.get("indices") or {}).items()]
    functions = w.get("functions") or {}
    coefficient = lambda k: any(k.startswith(f + ".") for f in functions)  # noqa: E731
    parts += [assignment(k, v) for k, v in w["values"].items() if not coefficient(k)]
    for name, body in functions.items():
        own = {k: v for k, v in w["values"].items() if k.startswith(name + ".")}
        nonzero = [assignment(k, v) for k, v in own.items() if v != 0]
        rest = "" if len(nonzero) == len(own) else (" and the other coefficients 0" if nonzero else
                                                     " with every coefficient 0")
        parts.append(f"`{body}`" + (" with " + ", ".join(nonzero) if nonzero else "") + rest)
    return ", ".join(parts)


def instance_md(w: dict, head: bool = False) -> str:
    """The values of witness ``w`` (with ``head``: also d, n, mask and indices) as Markdown."""
    return to_gfm(_markup(w, head), inline=True)


def instance_tex(w: dict, head: bool = True) -> str:
    """The same as LaTeX (by default with d, n, mask and indices: the LaTeX report has no other line)."""
    return to_tex(_markup(w, head), inline=True)
