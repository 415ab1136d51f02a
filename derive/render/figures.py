"""Figures: matplotlib drawings saved as deterministic SVG (Markdown) and PDF (LaTeX)."""

from __future__ import annotations

import io

__all__ = ["render_figure"]

# pdf.fonttype 42: embed TrueType fonts in the PDF figures, never Type 3 (bitmap-like in viewers)
_RC = {"svg.hashsalt": "derive", "svg.fonttype": "path", "pdf.fonttype": 42, "font.size": 10,
       "figure.figsize": (6.4, 3.6)}


def render_figure(draw, fmt: str) -> bytes:
    """Bytes of the figure in ``fmt`` (``svg`` or ``pdf``); identical across runs."""
    import matplotlib  # imported here: only a build that draws figures pays for it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(_RC):
        fig, ax = plt.subplots()
        draw(ax)
        fig.tight_layout()
        buf = io.BytesIO()
        meta = {"Date": None} if fmt == "svg" else {"CreationDate": None, "ModDate": None}
        fig.savefig(buf, format=fmt, metadata=meta)
        plt.close(fig)
    return buf.getvalue()
