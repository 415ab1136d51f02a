"""Row normalizers compared (docs/normalizers.md).

Every registered normalizer × every property, each cell a verdict computed by the generic
provers of :mod:`derive.normalizers.properties` from the entry's symbolic definition and
linked to its derivation below the table. Proved identities are cross-checked on
adversarial rows with the entries' mpmath references and stable implementations.
"""

from __future__ import annotations

import math
import re

import mpmath
import numpy as np
import sympy as sp

from derive.document.api import Document
from derive.normalizers import equivalences
from derive.normalizers.algebra import entry_sample_subs
from derive.normalizers.numeric import check_many, identity_check, stable_check
from derive.normalizers.properties import PROPERTIES, C, params_for, single_key_weight
from derive.normalizers.registry import REGISTRY, get, names
from derive.normalizers.table import SYMBOL, anchor, build_table, cell_text
from derive.render.latex import tex
from derive.render.view import assignment

SHIFT = 1.5
# Parameter names as the documents show them: the soft cap is c_cap, since c is a common shift.
SHOWN_PARAM = {"c": "c_cap"}


def _witness_text(w: dict | None) -> str:
    if not w:
        return ""
    parts = []
    for key in ("instance", "indices", "parameters"):
        if w.get(key):
            head = "the entry's parameters " if key == "parameters" else ""
            shown = SHOWN_PARAM if key == "parameters" else {}
            parts.append(head + ", ".join(assignment(shown.get(k, k), v) for k, v in w[key].items()))
    vals = f"; values {_number(w['lhs'])} vs {_number(w['rhs'])}" if "lhs" in w else ""
    if "derivative" in w:
        vals = f"; the derivative there is exactly {_number(format(w['derivative'], 'g'))}"
    return "Counterexample: " + "; ".join(parts) + vals + (f" ({w['note']})" if w.get("note") else "") + "."


def _number(value) -> str:
    """A value (a number or a list of numbers) as text: a minus sign is a minus, not a hyphen."""
    return re.sub(r"(?<![\w.])-(?=[\d.])", "−", str(value))


def _numeric_checks(doc: Document, table: dict) -> None:
    checks = []
    for name in names():
        entry = get(name)
        sample = {k: float(v) for k, v in entry.sample_values().items()}
        checks.append(stable_check(entry, sample))
        ref = entry.reference
        if table[(name, "weights_sum_to_one")].verdict.proved:
            checks.append(identity_check(f"{name}: weights sum to 1",
                                         lambda x, m, _r=ref, _s=sample: [mpmath.fsum(_r(x, m, **_s))],
                                         lambda x, m: [mpmath.mpf(1)]))
        eff = table[(name, "shift_effect")]
        if eff.verdict.proved and entry.shift_effect is not None:
            params = params_for(entry)
            subs = dict(entry_sample_subs(entry, params))
            subs[C] = sp.nsimplify(SHIFT)
            other, new = entry.shift_effect(C, params)
            new_f = {k: float(sp.sympify(v).subs(subs)) for k, v in new.items()}
            other_ref = get(other).reference
            checks.append(identity_check(
                f"{name}: a shift by c = {SHIFT} equals {other}",
                lambda x, m, _r=ref, _s=sample: _r([v + SHIFT for v in x], m, **_s),
                lambda x, m, _o=other_ref, _n=new_f: _o(x, m, **_n)))
        elif eff.verdict.proved:
            checks.append(identity_check(
                f"{name}: invariant under a shift by c = {SHIFT}",
                lambda x, m, _r=ref, _s=sample: _r([v + SHIFT for v in x], m, **_s),
                lambda x, m, _r=ref, _s=sample: _r(x, m, **_s), tol=1e-9))
        if table[(name, "ratio_identity")].verdict.proved:
            def ratio(x, m, _r=ref, _s=sample):
                p = _r((list(x) + [0.0])[:2], None, **_s)
                return [p[0] / p[1]] if p[1] else [mpmath.nan]

            def expdiff(x, m):
                a, b = (list(x) + [0.0])[:2]
                return [mpmath.exp(mpmath.mpf(a) - b)] if ratio(x, m)[0] == ratio(x, m)[0] else [mpmath.nan]
            checks.append(identity_check(f"{name}: p₁/p₂ = exp(x₁ − x₂)", ratio, expdiff))
    doc.checks.extend(check_many(checks))
    for c in doc.checks:
        if not c.passed:
            raise AssertionError(f"numeric cross-check failed: {c.name}: {c.witness}")


def document() -> Document:
    doc = Document(
        "normalizers",
        "Row normalizers compared: softmax, softmax₁, sinks, extra tokens, sigmoid, clipping, soft caps",
        summary=(
            "Each row normalizer is one registry entry with a symbolic definition over a row of n scores "
            "(symbolic n, any mask) and a numerically stable implementation. The same generic provers decide "
            "every property for every entry: the table below is computed, not typed in, and every cell links to "
            "its derivation."
        ),
    )
    table = build_table()

    doc.section("1. The normalizers")
    doc.prose(
        "A row has scores $x_1, \\dots, x_n$; masked keys get weight 0 and every sum runs over the allowed keys "
        "($M_{i,t} = 1$). $N_i$ is the number of allowed keys of the row. The row $x$ is the normalizer's input: "
        "**row-shift invariance** means $p(x + c\\mathbf{1}) = p(x)$, a common shift $c$ of that input, so for the "
        "soft-capped softmax it is a shift before the cap (the atlas and `derive check` use the same definition). "
        "**Abstention** means that in every row the scores can make every weight tend to 0; weights that merely "
        "sum to less than 1 do not abstain."
    )
    doc.prose("The definitions, each with the weight $p_j$ of an allowed key $j$ ($t$ runs over the allowed keys):")
    defs = " \\\\\n".join(f"\\texttt{{{name.replace('_', chr(92) + '_')}}} \\quad & {REGISTRY[name].definition}"
                          for name in names())
    doc.prose("$$\n\\begin{aligned}" + defs + "\\end{aligned}\n$$")
    rows = []
    for name in names():
        e = REGISTRY[name]
        source = "{cite:" + ",".join(e.sources) + "}" if e.sources else "—"
        rows.append([f"`{name}`", e.title, e.domain_text or "—", e.note or "—", source])
    doc.table(["entry", "normalizer", "parameters", "note", "source"], rows)

    doc.section("2. The comparison table", anchor="nrm-table")
    doc.prose(
        "✅ proved symbolically (for symbolic n and any mask), ❌ refuted by a certified counterexample or by a "
        "proved identity that contradicts the claim, ❓ undecided (the reason is given). Click a cell for its "
        "derivation. Parameters are symbolic over their domain; counterexamples use the in-domain sample values "
        "listed with them."
    )
    cols = names()
    doc.table(["property"] + [f"`{c}`" for c in cols],
              [[title] + [cell_text(table[(c, prop)]) for c in cols] for prop, (title, _) in PROPERTIES.items()])
    claims = []
    for prop, (title, _) in PROPERTIES.items():
        claims.append([title, f"`{prop}`", table[(cols[0], prop)].claim])
    doc.table(["property", "name", "claim decided"], claims, caption="What each row of the table decides.")
    counts = {s: sum(1 for d in table.values() if d.verdict.status == s) for s in SYMBOL}
    doc.prose(f"{len(table)} cells: {counts['proved']} proved, {counts['refuted']} refuted, "
              f"{counts['undecided']} undecided.")
    _clipped_long_rows(doc, table)

    doc.section("3. Equivalences between tokens and normalizers")
    doc.prose("An extra token (key κ, value ν) against a normalizer over the real keys, decided by the same prover "
              "(derivations in [softmax-one.md](softmax-one.md#nrm-equivalences)):")
    eq_rows = []
    for e, v in equivalences.decide_all():
        if v.status != e.expect:
            raise AssertionError(f"{e.name}: {v.status}, expected {e.expect}")
        eq_rows.append([e.name, e.condition, f"{SYMBOL[v.status]} {v.status}"])
    doc.table(["claim", "condition", "verdict"], eq_rows)

    _derivations(doc, table)
    _numeric_checks(doc, table)
    doc.record("table", {f"{n}/{p}": {"verdict": d.verdict.status, "value": d.value_text(), "reason": d.verdict.reason}
                         for (n, p), d in sorted(table.items())})
    return doc


def _derivations(doc: Document, table: dict) -> None:
    """Section 4: each property stated once, then decided for every normalizer; normalizers whose
    derivation reads the same word for word share one entry (and every table cell's anchor).

    Each verdict shows each formula once: the checked equation when there is one (a step that
    repeats it or its left side is not displayed again), no display whose two sides are the same
    expression, and a formula displayed under an earlier property is referred to, not repeated."""
    doc.section("4. Derivations, by property")
    doc.prose("Each property is stated once and then decided for every normalizer. Normalizers whose derivations "
              "read the same, word for word, share one entry.")
    seen: dict[str, str] = {}  # a step's display → where it was first shown
    for k, (prop, (title, _)) in enumerate(PROPERTIES.items(), start=1):
        doc.section(f"4.{k}. {title}", anchor=f"nrm-prop-{prop.replace('_', '-')}", level=3)
        doc.prose(f"**Claim:** {table[(names()[0], prop)].claim}.")
        groups: dict[tuple, list[str]] = {}
        for name in names():
            groups.setdefault(_derivation_key(table[(name, prop)]), []).append(name)
        for members in groups.values():
            der = table[(members[0], prop)]
            here = anchor(members[0], prop)
            doc.section(", ".join(get(m).title for m in members), anchor=" ".join(anchor(m, prop) for m in members),
                        level=4)
            v = der.verdict
            doc.prose(f"**{v.status.capitalize()}** — {v.reason}" + (f" (method: {v.method})" if v.method else "")
                      + f". Result: {der.value_text()}.")
            steps = [(why, m) for why, m in der.latex_steps() if not _same_sides(m)]
            if v.proved and der.equality is not None and "argument by argument" not in v.method:
                lhs, rhs = der.equality
                if _trivial(lhs, rhs):  # no equation to show: "x = x" carries nothing
                    if not steps:
                        doc.prose("Once the definitions are written out and summation indices renamed alike, both "
                                  f"sides are the same expression, ${tex(lhs)}$.")
                else:
                    shown = {tex(lhs), f"{tex(lhs)} = {tex(rhs)}"}
                    said = [why for why, m in steps if m in shown]
                    steps = [(why, m) for why, m in steps if m not in shown]
                    doc.equation(lhs, rhs, name=f"{title}: {', '.join(get(m).title for m in members)}",
                                 why=(said[0][:1].upper() + said[0][1:] + "." if said else f"{v.reason[:1].upper()}{v.reason[1:]}."))
            lines = []
            for n_, (why, m) in enumerate(steps, start=1):
                if _is_text(m):
                    lines.append(f"{n_}. {why}: {m}")
                elif len(m) <= SHORT:  # a short result reads best in the sentence
                    lines.append(f"{n_}. {why}: ${m}$")
                elif m in seen:
                    lines.append(f"{n_}. {why}: as displayed in {seen[m]}")
                else:
                    seen[m] = f"[4.{k}](#{here})"
                    lines.append(f"{n_}. {why}:\n\n   $$\n   {m}\n   $$\n")
            if lines:
                doc.prose("\n".join(lines))
            if v.witness:
                doc.prose(_witness_text(v.witness))
        doc.prose("[back to the table](#nrm-table)")


SHORT = 60  # characters of LaTeX: a step's formula this short is set inline, not displayed


def _trivial(lhs, rhs) -> bool:
    """Are the two sides one expression once SymPy evaluates them (e^{a} e^{b} and e^{a + b})?"""
    a, b = sp.sympify(lhs), sp.sympify(rhs)
    if a == b:
        return True
    try:
        return sp.expand(sp.powsimp(a - b)) == 0
    except Exception:  # noqa: BLE001 - not evaluable as such: shown
        return False


def _same_sides(m: str) -> bool:
    """A displayed step of the form X = X (the two sides printed alike)."""
    sides = m.split(" = ")
    return len(sides) == 2 and sides[0].strip() == sides[1].strip()


def _derivation_key(der) -> tuple:
    """What a derivation shows; two normalizers with equal keys have the same text."""
    v = der.verdict
    eq = tuple(tex(e) for e in der.equality) if der.equality is not None else None
    return (v.status, v.reason, v.method, der.value_text(), tuple(der.latex_steps()), eq,
            _witness_text(v.witness))


def _is_text(m: str) -> bool:
    return m.startswith("(") and not m.startswith("\\left(") and "," in m and "\\" not in m


_ = (math, tex)


def _clipped_long_rows(doc: Document, table: dict) -> None:
    """The abstention row quantifies over every row; clipped softmax fails it on a one-key row, not on long rows."""
    clipped = get("clipped")
    zeta, gamma = 1.0, -0.1  # the entry's sample values
    threshold = 11  # (ζ − γ)/(−γ)
    long_row = clipped.stable(np.zeros(threshold), zeta=zeta, gamma=gamma)
    short_row = clipped.stable(np.zeros(threshold - 1), zeta=zeta, gamma=gamma)
    doc.example_check("clipped softmax: a uniform row of 11 keys gets weight 0", list(long_row), [0.0] * threshold,
                      detail="ζ = 1, γ = −1/10: (ζ − γ)/N + γ = 0 at N = 11")
    doc.example_check("clipped softmax: a uniform row of 10 keys does not", list(short_row),
                      [0.01] * (threshold - 1), detail="(ζ − γ)/10 + γ = 1/100")
    entry = clipped
    doc.fact("clipped: can_abstain", table[("clipped", "can_abstain")])
    doc.fact("clipped: limit_uniform", table[("clipped", "limit_uniform")])
    doc.fact("clipped: the weight of a single allowed key", "computed",
             value=sp.sstr(single_key_weight(entry, params_for(entry))))
    doc.prose(
        "Abstention above is claimed for *every* row (every weight can be made to tend to 0). For clipped softmax "
        "it is {verdict:clipped: can_abstain=refuted}: a row with one allowed key gives it the weight "
        "{value:clipped: the weight of a single allowed key=1} whatever its score. Its uniform-path value {value:clipped: limit_uniform} "
        "is exactly 0 once $N_i \\geq (\\zeta - \\gamma)/(-\\gamma)$: with the sample values $\\zeta = 1$, "
        "$\\gamma = -1/10$, a row of 11 equal scores gets weight 0 on every key while a row of 10 gets 1/100 each "
        "(checks at the end). So long rows can abstain *exactly*, which is what the clipping is for; only the "
        "quantifier over all rows fails."
    )
