"""The expression language of specs and normalizer formulas: the parser (:mod:`.parser`), the
domain of a formula's names (:mod:`.domain`) and the translation of a spec's expressions into
the engine's SymPy model (:mod:`.translate`). It imports no spec loader: the normalizers'
formula language is built on it, and the loader (:mod:`derive.spec`) reads the normalizers."""
