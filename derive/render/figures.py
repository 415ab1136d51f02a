"""Figures: matplotlib drawings saved as deterministic SVG (Markdown) and PDF (LaTeX)."""

from __future__ import annotations

import io
import re
from pathlib import Path

__all__ = ["render_figure", "render_figures"]

# pdf.fonttype 42: embed TrueType fonts in the PDF figures, never Type 3 (bitmap-like in viewers)
_RC = {"svg.hashsalt": "derive", "svg.fonttype": "path", "pdf.fonttype": 42, "font.size": 10,
       "figure.figsize": (6.4, 3.6)}


def render_figure(draw, fmt: str) -> bytes:
    """Bytes of the figure in ``fmt`` (``svg`` or ``pdf``); identical across runs."""
    return render_figures(draw, (fmt,))[fmt]


def render_figures(draw, fmts: tuple[str, ...]) -> dict[str, bytes]:
    """{format: bytes} of one drawing saved in each of ``fmts``: drawn and laid out once,
    the same bytes as :func:`render_figure` gives for each format alone."""
    import matplotlib  # imported here: only a build that draws figures pays for it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _bundled_fonts_only()
    out = {}
    with plt.rc_context(_RC):
        fig, ax = plt.subplots()
        draw(ax)
        fig.tight_layout()
        for fmt in fmts:
            buf = io.BytesIO()
            meta = {"Date": None} if fmt == "svg" else {"CreationDate": None, "ModDate": None}
            fig.savefig(buf, format=fmt, metadata=meta)
            out[fmt] = _stable_clip_ids(buf.getvalue()) if fmt == "svg" else buf.getvalue()
        plt.close(fig)
    return out


def _bundled_fonts_only() -> None:
    """Let matplotlib find only the fonts it ships (mpl-data/fonts/ttf), never a system copy.

    An SVG names each glyph by its index in the font file, and a system DejaVuSans.ttf of
    another version numbers them differently (U+2212 is glyph 0xc9c in matplotlib's copy,
    0xc9d in Debian's); which copy the font cache offers first depends on the machine and on
    the cache's history, so the same figure came out with different bytes."""
    import matplotlib
    from matplotlib import font_manager

    shipped = sorted(str(p) for p in Path(matplotlib.get_data_path(), "fonts", "ttf").glob("*.ttf"))
    manager = font_manager.fontManager
    if sorted({f.fname for f in manager.ttflist}) == shipped:
        return
    manager.ttflist = []
    for path in shipped:
        manager.addfont(path)  # clears findfont's cache too


_CLIP_ID = re.compile(rb'id="(p[0-9a-f]{10})"')


def _stable_clip_ids(svg: bytes) -> bytes:
    """Name clip paths clip1, clip2, … in order of appearance.

    matplotlib names a clip path by a hash of ``str()`` of its rectangle, whose numbers are
    numpy floats: numpy 1.x prints ``47.96``, numpy 2 ``np.float64(47.96)``, so the same
    figure got other ids under another numpy.
    """
    for k, old in enumerate(dict.fromkeys(_CLIP_ID.findall(svg)), start=1):
        svg = svg.replace(b'id="' + old + b'"', b'id="clip%d"' % k).replace(b"url(#" + old + b")", b"url(#clip%d)" % k)
    return svg
