"""A numpy kernel in a module that imports triton and launches no Triton kernel.

The file defines no Triton kernel, so derive gives it the full list whatever the child loads:
the bug of :func:`tests.zoo.kernels_numpy.sink_online_no_rescale_past_17_tiles`, from the 18th
tile on, is caught here as it is in ``kernels_numpy.py``.
"""

import triton  # noqa: F401  (loaded, but no kernel of this file is a Triton one)

from tests.zoo.kernels_numpy import sink_online_no_rescale_past_17_tiles

__all__ = ["sink_online_no_rescale_past_17_tiles"]
