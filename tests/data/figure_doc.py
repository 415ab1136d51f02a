"""A document with one figure and no steps: what the build writes of a figure."""

from derive import Document


def _draw(ax) -> None:
    ax.plot([0, 1, 2], [1, 0, 2])


def document():
    doc = Document("figure-doc", "One figure", summary="A figure and nothing else.")
    doc.figure("line", _draw, "A line.")
    return doc
