"""Real Triton kernels (``@triton.jit``) behind thin torch wrappers, for ``derive impl``.

They run on a GPU as they are, and without one under Triton's own CPU interpreter
(``TRITON_INTERPRET=1``, read by ``triton.jit`` when a kernel is decorated, i.e. when the
module is imported), which executes the same kernel code. All arithmetic is float32;
the wrappers return float32 tensors whatever the input dtype, so check them with
``--dtype float32``.

* :mod:`.softmax` — row-wise softmax / softmax₁ kernels (``fn(x)``, weights along the last
  axis), one right and faulty ones, for ``derive impl FILE:FN --as NORMALIZER``.
* :mod:`.online` — a tiled (online, flash-style) forward with an attention sink,
  ``fn(x, v, block, *, s) -> (out, lse)``, and the sink-added-per-tile bug.
* :mod:`.split` — split-KV (flash-decoding) partials and a combine kernel with a sink,
  ``fn(x, v, splits, *, s) -> (out, lse)``, and two sink-counting bugs.

The definition they are held to (sink attention, the sink's value vector is zero):
p_j = e^{x_j} / (e^s + Σ_k e^{x_k}), out = Σ_j p_j v_j, lse = log(e^s + Σ_k e^{x_k}).
A masked key has x_j = −inf. With a finite sink the definition has a value on every row:
on a row with no key (n = 0) or every key masked, out = 0 and lse = s.
"""
