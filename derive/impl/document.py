"""``docs/impl-check.md``: a faulty softmax₁ caught by ``derive impl``, as a reviewer sees it.

``proofs/impl_check.py`` puts it into the build, so ``python build_docs.py`` regenerates it
and ``python build_docs.py --check`` reports it when stale.
"""

from __future__ import annotations

import math

import numpy as np

from derive.impl.api import check_implementation

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


def _function(source: str):
    namespace: dict = {}
    exec(compile(source, "review.py", "exec"), namespace)  # noqa: S102 - the document's own example
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


def render() -> str:
    dtypes = ("float32",)
    bad = check_implementation(_function(FAULTY), "softmax1", dtypes=dtypes, name="review.py:softmax1")
    good = check_implementation(_function(FIXED), "softmax1", dtypes=dtypes, name="review.py:softmax1")
    return f"""\
# Checking an implementation with `derive impl`

Reviewers rarely review formulas; they review code. `derive impl` takes the code itself,
runs it on inputs that matter (ordinary rows, ties, single elements, scores up to ±1e4,
masked and fully masked rows, batch and head dimensions) in the dtypes asked for, and
compares every output with the exact value of the derived definition, computed at high
precision. When they disagree it shows the simplest counterexample Hypothesis finds and
tests the code against a table of known faulty forms, so the report says *what* is wrong
and how to fix it.

`derive impl` imports and runs the target: it is the only derive command that runs your
code. An "agrees" verdict means agreement on every tested input within the stated
tolerance — differential testing, not a proof.

## The code under review

A softmax₁ (QuietAttention) with the usual max-subtraction trick, `review.py`:

```python
{FAULTY}```

It looks right, and a smoke test on rows of zeros passes (there max x = 0, so the unshifted
1 happens to be right). Checking it:

```console
$ derive impl review.py:softmax1 --as softmax1 --dtype float32
```

exits with status {bad.exit_code()} and prints:

{_demote(bad.to_markdown()).rstrip()}

The symbolic derivations treat m as a free shift, so their counterexample to
softmax₁(x − m) = softmax₁(x) need not have m = max x: it shows that some shift changes the
result. The code itself always subtracts m = max x; an instance of exactly that: {_instance()}.

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

---
Generated from `proofs/impl_check.py` by `python build_docs.py`; `python build_docs.py --check`
reports it when stale.
"""

