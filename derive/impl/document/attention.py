"""The attention form, contracts and failure classes: a section of ``docs/impl-check.md``.

The example is checked while the document is built: a numpy decode kernel with a learned sink
per head whose key loop starts at ``start_q`` is run by ``derive impl --form attention``, and
its report (every class, the failing one with its smallest counterexample) is shown as printed.
The tables of roles, classes and contract items are the data the checks use.
"""

from __future__ import annotations

from pathlib import Path

from derive.impl.api import check_implementation
from derive.impl.forms.attention import ROLE_NAMES
from derive.impl.cases.attention import CLASSES
from derive.impl.cases.attention_search import SEARCH_LONG_N, SEARCH_MAX_N
from derive.impl.cases.kernel import SEARCH_EXAMPLES
from derive.impl.cases.contract import ITEMS, ROW_FORM_ITEMS
from derive.impl.judge.classes import KERNEL_CLASSES, RULE

__all__ = ["ATTENTION", "attention_section"]

ATTENTION = '''\
import numpy as np


def attend(q, k, v, *, sinks, sm_scale, start_q=0):
    """Causal attention with a learned sink per head; query i sits at position start_q + i."""
    B, H, M, _ = q.shape
    out = np.zeros((B, H, M, v.shape[-1]))
    for i in range(M):
        keys = slice(start_q, start_q + i + 1)  # the keys query i sees
        s = np.einsum("bhd,bhnd->bhn", q[:, :, i], k[:, :, keys]) * sm_scale
        s = np.concatenate([s, np.broadcast_to(sinks.reshape(1, H, 1), (B, H, 1))], axis=-1)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        w = w[..., :-1] / w.sum(axis=-1, keepdims=True)
        out[:, :, i] = np.einsum("bhn,bhnd->bhd", w, v[:, :, keys])
    return out
'''

SETTINGS = {"layout": "bhnd", "out_layout": None, "scale": None, "causal": True, "start_q": None, "window": 0,
            "mask_value": "-inf", "backward": False, "kw_names": {}}


def attention_section(directory: str, demote, ran: list | None = None) -> str:
    """The section, its example checked in ``directory``; ``demote`` moves the report's headings down;
    the check's report is appended to ``ran``."""
    path = Path(directory) / "review_attention.py"
    path.write_text(ATTENTION, encoding="utf-8")
    report = check_implementation(f"{path}:attend", "sink", dtypes=("float64",), form="attention",
                                  name="review_attention.py:attend", attention=SETTINGS)
    if ran is not None:
        ran.append(report)
    roles = "\n".join(f"| {role} | " + ", ".join(f"`{n}`" for n in names) + " |" for role, names in ROLE_NAMES.items())
    items = "\n".join(f"| `{item}` | {text} |" for item, text in ITEMS.items())
    attention_classes = "\n".join(f"- {title}" for title in CLASSES.values())
    kernel_classes = "\n".join(f"{i}. {title}" for i, title in enumerate(KERNEL_CLASSES.values(), 1))
    long_n = ", ".join(str(n) for n in SEARCH_LONG_N[:-1]) + f" or {SEARCH_LONG_N[-1]}"
    row_items = ", ".join(f"`{i}`" for i in ROW_FORM_ITEMS)
    return f"""\
## Attention kernels as written: `--form attention`

A real attention kernel takes q, k and v, not rows of scores. `--form attention` calls it as
it is written, `fn(q, k, v, **params)`, with q (…, M, d), k (…, N, d) and v (…, N, dv) in the
layout `--layout` names (`bhnd` by default; `bnhd`, `nhd`, `hnd`, `nd`: b batch, h heads,
n the sequence, d the head dimension, last), and checks `out` (the layout of q with dv, or
`--out-layout`) and, when it returns `(out, lse)`, the natural log-sum-exp. The keywords
the function takes are read from its signature and passed by role:

| role | keyword names recognised (`--kw ROLE=NAME` names another) |
|---|---|
{roles}

The scale is `--scale` (default 1/√d); the causal flag is passed as derive's cases need it
(`--causal` makes every case causal, and states it for a kernel that is causal without a
flag); `start_q` (the position of the first query: a decode call has start_q = N − M) is varied
when the function takes it, else `--start-q N|end` states what the kernel assumes; a sliding
window likewise (`--window W`: key j visible to the query at position p when j > p − W); an
additive mask has shape (B, 1, M, N) (the axes the layout has) and carries `--mask-value`
(`-inf`, `finfo-min` or a number such as `-1e6`) on masked keys; the sinks are one logit per
head. A required keyword of no known role is an error (exit 2) that names it. With
`--backward` (torch functions) the gradients of ⟨out, g⟩ with respect to q, k, v and the sinks
are taken by torch autograd in the child and compared with the exact ones; a sink that gets no
gradient fails.

derive builds q and k that realise its rows of scores exactly: small integers, or a one-hot q
and a k that carries the wanted scores, with a power-of-two scale, so that scale·⟨q_i, k_j⟩
is the wanted score in float16 and wider. The reference is the exact definition on the
arrays actually passed: the dot products are summed as integers, the exponentials taken at
high precision, the masks and sinks as given. Kernels shaped like a model's reference
`sdpa(Q, K, V, S, sm_scale, sliding_window)`, a model library's
`eager_attention_forward(module, query, key, value, attention_mask, scaling)` and a tiled
Triton kernel with sinks and `start_q` are in `tests/zoo/` (written for this project), each
checked with no adapter or a one-line one.

The fixed cases go class by class; each adds one feature to the simplest call, and a case
belongs to every class whose feature it has:

{attention_classes}

When every fixed case passes, the search draws whole calls inside the contract, as many as
`--examples` (default {SEARCH_EXAMPLES}; 0 runs the fixed list alone): batch and heads where the
layout has them, query and key lengths (up to {SEARCH_MAX_N}, or {long_n} keys, past the chunk
and tile boundaries of real kernels), head dimensions, the causal flag, the decode offset, the
window, the mask, the sinks and the tile size where the kernel takes them, and the scores (the
dense pattern, a ramp, or q, k and v drawn from a seed with scores up to about ±10³). It is
the one search of `derive impl` (Hypothesis, derandomized, no database, a count of examples,
then its shrinker), so a failing call is shrunk to the simplest one it finds and is reported
as "found by the search", under its classes. The zoo's `eager_chunked_half` streams its keys
in chunks of 128 and forgets the second half of a final partial chunk: right at every fixed
length (up to 64, 160 and 300), it is caught by the search alone (`tests/test_impl_attention.py`).

A decode kernel with a learned sink, `review_attention.py`:

```python
{ATTENTION}```

```console
$ derive impl review_attention.py:attend --as sink --form attention --causal --dtype float64
```

exits with status {report.exit_code()} and prints:

{demote(report.to_markdown()).rstrip()}

## Every failure class, not the first

A kernel that is wrong only on inputs it never receives, or only past its 64th key, is
reported as such: the check runs every input and lists each class of input that fails, with
its smallest counterexample (the first failing input of the class: the inputs go from small to
large), and the classes that pass. The classes overlap (a long row may have masked keys and
many tiles), and one rule, in every form, keeps "passes" true: {RULE} In the kernel forms a
row's classes, in the order a failing row is filed, are:

{kernel_classes}

so a fault that shows only in the 9th row of a call and later, on a row with masked keys, is
shown under masked rows, and rows late in a call fail with it ("**fails**, see masked rows");
in the attention form a failing case is shown under the class it was made for; in the row
form the inputs Hypothesis draws are classed by their failing row (short finite, short with
masked entries, long: disjoint), and a fixed row belongs to each of fully masked, some entries
masked, extreme and long that it is. The first
failure found is the one the report details and diagnoses, as before; the exit status is 1
when any class fails. When the function raises on a later input after a failure, the list
stops there and the report says so (the verdict stands).

## Contracts: `--assume`

A kernel is written for some inputs: finite sinks, masked keys passed as a large finite
negative number, tile sizes that are powers of two. `--assume ITEM` (repeatable, in every
form) states what it accepts; derive then makes only inputs inside the contract (the fixed
lists and the searches alike), prints "Assumed (contract): …" with the results, and lists as
not tested a class the contract rules out. A bad item is an error (exit 2) that names it and
the grammar. The row form takes {row_items}: there `finite-scores` passes a masked
score as the dtype's finfo.min while the exact weights are those of the masked row, and the
report's list of settings says "assumed (contract, `--assume`): …".

| item | states |
|---|---|
{items}
"""
