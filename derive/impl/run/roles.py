"""The roles of an attention kernel's keywords: which keyword of its signature takes the scale,
the causal flag, the mask, the sinks, the decode offset, the window, the tile size or the split
count; and whether its window keyword takes a (left, right) pair or a number of keys."""

from __future__ import annotations

from derive.errors import InputError

__all__ = ["ROLE_NAMES", "parse_kw", "roles_of", "window_form"]

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


def roles_of(signature, names: dict, target: str, norm_params: tuple = ()) -> dict:
    """{role: keyword} for the keywords the function takes; an unknown required one is an error.
    ``norm_params``: the normalizer's parameters, each a role of its own (its keyword is its name, or
    the one --kw names), present only where the function takes it."""
    if signature is None:
        raise InputError(f"{target} has no inspectable signature; wrap it in a one-line function "
                         f"def fn(q, k, v, *, scale, ...): return {target.split(':')[-1]}(...)")
    params = [(n, kind, has_default) for n, kind, has_default, *_ in signature]
    positional = [n for n, kind, _ in params if kind in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
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
        if hit is None and varkw and role in ("scale", "sinks"):  # **params: what the definition needs, by
            hit = choices[0]  # its first name; the optional features (causal, mask, ...) only by --kw
        if hit is not None:
            out[role] = hit
    unknown = [n for n, has_default in keywords.items() if not has_default and n not in out.values()]
    if unknown:
        raise InputError(f"{target} has a required parameter {unknown[0]!r} that is none of the roles derive passes "
                         f"({', '.join(ROLE_NAMES)}): name its role with --kw ROLE={unknown[0]}, or give it a "
                         f"default")
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
