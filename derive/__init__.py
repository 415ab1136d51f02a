"""derive: machine-checked derivations of attention-mechanism properties.

The pipeline, one sub-package per stage:

* :mod:`derive.model` — vectors of symbolic dimension, the bilinear form, attention rows;
* :mod:`derive.normalizers` — row normalizers as registry entries;
* :mod:`derive.prove` — provers returning proved / refuted / undecided;
* :mod:`derive.crosscheck` — numeric evaluation, Hypothesis cross-checks, counterexamples;
* :mod:`derive.document` — the authoring API for derivation documents;
* :mod:`derive.render` — Markdown, LaTeX and JSON;
* :mod:`derive.build` — runs the above over ``proofs/``.
"""

__version__ = "0.1.0"

from derive.document.api import Document
from derive.document.notation import notation
from derive.model.vectors import Dot, Rot, VectorBase, VectorSymbol, expand_dot, vector, vectors
from derive.prove.equality import prove_equal
from derive.prove.rowconst import classify
from derive.prove.verdict import Verdict
from derive.settings import Settings

__all__ = [
    "Document",
    "Dot",
    "Rot",
    "Settings",
    "VectorBase",
    "VectorSymbol",
    "Verdict",
    "__version__",
    "classify",
    "expand_dot",
    "notation",
    "prove_equal",
    "vector",
    "vectors",
]
