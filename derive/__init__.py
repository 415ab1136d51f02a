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

from derive.lazy import exports

__version__ = "0.1.0"
# The project's public home, stated here and in pyproject.toml's [project.urls] Homepage (a test
# keeps the two equal); outputs link to it (SARIF's tool and rule help). None: the project has no
# public home yet, and no output names a URL for it.
__url__: str | None = None

# The public names are imported on first use (PEP 562), so that ``import derive`` — and with it
# ``derive --help`` and ``derive check --help`` — loads neither SymPy nor Hypothesis nor flint.
_EXPORTS = {
    "Document": "derive.document.api",
    "notation": "derive.document.notation",
    "Dot": "derive.model.vectors",
    "Rot": "derive.model.vectors",
    "VectorBase": "derive.model.vectors",
    "VectorSymbol": "derive.model.vectors",
    "expand_dot": "derive.model.vectors",
    "vector": "derive.model.vectors",
    "vectors": "derive.model.vectors",
    "prove_equal": "derive.prove.equality",
    "classify": "derive.prove.rowconst",
    "Verdict": "derive.prove.verdict",
    "Settings": "derive.settings",
}


__getattr__, __dir__ = exports(globals(), _EXPORTS)


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
