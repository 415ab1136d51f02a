"""docs/impl-check.md: a faulty softmax₁ caught by ``derive impl``, as a reviewer sees it."""

from derive.impl.document import render


def rendered() -> dict[str, str]:
    return {"impl-check.md": render()}
