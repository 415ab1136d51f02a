"""The closed forms a row fault's derivation names: what the rewritten formula equals.

Each is a function ``(parts, fields, syms, c) → (expression, label) | None`` that a
:class:`~derive.impl.faults.row.Fault` carries as its ``closed``: the definition at shifted
scores, at a sign-flipped parameter, with its extra logit scaled, or at scaled scores. ``parts``
is the normalizer's parts (its entry and label), ``fields`` the fault's words and stand-ins,
``syms`` the parameters' symbols (or values) and ``c`` the factor's symbolic value. None: no
closed form applies to this variant, and the derivation names a registered normalizer it equals
or the written formula itself.
"""

from __future__ import annotations

import sympy as sp

from derive.model.attention import X, i, j

__all__ = ["SHIFT", "logit", "sign", "shift", "units"]

SHIFT = sp.Symbol("m", real=True)


def _score(k):
    return X[i, k]


def shift(p, fields: dict, syms: dict, c):
    """The definition at the scores less the shift m: name(x − m)."""
    return p.entry.weight(lambda k: X[i, k] - SHIFT, j, **syms), f"{p.label}(x − m)"


def sign(p, fields: dict, syms: dict, c):
    """The definition with the parameter's sign flipped."""
    q = fields["param"]
    return p.entry.weight(_score, j, **{**syms, q: -syms[q]}), f"{p.label}(x) with {q} → −{q}"


def logit(p, fields: dict, syms: dict, c):
    """The definition with its one extra logit (a parameter) multiplied by c."""
    from derive.impl.faults.rewrite import exp_calls
    from derive.language.parser import Name

    if fields.get("where", "sink logit") != "sink logit":
        return None
    logits = [nd.args[0] for nd in exp_calls(p.node, False)]
    if len(logits) == 1 and isinstance(logits[0], Name) and logits[0].id in syms:
        q = logits[0].id
        return p.entry.weight(_score, j, **{**syms, q: syms[q] * c}), f"{p.label}(x) with {q}·{fields['c']}"
    return None


def units(p, fields: dict, syms: dict, c):
    """A factor c on the extra logit (as :func:`logit`), or on every score where each score is an
    exponent itself: the definition at c·x."""
    from derive.impl.faults.rewrite import exp_calls
    from derive.language.parser import Name

    if fields.get("where", "sink logit") == "sink logit":
        return logit(p, fields, syms, c)
    if all(isinstance(nd.args[0], Name) for nd in exp_calls(p.node, True)):
        return p.entry.weight(lambda k: c * X[i, k], j, **syms), f"{p.label}({fields['c']}·x)"
    return None
