"""Load and check a variant spec (TOML): keys, names, kinds, normalizer, mask and claims.

Everything a spec can get wrong is found here, before any proof starts, and reported as
one :class:`~derive.errors.InputError` line: ``FILE: key 'score', column 12: …``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from derive.errors import InputError
from derive.spec.parser import ExprError, Node, parse
from derive.spec.positions import key_positions
from derive.spec.translate import (
    BUILTINS,
    KINDS,
    PREDECLARED,
    RESERVED,
    SCALAR,
    VECTOR,
    Binding,
    bindings,
    nearest,
    translate,
)

__all__ = ["CLAIM_ARGS", "MASKS", "NORMALIZERS", "ClaimSpec", "Spec", "load_spec", "parse_spec"]

TOP_KEYS = ("name", "description", "score", "normalizer", "mask", "value", "symbols", "claims")
MASKS = ("none", "causal")
NORMALIZERS = ("softmax", "softmax1", "sink", "sigmoid")
CLAIM_ARGS = {
    "invariant": "name", "depends": "name", "output_invariant": "name", "output_shift": "name",
    "row_constant": "expr", "equivalent": "expr",
    "shift_invariant": None, "can_abstain": None, "weights_sum_to_one": None,
}
MAX_FILE, MAX_ENTRIES, MAX_NAME = 64 * 1024, 64, 40
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CLAIM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*\Z", re.DOTALL)
_NORM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\))?\s*\Z")


@dataclass(frozen=True)
class ClaimSpec:
    name: str
    text: str  # the claim as written
    kind: str  # a key of CLAIM_ARGS
    arg: str | None = None  # the NAME or the EXPR source
    node: Node | None = None  # parsed EXPR


@dataclass(frozen=True)
class Spec:
    file: str
    name: str
    score_src: str
    score: Node
    value_src: str
    value: Node
    normalizer: str
    norm_arg: str | None
    mask: str
    symbols: dict = field(default_factory=dict)
    claims: tuple[ClaimSpec, ...] = ()
    description: str = ""
    # (line, column) of every key in the TOML source, e.g. ("claims", "k") -> (12, 1)
    positions: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def normalizer_text(self) -> str:
        return f"{self.normalizer}({self.norm_arg})" if self.norm_arg else self.normalizer

    def binds(self, rename: dict | None = None) -> dict[str, Binding]:
        return bindings(self.symbols, rename)


def _err(file: str, key: str, msg: str, column: int | None = None) -> InputError:
    where = f", column {column}" if column is not None else ""
    return InputError(f"{file}: key {key!r}{where}: {msg}")


def load_spec(path: str | Path) -> Spec:
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE:
        raise InputError(f"{path}: file too large ({len(raw)} bytes; the limit is {MAX_FILE})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    return parse_spec(text, str(path))


def parse_spec(text: str, file: str = "<spec>") -> Spec:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{file}: malformed TOML: {exc}") from None
    for key in data:
        if key not in TOP_KEYS:
            raise _err(file, key, f"unknown key{nearest(key, TOP_KEYS)} (expected one of {', '.join(TOP_KEYS)})")
    for key in ("name", "score"):
        if key not in data:
            raise InputError(f"{file}: missing required key {key!r}")
    for key in ("name", "description", "score", "normalizer", "mask", "value"):
        if key in data and not isinstance(data[key], str):
            raise _err(file, key, f"expected a string, got {type(data[key]).__name__}")
    for key in ("symbols", "claims"):
        if key in data and not isinstance(data[key], dict):
            raise _err(file, key, "expected a table")
    symbols = _symbols(file, data.get("symbols", {}))
    binds = bindings(symbols)
    score_src, value_src = data["score"], data.get("value", "v")
    score = _expr(file, "score", score_src, binds, SCALAR)
    value = _expr(file, "value", value_src, binds, VECTOR)
    norm, norm_arg = _normalizer(file, data.get("normalizer", "softmax"), binds)
    mask = data.get("mask", "none")
    if mask not in MASKS:
        raise _err(file, "mask", f"unknown mask {mask!r}{nearest(mask, MASKS)} (expected none or causal)")
    claims = _claims(file, data.get("claims", {}), binds)
    return Spec(file=file, name=data["name"], score_src=score_src, score=score, value_src=value_src,
                value=value, normalizer=norm, norm_arg=norm_arg, mask=mask, symbols=symbols,
                claims=claims, description=data.get("description", ""), positions=key_positions(text))


def _symbols(file: str, table: dict) -> dict[str, str]:
    if len(table) > MAX_ENTRIES:
        raise _err(file, "symbols", f"too many symbols (limit {MAX_ENTRIES})")
    out = {}
    for name, kind in table.items():
        key = f"symbols.{name}"
        if not _IDENT.match(name) or len(name) > MAX_NAME:
            raise _err(file, key, "a symbol name must be an identifier of at most 40 characters")
        if name in PREDECLARED:
            raise _err(file, key, f"{name!r} is predeclared ({PREDECLARED[name]}); choose another name")
        if name in BUILTINS or name in RESERVED:
            raise _err(file, key, f"{name!r} is reserved; choose another name")
        if not isinstance(kind, str) or kind not in KINDS:
            shown = kind if isinstance(kind, str) else type(kind).__name__
            hint = nearest(shown, KINDS) if isinstance(kind, str) else ""
            raise _err(file, key, f"unknown kind {shown!r}{hint} (expected one of {', '.join(KINDS)})")
        out[name] = kind
    return out


def _expr(file: str, key: str, src: str, binds: dict, want: str, offset: int = 0) -> Node:
    try:
        node = parse(src)
        _, kind = translate(node, binds)
    except ExprError as exc:
        raise _err(file, key, exc.message, exc.column + offset) from None
    if kind != want:
        raise _err(file, key, f"the expression is a {kind}, but a {want} is needed", 1 + offset)
    return node


def _normalizer(file: str, text: str, binds: dict) -> tuple[str, str | None]:
    from derive.normalizers.registry import REGISTRY

    m = _NORM.match(text)
    known = sorted(set(NORMALIZERS) | set(REGISTRY))
    if not m:
        raise _err(file, "normalizer", f"cannot read {text!r}: expected NAME or sink(NAME)")
    name, arg = m.group(1), m.group(2)
    if name not in known:
        raise _err(file, "normalizer", f"unknown normalizer {name!r}{nearest(name, known)} "
                                       f"(expected one of {', '.join(known)})")
    if name == "sink":
        if arg is None:
            raise _err(file, "normalizer", "sink needs the name of its logit: sink(NAME)")
        b = binds.get(arg)
        if b is None:
            raise _err(file, "normalizer", f"unknown name {arg!r}{nearest(arg, binds)}; "
                                           "declare it in [symbols] as a scalar", text.index(arg) + 1)
        if b.kind != "scalar":
            raise _err(file, "normalizer", f"the sink logit {arg!r} must be a scalar, not a {b.kind}",
                       text.index(arg) + 1)
    elif arg is not None:
        raise _err(file, "normalizer", f"{name} takes no argument")
    return name, arg


def _claims(file: str, table: dict, binds: dict) -> tuple[ClaimSpec, ...]:
    if len(table) > MAX_ENTRIES:
        raise _err(file, "claims", f"too many claims (limit {MAX_ENTRIES})")
    out = []
    for cname, text in table.items():
        key = f"claims.{cname}"
        if not isinstance(text, str):
            raise _err(file, key, f"expected a string, got {type(text).__name__}")
        m = _CLAIM.match(text)
        if not m:
            raise _err(file, key, f"cannot read claim {text!r}: expected KIND or KIND(ARG)", 1)
        kind, inner = m.group(1), m.group(2)
        if kind not in CLAIM_ARGS:
            raise _err(file, key, f"unknown claim {kind!r}{nearest(kind, CLAIM_ARGS)} "
                                  f"(expected one of {', '.join(CLAIM_ARGS)})", m.start(1) + 1)
        want = CLAIM_ARGS[kind]
        col = m.start(2) + 1 if inner is not None else len(text) + 1
        if want is None:
            if inner is not None:
                raise _err(file, key, f"{kind} takes no argument", col)
            out.append(ClaimSpec(cname, text, kind))
        elif inner is None:
            shape = "NAME" if want == "name" else '"EXPR"'
            raise _err(file, key, f"{kind} needs an argument: {kind}({shape})", col)
        elif want == "name":
            out.append(ClaimSpec(cname, text, kind, _claim_name(file, key, kind, inner, col, binds)))
        else:
            src = inner.strip()
            if len(src) < 2 or src[0] not in "\"'" or src[-1] != src[0]:
                raise _err(file, key, f"{kind} needs a quoted expression: {kind}(\"EXPR\")", col)
            start = col + (len(inner) - len(inner.lstrip())) + 1
            node = _expr(file, key, src[1:-1], binds, SCALAR, offset=start - 1)
            out.append(ClaimSpec(cname, text, kind, src[1:-1], node))
    return tuple(out)


def _claim_name(file, key, kind, inner, col, binds) -> str:
    name = inner.strip()
    col += len(inner) - len(inner.lstrip())
    if not _IDENT.match(name):
        raise _err(file, key, f"{kind} needs a name, got {name!r}", col)
    b = binds.get(name)
    if b is None:
        raise _err(file, key, f"unknown name {name!r}{nearest(name, binds)}", col)
    if kind == "output_shift" and b.kind != "vector":
        raise _err(file, key, f"output_shift needs a shared vector (kind \"vector\"); {name!r} is a {b.kind}",
                   col)
    if b.kind in ("position", "dimension", "count"):
        raise _err(file, key, f"{name!r} is the {b.kind} {'index' if b.kind == 'position' else ''}"
                              f" and cannot be varied".replace("  ", " "), col)
    return name
