"""The fixed list of calls, class by class (:data:`derive.impl.cases.attention.CLASSES`).

Every case adds one feature to the simplest call, simplest first within its class, so the first
failing case of a class is its smallest counterexample. Together they reach key lengths of 1024,
1025, 2048 and 4096 (1025 and 300 no multiple of any tile), tiles of 1 to 256 keys and 2 to 64
splits where the kernel takes them, kv-head groups of 2, 4 and 8 (with ``--gqa``), batch and head
layouts, head dimensions 8 to 128, late queries past two query tiles, decode offsets with M ≠ N
under the stated causal alignment, windows as an int or a (left, right) pair, padding that masks
whole tiles before the visible keys, a prefix-LM and a document mask (the model's own), and the
kernel forms' rows of 64, 200 and 1024 keys realised exactly. Where a causal kernel has no
``start_q`` and aligns its queries top-left, a long row is seen only by late queries: those calls
have as many queries as keys and judge the first 8 queries, every 256th and the last 8 (``Case.sample``).

Each case is fitted to the contract (:func:`fit`): head dimensions raised to its minimum and
multiple, key lengths to its multiple; a case the contract rules out otherwise (a sink, a tile
size, equal lengths, queries past the keys) is left out, and a class left empty is named with
the reason in ``setup.skipped``.
"""

from __future__ import annotations

import math
from dataclasses import replace

from derive.impl.cases.attention import CLASSES, EXTREME_SINKS, ORDINARY_SINKS, VERY_LONG, Case, Setup

__all__ = ["VERY_LONG_N", "cases", "fit"]

INF = math.inf
VERY_LONG_N = (1024, 1025, 2048, 4096)
SAMPLE = 256  # a top-left causal call of 2048 keys or more: the first 8 queries, every 256th and the last 8 judged


def rows_realised(N: int, M: int, masked: bool) -> list[tuple]:
    """The M rows of N scores a case of pattern ``rows`` realises: the kernel forms' rows of N keys
    (:func:`derive.impl.cases.kernel.rows_of`), every one when ``masked`` (their −∞ keys masked), else
    those without a masked key, in turn."""
    from derive.impl.cases.kernel import rows_of

    rows = list(rows_of(N))
    if not masked:
        rows = [r for r in rows if all(math.isfinite(x) for x in r)]
    return [rows[i % len(rows)] for i in range(M)]


def _sinks_for(setup: Setup, H: int, values=ORDINARY_SINKS):
    if setup.extra is None:
        return None
    if setup.extra != "sinks":
        return (float(setup.extra),) * H
    lo, hi = setup.contract.sinks or (-INF, INF)
    return tuple(min(max(values[h % len(values)], lo), hi) for h in range(H))


def _start(setup: Setup, M: int, N: int) -> int:
    if setup.start_q == "end":
        return N - M
    return setup.start_q if isinstance(setup.start_q, int) else 0


def _up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple if multiple > 1 else value


def fit(case: Case, setup: Setup) -> Case | None:
    """``case`` inside the contract: its head dimensions and key length raised to what the contract
    asks (the start of a bottom-right call follows), or None when the contract rules it out."""
    c = setup.contract
    D, Dv, N = case.D, case.Dv, case.N
    if c.min_head_dim or c.head_dim_multiple > 1:
        D, Dv = (_up(max(x, c.min_head_dim), c.head_dim_multiple) for x in (D, Dv))
    if c.equal_head_dims:
        Dv = D
    step = case.block if c.keys_multiple == "block" else (c.keys_multiple or 1)
    N = _up(max(N, c.min_keys), step or 1) if N else N
    M = N if case.M == case.N else case.M  # a square call stays square
    if c.equal_lengths and M != N:
        return None
    if case.pattern in ("realised", "rows"):
        D = max(D, M)  # a one-hot query per row
    start = case.start_q
    if setup.start_q == "end" or (case.start_q and case.start_q == case.N - case.M):
        start = N - M
    out = replace(case, D=D, Dv=Dv, N=N, M=M, start_q=start)
    if out.sinks is not None and setup.extra == "sinks" and not all(c.sink_ok(s) for s in out.sinks):
        return None
    if (out.block and not c.block_ok(out.block)) or (out.splits and not c.splits_ok(out.splits)):
        return None
    if (c.queries_le_keys and out.M > out.N) or out.start_q < 0:
        return None
    if c.no_fully_masked and out.mask == "rows":
        return None
    if out.pattern == "rows":
        out = replace(out, rows=tuple(rows_realised(out.N, out.M, out.mask == "given")))
    return out


def _long(setup: Setup, N: int, M: int = 4, **kw) -> dict:
    """A long call of N keys (and ``kw``): a few queries at the end of the keys, or, for a causal kernel
    that aligns top-left and takes no start_q (its late queries alone see the long row), as many as
    keys (the first 8, every SAMPLE-th and the last 8 judged past VERY_LONG keys; with --backward, whose gradients
    of k and v need every query, at most VERY_LONG keys)."""
    if setup.causal and setup.start_q is None and "start_q" not in setup.takes or setup.contract.equal_lengths:
        if setup.backward:
            N = min(N, VERY_LONG)
        return dict(kw, N=N, M=N, sample=SAMPLE if N > VERY_LONG else 0)
    if setup.start_q is None and "start_q" in setup.takes and setup.causal:
        return dict(kw, N=N, M=M, start_q=N - M)
    return dict(kw, N=N, M=M)


def cases(setup: Setup) -> list[Case]:
    """The fixed list, class by class (classes the kernel or the contract rules out are named in
    ``setup.skipped``)."""
    base = dict(causal=setup.causal, window=setup.window)
    takes = setup.takes
    out: list[Case] = []
    mask = "mask" in takes

    def add(cls, **kw):
        kw = {**base, **kw}
        if "D" in kw:
            kw.setdefault("Dv", kw["D"])
        M, N = kw.get("M", 2), kw.get("N", 2)
        kw.setdefault("start_q", _start(setup, M, N))
        kw.setdefault("sinks", _sinks_for(setup, kw.get("H", 1)))
        case = fit(Case(cls, **kw), setup)
        if case is not None and case not in out:
            out.append(case)

    def skip(cls, why):
        setup.skipped.setdefault(cls, why)

    for n in (1, 2, 3, 8):
        add("finite", M=n, N=n)
    add("scores", M=8, N=8, pattern="realised")
    if "causal" in takes and setup.causal:
        add("scores", M=8, N=8, pattern="realised", causal=False)
    for n in (64, 200):  # the kernel forms' rows (their masked keys masked where the kernel takes a mask)
        if not setup.causal or "start_q" in takes or setup.start_q == "end":
            add("scores", M=16, N=n, D=64, pattern="rows", mask="given" if mask else "",
                **({"start_q": n - 16} if setup.causal else {}))
    if setup.causal_by in ("flag", "mask"):
        for M, N in ((2, 2), (8, 8), (3, 9), (9, 3)):  # M ≠ N: the alignment matters
            add("causal", M=M, N=N, causal=True)
    elif setup.causal:
        for M, N in ((2, 2), (8, 8), (3, 9), (9, 3)):
            add("causal", M=M, N=N)
    else:
        skip("causal", "the kernel takes no causal flag nor a mask, and --causal was not given")
    if mask:
        for n in (3, 8, 40):
            add("masked", M=min(n, 8), N=n, mask="keys")
        if not setup.causal:
            add("masked", M=12, N=12, mask="prefix", pad=4)
        add("masked", M=12, N=12, mask="document", pad=5)
        for n in (1, 5, 40):
            add("fully-masked", M=min(n, 8) if n > 1 else 2, N=n, mask="rows")
    else:
        for cls in ("masked", "padding", "fully-masked"):
            skip(cls, "the kernel takes no mask")
    if setup.extra == "sinks":
        c = setup.contract
        values = [s for s in EXTREME_SINKS if c.sink_ok(s)]
        if c.sinks is not None:
            values += [s for s in c.sinks if s not in values]
        for s in values:
            add("sinks", M=5, N=5, sinks=(s,))
        # scores of ±1e4 with no sink to lift the running maximum (e^x underflows unshifted); after the sinks'
        # own cases, so that a fault of the sinks alone has its own smallest counterexample
        add("scores", M=8, N=8, pattern="realised", sinks=_sinks_for(setup, 1, (-INF,)))
        if mask:  # every key of a row masked and no sink: no value (0/0)
            add("fully-masked", M=8, N=40, mask="rows", sinks=_sinks_for(setup, 1, (-INF,)))
    else:
        skip("sinks", "the normalizer has no sink")
    for n in (64, 160, 300):  # causal rows are long for late queries: every query, from position 0 (300: a third tile of 128)
        add("long", M=4 if not (setup.causal or setup.window) else n, N=n, pattern="ramp")
    for n, pattern, D in zip(VERY_LONG_N, ("dense", "ramp", "dense", "ramp"), (64, 64, 128, 64)):
        add("very-long", **_long(setup, n, D=D, pattern=pattern))
    # small scores (|x| about 1): a long row whose bound can fail in bfloat16 too (κ well under 15)
    add("very-long", **_long(setup, 1025, D=64, pattern="drawn", amp=1.0, seed=11))
    if "block" in takes:
        for b in (1, 2, 4, 16, 32):
            add("tiles", M=8, N=64, block=b)
        for b in (16, 64, 128, 256):  # past the 4th tile of 128 keys; tiles of 256; a partial last tile
            add("tiles", **_long(setup, 1025, block=b, D=64))
        add("tiles", **_long(setup, 4096, block=256, D=64, pattern="ramp"))
        if not any(x.cls == "tiles" for x in out):
            skip("tiles", "no tile size of 1 to 256 keys lies inside the contract")
    else:
        skip("tiles", "the kernel takes no tile size")
    if "splits" in takes:
        for s in (2, 3, 8, 64):  # 64 splits of 64 keys: one key each
            add("splits", M=8, N=64, splits=s)
        add("splits", M=5, N=5, splits=8)  # more splits than keys: empty splits
        for s in (3, 8, 64):
            add("splits", **_long(setup, 1025, splits=s, D=64))
        if not any(x.cls == "splits" for x in out):
            skip("splits", "no split count of 2 to 64 lies inside the contract")
    else:
        skip("splits", "the kernel takes no split count")
    add("late", M=24, N=24)
    add("late", M=300, N=8)  # past two query tiles of 128: a kernel's later query tiles
    if "start_q" in takes and setup.start_q is None:
        for M, N in ((1, 5), (1, 17), (3, 17), (4, 1025)):
            add("decode", M=M, N=N, start_q=N - M, causal=setup.causal or "causal" in takes)
    elif setup.start_q not in (None, 0):
        add("decode", M=1, N=17)
    else:
        skip("decode", "the kernel takes no start_q and --start-q was not given")
    add("lengths", M=3, N=9)
    add("lengths", M=9, N=3, start_q=_start(setup, 9, 3) if setup.start_q == "end" else 0)
    _windows(setup, add, skip)
    if setup.gqa and setup.has_heads:
        for kv in (4, 2, 1):  # groups of 2, 4 and 8 (1 kv head: multi-query)
            add("gqa", H=8, Hkv=kv, M=5, N=7, sinks=_sinks_for(setup, 8))
        add("gqa", B=2 if setup.has_batch else 1, H=4, Hkv=2, M=5, N=9, mask="keys" if mask else "",
            sinks=_sinks_for(setup, 4))
        add("gqa", **_long(setup, 1025, H=8, Hkv=2, D=64, sinks=_sinks_for(setup, 8)))
    elif setup.has_heads:
        skip("gqa", "k and v get as many heads as q (--gqa not given)")
    else:
        skip("gqa", "the layout has no head axis")
    if setup.has_batch or setup.has_heads:
        B, H = (2 if setup.has_batch else 1), (3 if setup.has_heads else 1)
        add("layout", B=B, H=H, M=5, N=5)
        add("layout", B=B, H=H, M=5, N=5, mask="keys" if mask else "")
    else:
        skip("layout", "the layout has no batch or head axis")
    if mask:  # after the layouts: B = 2, so a kernel wrong on batch 1 has its own smallest case first
        B = 2 if setup.has_batch else 1
        for n, pad in ((200, 64), (300, 128)):  # whole tiles of 64 (and 128) before the visible keys
            add("padding", B=B, M=8, N=n, mask="padding", pad=pad)
        # and with no sink to seed the running maximum: a masked tile leaves it at −∞ (the −∞ guard)
        add("padding", B=B, M=8, N=200, mask="padding", pad=64, sinks=_sinks_for(setup, 1, (-INF,)))
        add("padding", **_long(setup, 1025, B=B, mask="padding", pad=256))
    add("headdim", M=5, N=5, Dv=8)
    add("headdim", M=5, N=5, Dv=32)
    add("headdim", M=5, N=5, D=64, Dv=64)
    add("headdim", M=5, N=9, D=128, Dv=128)
    for cls in CLASSES:
        if cls not in setup.skipped and not any(x.cls == cls for x in out):
            setup.skipped[cls] = "every case of this class lies outside the contract"
    return out


def _windows(setup: Setup, add, skip) -> None:
    """The window class: a window of W keys (int), or (left, right) pairs with a side unbounded,
    both bounded, M ≠ N; across tile boundaries (late queries see fully masked tiles, then a partly
    masked one)."""
    if setup.window:
        add("window", M=8, N=8)
        return
    if setup.window_by is None:
        skip("window", "the kernel takes no sliding window nor a mask, and --window was not given")
        return
    causal = setup.causal or setup.causal_by is not None
    for w in (1, 3):
        add("window", M=8, N=8, window=(w - 1, -1), causal=causal)
    add("window", M=160, N=160, window=(99, -1), causal=causal)
    if setup.window_form == "pair" or setup.window_by == "mask":
        for pair in ((0, 0), (2, 1), (-1, 2), (3, -1)):
            add("window", M=8, N=8, window=pair, causal=setup.causal)
        add("window", M=5, N=12, window=(3, 1), causal=setup.causal)
