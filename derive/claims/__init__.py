"""Claims about a variant: one prover per claim kind (see :mod:`.provers`)."""
