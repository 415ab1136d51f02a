"""``derive impl``: check a real implementation against its derived definition."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import sys
import tempfile
import time
from pathlib import Path

from derive.errors import InputError
from derive.impl import DEFAULT_DTYPES, check_implementation
from derive.impl.cases.masks import parse_window
from derive.impl.run.roles import DEVICES, parse_fixed, parse_kw
from derive.impl.cases.contract import GRAMMAR, ROW_FORM_ITEMS
from derive.impl.forms.kernel import FORMS, LSE_CONVENTIONS, SEARCH_EXAMPLES
from derive.impl.run.target import DEFAULT_TIMEOUT
from derive.impl.exact.tolerance import DTYPES
from derive.impl.run.triton_env import child_env
from derive.settings import DEFAULT

HELP = "check a Python implementation against a normalizer's definition (runs your code)"

DESCRIPTION = """\
Check a Python implementation against the derived definition of a normalizer by
differential testing: Hypothesis draws inputs (ordinary rows, ties, single elements,
scores in every decade up to ±1e4, rows of up to 512 keys spanning several tiles, masked
−inf entries and fully masked rows, batch and head dimensions, parameters the function
takes as keywords), the function is run on them in each dtype and compared with the
exact value computed at high precision, within a tolerance stated in ulps and in absolute
terms. With torch, the autograd gradient is compared with the derived Jacobian. On
disagreement the simplest counterexample is shown and the implementation is matched
against known faulty forms.

WARNING: this imports TARGET and calls it, i.e. it runs your code (the only other derive
command that does is `derive check` on a spec with score_mod/mask_mod). Your code runs in a separate child process, never in the one that
prints the report: if it exits (sys.exit, os._exit), is killed, takes longer than
--timeout seconds for one import or call, writes to file descriptor 1 (stdout), or
returns something that is not an array of the input's shape, derive stops it and exits 2
with one line saying what happened (print() output goes to stderr). In the attention form a
call on which the code raises or is killed by a signal is instead that call's failure (the
exception and the line of your code it came from), and the other calls still run.

TARGET is FILE.py:FUNCTION or package.module:FUNCTION (FUNCTION may be Class.method, a
torch.autograd.Function's Class.apply, or make() for a factory that derive calls once, in the
child, and checks what it returns: an nn.Module or a bound method). The function takes an array of
scores (numpy or torch, detected) and returns the weights along --dim; it may also take
`dim`/`axis`, `mask` (bool, True = allowed) and the normalizer's parameters as keywords.

Kernel-shaped code (--form; softmax, softmax1, zero_token, sink): the scores x (..., n)
come first (-inf marks a masked key), then the values v (..., n, dv); the normalizer's
parameters are keywords (a sink: `def fn(x, v, block, *, s)`). Every row of a length
comes in one call with leading dimensions: a function for one row (n,) must loop.
  --form online    fn(x, v, block) streams the keys in tiles of `block` >= 1 keys and
                   returns out (..., dv) or (out, lse);
  --form split     fn(x, v, splits) cuts the keys into `splits` contiguous chunks
                   (numpy.array_split order: some empty, some fully masked), reduces
                   each and merges them; returns out or (out, lse);
  --form backward  fn(x, v, dout) returns (dx, dv) or (dx, dv, dparams), dparams a dict
                   keyed by parameter name ({"s": ds}), each gradient shaped like the
                   parameter as passed (a scalar sink: the sum over rows; with
                   --per-head, s of shape (H,) along the last leading axis of x
                   (..., H, n): entry h the sum over the rows of head h).
Attention kernels as written (--form attention; every normalizer but bias_kv, those outside the
softmax family forward only, their parameters as keywords by name or --kw PARAM=NAME, with the
entry's edge values in turn or --param's): fn(q, k, v, **params) with q, k, v in --layout (bhnd by default; bnhd, nd, nhd, ...), returning out,
(out, lse) or (out, weights) (the weights in q's layout with the keys last: checked too). Its keywords are read from its signature and passed by role (scale/sm_scale/
scaling, causal/is_causal, mask/attn_mask/block_mask, sinks/S, start_q, sliding_window/
window_size, block, num_splits, enable_gqa; --kw ROLE=NAME names another). Every call is one
of a single model: batch, query heads and kv heads (--gqa: k and v with fewer heads, query
head h reading kv head h // (H / Hkv)), queries at start_q + i, up to 4096 keys, the mask,
the sinks, tiles of 1 to 256 keys and up to 64 splits where the kernel takes them. The mask
is the model's, lowered to what the kernel takes: causality by its flag, or --causal
[top-left|bottom-right] (where the queries sit when M != N; a hint names the other alignment
when the output matches it), a window by its keyword as an int or a (left, right) pair, or
--window W|L,R, and the rest through its mask argument in the form --mask names (additive,
with --mask-value -inf, finfo-min or a number; keep; drop; mask-mod; block-mask); --start-q
and --scale state what a kernel assumes without a keyword; --backward adds dq, dk, dv and the
sinks' gradient by torch autograd. q and k realise derive's scores exactly, and every output
is compared with the exact definition on the arrays passed. Every class of input (finite,
masked, padding, extreme sinks, long and very long rows, tiles, splits, late rows, decode
offset, windows, grouped kv heads, layouts, head dimensions, ...) is run: the report lists
each class that fails with its smallest counterexample, the classes that pass, and what ran
(largest key length, tiles, splits, groups); so do the online, split and backward forms. An
input belongs to every class whose feature it has: it is shown under the first, and every
other class it belongs to fails with it. When the fixed list passes, Hypothesis
(derandomized) searches --examples drawn calls (default 20: batch, heads, kv-head groups,
lengths past 64, 128, 256, 512 and 1024 keys, head dimensions, offsets, windows, masks,
sinks, tile sizes, split counts, drawn scores) inside the contract and shrinks a failing one.
--assume ITEM states a kernel's contract (finite-sinks=LO:HI, finite-scores, block=pow2,
min-head-dim=64, keys-multiple=block, queries-le-keys, ...): derive tests inside it (raising
head dimensions and key lengths to it) and prints what it assumed; the row form takes
finite-sinks, finite-scores, min-keys, no-fully-masked and dtypes.
lse, when returned, is checked too: natural log by default, --lse base2 (log2) or
--lse kv-only (without the extra logit). Inputs are a fixed adversarial list, 16 rows per call in
batch and head layouts (n = 0 to 64 with tiles of 1 key to more than n, 1 to 2n + 3
splits, every sink value from -inf to 1e4 on every partition; n = 200, 1024 and 1025 with
tiles of 16, 64, 128, 256 and n keys, 3, 8 and 64 splits and head dimensions 64 and
128; ties split across tiles, fully masked tiles and splits, empty splits, scores up to
+-1e4; under Triton's CPU interpreter, which pays per row and per tile, fewer tiles and
the sink values spread over the partitions, decided by derive from what it launched,
never by the child). A disagreement is matched against the known kernel faults
(derive/kernels/faults.py) and their fixes. After the fixed list, Hypothesis
(derandomized) searches --examples more cases (default 20 in a kernel form: short rows
of any entries, one to three rows, any tile size or split count, sink values), then a
quarter as many (at least one) with rows of 65 to 1100 keys in tiles of 16 to 256 keys or
up to 64 splits, and shrinks a failing one. A backward must return the
parameters' gradients unless --no-param-grad. --dim does not apply to a
kernel form; --timeout, the child process and
the exit statuses are the same.
Triton kernels run without a GPU under Triton's own CPU interpreter: --triton-interpret
sets TRITON_INTERPRET=1 in the child process before TARGET is imported, so the real
kernel code runs on CPU tensors. It is set anyway, with a note on stderr, when TARGET's
file imports triton and torch reports no CUDA device.

--output FILE writes the report to FILE (replaced atomically) once every child process
of the check has ended, instead of to standard output: a report no process of the user's
code can write into (see the threat model in docs/impl-check.md).

Exit status: 0 the implementation agrees on every tested input, 1 it disagrees or is
undecided (a row could not be judged: its exact value out of reach, or its tolerance so
wide that no output could fail it),
2 bad usage or no verdict (unknown normalizer, TARGET cannot be imported; the function
raises on a valid input (row and kernel forms), exits, hangs, writes to stdout or returns a wrong type or shape),
3 an internal error of derive (its own engine failed: no verdict; the exception is named and
asks to be reported)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # "-1e6" is a value (--mask-value -1e6), not an option: argparse's own pattern knows only -1 and -1.5
    parser._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-inf$")
    parser.add_argument("target", metavar="TARGET", help="FILE.py:FUNCTION or module:FUNCTION")
    parser.add_argument("--as", dest="normalizer", required=True, metavar="NORMALIZER",
                        help="the definition to check against: a built-in (softmax, softmax1, sink, ...) or "
                             "FILE.toml, the [normalizer] weight formula of a spec")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a parameter of the normalizer, e.g. --param s=0.5 for sink")
    parser.add_argument("--dim", type=int, default=-1, help="the normalized axis (default -1)")
    parser.add_argument("--dtype", nargs="+", action="extend", default=None, metavar="DTYPE",
                        help=f"dtypes to test, of {', '.join(DTYPES)} (default: {' '.join(DEFAULT_DTYPES)}); "
                             f"repeated options add up")
    parser.add_argument("--examples", type=int, default=None,
                        help=f"Hypothesis examples per dtype (default {DEFAULT.examples}; in a kernel or the "
                             f"attention form, after the fixed list: {SEARCH_EXAMPLES}, and 0 runs the fixed list "
                             f"alone)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"stop the function when one import or call takes longer (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--form", choices=("row", "attention") + FORMS, default="row",
                        help="the calling convention: row (default: fn(x) -> weights) or a kernel form, "
                             "online fn(x, v, block), split fn(x, v, splits), backward fn(x, v, dout)")
    parser.add_argument("--lse", choices=LSE_CONVENTIONS, default="natural",
                        help="the convention of a returned lse (--form online/split/attention): natural (default), "
                             "base2, kv-only")
    parser.add_argument("--per-head", action="store_true",
                        help="kernel forms: pass the normalizer's parameters as arrays of shape (H,), one per head, "
                             "along the last leading axis of x (..., H, n); each gradient then has shape (H,), "
                             "the sum over the rows of that head")
    parser.add_argument("--assume", action="append", default=[], metavar="ITEM",
                        help=f"what the kernel accepts, tested inside (repeatable): {GRAMMAR}; the row form "
                             f"takes {', '.join(ROW_FORM_ITEMS)}")
    group = parser.add_argument_group("--form attention: fn(q, k, v, **params)")
    group.add_argument("--layout", default=None, metavar="AXES",
                       help="axes of q, k, v from b, h, n, d (d last): bhnd (default), bnhd, nd, nhd, ...; g "
                            "right after h splits q's heads by kv head, (n, Hkv, G, d) for nhgd (k, v without g)")
    group.add_argument("--out-layout", default=None, metavar="AXES",
                       help="axes of out (default: --layout); the head axes merged with d at the end for an "
                            "(B, n, H*d) out: bn(hd), n(hgd)")
    group.add_argument("--lse-layout", default=None, metavar="AXES",
                       help="axes of a returned lse, e.g. bhn beside an out of bnhd (default: out's without d)")
    group.add_argument("--scale", type=float, default=None,
                       help="the softmax scale (default 1/sqrt(d)); passed when the function takes a scale keyword")
    group.add_argument("--causal", nargs="?", const=True, default=False, choices=("top-left", "bottom-right"),
                       metavar="ALIGN",
                       help="the attention is causal (passed as causal=True when the function takes the flag, else "
                            "stated); ALIGN says where the queries sit when M != N: top-left (query i at position i) "
                            "or bottom-right (at N - M + i, FlashAttention's since 2.1)")
    group.add_argument("--start-q", default=None, metavar="N|end",
                       help="the position of the first query (causal, window): a number or end (N - M); "
                            "default: varied when the function takes start_q, else 0")
    group.add_argument("--window", default=None, metavar="W|L,R",
                       help="a sliding window the kernel assumes: W keys (key j visible to the query at position p "
                            "when j > p - W) or LEFT,RIGHT (p - LEFT <= j <= p + RIGHT, -1 for no bound)")
    group.add_argument("--mask", default="additive", choices=("additive", "keep", "drop", "mask-mod", "block-mask"),
                       help="how the function takes its mask: an additive bias (default; --mask-value on masked keys), "
                            "a boolean mask of the keys kept (keep) or dropped (drop), a FlexAttention mask_mod or "
                            "block mask")
    group.add_argument("--gqa", action="store_true",
                       help="k and v may have fewer heads than q (groups of 2, 4, 8 query heads per kv head; query "
                            "head h reads kv head h // (H / Hkv))")
    group.add_argument("--mask-value", default=None, metavar="VALUE",
                       help="the additive mask value of a masked key: -inf (default), finfo-min or a number "
                            "such as -1e6")
    group.add_argument("--backward", action="store_true",
                       help="also check dq, dk, dv and the sinks' gradient by torch autograd (torch functions)")
    group.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="fixed",
                       help="a keyword passed with the same value on every call, for a parameter of no role (a "
                            "dropout of 0.0, a training flag): VALUE a number, true, false, none, a word, or "
                            "@dtype for the call's dtype (torch.float32 in a torch call)")
    group.add_argument("--device", default=None, choices=DEVICES,
                       help="the torch device of the kernel's inputs (default cpu); the exact reference is computed "
                            "on the CPU either way")
    group.add_argument("--tensor", action="append", default=[], metavar="NAME",
                       help="pass the keyword NAME (a role's, e.g. start_q, or --set's) as a 0-d tensor of the "
                            "call's API, int32 for a whole number (repeatable)")
    group.add_argument("--kw", action="append", default=[], metavar="ROLE=NAME",
                       help="the keyword the function takes for a role (scale, causal, mask, sinks, start_q, window, "
                            "block), when its name is not one derive knows")
    parser.add_argument("--no-param-grad", action="store_true",
                        help="--form backward: do not require the gradient of the normalizer's parameters (a sink's "
                             "ds); by default a backward that returns none disagrees")
    parser.add_argument("--format", choices=("md", "json"), default="md", help="report format")
    parser.add_argument("--output", metavar="FILE", default=None,
                        help="write the report to FILE (atomically, after every child process has ended) instead of "
                             "standard output")
    parser.add_argument("--triton-interpret", action="store_true",
                        help="run Triton kernels under Triton's CPU interpreter (TRITON_INTERPRET=1 in the child "
                             "process); automatic, with a note, when TARGET imports triton and there is no CUDA device")


def write_report(path: str, text: str) -> None:
    """``text`` to ``path`` through a new file in the same directory, renamed over it: a reader
    sees the old report or the whole new one. Called after the check, when the child processes
    (and their sessions) have been ended."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"--output {path}: is a directory")
    if not target.parent.is_dir():
        raise InputError(f"--output {path}: no directory {target.parent}")
    fd, tmp = tempfile.mkstemp(prefix=".derive-report-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise InputError(f"--output {path}: cannot write it ({exc.strerror})") from None


def _params(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise InputError(f"--param expects NAME=VALUE, got {pair!r}")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise InputError(f"--param {name}: expected a number, got {value!r}") from None
    return out


def _attention(args) -> dict | None:
    given = {"layout": args.layout, "out_layout": args.out_layout, "scale": args.scale,
             "causal": args.causal or None, "start_q": args.start_q, "window": args.window,
             "mask_value": args.mask_value, "backward": args.backward or None, "kw_names": args.kw or None,
             "mask": None if args.mask == "additive" else args.mask, "gqa": args.gqa or None,
             "lse_layout": args.lse_layout, "fixed": args.fixed or None, "tensors": args.tensor or None,
             "device": args.device}
    if args.form != "attention":
        return {k: v for k, v in given.items() if v is not None} or None
    start = args.start_q
    if start is not None and start != "end":
        try:
            start = int(start)
        except ValueError:
            raise InputError(f"--start-q expects a whole number or end, got {start!r}") from None
    if args.window is not None:
        try:
            parse_window(args.window)
        except ValueError as exc:
            raise InputError(f"--window {args.window}: {exc}") from None
    if args.scale is not None and not (args.scale == args.scale and abs(args.scale) != float("inf")
                                       and args.scale != 0):
        raise InputError(f"--scale expects a finite nonzero number, got {args.scale!r}")
    return {"layout": args.layout or "bhnd", "out_layout": args.out_layout, "scale": args.scale,
            "causal": args.causal, "start_q": start, "window": args.window or 0,
            "mask_value": args.mask_value or "-inf", "backward": args.backward, "kw_names": parse_kw(args.kw),
            "mask": args.mask, "gqa": args.gqa, "lse_layout": args.lse_layout, "fixed": parse_fixed(args.fixed),
            "tensors": tuple(args.tensor), "device": args.device or "cpu"}


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its ended child processes."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run(args: argparse.Namespace) -> int:
    if args.output and not Path(args.output).parent.is_dir():  # before any user code runs
        raise InputError(f"--output {args.output}: no directory {Path(args.output).parent}")
    wall, cpu = time.perf_counter(), _cpu()
    report = check_implementation(args.target, args.normalizer, params=_params(args.param),
                                  dim=args.dim, dtypes=list(dict.fromkeys(args.dtype or DEFAULT_DTYPES)),
                                  examples=args.examples,
                                  timeout=args.timeout, form=args.form, lse=args.lse,
                                  env=child_env(args.triton_interpret, args.target), per_head=args.per_head,
                                  assume=args.assume, attention=_attention(args),
                                  param_grad=not args.no_param_grad)
    text = report.to_json() if args.format == "json" else report.to_markdown()
    if args.output:
        write_report(args.output, text)
    else:
        sys.stdout.write(text)
    # the time goes to standard error: the report itself is deterministic, the same bytes on every run
    sys.stderr.write(f"derive impl: checked in {time.perf_counter() - wall:.1f} s ({_cpu() - cpu:.1f} s of CPU, this "
                     f"process and its child)\n")
    return report.exit_code()
