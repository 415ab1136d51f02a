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

import gc as _gc

# Importing SymPy, NumPy and Hypothesis allocates some 100,000 long-lived objects; the cyclic
# garbage collector would walk the growing heap again and again meanwhile (a fifth of the
# import time), so it is paused for the import and restored as it was.
_gc_was_enabled = _gc.isenabled()
_gc.disable()
try:
    from derive.document.api import Document
    from derive.document.notation import notation
    from derive.model.vectors import Dot, Rot, VectorBase, VectorSymbol, expand_dot, vector, vectors
    from derive.prove.equality import prove_equal
    from derive.prove.rowconst import classify
    from derive.prove.verdict import Verdict
    from derive.settings import Settings
finally:
    if _gc_was_enabled:
        _gc.enable()

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
