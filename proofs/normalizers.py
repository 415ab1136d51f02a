"""Row normalizers compared (docs/normalizers.md).

Every registered normalizer × every property, each cell a verdict computed by the generic
provers of :mod:`derive.normalizers.properties` from the entry's symbolic definition and
linked to its derivation below the table. Proved identities are cross-checked on
adversarial rows with the entries' mpmath references and stable implementations.
"""

from __future__ import annotations

import math
import os
import re

import mpmath
import numpy as np
import sympy as sp

from derive.document.api import Document
from derive.document.notation import notation
from derive.normalizers import equivalences
from derive.normalizers.algebra import entry_sample_subs
from derive.normalizers.bounds import own_score_bound
from derive.normalizers.numeric import check_many, identity_check, remembered, stable_check
from derive.normalizers.properties import (
    PROPERTIES,
    C,
    derive_property,
    params_for,
    single_key_weight,
    weight,
)
from derive.normalizers.registry import REGISTRY, allowed_keys, get, names
from derive.normalizers.table import LEGEND, SYMBOL, anchor, build_table, cell_text
from derive.render.latex import tex
from derive.render.view import assignment, proved_label

SHIFT = 1.5
# Parameter names as the documents show them: the soft cap is c_cap, since c is a common shift; softpick's eps is ε.
SHOWN_PARAM = {"c": "c_cap", "eps": "epsilon"}


def _witness_text(w: dict | None) -> str:
    if not w:
        return ""
    parts = []
    for key in ("instance", "indices", "parameters"):
        if w.get(key):
            head = "the entry's parameters " if key == "parameters" else ""
            shown = SHOWN_PARAM if key == "parameters" else {}
            parts.append(head + ", ".join(assignment(shown.get(k, k), v) for k, v in w[key].items()))
    vals = ""
    if "lhs" in w:
        left, right = _sides(w)
        names = w.get("compared") or ("left side", "right side")
        vals = f"; values {left} ({names[0]}) vs {right} ({names[1]})"
        if w.get("enclosures"):
            vals += f" (certified at {w['enclosures']['bits']} bits)"
    if "derivative" in w:
        vals = f"; the derivative there is exactly {_number(format(w['derivative'], 'g'))}"
    return "Counterexample: " + "; ".join(parts) + vals + (f" ({w['note']})" if w.get("note") else "") + "."


def _sides(w: dict) -> tuple[str, str]:
    """The two values a counterexample compares: their certified enclosures (``0.786986042162 ±
    1e-12``) where it has them, else the exact values it states."""
    enc = w.get("enclosures")
    if enc:
        return _number(enc["lhs"]), _number(enc["rhs"])
    return _number(w["lhs"]), _number(w["rhs"])


def _number(value) -> str:
    """A value (a number or a list of numbers) as text: a minus sign is a minus, not a hyphen."""
    return re.sub(r"(?<![\w.])-(?=[\d.])", "−", str(value))


def _allowed(x, m) -> int:
    """N_i of a row: its allowed keys (every key when there is no mask)."""
    return len(x) if m is None else sum(bool(a) for a in m)


def _numeric_checks(doc: Document, table: dict) -> None:
    checks = []
    for name in names():
        entry = get(name)
        sample = {k: float(v) for k, v in entry.sample_values().items()}
        ref = remembered(entry.reference)  # each check below evaluates it on the same rows
        checks.append(stable_check(entry, sample, reference=ref))
        if table[(name, "weights_sum_to_one")].verdict.proved:
            checks.append(identity_check(f"{name}: weights sum to 1",
                                         lambda x, m, _r=ref, _s=sample: [mpmath.fsum(_r(x, m, **_s))],
                                         lambda x, m: [mpmath.mpf(1)]))
        if table[(name, "limit_any_path")].verdict.method == "bound by an own-score term, limit":
            # the bound the abstention rests on, p_j ≤ g(x_j), on the same adversarial rows
            y = sp.Symbol("y", real=True)
            params = params_for(entry)
            g = own_score_bound(weight(entry, params)).subs(dict(entry_sample_subs(entry, params)))
            g_num = sp.lambdify(y, g.xreplace({s_: y for s_ in g.free_symbols}), "mpmath")
            checks.append(identity_check(
                f"{name}: each weight at most its own score's term",
                lambda x, m, _r=ref, _s=sample, _g=g_num: [min(p, _g(mpmath.mpf(v))) for p, v in zip(_r(x, m, **_s), x)],
                lambda x, m, _r=ref, _s=sample: list(_r(x, m, **_s))))
        if table[(name, "mass_range")].verdict.method == "ratio of row sums, bounds, limit":
            # the bounds the range rests on, 0 ≤ Σ_j p_j < 1, on the same adversarial rows; a mass
            # within rounding of 1 (a score of 1e4) rounds to it, so the check is 0 ≤ Σ_j p_j ≤ 1
            checks.append(identity_check(
                f"{name}: 0 ≤ the mass ≤ 1",
                lambda x, m, _r=ref, _s=sample: [min(max(t, 0), 1) for t in [mpmath.fsum(_r(x, m, **_s))]],
                lambda x, m, _r=ref, _s=sample: [mpmath.fsum(_r(x, m, **_s))]))
        eff = table[(name, "shift_effect")]
        if eff.verdict.proved and entry.shift_effect is not None:
            params = params_for(entry)
            subs = dict(entry_sample_subs(entry, params))
            subs[C] = sp.nsimplify(SHIFT)
            other, new = entry.shift_effect(C, params)
            # a new parameter may depend on the row through N_i, its allowed keys (sigmoid −log N)
            N = sp.Symbol("N", positive=True)
            new_e = {k: sp.sympify(v).subs(subs).subs(allowed_keys(), N) for k, v in new.items()}
            other_ref = get(other).reference
            checks.append(identity_check(
                f"{name}: a shift by c = {SHIFT} equals {other}",
                lambda x, m, _r=ref, _s=sample: _r([v + SHIFT for v in x], m, **_s),
                lambda x, m, _o=other_ref, _n=new_e: _o(x, m, **{k: float(e.subs(N, _allowed(x, m)))
                                                                 for k, e in _n.items()})))
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
            "(symbolic n, any mask); its numerically stable numpy implementation is evaluated from the "
            "overflow-free form derived from that definition. The same generic provers decide every property for "
            "every entry: the table below is computed, not typed in, and every cell links to its derivation."
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
        rows.append([f"`{name}`", e.title, e.domain_text or "—", source])
    doc.table(["entry", "normalizer", "parameters", "source"], rows)
    notes = [f"- `{name}`: {REGISTRY[name].note}." for name in names() if REGISTRY[name].note]
    if notes:
        doc.prose("\n".join(notes))

    doc.section("2. What the table does not decide", anchor="nrm-notes")
    _clipped_long_rows(doc, table)

    doc.section("3. Equivalences between tokens and normalizers")
    doc.prose("An extra token (key $k^{*}$, value $v^{*}$) against a normalizer over the real keys, decided by the "
              "same prover (derivations in [softmax-one.md](softmax-one.md#nrm-equivalences)):")
    eq_rows = []
    for e, v in equivalences.decide_all():
        if v.status != e.expect:
            raise AssertionError(f"{e.name}: {v.status}, expected {e.expect}")
        eq_rows.append([e.name, e.condition, f"{SYMBOL[v.status]} {v.status}"])
        doc.tally([v.status])
    doc.table(["claim", "condition", "verdict"], eq_rows)

    doc.appendix("Appendix: the derivations")
    _derivations(doc, table)
    _numeric_checks(doc, table)
    _results(doc, table)
    # each refutation's counterexample as the tables print it: the instance, the entry's
    # parameters, the two values under their names (compared) and their certified enclosures
    doc.record("table", {f"{n}/{p}": {"verdict": d.verdict.status, "value": d.value_text(), "reason": d.verdict.reason}
                         | ({"counterexample": d.verdict.witness}
                            if d.verdict.status == "refuted" and d.verdict.witness else {})
                         for (n, p), d in sorted(table.items())})
    return doc


def _derivations(doc: Document, table: dict) -> None:
    """Section 4: each property stated once, then its verdicts, proved first.

    Normalizers decided the same way (same verdict, method, reason and steps) share one entry,
    which states the shared argument once and lists what differs between them: a formula per
    normalizer (a table when the formulas are short), a checked equation each, a counterexample's
    parameters and values. Each verdict shows each formula once: a step that repeats the checked
    equation or its left side is not displayed again, no display has the same expression on both
    sides, a step that only writes the definition out for the case at hand (two keys, a shifted
    row) is set inline when short and left out otherwise, and a formula displayed under an
    earlier property is referred to, not repeated."""
    doc.section("A. Derivations, by property", level=3)
    doc.prose("Each property is stated once. Normalizers decided by the same argument share one entry: the "
              "argument is written once, and what differs between them (a formula, a limit, a counterexample's "
              "values) is listed by normalizer, with the names of the table's columns. In a displayed equation "
              "$p_{ij}$ is the normalizer's definition of section 1 with the mask applied (0 for a masked key); "
              "the proof and the numeric check use it written out.")
    seen: dict[str, tuple] = {}  # a display → (section number, anchor) where it was first shown
    for k, (prop, (title, *_)) in enumerate(PROPERTIES.items(), start=1):
        doc.section(f"A.{k}. {title}", anchor=f"nrm-prop-{prop.replace('_', '-')}", level=3)
        doc.prose(f"**Claim** (`{prop}`): {table[(names()[0], prop)].claim}.")
        exact: dict[tuple, list[str]] = {}
        for name in names():
            exact.setdefault(_derivation_key(table[(name, prop)]), []).append(name)
        clusters: dict[tuple, list[_Group]] = {}
        for key, members in exact.items():
            g = _Group(members, table[(members[0], prop)], key[4])  # key[4]: its latex steps
            clusters.setdefault(g.key, []).append(g)
        order = {"proved": 0, "refuted": 1, "undecided": 2}
        for groups in sorted(clusters.values(), key=lambda gs: order[gs[0].der.verdict.status]):
            _cluster(doc, k, title, prop, groups, seen)
        doc.prose("[back to the table](#nrm-table)")


# properties whose checked equation has the normalizer's own definition on its right (of the row x, or
# of the unbiased scores): displayed by name
DEFINITION_ON_RIGHT = {"shift_invariant": "p_{ij}", "stable_form": "p_{ij}",
                       "k_bias_cancels": "p_{ij}\\bigl(\\langle q_i, k_t \\rangle/\\sqrt{d}\\bigr)"}
SHORT = 60  # characters of LaTeX: a step's formula this short is set inline
CELL = 80  # … and a right-hand side this short in a table cell, one row per normalizer


def _common_lhs(maths: list[str]) -> str:
    """The left side the formulas ``lhs = …`` share (it heads their column), or ''."""
    sides = [m.split(" = ", 1) for m in maths]
    return sides[0][0] if all(len(p) == 2 for p in sides) and len({p[0] for p in sides}) == 1 else ""


def _cell(m: str, maths: list[str]) -> str:
    lhs = _common_lhs(maths)
    return m[len(lhs) + 3:] if lhs else m


class _Group:
    """Normalizers whose derivation of one property is the same, word for word."""

    def __init__(self, members: list[str], der, latex_steps: tuple) -> None:
        """``latex_steps``: ``der.latex_steps()``, already computed for the derivation's key."""
        self.members, self.der = members, der
        v = der.verdict
        restated = {n_: r for n_, *r in der.restates}
        steps = [(why, _Restated(m, *restated[n_]) if n_ in restated else m, n_ in der.setup)
                 for n_, (why, m) in enumerate(latex_steps) if not _same_sides(m)]
        self.eq, self.said, self.note = None, "", ""
        if v.proved and der.equality is not None and "argument by argument" not in v.method:
            lhs, rhs = der.equality
            if _trivial(lhs, rhs):  # no equation to show: "x = x" carries nothing
                if not steps:  # what the equation states, then why it needs no display
                    said = [why for why, m in latex_steps if _same_sides(m)]
                    lead = f"{said[0][:1].upper()}{said[0][1:]}: o" if said else "O"
                    self.note = (f"{lead}nce the definitions are written out and summation indices renamed alike, "
                                 f"both sides are the same expression, ${tex(lhs)}$.")
            elif not any(isinstance(m, _Restated) and m == tex(lhs) and _checked_there(der.normalizer, m.prop)
                         for _why, m, _s in steps):  # else the step refers to that equation: not shown again
                shown = {tex(lhs), f"{tex(lhs)} = {tex(rhs)}"}
                said = [why for why, m, _s in steps if m in shown]
                steps = [s for s in steps if s[1] not in shown]
                self.eq = (lhs, rhs)
                self.said = said[0] if said else v.reason
        if v.witness:  # the counterexample is the evidence; the definition written out adds nothing
            steps = [s for s in steps if not s[2]]
        self.steps = steps
        w = v.witness or {}
        # the note names this group's own expression: groups with different notes never share an entry
        self.key = (v.status, proved_label(v), v.reason, v.method, self.eq is not None, self.note,
                    tuple((_shape(why), setup) for why, _m, setup in steps), tuple(sorted(set(w) - {"parameters"})))

    def label(self) -> str:
        return ", ".join(f"`{m}`" for m in self.members)


def _cluster(doc: Document, k: int, title: str, prop: str, groups: list[_Group], seen: dict) -> None:
    """One entry: the normalizers of ``groups`` share the argument, and differ in what is listed."""
    members = [m for g in groups for m in g.members]
    doc.section(", ".join(f"`{m}`" for m in members), anchor=" ".join(anchor(m, prop) for m in members), level=4)
    first = groups[0]
    v = first.der.verdict
    if first.eq is None:  # a checked equation states its own verdict, method and reason
        shown = proved_label(v) if v.proved else v.status
        doc.prose(f"**{shown.capitalize()}**: {v.reason}" + (f" (method: {v.method})" if v.method else "") + "."
                  + (f" {first.note}" if first.note else ""))
    lines, columns, texts, per_group = [], [], [], []
    tails: list[list[str]] = [[] for _ in groups]  # what each group's steps say of it alone
    for s, (why, _m, setup) in enumerate(first.steps):
        maths = [g.steps[s][1] for g in groups]
        whys = [g.steps[s][0] for g in groups]
        if all(isinstance(m, _Restated) for m in maths):  # an earlier equation under a substitution: referred to
            ref = _restated_ref(maths[0])
            if len({_restated_ref(m) for m in maths}) > 1:  # each its own: a column of the table
                head = os.path.commonprefix(whys).split("$")[0].rstrip(" (")
                number = len(lines) + 1
                texts.append((number, [f"{w[len(head):].strip().removeprefix('(').removesuffix(')')}, by "
                                       f"{_restated_ref(m)}" for w, m in zip(whys, maths)]))
                lines.append(f"{number}. {head}, an equation proved above under a substitution: column ({number}) below")
            elif len(set(whys)) > 1:  # what each becomes: a column of the table
                why = os.path.commonprefix(whys).rsplit(" ", 1)[0]
                number = len(lines) + 1
                texts.append((number, [w[len(why):].strip() for w in whys]))
                lines.append(f"{number}. {why} the normalizer of column ({number}) below, by {ref}")
            else:
                lines.append(f"{len(lines) + 1}. {why}: {ref}")
            continue
        if len(set(whys)) > 1:  # the same sentence but for a name or a formula: its tail per group
            why = os.path.commonprefix(whys).rsplit(" ", 1)[0]
            for t, w in zip(tails, whys):
                t.append(w[len(why):].strip())
            per_group.append((why, maths))
            lines.append(f"{len(lines) + 1}. {why} what is named with each normalizer below")
            continue
        fits = [len(_cell(m, maths)) <= CELL and not _is_text(m) for m in maths]
        number = len(lines) + 1
        if setup and not (all(len(m) <= SHORT for m in maths) if len(set(maths)) == 1 else all(fits)):
            continue  # the definition written out at length: left out
        if len(set(maths)) == 1 or len(groups) == 1:
            lines.append(_step_line(number, why, maths[0], seen, k, prop, members[0]))
        elif all(m in seen for m in maths):
            lines.append(f"{number}. {why}: as displayed in {_where(seen[maths[0]])} for each")
        elif all(fits):
            columns.append((number, maths))
            for m, g in zip(maths, groups):
                seen.setdefault(m, (k, anchor(g.members[0], prop)))
            lines.append(f"{number}. {why}: column ({number}) below")
        else:
            per_group.append((why, maths))
            lines.append(f"{number}. {why}: below, by normalizer")
    if lines:
        doc.prose("\n".join(lines))
    rows = [[g.label()] for g in groups]
    headers = ["normalizer"]
    for number, cells in texts:
        headers.append(f"({number})")
        for r, c in zip(rows, cells):
            r.append(c)
    for number, maths in columns:
        lhs = _common_lhs(maths)
        headers.append(f"({number})" + (f" ${lhs}$" if lhs else ""))
        cells = [f"$\\displaystyle {_cell(m, maths)}$" for m in maths]  # fractions at full size, apart
        for r, c in zip(rows, cells):
            r.append(c)
    if len(groups) == 1:
        if first.der.verdict.witness:
            doc.prose(_witness_text(first.der.verdict.witness))
        own = []
    else:
        shared, own, whole = _witnesses(groups)
        if shared:
            doc.prose(shared)
        if own and not per_group and not any(g.eq for g in groups):
            for r, (params, values) in zip(rows, own):
                r += [params or "—", values]
            headers += ["counterexample" if whole else "parameters", "values"]
            own = []
    if len(headers) > 1:
        doc.table(headers, rows)
    # groups whose listed formulas and counterexample are the same are listed once, under all their names
    shown: dict[tuple, list[int]] = {}
    for n_, g in enumerate(groups):
        same = (tuple(maths[n_] for _why, maths in per_group), own[n_] if own else None, tuple(tails[n_]))
        shown.setdefault(same if g.eq is None else ("eq", n_), []).append(n_)
    renamed = _renamed_alike(groups, shown) if per_group and not own else {}
    for same, idx in shown.items():
        if idx[0] in renamed:  # listed with the group whose formulas it repeats under a renamed parameter
            continue
        n_, g = idx[0], groups[idx[0]]
        label = ", ".join(groups[i].label() for i in idx)
        alike = [(m, r) for m, r in renamed.items() if r[0] == n_]
        label += "".join(f"; {groups[m].label()}, the same with ${a}$ in place of ${b}$" for m, (_n, a, b) in alike)
        for m, _r in alike:  # a later reference to its formulas points here
            for _why, maths in per_group:
                seen.setdefault(maths[m], (k, anchor(groups[m].members[0], prop)))
        lead = label + (f" ({'; '.join(tails[n_])})" if tails[n_] else "") + ":" if len(groups) > 1 else ""
        displays = [_display(maths[n_], seen, k, prop, g.members[0]) for _why, maths in per_group if maths[n_]]
        if own:
            params, values = own[n_]
            displays.append("Counterexample: " + "; ".join(
                x for x in (params, f"values {values}" if " vs " in values else values) if x) + ".")
        if displays:
            doc.prose("\n\n".join([lead] * bool(lead) + displays))
        if g.eq is not None:
            lhs, rhs = g.eq
            if prop in DEFINITION_ON_RIGHT:  # the definition of section 1, by name: shown once, not per claim
                rhs = notation(f"p_def_{prop}_{g.members[0]}", lambda _r=rhs: _r,
                               latex=DEFINITION_ON_RIGHT[prop], nargs=0)()
            doc.equation(lhs, rhs, name=f"{title}: {g.label()}",
                         why=f"{g.said[:1].upper()}{g.said[1:]}.")


def _param_latex(name: str) -> str | None:
    """The LaTeX of an entry's one parameter (None: no parameter, or several)."""
    params = get(name).params
    return tex(sp.Symbol(params[0], real=True)) if len(params) == 1 else None


def _renamed_alike(groups: list, shown: dict) -> dict[int, tuple[int, str, str]]:
    """Groups whose listed formulas are another group's with its one parameter renamed (`bias_kv`'s
    s*_i is `sink`'s s): group → (the group shown, this group's parameter, the shown one's). Only a
    parameter written with more than one character is renamed (replacing s would touch \\sum)."""
    firsts = [idx[0] for key, idx in shown.items() if key[0] != "eq"]
    out: dict[int, tuple[int, str, str]] = {}
    for a in firsts:
        pa = _param_latex(groups[a].members[0])
        if not pa or len(pa) < 2:
            continue
        key_a = next(key for key, idx in shown.items() if idx[0] == a)
        for b in firsts:
            pb = _param_latex(groups[b].members[0])
            key_b = next(key for key, idx in shown.items() if idx[0] == b)
            if (b != a and b not in out and pb and pb != pa and key_a[1:] == key_b[1:]
                    and all(pa in m for m in key_a[0]) and tuple(m.replace(pa, pb) for m in key_a[0]) == key_b[0]):
                out[a] = (b, pa, pb)
                break
    return out


class _Restated(str):
    """A step's LaTeX whose equation is another property's proved equation under a substitution."""

    def __new__(cls, latex: str, prop: str, sub: str, reverse: bool):
        out = super().__new__(cls, latex)
        out.prop, out.sub, out.reverse = prop, sub, reverse
        return out


def _restated_ref(m: _Restated) -> str:
    k = list(PROPERTIES).index(m.prop) + 1
    return (f"the equation of [A.{k}](#nrm-prop-{m.prop.replace('_', '-')}) with ${m.sub}$"
            + (", read from right to left" if m.reverse else ""))


def _checked_there(name: str, prop: str) -> bool:
    """Is ``prop``'s equation of ``name`` displayed, proved and cross-checked in section 4?"""
    der = derive_property(name, prop)
    return (der.verdict.proved and der.equality is not None and "argument by argument" not in der.verdict.method
            and not _trivial(*der.equality))


def _step_line(number: int, why: str, m: str, seen: dict, k: int, prop: str, name: str) -> str:
    if _is_text(m):
        return f"{number}. {why}: {m}"
    if len(m) <= SHORT:  # a short result reads best in the sentence
        return f"{number}. {why}: ${m}$"
    if m in seen:
        return f"{number}. {why}: as displayed in {_where(seen[m])}"
    seen[m] = (k, anchor(name, prop))
    return f"{number}. {why}:\n\n   $$\n   {m}\n   $$\n"


def _display(m: str, seen: dict, k: int, prop: str, name: str) -> str:
    if m in seen:
        return f"as displayed in {_where(seen[m])}"
    if len(m) <= SHORT:
        return f"${m}$"
    seen[m] = (k, anchor(name, prop))
    return f"$$\n{m}\n$$"


def _where(place: tuple) -> str:
    k, here = place
    return f"[A.{k}](#{here})"


def _witnesses(groups: list[_Group]) -> tuple[str, list, bool]:
    """The counterexamples of several groups: what they share, as a sentence; per group the rest
    (instance, parameters) and the values found; and whether the instances differ."""
    ws = [g.der.verdict.witness for g in groups]
    if not any(ws):
        return "", [], False
    parts = [_witness_parts(w) for w in ws]
    common = [p for p in parts[0][0] if all(p in q[0] for q in parts)]
    note = ws[0].get("note") if all(w.get("note") == ws[0].get("note") for w in ws) else ""
    own, whole = [], False
    names = {tuple(w.get("compared") or ()) for w in ws}
    labels = names.pop() if len(names) == 1 and () not in names else None
    for (fixed, params, values), w in zip(parts, ws):
        rest = [p for p in fixed if p not in common]
        whole = whole or bool(rest)
        if "lhs" in w and labels is None:  # the sides named in each row
            names = w.get("compared") or ("left side", "right side")
            values = "{} ({}) vs {} ({})".format(_sides(w)[0], names[0], _sides(w)[1], names[1])
        own.append(("; ".join([", ".join(rest)] * bool(rest) + [params] * bool(params)),
                    values + (f" ({w['note']})" if w.get("note") and not note else "")))
    head = "Certified counterexamples" + (f", each on {', '.join(common)}" if common else "")
    head += f"; the values are {labels[0]} vs {labels[1]}" if labels else ""
    return head + (f" ({note})" if note else "") + ":", own, whole


def _witness_parts(w: dict) -> tuple[list[str], str, str]:
    """(the instance and indices as math spans, the entry's parameters, the values found)."""
    fixed = [assignment(k, v) for key in ("instance", "indices") for k, v in (w.get(key) or {}).items()]
    params = ", ".join(assignment(SHOWN_PARAM.get(k, k), v) for k, v in (w.get("parameters") or {}).items())
    values = "{} vs {}".format(*_sides(w)) if "lhs" in w else ""
    if "derivative" in w:
        values = f"the derivative is exactly {_number(format(w['derivative'], 'g'))}"
    return fixed, params, values


def _shape(why: str) -> str:
    """A step's words with its formulas and names left out: what steps of one argument share."""
    return re.sub(r"\$[^$]*\$|`[^`]*`", "…", why)


def _trivial(lhs, rhs) -> bool:
    """Are the two sides one expression once SymPy evaluates them (e^{a} e^{b} and e^{a + b})?"""
    a, b = sp.sympify(lhs), sp.sympify(rhs)
    if a == b or sp.powsimp(a) == sp.powsimp(b):
        return True
    if a.has(sp.Min, sp.Max, sp.Piecewise):  # expand compares their arguments at length, and never merges them
        return False
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


# ---- the results box: the comparison table, by topic ----------------------------------------------

TOPICS = {  # the table split by topic, each narrow enough for a page
    "Shifts and mass": ("shift_invariant", "shift_effect", "weights_sum_to_one", "mass_range", "can_abstain"),
    "Limits as the scores go to −∞": ("limit_uniform", "limit_iterated", "limit_any_path"),
    "Ratios and gradients": ("ratio_identity", "jacobian_diagonal", "jacobian_offdiagonal", "gradient_nonvanishing"),
    "Bias and implementation": ("k_bias_cancels", "stable_form"),
}
assert sorted(p for ps in TOPICS.values() for p in ps) == sorted(PROPERTIES), "every property in one topic"
# an undecided cell whose reason is that no rule of the engine fits the normalizer's shape, as opposed to one
# where a rule ran and could not decide (a sign, a limit SymPy did not take): shown ⊘, not ❓
NO_RULE = ("no rule", "no range rule", "no closed form", "are not of the form", "no bound applies")


def no_rule(der) -> bool:
    return der.verdict.status == "undecided" and any(w in der.verdict.reason for w in NO_RULE)


def _table_cell(der) -> str:
    text = cell_text(der)
    if no_rule(der):
        text = text.replace("❓", "⊘", 1).replace("[⊘](", "[⊘ no rule](", 1)
    return text


def _results(doc: Document, table: dict) -> None:
    counts = {s: sum(1 for d in table.values() if d.verdict.status == s) for s in SYMBOL}
    rules = sum(1 for d in table.values() if no_rule(d))
    doc.tally(d.verdict.status for d in table.values())
    for (name, prop), d in sorted(table.items()):
        if d.verdict.proved:
            doc.certify(f"cell {name}/{prop}", d.verdict)
    replayed = sum(1 for d in table.values() if d.verdict.proved and d.verdict.seal is not None and d.verdict.seal.replayed)
    with doc.results():
        doc.section("The comparison table", anchor="nrm-table", level=3)
        doc.prose(
            f"{LEGEND} (for symbolic n and any mask); ❌ refuted by a certified counterexample or by "
            "a proved identity that contradicts the claim; ❓ undecided: a rule of the engine ran and could not "
            "decide (a sign, a limit); ⊘ undecided because no rule of the engine fits the normalizer's shape "
            "(not derived here, whatever the answer). Each cell links to its derivation in the appendix, each "
            "property to the claim it decides; parameters are symbolic over their domain, counterexamples use the "
            f"sample values listed with them. {len(table)} cells: {counts['proved']} proved ({replayed} replayed, "
            f"{counts['proved'] - replayed} not replayed), {counts['refuted']} refuted, {counts['undecided']} "
            f"undecided ({rules} of them ⊘)."
        )
        for topic, props in TOPICS.items():
            doc.prose(f"**{topic}**")
            doc.table(["normalizer"] + [f"[{PROPERTIES[p].title}](#nrm-prop-{p.replace('_', '-')})" for p in props],
                      [[f"`{c}`"] + [_table_cell(table[(c, p)]) for p in props] for c in names()])
