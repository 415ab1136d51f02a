"""``derive impl``: differential testing of a real implementation against its definition.

The implementation is imported and run (it is user code) only in a child process
(:mod:`.target`, :mod:`.worker`), compared with the exact reference on Hypothesis-generated
and fixed edge-case inputs (:mod:`.inputs`; fully masked rows by the rules of
:mod:`.masked`), and, where it disagrees, matched against a table of known faulty forms
(:mod:`.faults`, derived in :mod:`.derivations`).
"""

from derive.impl.api import DEFAULT_DTYPES, check_implementation
from derive.impl.report import Report

__all__ = ["DEFAULT_DTYPES", "Report", "check_implementation"]
