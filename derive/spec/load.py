"""Load and check a variant spec (TOML): keys, names, kinds, normalizer, mask and claims.

Everything a spec can get wrong is found here, before any proof starts. Every error of a
file is reported, one line each (``FILE: key 'score', column 12: …``), in one
:class:`~derive.errors.InputError`; an error that only follows from another one (a use of
a wrongly declared name) is not repeated.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from derive.errors import InputError
from derive.spec.claim_kinds import CLAIM_ARGS, EXPECTATIONS
from derive.language.parser import ExprError, Node, parse
from derive.spec.positions import key_positions
from derive.language.translate import (
    BROKEN,
    BUILTINS,
    DECLARABLE,
    PREDECLARED,
    SCALAR,
    VECTOR,
    Binding,
    bindings,
    nearest,
    translate,
    unknown_name,
)

__all__ = ["CLAIM_ARGS", "ClaimSpec", "Spec", "load_spec", "load_specs", "parse_spec"]

TOP_KEYS = ("name", "description", "score", "score_mod", "score2", "normalizer", "mask", "mask_mod", "value",
            "symbols", "claims")
NORMALIZER_KEYS = ("name", "weight")  # a user-defined normalizer: [normalizer] name = "…", weight = "…"
MAX_FILE, MAX_ENTRIES, MAX_NAME = 64 * 1024, 64, 40
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CLAIM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*\Z", re.DOTALL)
_NORM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*\Z")


@dataclass(frozen=True)
class ClaimSpec:
    name: str
    text: str  # the claim as written
    kind: str  # a key of CLAIM_ARGS
    arg: str | None = None  # the NAME or the EXPR source
    node: Node | None = None  # parsed EXPR
    expect: str = EXPECTATIONS[0]  # the verdict the claim is expected to get (``expect = "refuted"``)


@dataclass(frozen=True)
class Spec:
    file: str
    name: str
    score_src: str
    score: Node | None  # None when the score is a traced score_mod (see ``flex``)
    value_src: str
    value: Node
    normalizer: str
    norm_args: tuple[str, ...]
    mask: str
    symbols: dict = field(default_factory=dict)
    score2_src: str | None = None  # a second score row, y_j in a user-defined normalizer's weight
    score2: Node | None = None
    claims: tuple[ClaimSpec, ...] = ()
    description: str = ""
    # (line, column) of every key in the TOML source, e.g. ("claims", "k") -> (12, 1)
    positions: dict = field(default_factory=dict, compare=False, repr=False)
    flex: object = field(default=None, compare=False, repr=False)  # derive.flex.spec.Flex: traced modifiers

    @property
    def normalizer_text(self) -> str:
        return f"{self.normalizer}({', '.join(self.norm_args)})" if self.norm_args else self.normalizer

    def norm_params(self) -> dict[str, str]:
        """Registry parameter → the declared name given for it (``{"s": "s0"}``); a
        user-defined normalizer's parameters are the declared scalars its weight uses."""
        roles = normalizer_args(self.normalizer)[0]
        return {param: name for (param, _, _), name in zip(roles, self.norm_args)}

    def binds(self, rename: dict | None = None) -> dict[str, Binding]:
        return bindings(self.symbols, rename)


class _Errors:
    """The errors of one file, in the order found."""

    def __init__(self, file: str):
        self.file, self.lines = file, []

    def add(self, key: str | None, msg: str, column: int | None = None) -> None:
        if key is None:
            self.lines.append(f"{self.file}: {msg}")
        else:
            where = f", column {column}" if column is not None else ""
            self.lines.append(f"{self.file}: key {key!r}{where}: {msg}")

    def raise_any(self) -> None:
        if self.lines:
            raise InputError("\n".join(self.lines))


def load_specs(paths) -> list[Spec]:
    """Every spec of ``paths``; every input error of every file is raised at once (one line
    each), before anything is proved."""
    specs, errors = [], []
    for path in paths:
        try:
            specs.append(load_spec(path))
        except InputError as exc:
            errors.append(str(exc))
    if errors:
        raise InputError("\n".join(errors))
    return specs


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
    errs = _Errors(file)
    for key in data:
        if key not in TOP_KEYS:
            errs.add(key, f"unknown key{nearest(key, TOP_KEYS)} (expected one of {', '.join(TOP_KEYS)})")
    if "name" not in data:
        errs.add(None, "missing required key 'name'")
    for one, other in (("score", "score_mod"), ("mask", "mask_mod")):
        if one in data and other in data:
            errs.add(other, f"give either {one!r} or {other!r}, not both")
            data.pop(other)
    if "score" not in data and "score_mod" not in data:
        errs.add(None, "missing required key 'score' (or 'score_mod')")
    for key in ("score_mod", "mask_mod"):
        why = _flex_ref(data[key]) if key in data else None
        if why:
            errs.add(key, why)
            data.pop(key)
    for key in ("name", "description", "score", "score2", "mask", "value"):
        if key in data and not isinstance(data[key], str):
            errs.add(key, f"expected a string, got {type(data[key]).__name__}")
            data.pop(key)
    for key in ("symbols", "claims"):
        if key in data and not isinstance(data[key], dict):
            errs.add(key, "expected a table")
            data.pop(key)
    symbols, broken = _symbols(errs, data.get("symbols", {}))
    _per_head_names(errs, symbols, {n for n, k in symbols.items() if k.startswith("per_head")})
    binds = bindings({**symbols, **dict.fromkeys(broken, BROKEN)})
    score_src, value_src = data.get("score"), data.get("value", "v")
    score = _expr(errs, "score", score_src, binds, SCALAR) if score_src is not None else None
    value = _expr(errs, "value", value_src, binds, VECTOR)
    score2_src = data.get("score2")
    score2 = _expr(errs, "score2", score2_src, binds, SCALAR) if score2_src is not None else None
    norm_spec = data.get("normalizer", "softmax")
    if isinstance(norm_spec, dict):
        norm, norm_args = _user_normalizer(errs, norm_spec, symbols, score2_src is not None, file)
    elif isinstance(norm_spec, str):
        norm, norm_args = _normalizer(errs, norm_spec, binds)
    else:
        errs.add("normalizer", f"expected a name or a table [normalizer] with weight = \"…\", got "
                               f"{type(norm_spec).__name__}")
        norm, norm_args = "softmax", ()
    mask = _mask(errs, data.get("mask", "none"))
    traced = [key for key in ("score_mod", "mask_mod") if key in data]
    deferred: list | None = [] if traced else None  # names that may be tables the modifiers capture
    claims = _claims(errs, data.get("claims", {}), binds, deferred)
    refs = {}  # claim → a mask_mod to trace (mask_equivalent("mods.py:NAME"))
    for c in claims:  # the other spec of equivalent_to / mask_equivalent, relative to this file
        other = c.arg
        if c.kind == "mask_equivalent" and not other.endswith(".toml") and ":" in other:
            why = _flex_ref(other)
            if why:
                errs.add(f"claims.{c.name}", f"mask_equivalent: {why}")
                continue
            refs[f"claims.{c.name}"] = other
            other = other.rpartition(":")[0]
        if CLAIM_ARGS[c.kind] == "file" and not (Path(file).parent / other).is_file():
            errs.add(f"claims.{c.name}", f"{c.kind}: no file {other} (looked in {Path(file).parent})")
    errs.raise_any()
    flex = None
    if "score_mod" in data or "mask_mod" in data or refs:  # runs the user's code (in a child process)
        from derive.flex.spec import trace_keys, traced_mask

        flex, problems = trace_keys(data, file, refs)
        for key, msg in problems:
            errs.add(key, msg)
        errs.raise_any()
        tables = flex.table_names()
        _per_head_names(errs, symbols, {t for b in (flex.score, flex.mask) if b is not None for t, obj in
                                        b.tables.items() if getattr(obj, "name", getattr(obj, "__name__", t)) != t})
        for key, name, col in deferred or ():
            if name not in tables:
                shown = f" ({', '.join(sorted(tables))})" if tables else ""
                errs.add(key, f"{unknown_name(name, binds)}, or name a tensor the {' or '.join(traced)} "
                              f"indexes{shown}", col)
        errs.raise_any()
        score_src = data.get("score_mod", score_src)
        mask = traced_mask(flex, data["mask_mod"]) if "mask_mod" in data else mask
    _domains(errs, mask, binds, [("score", score), ("value", value)]
             + [(f"claims.{c.name}", c.node) for c in claims if c.node is not None])
    errs.raise_any()
    return Spec(file=file, name=data["name"], score_src=score_src, score=score, value_src=value_src,
                value=value, normalizer=norm, norm_args=norm_args, mask=mask, symbols=symbols,
                score2_src=score2_src, score2=score2,
                claims=claims, description=data.get("description", ""), positions=key_positions(text), flex=flex)


def _per_head_names(errs: _Errors, symbols: dict, per_head: set) -> None:
    """NAME_h is the engine's symbol for the per-head NAME (NAME at head h, declared or a captured
    table indexed by h): a declared NAME_h would be that same symbol, so it is refused."""
    for name in symbols:
        stem = name[:-2]
        if name.endswith("_h") and stem in per_head:
            errs.add(f"symbols.{name}", f"{name!r} is how the per-head {stem} at head h is written "
                                        f"({stem}_h); choose another name")


def _domains(errs: _Errors, mask, binds: dict, nodes: list) -> None:
    """An expression defined in no row (its domain fails at a key every row allows) is bad input."""
    from derive.language.domain import undefined_on_diagonal

    for key, node in nodes:
        if node is None:
            continue
        guards: list = []
        translate(node, binds, guards=guards)
        why = undefined_on_diagonal(guards, mask)
        if why:
            errs.add(key, why)


def _flex_ref(text) -> str | None:
    from derive.flex.spec import validate_ref

    return validate_ref(text)


def _mask(errs: _Errors, text: str) -> str:
    from derive.model.masks import names, parse_mask

    try:
        return parse_mask(text)
    except ValueError as exc:
        msg = str(exc)
        if not any(ch in text for ch in "()"):
            msg = msg.replace(f"unknown mask {text!r}", f"unknown mask {text!r}{nearest(text, names())}")
        errs.add("mask", msg)
        return "none"


def _symbols(errs: _Errors, table: dict) -> tuple[dict[str, str], list[str]]:
    """(name → declared kind, names whose declaration is wrong)."""
    if len(table) > MAX_ENTRIES:
        errs.add("symbols", f"too many symbols (limit {MAX_ENTRIES})")
        return {}, list(table)
    out, broken = {}, []
    for name, kind in table.items():
        key = f"symbols.{name}"
        if not _IDENT.match(name) or len(name) > MAX_NAME:
            errs.add(key, "a symbol name must be an identifier of at most 40 characters")
        elif name in PREDECLARED:
            errs.add(key, f"{name!r} is predeclared ({PREDECLARED[name]}); choose another name")
        elif name in BUILTINS:
            errs.add(key, f"{name!r} is a built-in function; choose another name")
        elif not isinstance(kind, str) or " ".join(kind.split()) not in DECLARABLE:
            shown = kind if isinstance(kind, str) else type(kind).__name__
            hint = _kind_hint(shown) if isinstance(kind, str) else ""
            errs.add(key, f"unknown kind {shown!r}{hint} (expected one of {', '.join(DECLARABLE)})")
            broken.append(name)
        else:
            out[name] = " ".join(kind.split())
    return out, broken


def _name_errors(node, binds: dict):
    """(message, column) for every undeclared name and unknown function of a parsed expression, in
    the order written: translation stops at its first error, these are all reported."""
    from derive.language.parser import Binary, Call, Name, Unary

    if isinstance(node, Name):
        if node.id not in binds and node.id not in BUILTINS:
            yield unknown_name(node.id, binds), node.col
    elif isinstance(node, Unary):
        yield from _name_errors(node.operand, binds)
    elif isinstance(node, Binary):
        yield from _name_errors(node.left, binds)
        yield from _name_errors(node.right, binds)
    elif isinstance(node, Call):
        if node.func not in binds and node.func not in BUILTINS:
            names = set(BUILTINS) | {k for k, v in binds.items() if v.kind == "function"}
            yield f"unknown function {node.func!r}{nearest(node.func, names)}", node.col
        for arg in node.args:
            yield from _name_errors(arg, binds)


def _kind_hint(text: str) -> str:
    """``; did you mean 'scalar positive'?`` for "positive scalar" (the words of a kind in another
    order), else the nearest kind by spelling."""
    words = sorted(text.lower().split())
    for kind in DECLARABLE:
        if sorted(kind.split()) == words:
            return f"; did you mean {kind!r}?"
    return nearest(text, DECLARABLE)


def _expr(errs: _Errors, key: str, src: str, binds: dict, want: str, offset: int = 0) -> Node | None:
    node = None
    try:
        node = parse(src)
        _, kind = translate(node, binds)
    except ExprError as exc:
        shown = set()
        if not exc.quiet:
            errs.add(key, exc.message, exc.column + offset)
            shown.add(exc.column)
        for msg, col in _name_errors(node, binds) if node is not None else ():
            if col not in shown:  # every other mistake of the same expression, at once
                shown.add(col)
                errs.add(key, msg, col + offset)
        return None
    if kind != want:
        errs.add(key, f"the expression is a {kind}, but a {want} is needed", 1 + offset)
        return None
    return node


def _normalizer(errs: _Errors, text: str, binds: dict) -> tuple[str, tuple[str, ...]]:
    from derive.normalizers.registry import REGISTRY

    m = _NORM.match(text)
    known = sorted(REGISTRY)
    if not m:
        errs.add("normalizer", f"cannot read {text!r}: expected NAME or NAME(ARG, ...)")
        return "softmax", ()
    name, inner = m.group(1), m.group(2)
    if name not in known:
        errs.add("normalizer", f"unknown normalizer {name!r}{nearest(name, known)} "
                               f"(expected one of {', '.join(known)})")
        return "softmax", ()
    roles, usage, optional = normalizer_args(name)
    args, cols = [], []
    if inner is not None:
        pos = m.start(2)
        for part in inner.split(","):
            args.append(part.strip())
            cols.append(pos + len(part) - len(part.lstrip()) + 1)
            pos += len(part) + 1
    if not roles and inner is not None:
        errs.add("normalizer", f"{name} takes no argument", m.start(2) + 1)
        return name, ()
    if inner is None and optional:
        return name, ()
    if len(args) != len(roles) or not all(args):
        what = " and ".join(f"{role} (a declared {kind})" for _, role, kind in roles)
        errs.add("normalizer", f"{name} needs {what}: {usage}")
        return name, ()
    ok = True
    for arg, col, (_, role, kind) in zip(args, cols, roles):
        b = binds.get(arg)
        if b is None:
            ok = False
            shown = arg if _IDENT.match(arg) else arg[:20]
            errs.add("normalizer", unknown_name(shown, binds) if _IDENT.match(arg)
                     else f"{role} must be a name, got {shown!r}", col)
        elif b.kind == BROKEN:
            ok = False
        elif b.kind != kind:
            ok = False
            errs.add("normalizer", f"{role} {arg!r} must be a {kind}, not a {b.kind}", col)
    return name, tuple(args) if ok else ()


def _user_normalizer(errs: _Errors, table: dict, symbols: dict, score2: bool, file: str) -> tuple[str, tuple]:
    """A ``[normalizer]`` table: its weight formula, checked, as a registry entry (see
    :func:`derive.normalizers.registry.user_entry`); (its registry name, its parameters)."""
    from derive.normalizers.formula import compile_weight
    from derive.normalizers.registry import user_entry
    from derive.language.translate import SCALAR_ASSUMPTIONS

    ok = True
    for key in table:
        if key not in NORMALIZER_KEYS:
            errs.add(f"normalizer.{key}", f"unknown key{nearest(key, NORMALIZER_KEYS)} (expected one of "
                                          f"{', '.join(NORMALIZER_KEYS)})")
            ok = False
    label = table.get("name", "user-defined")
    if not isinstance(label, str) or not label.strip() or len(label) > MAX_NAME:
        errs.add("normalizer.name", "expected a short name (a string of at most 40 characters)")
        ok, label = False, "user-defined"
    weight = table.get("weight")
    if weight is None:
        errs.add("normalizer", 'missing required key \'weight\' (e.g. weight = "exp(x_j) / sum_t(exp(x_t))")')
        return "softmax", ()
    if not isinstance(weight, str):
        errs.add("normalizer.weight", f"expected a string, got {type(weight).__name__}")
        return "softmax", ()
    scalars = {name: SCALAR_ASSUMPTIONS[kind] for name, kind in symbols.items() if kind in SCALAR_ASSUMPTIONS}
    try:
        f = compile_weight(weight, scalars, score2=score2)
    except ExprError as exc:
        errs.add("normalizer.weight", exc.message, exc.column)
        return "softmax", ()
    if not ok:
        return "softmax", ()
    return user_entry(label.strip(), f), f.params


def normalizer_args(name: str) -> tuple:
    """(roles, usage, optional) of the normalizer ``name`` in a spec, from its registry entry:
    roles are (argument, what it is, kind): the key and value vectors of a token of its own,
    else its parameters as declared scalars (worded by the entry's ``roles``); they may be left
    out unless the entry requires them."""
    from derive.normalizers.registry import get

    entry = get(name)
    if entry.token is not None:
        roles = tuple((arg, what, "vector") for arg, what in (entry.token.key, entry.token.value))
    else:
        roles = tuple((p, entry.roles.get(p, f"the parameter {p}"), "scalar") for p in entry.params)
    optional = entry.token is None and not entry.args_required
    call = f"{name}({'NAME' if len(roles) == 1 else ', '.join(arg.upper() for arg, _, _ in roles)})"
    usage = name if not roles else f"{name} or {call}" if optional else call
    return roles, usage, optional


def _claims(errs: _Errors, table: dict, binds: dict, deferred: list | None = None) -> tuple[ClaimSpec, ...]:
    if len(table) > MAX_ENTRIES:
        errs.add("claims", f"too many claims (limit {MAX_ENTRIES})")
        return ()
    out = []
    for cname, text in table.items():
        claim = _claim(errs, f"claims.{cname}", cname, text, binds, deferred)
        if claim is not None:
            out.append(claim)
    return tuple(out)


def _claim(errs: _Errors, key: str, cname: str, text, binds: dict, deferred: list | None) -> ClaimSpec | None:
    expect = EXPECTATIONS[0]
    if isinstance(text, dict):  # NAME = { claim = "CLAIM", expect = "refuted" }
        for k in text:
            if k not in ("claim", "expect"):
                errs.add(f"{key}.{k}", f"unknown key{nearest(k, ('claim', 'expect'))} (expected claim or expect)")
        expect = text.get("expect", expect)
        if expect not in EXPECTATIONS:
            shown = repr(expect) if isinstance(expect, str) else type(expect).__name__
            hint = nearest(expect, EXPECTATIONS) if isinstance(expect, str) else ""
            errs.add(f"{key}.expect", f"expected one of {', '.join(EXPECTATIONS)}, got {shown}{hint}")
            expect = EXPECTATIONS[0]
        if "claim" not in text:
            errs.add(key, 'missing key \'claim\': write { claim = "CLAIM", expect = "refuted" }')
            return None
        key, text = f"{key}.claim", text["claim"]
    claim = _claim_text(errs, key, cname, text, binds, deferred)
    return claim if claim is None or expect == EXPECTATIONS[0] else replace(claim, expect=expect)


def _claim_text(errs: _Errors, key: str, cname: str, text, binds: dict, deferred: list | None) -> ClaimSpec | None:
    if not isinstance(text, str):
        errs.add(key, f"expected a string or a table {{ claim = ..., expect = ... }}, got {type(text).__name__}")
        return None
    m = _CLAIM.match(text)
    if not m:
        errs.add(key, f"cannot read claim {text!r}: expected KIND or KIND(ARG)", 1)
        return None
    kind, inner = m.group(1), m.group(2)
    if kind not in CLAIM_ARGS:
        errs.add(key, f"unknown claim {kind!r}{nearest(kind, CLAIM_ARGS)} "
                      f"(expected one of {', '.join(CLAIM_ARGS)})", m.start(1) + 1)
        return None
    want = CLAIM_ARGS[kind]
    col = m.start(2) + 1 if inner is not None else len(text) + 1
    if want is None:
        if inner is not None:
            errs.add(key, f"{kind} takes no argument", col)
            return None
        return ClaimSpec(cname, text, kind)
    if inner is None:
        shape = {"name": "NAME", "file": '"OTHER.toml"'}.get(want, '"EXPR"')
        errs.add(key, f"{kind} needs an argument: {kind}({shape})", col)
        return None
    if want == "name":
        name = _claim_name(errs, key, kind, inner, col, binds, deferred)
        return None if name is None else ClaimSpec(cname, text, kind, name)
    src = inner.strip()
    if want == "file":
        if len(src) < 2 or src[0] not in "\"'" or src[-1] != src[0] or not src[1:-1].strip():
            errs.add(key, f"{kind} needs a quoted file name: {kind}(\"OTHER.toml\")", col)
            return None
        return ClaimSpec(cname, text, kind, src[1:-1].strip())
    if len(src) < 2 or src[0] not in "\"'" or src[-1] != src[0]:
        errs.add(key, f"{kind} needs a quoted expression: {kind}(\"EXPR\")", col)
        return None
    start = col + (len(inner) - len(inner.lstrip())) + 1
    node = _expr(errs, key, src[1:-1], binds, SCALAR, offset=start - 1)
    return None if node is None else ClaimSpec(cname, text, kind, src[1:-1], node)


def _claim_name(errs, key, kind, inner, col, binds, deferred=None) -> str | None:
    name = inner.strip()
    col += len(inner) - len(inner.lstrip())
    if not _IDENT.match(name):
        errs.add(key, f"{kind} needs a name, got {name!r}", col)
        return None
    b = binds.get(name)
    if b is None and deferred is not None and kind != "output_shift":
        deferred.append((key, name, col))  # a table a traced modifier captures: checked once traced
        return name
    if b is None:
        errs.add(key, unknown_name(name, binds), col)
        return None
    if b.kind == BROKEN:
        return None
    if kind == "output_shift" and b.kind != "vector":
        errs.add(key, f"output_shift needs a shared vector (kind \"vector\"); {name!r} is a {b.kind}", col)
        return None
    if b.kind in ("position", "dimension", "count", "head"):
        errs.add(key, f"{name!r} is the {b.kind} {'index' if b.kind == 'position' else ''}"
                      f" and cannot be varied".replace("  ", " "), col)
        return None
    return name
