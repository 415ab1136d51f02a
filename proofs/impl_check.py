"""``docs/impl-check.md``: a faulty softmax₁ caught by ``derive impl``, as a reviewer sees it.

A page the build renders itself (:func:`rendered`): every check it shows runs while it is built,
so ``python build_docs.py`` regenerates it and ``python build_docs.py --check`` reports it when
stale. Its attention-form section is ``proofs/_impl_check_attention.py``.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np

from _impl_check_attention import attention_section  # proofs/_impl_check_attention.py
from derive.references import citation, markdown_section
from derive.impl.api import check_implementation
from derive.impl.forms.kernel import FIXED_LISTS, KERNEL_TOLERANCE_RULE
from derive.impl.exact.masked import CONVENTIONS, rules as masked_rules
from derive.impl.report.row import TOLERANCE_RULE
from derive.impl.run.target import DEFAULT_TIMEOUT, one_worker
from derive.impl.exact.tolerance import FAR_BELOW, TOLERANCES
from derive.render import Rendered
from derive.render.markup import to_gfm

__all__ = ["FAULTY", "FIXED", "render"]

FAULTY = '''\
import numpy as np


def softmax1(x):
    """softmax₁(x)_k = exp(x_k) / (1 + Σ_j exp(x_j)), with the usual max trick."""
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / (1 + e.sum(axis=-1, keepdims=True))
'''

FIXED = '''\
import numpy as np


def softmax1(x):
    """softmax₁(x)_k = exp(x_k) / (1 + Σ_j exp(x_j)), with the max trick done right."""
    m = np.maximum(np.max(x, axis=-1, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=-1, keepdims=True))
'''


SPLIT = '''\
import math

import numpy as np


def partial(x, v):
    """(out, lse) of one chunk of keys, every row at once, without the sink."""
    m = np.max(x, axis=-1, initial=-math.inf)
    m = np.where(m == -math.inf, 0.0, m)  # a chunk with no allowed key: nothing to shift
    e = np.exp(x - m[..., None])
    total = e.sum(axis=-1)
    out = np.einsum("...k,...kd->...d", e, v) / np.where(total == 0, 1.0, total)[..., None]
    with np.errstate(divide="ignore"):
        return out, m + np.log(total)  # lse = -inf where the chunk has no allowed key


def attend(x, v, splits, *, s):
    """Split-KV attention with a learned sink logit s, every row at once."""
    seeded = (np.zeros(x.shape[:-1] + v.shape[-1:]), np.full(x.shape[:-1], float(s)))
    parts = []
    for idx in np.array_split(np.arange(x.shape[-1]), splits):
        if len(idx) == 0:
            parts.append(seeded)  # an empty split: the seeded state
        else:
            parts.append(partial(x[..., idx], v[..., idx, :]))
    parts.append(seeded)  # the sink enters in the combine
    lses = np.stack([p[1] for p in parts])
    top = np.max(lses, axis=0)
    live = top > -math.inf  # rows where some part has an allowed key or the sink is finite
    top = np.where(live, top, 0.0)
    with np.errstate(divide="ignore"):  # a row with nothing at all: log(0), then set to 0
        lse = np.where(live, top + np.log(np.exp(lses - top).sum(axis=0)), 0.0)
    out = sum(np.exp(l - lse)[..., None] * o for o, l in parts)
    return np.where(live[..., None], out, 0.0), lse
'''


def _kernel_check(directory: str):
    """``derive impl review_split.py:attend --as sink --form split --dtype float64``."""
    path = Path(directory) / "review_split.py"
    path.write_text(SPLIT, encoding="utf-8")
    return check_implementation(f"{path}:attend", "sink", dtypes=("float64",), form="split",
                                name="review_split.py:attend")


def _check(source: str, directory: str):
    """``derive impl review.py:softmax1 --as softmax1 --dtype float32`` on ``source``."""
    path = Path(directory) / "review.py"
    path.write_text(source, encoding="utf-8")
    return check_implementation(f"{path}:softmax1", "softmax1", dtypes=("float32",), name="review.py:softmax1")


def _function(source: str):
    """The document's own example as a function, for one worked row (not a user's code)."""
    namespace: dict = {}
    exec(compile(source, "review.py", "exec"), namespace)  # noqa: S102 - derive's own constant source
    return namespace["softmax1"]


def _demote(markdown: str) -> str:
    return "\n".join("##" + line if line.startswith("#") else line for line in markdown.splitlines())


def _instance(row=(2.0, 1.0)) -> str:
    """The faulty code on one row, where it takes m = max x itself, against softmax₁'s exact value."""
    got = float(_function(FAULTY)(np.array(row))[0])
    z = 1 + sum(math.exp(v) for v in row)
    want = math.exp(row[0]) / z
    xs = ", ".join(f"{v:g}" for v in row)
    return (f"on the row x = ({xs}) the code takes m = max x = {max(row):g} and returns {got:.4f} for the first "
            f"key, where softmax₁ gives e^{row[0]:g}/(1 + Σ_j e^(x_j)) = {want:.4f}")


def _mass_floor() -> str:
    """Why the faulty code's weights sum to at least 1/2, with the step proved here (the same step
    as section 9 of softmax-one.md); empty unless the proof goes through."""
    import sympy as sp

    from derive.prove.equality import prove_equal

    rho = sp.Symbol("rho", nonnegative=True)
    s = 1 + rho
    v = prove_equal(s / (1 + s) - sp.Rational(1, 2), rho / (4 + 2 * rho))
    if not v.proved:
        return ""
    return ("\n\nIts weights sum to S/(1 + S) with S = Σ_t exp(x_t − m) = 1 + ρ, ρ ≥ 0, because the key that "
            "attains the maximum contributes exp(0) = 1; and S/(1 + S) − 1/2 = ρ/(4 + 2ρ) "
            f"(**{v.status}**: {v.method}), which is ≥ 0. So on every row with an allowed key its weights sum to "
            "at least 1/2: it can never abstain, which was the point of softmax₁.")


def _vacuous_at(t) -> float:
    """The least κ at which the dtype's bound cannot fail (Tolerance.vacuous)."""
    k = 1.0 / t.rel - 1.0
    assert t.vacuous(k) and not t.vacuous(k - 1.0)
    return k


def _vacuous_from(t) -> str:
    return f"κ ≥ {_vacuous_at(t):.4g}"


def _sums() -> str:
    """The weight of a sum's rounding in κ per half dtype (Tolerance.sums), as powers of two."""
    return ", ".join(f"2^{round(math.log2(t.sums))} in {t.dtype}" for t in TOLERANCES.values() if t.sums != 1.0)


def _bf16_reach() -> str:
    """The smallest bfloat16 rows out of reach: n keys (κ ≥ n − 1) or one score x (κ ≥ 2|x|)."""
    k = _vacuous_at(TOLERANCES["bfloat16"])
    return f"a row of {math.ceil(k) + 1} keys, or with a score of {math.ceil(k / 2)}"


def render(ran: list | None = None) -> str:
    """The page; the reports of the checks it runs are appended to ``ran`` (for the build's log)."""
    ran = [] if ran is None else ran
    with tempfile.TemporaryDirectory() as directory, one_worker():  # derive's own examples: one child for all
        bad = _check(FAULTY, directory)
        good = _check(FIXED, directory)
        kernel = _kernel_check(directory)
        ran += [bad, good, kernel]
        attention = attention_section(directory, _demote, ran)
    conventions = "\n".join(f"- **{key}**: {text}" for key, text in CONVENTIONS.items())
    rules = "\n".join(f"| `{name}` | {to_gfm(r.says, inline=True)} | {'the value itself' if r.defined else 'NaN, zeros or uniform'} |"
                       for name, r in masked_rules().items())
    tolerances = "\n".join(f"| {t.dtype} | {t.ulps} | {t.eps:.3e} | {t.abs:.3e} | {_vacuous_from(t)} |"
                           for t in TOLERANCES.values())
    return f"""\
# Checking an implementation with `derive impl`

Reviewers rarely review formulas; they review code. `derive impl` takes the code itself,
runs it on inputs that matter (ordinary rows, ties, single elements, scores in every
decade up to ±1e4, rows of up to 512 keys, masked and fully masked rows, batch and head
dimensions) in the dtypes asked for, and
compares every output with the exact value of the derived definition, computed at high
precision. When they disagree it shows the simplest counterexample Hypothesis finds and
tests the code against the known faulty forms of the normalizer, so the report says *what*
is wrong and how to fix it. Each faulty form is a rewrite of the normalizer's formula (the
row maximum subtracted from the scores but not from the terms free of them, those terms
dropped, a factor ln 2 or log₂e on an exponent, the extra logit scaled like the scores, a
clip or a cap dropped, the formula evaluated straight in the dtype), written once in
`derive/impl/faults/row.py`: it applies to every normalizer whose formula has the part it
rewrites — a spec's own normalizer too — and the same rewritten formula gives the faulty
row the code is matched against and the derivation shown with it.

`derive impl` imports and runs the target (in a separate process, see below), as `derive
check` does with a FlexAttention `score_mod`/`mask_mod`; no other derive command runs your code. An "agrees" verdict means agreement on every tested input within the stated
tolerance — differential testing, not a proof.

## The code under review

A QuietAttention softmax₁ {citation(["miller2023"])} with the usual max-subtraction trick, `review.py`:

```python
{FAULTY}```

It looks right, and a smoke test on rows of zeros passes (there max x = 0, so the unshifted
1 happens to be right). Checking it:

```console
$ derive impl review.py:softmax1 --as softmax1 --dtype float32
```

exits with status {bad.exit_code()} and prints:

{_demote(bad.to_markdown(math=True)).rstrip()}

The symbolic derivations treat m as a free shift, so their counterexample to
softmax₁(x − m) = softmax₁(x) need not have m = max x: it shows that some shift changes the
result. The code itself always subtracts m = max x; an instance of exactly that: {_instance()}.{_mass_floor()}

## After the fix

```python
{FIXED}```

```console
$ derive impl review.py:softmax1 --as softmax1 --dtype float32
```

exits with status {good.exit_code()}: {good.summary()}

The same check runs inside a test suite:

```python
from derive.testing import assert_implements

def test_softmax1():
    assert_implements(softmax1, "softmax1", dtypes=("float32", "float64"))
```

A callable given to `assert_implements` is sent to the child process by reference, so it
must be importable there (defined at module level, not a lambda or a closure).

## Kernel-shaped code: `--form online|split|backward`

Fused attention kernels never form the weights: they stream the keys in tiles, or cut them
into splits and merge the partial results, and the backward pass recomputes the weights
from a saved log-sum-exp. `--form` checks such code as it is written (softmax, softmax₁,
zero_token and sink), against the exact definition of `out`, `lse` and the gradients:

| `--form` | the function | returns |
|---|---|---|
| `online` | `fn(x, v, block, **params)`: the keys in tiles of `block` ≥ 1 | `out` (…, dv) or `(out, lse)` |
| `split` | `fn(x, v, splits, **params)`: `splits` contiguous chunks (`numpy.array_split`) | `out` or `(out, lse)` |
| `backward` | `fn(x, v, dout, **params)` | `(dx, dv)` or `(dx, dv, {{"s": ds}})` |

The scores `x` (…, n) come first (−∞ marks a masked key), the values `v` (…, n, dv) second.
Every row of one length is passed in one call, 16 rows or more, with one or two leading
dimensions (…, n) — (R, n), (1, R, n) and a batch of two, (2, R/2, n), in turn, so a kernel
that reads batch 0 for every batch fails: a function written for a single row (n,) must
loop over them, else the shape it returns is refused (exit 2). The normalizer's parameters
are keywords (a sink: `def fn(x, v, splits, *, s)`, or `**params`), and a parameter's
gradient has the parameter's shape (a scalar sink shared by every row: the sum over rows; a
numpy scalar such as `dS.sum()` is a scalar); a backward that returns no gradient for a
parameter disagrees, unless `--no-param-grad` says it is not meant to. With `--per-head`
the parameters are arrays of shape (H,), one per head along the last leading axis of `x`
(…, H, n) (the check passes (R, 2, n) with two sink values side by side, from the first
call on, so a kernel written for (B, H, n) with `s[h]` loads), and a gradient has shape
(H,): entry h the sum over the rows of head h (a per-row gradient, not summed, is refused
with exit 2). A returned `lse` is the natural log-sum-exp including the extra logit;
`--lse base2` and `--lse kv-only` select the other conventions. The inputs are a fixed
adversarial list: n = 0 to 64 keys with tiles of one key and of more than n, ties split
across tiles, a first tile or split with every key masked, a masked tile before a score of
−1000 (a kernel that stores the −∞ guard as its running max underflows there), empty
splits (splits > n), fully masked rows, scores up to ±1e4 and sink logits from −∞ to 1e4;
then rows of 200 and 1024 keys (a maximum that grows in every tile, spikes past key 64 and
past the 20th tile, masked first splits, masked blocks, large magnitudes) and of 1025 keys (no
multiple of any tile: the rows of calls of the attention form's model, dense scores of two query
heads sharing a kv head, a ramp, two batches padded by whole tiles) with the real
tile sizes 64, 128 and 256 (and 16: 64 tiles), 3, 8 and 64 splits and head dimensions 64
and 128. The exact values are computed in ball arithmetic (python-flint `arb`), summing
keys with equal value rows first, so rows of 1024 keys cost milliseconds. For numpy and
torch targets (and Triton on a GPU) it is {FIXED_LISTS["full"]}. When derive started the
child with Triton's CPU interpreter on and the target's own source defines a Triton kernel (its
file, or a file of its folder it imports: a wrapper beside its kernels; read, never imported; see
*Triton kernels without a GPU* below) it is {FIXED_LISTS["interpreter"]}: the
interpreter runs one program per row, one after the other, and pays milliseconds per row
and per tile. derive decides this in its own process from what it launched, never from
anything the child reports, so a numpy kernel gets the full list whatever its module
imports. The report names the list it used, and warns when the output of every parameter
set does not change with `block` (the kernel may not use the tile size it is given). Then
a derandomized Hypothesis search (`--examples`, default 20 per dtype, a count) draws
partitions the list lacks — up to three full tiles of 1 to 6 keys and a partial one, 1 to
8 splits of up to 12 keys — with one to three rows of any scores (any entry or row masked)
and sink values, then a quarter as many cases (at least one) with rows of 65 to 1100 keys
in tiles of 16 to 256 keys or up to 64 splits, and shrinks a failing case to the simplest
one. A disagreement is matched against
the known kernel faults of `derive/kernels/faults.py` (the document kernels.md derives and
refutes them), run on the same inputs by the numeric kernels of
`derive/kernels/numeric.py`: every fault of the form that applies to the normalizer, i.e.
whose part its formula has and whose transformation changes it (a fault of the extra logit —
once per tile or split, log₂e missing, the score scale on it, added unshifted — is one
transformation of the logit, tried in the online and the split form; none of them for
softmax, which has no extra logit, and log₂e or the scale not for softmax₁, whose logit is 0), on
every output the kernel returns (an lse fault is matched on the lse), and against the
other normalizers of the family ("the output equals softmax₁": a sink kernel called
without a sink). A fault is named only when its model also gives the counterexample
printed. Tolerance: {to_gfm(KERNEL_TOLERANCE_RULE, inline=True)}

A split-KV kernel with a sink, `review_split.py`:

```python
{SPLIT}```

```console
$ derive impl review_split.py:attend --as sink --form split --dtype float64
```

exits with status {kernel.exit_code()} and prints:

{_demote(kernel.to_markdown(math=True)).rstrip()}

{attention.rstrip()}

## Your code runs in a separate process

`derive impl` imports the target and calls it only in a child process, never in the
process that decides the verdict and prints the report. The child is a plain Python
script that imports numpy (and torch when your code does), not derive or SymPy; it
receives each input and returns the weights over a private pipe, never over standard
output. Whatever the code does, it cannot fake a verdict or corrupt the report:

| your code… | derive |
|---|---|
| calls `sys.exit(n)` (at import or in a call) | exit 2: `… called sys.exit(n) while being imported` (or `while being called on …`) |
| calls `os._exit`, crashes or is killed | exit 2: `the process running … ended with exit status …` / `was killed by SIGKILL`; in the attention form a call killed by a signal (SIGABRT, SIGSEGV, …) is the failure of that call's classes instead, the code is imported afresh and the other calls still run |
| takes longer than `--timeout SECONDS` (default {DEFAULT_TIMEOUT:g}) for one import or one call | the child is killed; exit 2: `… did not finish within the timeout …` |
| writes to file descriptor 1 (standard output) | exit 2: `… wrote to standard output (file descriptor 1) …` |
| calls `print()` | allowed: it goes to standard error |
| returns something that is not a numpy array or torch tensor of the input's shape | exit 2, naming the type or the shape received |
| returns complex numbers | a disagreement (weights are real), stated once |
| changes its input array in place | a one-line warning in the report |
| raises on a valid input | exit 2, with the exception and the (shrunk) input; in the attention form the failure of that call's classes (the exception and the line of your code it came from), and the other calls still run |

Exit 2 always comes with one line on standard error and nothing on standard output, so a
CI gate that reads `--format json` never sees a truncated report or a zero exit from a
function that exited early. An exception inside derive's own engine is exit 3, an internal
error that names the exception and where derive raised it and asks to be reported: it is
never turned into a verdict.

## Threat model

What derive guarantees against code that is hostile, not only wrong:

- **The exit status is the verdict**, decided in derive's own process: 0 agrees, 1
  disagrees or undecided, 2 no verdict, 3 no verdict because derive's own engine failed.
  Nothing the child sends is taken as a verdict or a report: it answers with arrays over a
  private pipe, which derive decodes without pickle and checks against the shapes it asked
  for; anything else ends the check with exit 2.
- **The child cannot set its own coverage.** Which inputs run — the full list or the
  interpreter's — is decided by derive from what it launched (the environment it gave the
  child and the target's source file, read, never imported), not from anything the child
  reports: a kernel that loads a module named triton or sets `TRITON_INTERPRET` in its own
  process still gets the full list.
- Standard output belongs to the report: a child that writes to file descriptor 1 ends the
  check with exit 2. `--output FILE` writes the report to FILE only after every child
  process (and the session it ran in) has ended, through a new file renamed over FILE, so
  the report is complete and written by derive alone.

What it cannot guarantee:

- **A kernel that detects the harness** — recognises derive's fixed inputs, or imports
  derive's own reference (`derive.kernels.numeric`, the exact definition) and answers from
  it — can agree on every tested input and be wrong elsewhere. Differential testing is
  evidence about the code on the inputs it saw, not about code that chooses its answers
  by its inputs.
- **A process of the same user** can write to derive's descriptors (a terminal, a pipe
  that another process holds), signal it, or replace FILE after derive has written it; a
  child that escapes its session (a double fork into a new session) outlives the check.
  Operating-system isolation (a container, another user, seccomp) is outside derive; run
  untrusted code there.

## Triton kernels without a GPU

The function may be a thin wrapper that launches a Triton kernel on torch tensors.
Triton ships a CPU interpreter that runs the kernel code itself (`TRITON_INTERPRET=1`);
`--triton-interpret` sets that variable in the child process before the target is
imported, which is when `@triton.jit` reads it. When the target's file imports triton
and torch reports no CUDA device, derive sets it anyway and says so in one line on
standard error; a `TRITON_INTERPRET` you exported yourself is left as it is. Under the
interpreter, when the target's file defines a Triton kernel, the kernel forms use their
thinned list (above). Check the
float32 kernels with `--dtype float32`. The zoo in `tests/zoo/triton_kernels/` has a
row softmax, a tiled forward with a sink and a split-KV combine, each with a faulty twin.

## Inputs

Hypothesis (derandomized) draws, per dtype: short rows of small integers, ordinary
floats, the specials ±1e4, ±1e3, ±100, ±25, 30, 40, 60, a number in every decade from
1e-3 to 1e4 and floats in ±100 and ±1e4; then rows with masked (−∞) entries and fully
masked rows; then long rows of 17 to 512 keys (Gaussian, an increasing ramp, or a spike
in the last tile) so that a row spans several tiles of the common block sizes 16, 32, 64
and 128 — a tiled softmax that forgets to rescale its running sum fails there and only
there. With torch, gradients are compared on short rows. Then fixed edge cases (among them
two rows of calls of the attention form's model: a query behind a padded tile of 16 keys, the
last query of a causal ramp), and rows that put the first weight exactly on a kink of the normalizer's formula (a relu, abs, max or
min switching branch), and just beside it: for clipped softmax rows where (ζ − γ)p + γ is 0
or 1. A parameter the function takes as a keyword is varied inside the normalizer's domain
(ζ ≥ 1, γ ≤ 0, c > 0); `--param NAME=VALUE` fixes it, and is an error for a parameter the
function does not take (the value could not be passed to it).

## Tolerances

{to_gfm(TOLERANCE_RULE, inline=True)}

| dtype | ulps | eps | abs | not judged from |
|---|---:|---:|---:|---:|
{tolerances}

κ is the condition number of the definition at that row, so large scores and long rows
get the slack a backward-stable implementation needs, and no more. Its max runs over the keys
that carry weight: a score more than {FAR_BELOW:g} below the row's top (a finite mask value
beside an unmasked key) sets none. Its n − 1 counts the roundings of a sum in the precision the sum
accumulates in: in the attention form float16 and bfloat16 kernels are judged as summing in float32,
as fused kernels and PyTorch's attention do, so the n − 1 is weighed by float32's eps over the dtype's
({_sums()}) and rows of thousands of keys stay judged; `--assume half-accumulation` states a kernel that
sums in the half precision itself (weight 1). The row and kernel forms weigh it 1 in every dtype.

Where ulps · eps · (1 + κ) ≥ 1 (the last column: from that κ on) the bound is at least the
magnitude of every value it compares, so even an output of 0 passes: such a comparison cannot
fail and is no evidence. A row like that is not judged, and neither is a row whose exact value no
ball encloses. When nothing disagrees, a dtype agrees if every class of input that ran has judged
rows (the rows of the row form are one class); the rows not judged are counted in a note with the
reason. If a class has no judged row the verdict is **undecided** (exit 1), never agrees, and the
report names the classes. An output beyond even that bound still disagrees. An entry of out that
weighs values v_j has the absolute floor abs · Σ|v_j| (each weight may lose up to abs: a subnormal
weight flushed to 0 beside v = 3 moves the entry by more than abs), an entry of dv the floor
abs · Σ|g_i| over the queries that see its key; dq, dk and the sinks' gradient keep abs. Low-precision checks meet
this often: in bfloat16 {_bf16_reach()}, is already out of reach, so check
a kernel in float32 (or wider) as well.

## Fully masked rows

What a definition gives on a row whose every score is masked is data, one rule for every
normalizer: where the definition has a value there, it is required; where it has none
(0/0), each of these conventions is accepted:

{conventions}

and the report says which one the code uses — accepted with a note, never silently, and
never a failure. The kernel forms follow the same rule on out, lse, dx and dv: on a row
where the definition has no value the outputs are NaN, zeros or uniform (those of a row of
equal scores), with an lse of ±∞, NaN or a large negative number (a finite mask value plus
log n), and the report counts the rows of each convention.

| normalizer | on a fully masked row | accepted |
|---|---|---|
{rules}

So Hugging Face-style masking with `torch.finfo(dtype).min` (a uniform row) passes for
softmax, while for softmax₁ and the sinks, where the row's mass is exactly 0, a uniform
row or NaN is a disagreement.

{markdown_section(["miller2023"])}
---
Generated from `proofs/impl_check.py` by `python build_docs.py`; `python build_docs.py --check`
reports it when stale.
"""


def rendered() -> Rendered:
    ran: list = []
    page = render(ran)
    agree = sum(bool(r.agrees) for r in ran)
    return Rendered(docs={"impl-check.md": page.encode()},
                    summary=f"{len(ran)} implementations checked by derive impl ({agree} agree, "
                            f"{len(ran) - agree} disagree, as the page shows)")
