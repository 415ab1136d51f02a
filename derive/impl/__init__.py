"""``derive impl``: differential testing of a real implementation against its definition.

The implementation is imported and run (it is user code), compared with the exact
reference on Hypothesis-generated and fixed edge-case inputs, and, where it disagrees,
matched against a table of known faulty forms (:mod:`.faults`).
"""

from derive.impl.api import DEFAULT_DTYPES, check_implementation
from derive.impl.report import Report

__all__ = ["DEFAULT_DTYPES", "Report", "check_implementation"]
