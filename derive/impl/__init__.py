"""``derive impl``: differential testing of a real implementation against its definition.

The implementation is imported and run (it is user code) only in a child process
(:mod:`derive.impl.run.target`, :mod:`derive.impl.run.worker`), compared with the exact reference on Hypothesis-generated
and fixed edge-case inputs (:mod:`derive.impl.cases.rows`; fully masked rows by the rules of
:mod:`derive.impl.exact.masked`), and, where it disagrees, matched against a table of known faulty forms
(:mod:`derive.impl.faults.row`, derived in :mod:`derive.impl.faults.derivations`).
"""

from derive.impl.api import DEFAULT_DTYPES, check_implementation
from derive.impl.report.row import Report

__all__ = ["DEFAULT_DTYPES", "Report", "check_implementation"]
