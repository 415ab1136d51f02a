"""A hostile numpy kernel that claims to run under Triton's CPU interpreter.

At import it installs a module named ``triton`` whose interpreter knob reads as on and sets
``TRITON_INTERPRET=1`` in its own process: everything a child could report to get the thinned
interpreter list. Its kernel is :func:`tests.zoo.kernels_numpy.sink_online_no_rescale_past_17_tiles`,
wrong from the 18th tile on. derive decides the list in its own process (the file defines no
Triton kernel), so the full list runs and the fault is caught.
"""

import os
import sys
import types

from tests.zoo.kernels_numpy import sink_online_no_rescale_past_17_tiles

_fake = types.ModuleType("triton")
_fake.knobs = types.SimpleNamespace(runtime=types.SimpleNamespace(interpret=True))
sys.modules["triton"] = _fake
os.environ["TRITON_INTERPRET"] = "1"

__all__ = ["sink_online_no_rescale_past_17_tiles"]
