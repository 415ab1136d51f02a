"""A derivation with a false step: the build must refuse it."""


from derive import Document, Dot, VectorBase, vectors
from derive.model.attention import i, j

q, k = VectorBase("q"), VectorBase("k")
bQ, bK = vectors("b_Q b_K")


def document():
    doc = Document("bad-step", "A wrong expansion")
    doc.equation(Dot(q[i] + bQ, k[j] + bK), Dot(q[i], k[j]) + Dot(bQ, k[j]) + Dot(q[i], bK),
                 name="missing cross term", why="forgot b_Q·b_K")
    return doc
