"""The words of a faulty form: its title, formula, explanation and fix, read off the formulas.

Every field of a fault's text (:data:`derive.impl.faults.row.FAULTS`) comes from the normalizer's
formula and the rewritten one: the extra terms and how they shift, the extra logit, the
overflow-free form, and the registered normalizer the faulty code equals, if any (shown by its
label, e.g. "softmax where softmax₁ was meant").
"""

from __future__ import annotations

from functools import lru_cache

from derive.impl.faults.row import BY_NAME, M_, _stable, faulty_formula, parts, pretty
from derive.impl.faults.rewrite import show

__all__ = ["registered", "texts"]


def registered(form) -> str | None:
    """The label of a registered normalizer with the same weight as the compiled formula ``form``."""
    from derive.model.attention import X
    from derive.model.attention import i as row_i
    from derive.normalizers.registry import REGISTRY

    mine = form.weight(lambda k: X[row_i, k])
    for entry in REGISTRY.values():
        if entry.definition_of is not None and set(entry.params) <= set(form.params):
            try:
                if entry.weight(lambda k: X[row_i, k]) == mine:
                    return entry.label
            except (TypeError, ValueError):
                continue
    return None


@lru_cache(maxsize=512)
def texts(name: str, fault: str, fields: tuple) -> dict[str, str]:
    """The title, formula, explanation and fix of ``fault`` applied to ``name``, in words read off
    the formulas."""
    from derive.normalizers.registry import get

    p = parts(name)
    f, fd = BY_NAME[fault], dict(fields)
    w = p.term_words()
    family = p.logit is not None and bool(p.terms)
    form = faulty_formula(name, get(name).formula, fault, fields)
    written = pretty(show(form.node), fd.get("c")) if form is not None else pretty(show(p.node))
    closed = (registered(form) if form is not None else None) or written
    w.update({
        "closed": closed, "definition": pretty(show(p.node)), "written": pretty(show(p.node)),
        "effect": f"its weights are those of {closed}",
        "guard": f" (and take m = {w['mmax']} so that an all-masked row stays finite)" if family else "",
        "takes": f": the {w['term']} takes all the weight" if family else "",
        "guard_fix": (f"Take m = {w['mmax']}, which is finite even when every score is −∞." if family else
                      "Give a fully masked row the definition's value, 0 on every key (guard the NaN of "
                      "m = max x = −∞)."),
        "including": f", including the {w['term']} (which becomes {w['shifted']})" if p.terms else "",
        "stable": pretty(show(_stable(p))),
    })
    w.update({k: str(v) for k, v in fd.items()})
    if f.numeric == "dtype":
        formula = f"{written} evaluated directly in the dtype"
    elif f.numeric == "masked-nan":
        formula = f"NaN when every x_j = −∞, else {p.label}(x)"
    elif f.numeric == "mask-entered":
        formula = f"{pretty(show(p.node))} with a masked key's score −∞ inside the formula"
    else:
        formula = written
        if M_ in show(form.node):
            formula += ",  m = max x"
    return {"title": f.title.format(**w), "formula": formula, "explanation": f.explanation.format(**w),
            "fix": f.fix.format(**w)}
