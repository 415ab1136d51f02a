"""A small document exercising every block kind (its output is a golden file)."""

import sympy as sp

from derive import Document, Dot, VectorBase, vectors
from derive.model.attention import i, j

q, k = VectorBase("q"), VectorBase("k")
bK, = vectors("b_K")
x = sp.Symbol("x", real=True)


def document():
    doc = Document("demo", "Demo of every block", summary="One of each block kind.")
    doc.section("Steps")
    doc.prose("Inline math $a_{i} | b$ and **bold** and `code`; 50% & #1.")
    doc.equation(sp.exp(x + 1), sp.E * sp.exp(x), name="exp rule", why="exp(a+b) = exp(a)·exp(b).")
    doc.chain([Dot(q[i], k[j] + bK), Dot(q[i], k[j]) + Dot(q[i], bK)], ["bilinearity"], name="split")
    doc.classify([("key bias", Dot(q[i], bK)), ("key", Dot(q[i], k[j]))], j, why="Over the keys:",
                 expect=["row-constant", "key-dependent"])
    doc.table(["a", "b"], [["|x|", sp.Abs(x)], ["1", sp.Rational(1, 2)]], caption="A table.")
    doc.definitions([(sp.Symbol("h"), sp.Rational(1, 2) * x)], caption="Notation: $h$ is half of $x$.")
    doc.example_check("one half", [0.5], [0.5])
    doc.record("answer", 42)
    return doc
