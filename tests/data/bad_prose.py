"""A derivation whose prose contradicts its own verdict: the build must refuse it.

The step proves that a common shift cancels; the sentence states it is refuted.
"""

import sympy as sp

from derive import Document

x, c = sp.symbols("x c", real=True)


def document():
    doc = Document("bad-prose", "Prose against its proof")
    doc.equation(sp.exp(x + c) / sp.exp(c), sp.exp(x), name="shift cancels", why="exp(c) ≠ 0 cancels")
    doc.prose("A common shift survives: the claim that it cancels is {verdict:shift cancels=refuted}.")
    return doc
