"""Progress lines while a document builds (``normalizers: table row 3/8``), on stderr.

The build switches them on (``derive build --progress``, or by default when stderr is a
terminal) by setting ``DERIVE_PROGRESS=1``, which worker processes inherit; library code
calls :func:`note` at natural milestones (a section, a table row, an atlas spec) and pays
nothing when progress is off. Progress never reaches a generated file.

    >>> import os
    >>> os.environ.pop("DERIVE_PROGRESS", None) and None
    >>> note("demo", "section 1")  # off: prints nothing
"""

from __future__ import annotations

import os
import sys

__all__ = ["ENV", "enabled", "note"]

ENV = "DERIVE_PROGRESS"


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


def note(doc: str, what: str) -> None:
    """Print ``doc: what`` on stderr when progress is on: one write of the whole line, so the
    lines of processes building side by side never run into one another (``print`` writes the
    text and its newline separately)."""
    if enabled():
        sys.stderr.write(f"  {doc}: {what}\n")
        sys.stderr.flush()
