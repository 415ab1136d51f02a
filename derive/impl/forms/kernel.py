"""``derive impl --form online|split|backward``: checking kernel-shaped code.

A kernel-shaped function takes the scores ``x`` (..., n) (−inf marks a masked key), the
values ``v`` (..., n, dv) and a third argument, and the normalizer's parameters as keywords:

* ``online``: ``fn(x, v, block, **params)`` streams the keys in tiles of ``block`` keys and
  returns ``out`` (..., dv) or ``(out, lse)``;
* ``split``: ``fn(x, v, splits, **params)`` cuts the keys into ``splits`` contiguous chunks
  (``numpy.array_split`` order: some empty when splits > n, some with every key masked),
  reduces each and merges them; returns ``out`` or ``(out, lse)``;
* ``backward``: ``fn(x, v, dout, **params)`` returns ``(dx, dv)`` or ``(dx, dv, dparams)``,
  ``dparams`` a dict keyed by parameter name, each gradient shaped like the parameter as
  passed (a scalar sink shared by every row: the sum over rows).

The exact definition, for one row with extra logit σ (a sink s, 0 for softmax₁ and the zero
token, none for softmax) and extra value 0, is evaluated with mpmath (``Settings.mp_dps``
digits) on the inputs as rounded to the dtype:

    out = Σ_t e^{x_t} v_t / (e^σ + Σ_t e^{x_t}),   lse = log(e^σ + Σ_t e^{x_t}),
    dx_t = P_t (⟨g, v_t⟩ − D),  dv_t = P_t g,  ds = −P_σ D  (P = e^{· − lse}, D = ⟨g, out⟩).

Inputs are a fixed, deterministic adversarial list, simplest first (so the first failure is a
small counterexample): n = 0, 1, 2, 3, 5, 8, 17, 40, 64 keys; ties, a running maximum that grows
in every tile, a first tile or split with every key masked, fully masked rows, scores up to
±1e4. Every row of a length goes in one call, as (R, n) or (1, R, n). The partitions and sink
values come in two sizes (:data:`FIXED_LISTS`), chosen by where the target runs:

* the full list (numpy, torch, and Triton on a GPU): tiles of 1, 2, 3, 16 and 32 keys, n and
  n + 1 (one tile); 1, 2, 3, 8, n, n + 1 and 2n + 3 splits (empty splits); every sink logit 0,
  1.5, −2, 30, −30, −∞, 1e4 on every tile size and split count (crossed);
* the interpreter list, when derive started the child with Triton's CPU interpreter on
  (``TRITON_INTERPRET=1``: ``--triton-interpret``, or set by :mod:`derive.impl.run.triton_env` when
  the target imports triton and there is no CUDA device) and the target's own file defines a
  Triton kernel (:func:`derive.impl.run.triton_env.interpreted`: the parent decides, never the
  child's report): the same sizes cut to at most
  ``MAX_PARTS`` tiles or splits per row (the smallest block that keeps to it stands in for the
  smaller ones; ``MAX_PARTS`` splits for longer rows; 8 splits from n = 8 on), and the sink values
  spread over the partitions, ``SETS_PER_PARTITION`` per tile size or split count in turn: the
  interpreter runs one program per row, one after the other, and pays milliseconds per row and
  per tile.

After the fixed list, a derandomized Hypothesis search
(:func:`derive.impl.cases.rows.search`, the same as the row form's; ``SEARCH_EXAMPLES`` examples,
a count) draws partitions the list lacks, rows and sink values, and shrinks a failing case.
Agreement means agreement on every tested input: evidence, not a proof.

With ``per_head`` the parameters are arrays (H,) along the last leading axis, the rows passed
as (R, H, n) with ``HEADS`` sink values side by side, taken in turn: in the full list
⌈7/HEADS⌉ calls per tile size, split count or cotangent, so each meets every sink value; in
the interpreter list one. A gradient must have shape (H,), entry h the sum over the rows of
head h.

Tolerance (as for the row form, stated in ulps and absolutely): an entry y agrees with the
exact value p when |y − p| ≤ abs + ulps·eps·(1 + κ)·m, with κ the condition of the row
(:func:`derive.impl.exact.tolerance.kappa`) and m the magnitude of the terms that make up p:
Σ_t P_t |v_tk| for ``out``, max(1, |lse|) for ``lse``, P_t(Σ_k |g_k v_tk| + Σ_k |g_k| m_k) for
``dx``, P_t |g_k| for ``dv`` and the sum over rows of P_σ Σ_k |g_k| m_k for ``ds``. Where the
definition has no value (softmax, every key masked: 0/0) ``out`` may be 0 or NaN and the
gradients 0 or NaN; an ``lse`` of log 0 may be −∞ or +∞ (FlashAttention's convention).

On disagreement the function is run on a few probe inputs and compared with every known
kernel fault of its form that applies to the normalizer's formula
(:func:`derive.kernels.faults.faults_for`, run by the numeric kernels of
:mod:`derive.kernels.numeric` with the fault applied): a fault *matches* when the
function agrees with the faulty kernel on every probe row and the faulty kernel differs from
the definition on at least one.
"""

from __future__ import annotations

import math

from derive.errors import InputError
from derive.impl.judge.kernel import Call, KernelChecker, KernelFailure, KernelResult
from derive.impl.faults.kernel_diagnose import KERNEL_TOLERANCE_RULE, KernelDiagnosis, diagnose, faulty_outputs
from derive.impl.exact.reference import ExactRow, kernel_row
from derive.impl.cases.kernel import (DV, FIXED_LISTS, FORMS, HEADS, LSE_CONVENTIONS, MAX_PARTS, ROWS,
                                       SEARCH_EXAMPLES, SETS_PER_PARTITION, SINK_VALUES, blocks, dout_row,
                                       extra_logits, split_counts, values)
from derive.impl.report.kernel import KernelReport
from derive.impl.exact.masked import CONVENTIONS
from derive.impl.run.target import ImplRaised
from derive.normalizers.family import kernel_form
from derive.normalizers.registry import get, names
from derive.render.markup import plain_math

__all__ = ["DV", "FIXED_LISTS", "FORMS", "HEADS", "KERNEL_TOLERANCE_RULE",
           "LSE_CONVENTIONS", "MAX_PARTS", "ROWS", "SEARCH_EXAMPLES", "SETS_PER_PARTITION", "SINK_VALUES", "Call",
           "ExactRow", "KernelChecker", "KernelDiagnosis", "KernelFailure", "KernelReport", "KernelResult",
           "blocks", "check_kernel", "diagnose", "dout_row", "extra_logits", "faulty_outputs",
           "kernel_row", "split_counts", "values"]

INF = math.inf
MASKED_WORDS = {"nan": "NaN", "zeros": "zeros", "uniform": "uniform (the output of a row of equal scores)"}
assert set(MASKED_WORDS) == set(CONVENTIONS)


def check_kernel(target, norm, tols, params: dict, form: str, lse: str, cfg, per_head: bool = False,
                 examples: int = SEARCH_EXAMPLES, thin: bool = False, contract=None,
                 param_grad: bool = True) -> KernelReport:
    """The kernel-form check of a loaded target (see :func:`derive.impl.api.check_implementation`);
    ``thin``: the interpreter list, decided by the parent (:func:`derive.impl.run.triton_env.interpreted`);
    ``contract``: what the kernel accepts (:mod:`derive.impl.cases.contract`), tested inside."""
    facts = kernel_form(norm)
    if form not in facts.forms:  # the texts are prose markup; this is a terminal line
        ratios = [n for n in names() if n not in extra_logits() and "online" in kernel_form(get(n)).forms]
        if facts.ratio is not None:
            raise InputError(f"--form {form} supports the normalizers of the softmax family "
                             f"({', '.join(extra_logits())}); {norm.name} is a ratio of row sums, whose online "
                             f"and split forms are checked (--form online, --form split), not its backward")
        raise InputError(f"--form {form} supports the normalizers of the softmax family "
                         f"({', '.join(extra_logits())})" + (f" and, online and split, the ratios of row sums "
                                                             f"({', '.join(ratios)})" if form != "backward" else "")
                         + f"; {norm.name} has no kernel form checked here: {plain_math(facts.why)}")
    if facts.ratio is not None and per_head:
        raise InputError(f"--per-head passes a sink logit per head; {norm.name} is a ratio of row sums without one")
    fixed, free = {}, []
    for p in norm.params:
        if p not in target.param_kws:
            raise InputError(f"normalizer {norm.name!r} needs its parameter {p}, which {target.name} does not take "
                             f"as a keyword: declare it (e.g. `def fn(x, v, {'dout' if form == 'backward' else 'block'}"
                             f", *, {p})`)")
        if p in params:
            value = float(params[p])
            if math.isnan(value) or value == INF:
                raise InputError(f"parameter {p} must be a number or -inf, got {params[p]!r}")
            fixed[p] = value
        else:
            free.append(p)
    if per_head and not norm.params:
        raise InputError(f"--per-head passes the normalizer's parameters per head; {norm.name} has none")
    checker = KernelChecker(norm, target, form, lse, cfg.mp_dps, fixed, tuple(free), per_head,
                            thin=thin, contract=contract, param_grad=param_grad)
    results, diagnosis = [], None
    skipped = [t.dtype for t in tols if contract is not None and not contract.dtype_ok(t.dtype)]
    tols = [t for t in tols if t.dtype not in skipped]
    if not tols:
        raise InputError("no dtype of --dtype lies inside the contract (--assume dtypes=...): nothing to test")
    for tol in tols:
        try:
            result = checker.run(tol, examples)
        except ImplRaised as exc:
            raise InputError(f"{target.name} raised {exc} on a valid {tol.dtype} input in {form} form "
                             f"(scores of shape {list(exc.shape)}: {exc.values})") from None
        results.append(result)
        if result.failure is not None and diagnosis is None:
            diagnosis = diagnose(checker, result.failure, tol)
    notes = [f"{d} was not tested: outside the contract (dtypes {', '.join(contract.dtypes)})" for d in skipped]
    if facts.ratio is not None:
        notes.append(f"{norm.name} is a ratio of row sums, not of the softmax family: out is compared with the "
                     f"definition's exact weights; an lse, if returned, is not compared (it has no convention here)")
    if target.mutates:
        notes.append("the function modifies one of its input arrays in place (x, v or dout changed): callers "
                     "that reuse them will see them changed")
    if form == "backward" and norm.params and not param_grad:
        notes.append(f"the gradient of {', '.join(norm.params)} was not checked (--no-param-grad)")
    conventions: dict = {}
    for r in results:
        for conv, count in r.conventions.items():
            conventions[conv] = conventions.get(conv, 0) + count
    if conventions:
        outs = "out and lse" if form != "backward" else "dx and dv"
        notes.append(f"rows with every key masked and no extra logit, where {norm.name} has no value (0/0): "
                     + "; ".join(f"{count} followed the convention {MASKED_WORDS[conv]}"
                                 for conv, count in sorted(conventions.items()))
                     + f" ({outs}; accepted: NaN, zeros or uniform, the one rule of the row form, with an lse of "
                       f"−∞, +∞, NaN or a large negative number)")
    plus_inf = sum(r.plus_inf_lse for r in results)
    if plus_inf:
        notes.append(f"{plus_inf} rows whose lse is log 0 = −∞ returned +∞ (FlashAttention's convention for a fully "
                     f"masked row: the backward then recomputes P = e^(x − lse) = 0); accepted")
    ignored = sorted({n for r in results for n in r.block_ignored})
    if ignored:
        notes.append(f"the output did not change with block on rows of {', '.join(map(str, ignored))} keys (every "
                     f"tile size gave the same bits): the function may not use the block it is given (a fixed tile "
                     f"size, or no tiling), so the tile sizes named here may not be the ones it ran")
    return KernelReport(target=target.name, normalizer=norm.name, title=norm.title, form=form, lse=lse,
                        api=target.api, params=fixed, free_params=tuple(free), results=results,
                        diagnosis=diagnosis, notes=notes, per_head=per_head,
                        fixed_list="interpreter" if checker.thin else "full", contract=contract,
                        varied=_varied(checker))


def _varied(checker) -> tuple:
    """The fixed list's values of the free parameters: the sink values, or a ratio's own edge values."""
    if checker.ratio is None or not checker.free_params:
        return SINK_VALUES
    return tuple(sorted({v for c in checker.param_sets() for p, v in c.items() if p in checker.free_params}))
