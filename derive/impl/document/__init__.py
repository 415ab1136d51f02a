"""``docs/impl-check.md``: the checks of ``derive impl`` run while the document is built."""
