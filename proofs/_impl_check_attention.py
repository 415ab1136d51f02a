"""The attention form, contracts and failure classes: a section of ``docs/impl-check.md``.

The example is checked while the document is built: a numpy decode kernel with a learned sink
per head whose key loop starts at ``start_q`` is run by ``derive impl --form attention``, and
its report (every class, the failing one with its smallest counterexample) is shown as printed.
The tables of roles, classes, mask forms and contract items are the data the checks use, and what
the fixed list reaches is read off the fixed list itself.
"""

from __future__ import annotations

from pathlib import Path

from derive.impl.api import check_implementation
from derive.impl.forms.attention import ROLE_NAMES, kernel_extra
from derive.impl.judge.attention import GENERIC_ENTRIES
from derive.normalizers.registry import REGISTRY
from derive.impl.cases.attention import CLASSES, Setup
from derive.impl.cases.fixed import cases
from derive.impl.cases.masks import KEY_MASKS, MASK_FORMS
from derive.impl.cases.attention_search import SEARCH_LONG_N, SEARCH_MAX_N
from derive.impl.cases.kernel import SEARCH_EXAMPLES
from derive.impl.cases.rows import param_sets
from derive.impl.cases.contract import ITEMS, ROW_FORM_ITEMS, parse_contract
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


def _everything():
    """The fixed list for a kernel that takes every role, with --gqa (the generator's own output)."""
    setup = Setup(extra="sinks", takes=frozenset(ROLE_NAMES), causal=False, start_q=None, window=(), has_batch=True,
                  has_heads=True, contract=parse_contract([]), gqa=True, window_form="pair")
    return cases(setup)


def _reach() -> str:
    """What the fixed list reaches, read off it."""
    listed = _everything()
    keys = sorted({c.N for c in listed})
    long = [n for n in keys if n >= 1024]
    odd = [n for n in keys if n > 64 and all(n % b for b in (16, 32, 64, 128, 256))]
    blocks = sorted({c.block for c in listed if c.block})
    splits = sorted({c.splits for c in listed if c.splits})
    dims = sorted({c.D for c in listed} | {c.Dv for c in listed})
    return (f"it has {len(listed)} calls with key lengths up to {max(keys)} ({', '.join(map(str, long))}; "
            f"{', '.join(map(str, odd))} no multiple of any tile of 16 to 256), tiles of {', '.join(map(str, blocks))} "
            f"keys, {', '.join(map(str, splits))} splits, query heads per kv head "
            f"{', '.join(map(str, sorted({c.groups for c in listed})))}, up to {max(c.B for c in listed)} batches and "
            f"{max(c.H for c in listed)} heads, head dimensions {', '.join(map(str, dims))}, up to "
            f"{max(c.M for c in listed)} queries (several query tiles), decode offsets up to "
            f"{max(c.start_q for c in listed)}, and padding of {', '.join(map(str, sorted({c.pad for c in listed if c.mask == 'padding'})))} "
            f"keys before the visible ones")


def _fault_table() -> str:
    """Which forms' diagnosis tries each fault of the catalogue (its record's ``checked``)."""
    from derive.impl.faults.attention import CALL_FAULTS
    from derive.kernels.faults import FAULTS

    forms = ("online", "split", "backward", "attention")
    lines = ["| fault | " + " | ".join(f"`--form {f}`" for f in forms) + " |", "|---|" + "---|" * len(forms)]
    for f in FAULTS:
        lines.append(f"| {f.title} | " + " | ".join("tried" if form in f.checked else "—" for form in forms) + " |")
    for f in CALL_FAULTS:  # faults of the call itself: the attention form alone has kv heads and windows
        lines.append(f"| {f.title} | " + " | ".join("tried" if form == "attention" else "—" for form in forms) + " |")
    return "\n".join(lines)


def attention_section(directory: str, demote, ran: list | None = None) -> str:
    """The section, its example checked in ``directory``; ``demote`` moves the report's headings down;
    the check's report is appended to ``ran``."""
    path = Path(directory) / "review_attention.py"
    path.write_text(ATTENTION, encoding="utf-8")
    report = check_implementation(f"{path}:attend", "sink", dtypes=("float64",), form="attention",
                                  name="review_attention.py:attend", attention=SETTINGS)
    if ran is not None:
        ran.append(report)
    reach = _reach()
    groups = ", ".join(str(g) for g in sorted({c.groups for c in _everything()} - {1}))
    key_masks = "; ".join(KEY_MASKS[k] for k in ("keys", "rows", "padding", "prefix", "document"))
    mask_forms = "\n".join(f"| `{name}` | {text} |" for name, text in MASK_FORMS.items())
    roles = "\n".join(f"| {role} | " + ", ".join(f"`{n}`" for n in names) + " |" for role, names in ROLE_NAMES.items())
    generic = ", ".join(f"`{name}`" for name, entry in REGISTRY.items() if kernel_extra(entry) == (True, "generic"))
    pairs = f"2^{GENERIC_ENTRIES.bit_length() - 1}"
    caps = ", ".join(f"{c['c']:g}" for c in param_sets(REGISTRY["softcap"], ("c",), "edge"))
    items = "\n".join(f"| `{item}` | {text} |" for item, text in ITEMS.items())
    attention_classes = "\n".join(f"- {title}" for title in CLASSES.values())
    fault_table = _fault_table()
    kernel_classes = "\n".join(f"{i}. {title}" for i, title in enumerate(KERNEL_CLASSES.values(), 1))
    long_n = ", ".join(str(n) for n in SEARCH_LONG_N[:-1]) + f" or {SEARCH_LONG_N[-1]}"
    row_items = ", ".join(f"`{i}`" for i in ROW_FORM_ITEMS)
    return f"""\
## Attention kernels as written: `--form attention`

A real attention kernel takes q, k and v, not rows of scores. `--form attention` calls it as
it is written, `fn(q, k, v, **params)`, with q (…, M, d), k (…, N, d) and v (…, N, dv) in the
layout `--layout` names (`bhnd` by default; `bnhd`, `nhd`, `hnd`, `nd`: b batch, h heads,
n the sequence, d the head dimension, last; `g` right after `h` splits q's heads by kv head, q
(n, Hkv, G, d) beside k and v (n, Hkv, d) for `nhgd`, query head h·G + g reading kv head h), and
checks `out` (the layout of q with dv, or `--out-layout`, where the head axes may be merged with d
at the end: `bn(hd)` for an (B, n, H·d) out, `n(hgd)`) and, when it returns `(out, lse)`, the log-sum-exp (natural, or in the units `--lse base2`
or `--lse kv-only` state; an lse that fails and is another convention's on every row of its call is named
with the flag that checks it; in out's layout
without d, or `--lse-layout`: `bhn` for FlashAttention's lse (B, H, M) beside an out (B, M, H, d)), or,
when the second value has the shape of the weights (q's layout with the keys last: (B, H, M, N) for
`bhnd`, as an eager attention returns `(attn_output, attn_weights)`), every weight P_ij within the
row form's bound (a renormalized or pre-mask weight fails). The keywords
the function takes are read from its signature and passed by role:

| role | keyword names recognised (`--kw ROLE=NAME` names another) |
|---|---|
{roles}

The scale is `--scale` (default 1/√d); the sinks are one logit per query head; `start_q` (the
position of the first query: a decode call has start_q = N − M) is varied when the function
takes it; the tile size and the split count are varied when it takes them. A required keyword
of no known role is an error (exit 2) that names it, unless `--set NAME=VALUE` gives it one value
for every call (a number, true, false, none or a word, read by that grammar, never evaluated: a
dropout of 0.0, a training flag; `@dtype` is the call's dtype, a `torch.dtype` in a torch call).
`--tensor NAME` passes a role's or `--set`'s keyword as a 0-d tensor of the call's API, int32 for
a whole number: an offset `start_q` that a kernel reads on its device. `--device cuda` makes the
torch inputs (and the sinks, masks and cotangents) on the GPU, while the exact reference is
computed on the CPU as always; `--device cpu`, the default, runs the same code path, which is how
the tests run it, and a test marked `cuda` runs it on a GPU wherever torch finds one (without
one, `--device cuda` is an error, exit 2, no verdict). The kernel may be installed code named by its import path, `PACKAGE.MODULE:FUNC` (a builtin
without an inspectable signature, such as `torch.nn.functional:scaled_dot_product_attention`, is
read from the signature on its docstring's first line, parsed and never evaluated), a factory's
product, `FILE:make()` (derive
calls `make` once, in the child, and checks the `nn.Module` or bound method it returns), or a
`torch.autograd.Function`'s `Class.apply`, whose keywords derive passes in their places in
`forward`'s signature (apply takes none), so its own backward is what `--backward` checks. With `--backward` (torch functions) the
gradients of ⟨out, g⟩ with respect to q, k, v and the sinks are taken by torch autograd in the
child (`.backward()` into the inputs, so a kernel under a reentrant `torch.utils.checkpoint` works)
and compared with the exact ones; a sink that gets no gradient fails.

### Every normalizer

The softmax family (softmax, softmax₁, the sinks, the zero token) is checked with its extra
logit and its log-sum-exp, forward and backward. Every other normalizer, a user-defined one
(`--as FILE.toml`) included, is checked forward: {generic}. Its parameters are keywords of the
kernel, by their own name or the one `--kw PARAM=NAME` gives (FlashAttention's cap:
`--kw c=softcap`); the calls take the entry's edge values in turn (softcap's c = {caps}), or
the one `--param` fixes, which is also how a value built into the kernel is stated. Each output
is compared with Σ_j p_j v_j, the weights p enclosed from the normalizer's formula in arb balls on
the exact scores (a sum or product over the keys before or after the key, as in stick-breaking,
costs one pass over the row); a call of more than {pairs} query–key pairs is judged on every k-th
query, its first 8 and its last 8 (the report says on how many calls). A score transform such as soft-capping belongs to the normalizer: a kernel
that caps q·k before the scale fails (`tests/zoo/attention_normalizers.py`). A formula may use the
query's index i (its position + 1) and the key's j: ALiBi with one slope m for every head is the
user-defined `exp(x_j + m * (j - i)) / sum_t(exp(x_t + m * (t - i)))`; a slope per head is not yet
expressible (the parameters are one set per call). Refused, with the
reason: a token with a value of its own (`bias_kv`: no keyword passes v*) and a second score
(`y_j`: no kernel computes it).

### One call model

Every input of `derive impl` is a projection of one call (`derive/impl/cases/attention.py`): a
batch of B, H query heads over Hkv kv heads, M queries at positions start_q + i, N keys, head
dimensions d and dv, the mask, the sinks, and the tile size and split count the kernel takes.
The attention form passes it as it is; the kernel forms' rows of scores (rows of 64 and 200
keys: ties across tiles, masked first tiles, guard rows, spikes past key 64) are calls here too,
realised exactly through a one-hot q, so a fault those rows show in a streaming kernel shows in an
attention kernel as well. The fixed list (`derive/impl/cases/fixed.py`) adds one feature per
class to the simplest call; taken whole, for a kernel that takes every role, {reach}.

**Grouped kv heads.** With `--gqa`, k and v have Hkv heads and H a multiple of them: query head
h reads kv head h // (H / Hkv), as PyTorch's `enable_gqa`, FlashAttention and Hugging Face's
`repeat_kv` do; the fixed list has groups of {groups} query heads per kv head (Hkv = 1:
multi-query), so a kernel that reads kv head h mod Hkv fails in the class of grouped kv heads.
Without `--gqa` every call has as many kv heads as query heads, and the report says that class
was not tested.

**One mask, lowered to what the kernel takes.** The mask of a call is the model's
(`derive/model/masks.py`; `derive/impl/cases/masks.py` evaluates it at every position): causal
(j ≤ p for the query at position p), a window (left, right) (p − left ≤ j ≤ p + right, −1 for a
side without bound; a window of W keys is (W − 1, −1)), and a key mask on top: {key_masks}.
Each part reaches the kernel the way it takes it: causality by its causal flag, or stated with
`--causal [top-left|bottom-right]` (bottom-right places the queries at N − M + i, as a decode
step and FlashAttention since 2.1 do; top-left at i, as PyTorch's `is_causal`); the window by its
window keyword — a (left, right) pair when its default is one (`window_size=(-1, -1)`), else a
number of keys — or stated with `--window W` or `--window LEFT,RIGHT`; and whatever has no flag
or keyword through the kernel's mask argument (a kernel with a mask and no causal flag gets its
causal and window calls through the mask), in the form `--mask` names:

| `--mask` | the kernel's mask argument |
|---|---|
{mask_forms}

An additive mask of a finite value (`--mask-value finfo-min` or `-1e6`) leaves the masked keys
in the definition with that value added to their scores (what such a kernel computes). When a
causal or windowed call with M ≠ N fails and the kernel places its queries itself, derive also
compares its output with the other alignment and, when it matches, says so: "its output matches
the other causal alignment, bottom-right …: state --causal bottom-right".

**Contracts.** A kernel that accepts only some shapes states them with `--assume`
(`min-head-dim=64`, `head-dim-multiple=16`, `keys-multiple=128` or `keys-multiple=block`,
`queries-le-keys`, `equal-lengths`, `finite-scores`, …, the table below): derive then raises
each call's head dimensions and key length to the contract rather than dropping it, leaves out
the calls it rules out otherwise, and prints what it assumed, so a Triton kernel that asserts
d ≥ 64 is checked as it is, with no padding adapter.

The report says what ran, read off the calls themselves: the key lengths (the largest, and
those of 1024 keys or more), the most queries, the tile sizes and split counts passed, the
query heads per kv head, the head dimensions, batch and heads; a class no call reached is "not
tested", with the reason.

### Failure classes and the search

The fixed cases go class by class; each adds one feature to the simplest call, and a case
belongs to every class whose feature it has:

{attention_classes}

When every fixed case passes, the search draws whole calls inside the contract, as many as
`--examples` (default {SEARCH_EXAMPLES}; 0 runs the fixed list alone): batch and heads where the
layout has them, kv-head groups with `--gqa`, query and key lengths (up to {SEARCH_MAX_N}, or
{long_n} keys, past the chunk and tile boundaries of real kernels), head dimensions, the causal
flag, the decode offset, the window, the mask (a pattern, padding, fully masked rows), the sinks,
the tile size and the split count where the kernel takes them, and the scores (the dense
pattern, a ramp, or q, k and v drawn from a seed with scores up to about ±10³). It is the one
search of `derive impl` (Hypothesis, derandomized, no database, a count of examples, then its
shrinker), so a failing call is shrunk to the simplest one it finds and is reported as "found
by the search", under its classes. The zoo's `eager_chunked_short_tail` streams its keys in
chunks of 128 and forgets the second half of a final partial chunk when it has fewer than 8
keys: right at every fixed length, it is caught by the search alone
(`tests/test_impl_attention.py`); `tests/zoo/attention_model.py` has a kernel for each feature
above (a kv-head mapping h mod Hkv, a key loop that stops at 1024 keys, a fault from the 1024th
key or in the 4th tile of 128, a tile buffer too small for tiles of 256, a missing −∞ guard
behind a padded tile, the other causal alignment, a window one key wide on its left), each beside
its correct twin and checked through its own signature (`tests/test_impl_model.py`).

### Known faults, in every form they apply to

A fault is written once (`derive/kernels/faults.py`, refuted in [kernels.md](kernels.md)) and
tried by the diagnosis of every form listed with it. In the attention form a failing call with an
extra logit is compared with each fault of the extra logit as a model: the exact reference with
the logit rewritten as the fault rewrites it (σ/√d, σ ln 2, σ + m with m the row's largest score,
σ + ln K for K tiles), on the failing query of every batch and head. A fault of a guard left out
(no −∞ guard on the shift) is modelled by the catalogue's numeric kernel with that guard left out,
run on the exact scores of the failing query in tiles of the block passed (else of 16 to 256
keys): NaN where it gives NaN. A fault of the sink's gradient is its rewrite of the exact gradient
(0, or negated), compared on every head, and a gradient autograd never reached is the missing one.
Faults of the call itself (the kv-head mapping, the window's edge, keys past a loop bound: after
the last whole tile, at a power of two, at N − 1) are models of what the kernel reads instead. The
fault is named, with its fix, only when its model matches the kernel's output there within the
tolerance and differs from the definition on the failing row.

{fault_table}

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
when any class fails. In the attention form a call on which the kernel raises, or whose process
is killed by a signal, is that call's failure like a wrong output: the report shows the exception
and the kernel's own line it came from (the error of a torch kernel, not that of the first call
with numpy arrays), and every other call still runs, so a kernel that raises past 1024 keys or
crashes in float32 is reported as failing there and passing the rest. In the row and kernel
forms, when the function raises on a later input after a failure, the list stops there and the
report says so (the verdict stands).

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
