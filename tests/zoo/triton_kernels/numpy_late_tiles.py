"""A numpy kernel in a module that imports triton and launches no Triton kernel.

Under ``TRITON_INTERPRET=1`` the child reports triton loaded with its interpreter on, so the
kernel-form check uses its interpreter list (at most 17 tiles per row): the bug of
:func:`tests.zoo.kernels_numpy.sink_online_no_rescale_past_17_tiles`, from the 18th tile on,
passes there, while the same function from ``kernels_numpy.py`` gets the full list and fails.
"""

import triton  # noqa: F401  (loaded: the check takes the target for a Triton one)

from tests.zoo.kernels_numpy import sink_online_no_rescale_past_17_tiles

__all__ = ["sink_online_no_rescale_past_17_tiles"]
