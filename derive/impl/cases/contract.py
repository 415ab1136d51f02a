"""Contracts: what a kernel accepts, stated by its author, so that derive tests inside it.

A real kernel is never called on every input derive can build: its sinks are finite (and
bounded), a masked key reaches it as a large finite negative number rather than −∞, its tile
sizes are powers of two or multiples of 16, it is written for some dtypes. An input outside
that contract is not a fault of the kernel, and a check that fails there hides every real
result. ``--assume ITEM`` (repeatable) states the contract; derive then builds only inputs
inside it and prints, with the results, what it assumed.

The items (one per ``--assume``) are :data:`ITEMS`; ``block`` is ``pow2``, ``mult16`` or a
list of sizes ``N,N,...``. Anything else is an input error (exit 2) naming the item and the grammar.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from derive.errors import InputError
from derive.floats import FORMATS

__all__ = ["GRAMMAR", "ITEMS", "ROW_FORM_ITEMS", "Contract", "parse_contract", "row_form_contract"]

ITEMS: dict[str, str] = {  # the grammar: item → what it states (the documents' table)
    "finite-sinks=LO:HI": "every sink logit is finite and in [LO, HI]",
    "finite-scores": "no score is −∞: a masked key is passed as a finite value (the kernel forms: the dtype's "
                     "finfo.min; the attention form: --mask-value, finfo-min unless given)",
    "block=pow2|mult16|N,N,...": "tile sizes are powers of two, multiples of 16, or among the listed ones",
    "splits=LO:HI": "the split count is in [LO, HI]",
    "min-keys=N": "every row has at least N keys",
    "no-fully-masked": "no row has every key masked (such rows are not judged)",
    "dtypes=D,D,...": "the kernel accepts only these dtypes (the others of --dtype are left out, with a note)",
    "equal-lengths": "(attention form) as many keys as queries",
    "equal-head-dims": "(attention form) the value head dimension is the key's",
    "min-head-dim=N": "(attention form) the head dimensions d and dv are at least N (a smaller one is raised to N)",
    "head-dim-multiple=N": "(attention form) the head dimensions are multiples of N (raised to the next one)",
    "keys-multiple=N|block": "(attention form) every key length is a multiple of N, or of the tile size passed "
                             "(raised to the next one)",
    "queries-le-keys": "(attention form) no more queries than keys",
    "half-accumulation": "(attention form) in float16 and bfloat16 the kernel sums in that precision (by default "
                         "it is judged as summing in float32, as fused kernels and PyTorch's attention do)",
}
GRAMMAR = ", ".join(ITEMS)
# the items that apply to the row form (fn(x) → weights: no tiles, splits, queries or head dimensions)
ROW_FORM_ITEMS = ("finite-sinks", "finite-scores", "min-keys", "no-fully-masked", "dtypes")
INF = math.inf
FLAGS = {"finite-scores": "finite_scores", "no-fully-masked": "no_fully_masked", "equal-lengths": "equal_lengths",
         "equal-head-dims": "equal_head_dims", "queries-le-keys": "queries_le_keys",
         "half-accumulation": "half_accumulation"}


@dataclass(frozen=True)
class Contract:
    sinks: tuple | None = None  # (lo, hi): finite sinks in [lo, hi]
    finite_scores: bool = False
    block: str | tuple | None = None  # "pow2" | "mult16" | (sizes)
    splits: tuple | None = None
    min_keys: int = 0
    no_fully_masked: bool = False
    dtypes: tuple | None = None
    equal_lengths: bool = False
    equal_head_dims: bool = False
    min_head_dim: int = 0
    head_dim_multiple: int = 1
    keys_multiple: int | str = 0  # 0: any; N; or "block" (a multiple of the tile size passed)
    queries_le_keys: bool = False
    half_accumulation: bool = False
    items: tuple = field(default=())  # the items as given, in order

    @property
    def empty(self) -> bool:
        return not self.items

    # --- what lies inside -----------------------------------------------------------------

    def sink_ok(self, value: float) -> bool:
        if self.sinks is None:
            return True
        return math.isfinite(value) and self.sinks[0] <= value <= self.sinks[1]

    def sink_values(self, values) -> tuple:
        """The sink values of a fixed list inside the contract, and the contract's bounds."""
        if self.sinks is None:
            return tuple(values)
        inside = [v for v in values if self.sink_ok(v)]
        return tuple(inside + [b for b in self.sinks if b not in inside])

    def block_ok(self, block: int) -> bool:
        if self.block is None:
            return True
        if self.block == "pow2":
            return block >= 1 and block & (block - 1) == 0
        if self.block == "mult16":
            return block >= 16 and block % 16 == 0
        return block in self.block

    def splits_ok(self, splits: int) -> bool:
        return self.splits is None or self.splits[0] <= splits <= self.splits[1]

    def dtype_ok(self, dtype: str) -> bool:
        return self.dtypes is None or dtype in self.dtypes

    def masked_as(self, dtype: str, mask_value: float | None = None) -> float:
        """The value a masked key is passed as: −∞, or under ``finite-scores`` the mask value
        (by default the most negative finite number of the dtype)."""
        if not self.finite_scores:
            return -INF
        if mask_value is not None and math.isfinite(mask_value):
            return float(mask_value)
        return FINFO_MIN[dtype]

    # --- what the report says -------------------------------------------------------------

    def describe(self) -> list[str]:
        out = []
        if self.sinks is not None:
            out.append(f"sinks are finite and in [{_g(self.sinks[0])}, {_g(self.sinks[1])}]")
        if self.finite_scores:
            out.append("no score is −∞: a masked key is passed as a finite mask value")
        if self.block == "pow2":
            out.append("tile sizes are powers of two")
        elif self.block == "mult16":
            out.append("tile sizes are multiples of 16")
        elif self.block is not None:
            out.append("tile sizes are among " + ", ".join(str(b) for b in self.block))
        if self.splits is not None:
            out.append(f"split counts are in [{self.splits[0]}, {self.splits[1]}]")
        if self.min_keys:
            out.append(f"every row has at least {self.min_keys} key{'s' if self.min_keys != 1 else ''}")
        if self.no_fully_masked:
            out.append("no row has every key masked")
        if self.dtypes is not None:
            out.append("the dtypes are " + ", ".join(self.dtypes))
        if self.equal_lengths:
            out.append("as many keys as queries")
        if self.equal_head_dims:
            out.append("the value head dimension equals the key head dimension")
        if self.min_head_dim:
            out.append(f"head dimensions are at least {self.min_head_dim}")
        if self.head_dim_multiple > 1:
            out.append(f"head dimensions are multiples of {self.head_dim_multiple}")
        if self.keys_multiple:
            out.append("key lengths are multiples of " + ("the tile size" if self.keys_multiple == "block"
                                                          else str(self.keys_multiple)))
        if self.queries_le_keys:
            out.append("no more queries than keys")
        if self.half_accumulation:
            out.append("in float16 and bfloat16 the kernel sums in that precision")
        return out

    def as_json(self) -> dict:
        return {"items": list(self.items), "assumed": self.describe()}


FINFO_MIN = {name: -f.max for name, f in FORMATS.items()}  # the most negative number of each dtype


def _g(v: float) -> str:
    return format(v, "g")


def _bad(item: str, why: str) -> InputError:
    return InputError(f"--assume {item!r}: {why}; expected one of {GRAMMAR}")


def _number(item: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _bad(item, f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise _bad(item, f"{text!r} is not a finite number")
    return value


def _range(item: str, text: str, integer: bool = False) -> tuple:
    lo, sep, hi = text.partition(":")
    if not sep:
        raise _bad(item, f"expected a range LO:HI, got {text!r}")
    if integer:
        try:
            a, b = int(lo), int(hi)
        except ValueError:
            raise _bad(item, f"expected whole numbers LO:HI, got {text!r}") from None
        if a < 1:
            raise _bad(item, f"a split count is at least 1, got {a}")
    else:
        a, b = _number(item, lo), _number(item, hi)
    if a > b:
        raise _bad(item, f"the range {text} is empty (LO > HI)")
    return (a, b)


def row_form_contract(contract: Contract, params: tuple) -> Contract:
    """``contract`` for ``--form row``: an item about tiles, splits, queries or head dimensions is an
    input error, and so is ``finite-sinks`` for a normalizer without a parameter."""
    for item in contract.items:
        name = item.partition("=")[0]
        if name not in ROW_FORM_ITEMS:
            raise InputError(f"--assume {item!r} applies to a kernel form (--form attention, online, split or "
                             f"backward), not row; the row form takes {', '.join(ROW_FORM_ITEMS)}")
        if name == "finite-sinks" and not params:
            raise InputError(f"--assume {item!r}: the normalizer has no parameter (no sink) to bound")
    return contract


def parse_contract(items, known_dtypes=()) -> Contract:
    """The contract of ``--assume`` items (a list of strings); bad syntax → InputError."""
    kw: dict = {}
    seen: set = set()
    for raw in items or ():
        if not isinstance(raw, str):
            raise InputError(f"--assume expects strings, got {raw!r}")
        item = raw.strip()
        name, sep, value = item.partition("=")
        if name in seen:
            raise _bad(item, f"{name} is stated twice")
        seen.add(name)
        if name in FLAGS:
            if sep:
                raise _bad(item, f"{name} takes no value")
            kw[FLAGS[name]] = True
            continue
        if not sep or not value:
            raise _bad(item, f"unknown item {item!r}" if name not in
                       ("finite-sinks", "block", "splits", "min-keys", "dtypes", "min-head-dim", "head-dim-multiple",
                        "keys-multiple") else f"{name} needs a value")
        if name == "finite-sinks":
            kw["sinks"] = _range(item, value)
        elif name == "block":
            if value in ("pow2", "mult16"):
                kw["block"] = value
            else:
                try:
                    sizes = tuple(sorted({int(b) for b in value.split(",")}))
                except ValueError:
                    raise _bad(item, f"block is pow2, mult16 or a list of whole numbers, got {value!r}") from None
                if not sizes or sizes[0] < 1:
                    raise _bad(item, "a tile size is at least 1")
                kw["block"] = sizes
        elif name == "splits":
            kw["splits"] = _range(item, value, integer=True)
        elif name == "min-keys":
            try:
                kw["min_keys"] = int(value)
            except ValueError:
                raise _bad(item, f"min-keys is a whole number, got {value!r}") from None
            if kw["min_keys"] < 0:
                raise _bad(item, "min-keys is at least 0")
        elif name in ("min-head-dim", "head-dim-multiple", "keys-multiple"):
            if name == "keys-multiple" and value == "block":
                kw["keys_multiple"] = "block"
                continue
            try:
                number = int(value)
            except ValueError:
                raise _bad(item, f"{name} is a whole number{' or block' if name == 'keys-multiple' else ''}, "
                                 f"got {value!r}") from None
            if number < 1:
                raise _bad(item, f"{name} is at least 1")
            kw[name.replace("-", "_")] = number
        elif name == "dtypes":
            names = tuple(d.strip() for d in value.split(","))
            unknown = [d for d in names if known_dtypes and d not in known_dtypes]
            if unknown or not all(names):
                raise _bad(item, f"unknown dtype {unknown[0] if unknown else ''!r} (dtypes: "
                                 f"{', '.join(known_dtypes)})")
            kw["dtypes"] = names
        else:
            raise _bad(item, f"unknown item {name!r}")
    return Contract(**kw, items=tuple(i.strip() for i in items or ()))
