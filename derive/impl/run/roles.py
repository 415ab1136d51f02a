"""The roles of an attention kernel's keywords: which keyword of its signature takes the scale,
the causal flag, the mask, the sinks, the decode offset, the window, the tile size or the split
count; and whether its window keyword takes a (left, right) pair or a number of keys."""

from __future__ import annotations

from derive.errors import InputError

__all__ = ["MODULE", "ROLE_NAMES", "parse_fixed", "parse_kw", "roles_of", "window_form"]

ROLE_NAMES: dict[str, tuple[str, ...]] = {  # role → the keyword names kernels use for it, in order of preference
    "scale": ("scale", "sm_scale", "softmax_scale", "scaling"),
    "causal": ("causal", "is_causal"),
    "mask": ("mask", "attn_mask", "attention_mask", "block_mask", "mask_mod"),
    "sinks": ("sinks", "sink", "s", "S"),
    "start_q": ("start_q", "q_offset", "start_pos"),
    "window": ("window", "sliding_window", "window_size", "bandwidth"),
    "block": ("block", "block_n", "BLOCK_N", "block_size"),
    "splits": ("splits", "num_splits", "n_splits", "num_kv_splits"),
    "gqa": ("enable_gqa",),  # True when k and v have fewer heads than q
}


def parse_kw(pairs) -> dict:
    """``--kw ROLE=NAME`` items → {role: name}."""
    out = {}
    for pair in pairs or ():
        role, sep, name = str(pair).partition("=")
        role, name = role.strip(), name.strip()
        if not sep or not role.isidentifier() or not name.isidentifier():
            raise InputError(f"--kw {pair!r}: expected ROLE=NAME, ROLE one of {', '.join(ROLE_NAMES)} or a parameter "
                             f"of the normalizer, and NAME the keyword the function takes for it (e.g. --kw "
                             f"scale=softmax_scale, --kw c=softcap)")
        if role in out:
            raise InputError(f"--kw {role} is given twice")
        out[role] = name
    return out


_WORDS = {"true": True, "false": False, "none": None}

# A function whose first parameter is ``module`` (a model library's eager attention,
# ``eager_attention_forward(module, query, key, value, attention_mask, scaling, ...)``) reads some of
# the call from its module: derive passes an object with the call's values
# (:meth:`derive.impl.judge.attention.AttentionChecker.kwargs` writes them, once).
MODULE = "module"


DTYPE = "@dtype"  # --set NAME=@dtype: the call's dtype, as the call's API writes a dtype (torch.float32)
DEVICES = ("cpu", "cuda")  # --device: where the torch inputs of a call are made


def parse_fixed(pairs) -> dict:
    """``--set NAME=VALUE`` items → {keyword: value}: VALUE an integer, a decimal number, true, false,
    none (any case), ``@dtype`` (the call's dtype, as a ``torch.dtype`` for a torch call and a numpy
    dtype for numpy: :data:`DTYPE`) or a word (letters, digits, _ . -), passed as a str. Read by this
    grammar alone, never evaluated."""
    out = {}
    for pair in pairs or ():
        name, sep, text = str(pair).partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name.isidentifier() or not text:
            raise InputError(f"--set {pair!r}: expected NAME=VALUE, NAME the keyword and VALUE a number, true, false, "
                             f"none, @dtype or a word (e.g. --set dropout=0.0)")
        if name in out:
            raise InputError(f"--set {name} is given twice")
        if text.lower() in _WORDS:
            out[name] = _WORDS[text.lower()]
            continue
        if text == DTYPE:
            out[name] = DTYPE
            continue
        try:
            out[name] = int(text)
            continue
        except ValueError:
            pass
        try:
            out[name] = float(text)
            continue
        except ValueError:
            pass
        if not all(c.isalnum() or c in "_.-" for c in text):
            raise InputError(f"--set {pair!r}: VALUE is a number, true, false, none, @dtype or a word of letters, "
                             f"digits, _ . and -")
        out[name] = text
    return out


def roles_of(signature, names: dict, target: str, norm_params: tuple = (), fixed=()) -> dict:
    """{role: keyword} for the keywords the function takes; an unknown required one is an error.
    ``norm_params``: the normalizer's parameters, each a role of its own (its keyword is its name, or
    the one --kw names), present only where the function takes it."""
    if signature is None:
        raise InputError(f"{target} has no inspectable signature; wrap it in a one-line function "
                         f"def fn(q, k, v, *, scale, ...): return {target.split(':')[-1]}(...)")
    params = [(n, kind, has_default) for n, kind, has_default, *_ in signature]
    positional = [n for n, kind, _ in params if kind in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
    module = positional[:1] == [MODULE]  # fn(module, q, k, v, ...): the module is derive's
    if module:
        params = [p for p in params if p[0] != MODULE]
        positional = positional[1:]
    if len(positional) < 3 and not any(kind == "VAR_POSITIONAL" for _, kind, _ in params):
        raise InputError(f"{target} takes {len(positional)} positional arguments; --form attention calls "
                         f"fn(q, k, v, **params)")
    keywords = {n: has_default for n, kind, has_default in params
                if kind in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY") and n not in positional[:3]}
    varkw = any(kind == "VAR_KEYWORD" for _, kind, _ in params)  # fn(q, k, v, **params)
    out = {}
    for role in names:
        if role not in ROLE_NAMES and role not in norm_params:
            raise InputError(f"--kw {role}={names[role]}: {role} is neither a role ({', '.join(ROLE_NAMES)}) nor a "
                             f"parameter of the normalizer" + (f" ({', '.join(norm_params)})" if norm_params else ""))
    for p in norm_params:
        name = names.get(p, p)
        if name in keywords or varkw and p in names:
            out[p] = name
        elif p in names:
            raise InputError(f"--kw {p}={name}: {target} takes no keyword {name!r} "
                             f"(its keywords: {', '.join(keywords) or 'none'})")
    for role, choices in ROLE_NAMES.items():
        if role in names:
            if names[role] not in keywords and not varkw:
                raise InputError(f"--kw {role}={names[role]}: {target} takes no keyword {names[role]!r} "
                                 f"(its keywords: {', '.join(keywords) or 'none'})")
            out[role] = names[role]
            continue
        hit = next((n for n in choices if n in keywords), None)
        if hit is None and varkw and role in ("scale", "sinks") and not (module and role == "sinks"):  # **params: what the definition needs, by
            hit = choices[0]  # its first name; the optional features (causal, mask, ...) only by --kw
        if hit is not None:
            out[role] = hit
    for name in fixed:
        if name not in keywords and not varkw:
            raise InputError(f"--set {name}=…: {target} takes no keyword {name!r} (its keywords: "
                             f"{', '.join(keywords) or 'none'})")
        if name in out.values():
            role = next(r for r, n in out.items() if n == name)
            raise InputError(f"--set {name}=…: {name} is the keyword of the role {role}, which derive passes itself")
    if module:
        out["module"] = MODULE
    unknown = [n for n, has_default in keywords.items()
               if not has_default and n not in out.values() and n not in fixed]
    if unknown:
        raise InputError(f"{target} has a required parameter {unknown[0]!r} that is none of the roles derive passes "
                         f"({', '.join(ROLE_NAMES)}): name its role with --kw ROLE={unknown[0]}, give it a value "
                         f"with --set {unknown[0]}=VALUE (@dtype: the call's dtype), or give it a default")
    return out



def window_form(signature, roles: dict, stated: tuple) -> str:
    """How the window keyword takes a window: ``pair`` (left, right) when its default is a pair of
    ints (``window_size=(-1, -1)``) or the window stated with --window is a pair, else ``int`` (a
    number of keys)."""
    name = roles.get("window")
    for n, _, _, *kind in signature or ():
        if n == name and kind and kind[0] == "pair":
            return "pair"
    return "pair" if stated and stated[1] != -1 else "int"
