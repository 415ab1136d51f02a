"""docs/impl-check.md: a faulty softmax₁ caught by ``derive impl``, as a reviewer sees it."""

from derive.impl.document.page import render
from derive.render import Rendered


def rendered() -> Rendered:
    ran: list = []
    page = render(ran)
    agree = sum(bool(r.agrees) for r in ran)
    return Rendered(docs={"impl-check.md": page.encode()},
                    summary=f"{len(ran)} implementations checked by derive impl ({agree} agree, "
                            f"{len(ran) - agree} disagree, as the page shows)")
