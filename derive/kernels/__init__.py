"""Kernel forms of the softmax family, as data: what fused attention kernels compute.

:mod:`~derive.kernels.forms` — the online (tiled) state, tile update, finalization, split
merge and base-2 state as SymPy expressions over symbolic tile boundaries, and how each
registered normalizer instantiates the extra logit (:func:`~derive.kernels.forms.registry_forms`);
:mod:`~derive.kernels.backward` — the recompute-form backward pass;
:mod:`~derive.kernels.faults` — the known kernel faults as formulas with their fixes;
:mod:`~derive.kernels.numeric` — numpy reference kernels that apply a fault's definition.
``proofs/kernels.py`` proves and refutes them (docs/kernels.md).
"""
