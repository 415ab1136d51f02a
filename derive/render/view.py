"""From a checked :class:`~derive.document.api.Document` to what the templates print.

The same view serves Markdown and LaTeX: math is LaTeX in both; prose and table cells are
converted per target by :mod:`derive.render.prose`. Numbers are formatted here, once, so
that every output is byte-identical across builds. No measured floating-point error is
printed (its last digits depend on the machine's SIMD code paths and on the numpy and SymPy
versions); a check shows its instance counts, its tolerance and its verdict.
"""

from __future__ import annotations

import json
import re

import sympy as sp

from derive import __version__
from derive.render import prose
from derive.render.breaking import cell_args, fit_args
from derive.render.latex import SYMBOLS, tex
from derive.render.markup import plain_math, tex_math
from derive.render.notation import SHEET

__all__ = ["CHECKS_NOTE", "assignment", "to_json", "view"]


CHECKS_NOTE = ("Random instances have head dimension $d \\le 64$, $n \\le 64$ keys and random masks; searched instances "
               "are drawn by Hypothesis to find a disagreement. "
               "A check passes when every compared pair of values $a, b$ satisfies "
               r"$\lvert a - b\rvert \le \mathrm{abs} + \mathrm{rel} \cdot \max(\lvert a\rvert, \lvert b\rvert)$, "
               "with the tolerances of its row. The measured errors are "
               "not printed: their last digits depend on the machine's floating-point code paths (SIMD) and "
               "on the numpy and SymPy versions, and this document must be the same on every machine.")


def _check_text(c, numbers: dict) -> str:
    """The badge's pointer to a step's check in the appendix: ``check 12``."""
    return "" if c is None else f"check {numbers[id(c)]}"


def _instances(c, where=None) -> str:
    """How many instances a check compared, for the appendix: ``60 random + 60 searched``."""
    j = c.as_json()
    if "hypothesis_examples" not in j:
        return str(j["examples"])
    on = "" if where is None else f" with ${tex(where)}$"
    arb = f", {j['arb_fallbacks']} in ball arithmetic" if j["arb_fallbacks"] else ""
    return f"{j['examples']} random{on} + {j['hypothesis_examples']} searched{arb}"


def _cell(value, target: str) -> str:
    if isinstance(value, sp.Basic):
        return prose.md_table_math(tex(value)) if target == "md" else "\\fitcell" + cell_args(tex(value))
    text = str(value)
    if target == "md":
        return prose.to_markdown(text, inline=True).replace("|", r"\|")
    return prose.to_latex(text, cell=True)


def _text(value: str, target: str) -> str:
    """A title, a name, a reason or a caption: one line of inline markup."""
    return prose.to_markdown(value, inline=True) if target == "md" else prose.to_latex(value, inline=True)


def _paragraphs(value: str, target: str) -> str:
    """Prose: paragraphs and numbered or bulleted lists."""
    return prose.to_markdown(value) if target == "md" else prose.to_latex(value)


def _method(method: str, target: str) -> str:
    """A prover's method: prose markup, its formulas as math."""
    return _text(method, target)


def proved_label(verdict) -> str:
    """"proved", or "proved (not replayed)" for a proof outside the checker's language."""
    seal = getattr(verdict, "seal", None)
    return "proved (not replayed)" if seal is not None and not seal.replayed else "proved"


def _not_replayed(verdict) -> str:
    return "; not replayed" if proved_label(verdict) != "proved" else ""


REPLAY_NOTE = ("Certificates: {replayed} of the {total} proofs of this page{cells} were replayed by derive's "
               "independent checker from their certificates (`derive replay`; its rules and what a replayed proof "
               "guarantees are in [spec.md](spec.md#certificates)).")


def replay_note(seals: list, target: str) -> str:
    """The appendix's count of the page's proofs that replayed, and those outside the checker."""
    if not seals:
        return ""
    out = [s for _, s in seals if not s.replayed]
    cells = " (steps, and the proved claims of its tables)" if any(n.startswith("cell ") for n, _ in seals) else ""
    text = REPLAY_NOTE.format(replayed=len(seals) - len(out), total=len(seals), cells=cells)
    if out:
        text += (f" {len(out)} {'is' if len(out) == 1 else 'are'} marked *proved (not replayed)*: the claim is outside "
                 "the checker's language (a range, a sign, a limit along every path, an inequality, a function it "
                 "knows by name only), and rests on derive's symbolic proof alone.")
    return _paragraphs(text, target)


def _block(b, target: str, numbers: dict) -> dict:
    out = {"kind": b.kind}
    if b.kind == "section":
        out.update(title=_text(b.title, target), anchor=getattr(b, "anchor", ""), level=getattr(b, "level", 2))
    elif b.kind == "prose":
        out["text"] = _paragraphs(b.text, target)
    elif b.kind == "equation":
        out.update(name=_text(b.name, target), math=f"{tex(b.lhs)} {b.relation} {tex(b.rhs)}", why=_text(b.why, target),
                   verdict=b.verdict.status, method=_method(b.verdict.method, target), proved=proved_label(b.verdict),
                   check=_text(_check_text(b.check, numbers), target))
    elif b.kind == "refutation":
        out.update(name=_text(b.name, target), math=f"{tex(b.lhs)} \\neq {tex(b.rhs)}", why=_text(b.why, target),
                   witness=_cell(_instance_text(b.verdict.witness, getattr(b, "assume", None)), target))
    elif b.kind == "chain":
        lines = [f"{tex(b.exprs[0])}"] + [f"&= {tex(e)}" for e in b.exprs[1:]]
        lines[0] = lines[0] + " " + lines[1]
        math = r"\begin{aligned}" + " \\\\\n".join([lines[0]] + lines[2:]) + r"\end{aligned}"
        out.update(name=_text(b.name, target), math=math,
                   whys=[_text(w, target) + f" ({_method(v.method, target)}{_not_replayed(v)})"
                         for w, v in zip(b.whys, b.verdicts)],
                   verdict="proved", check=_text(_check_text(b.check, numbers), target))
    elif b.kind == "classification":
        rows = []
        for label, c in b.rows:
            var = tex(c.index)
            evidence = (f"{proved_label(c.verdict)}: $f({var}_1) - f({var}_2)$ reduces to $0$ ({c.verdict.method})"
                        if c.verdict.proved else _witness_text(c.verdict.witness))
            rows.append({
                "label": _cell(label, target),
                "expr": _cell(c.expr, target),
                "verdict": _cell(c.label, target),
                "evidence": _cell(evidence, target),
            })
        out.update(name=b.name, rows=rows, why=_text(b.why, target), index=tex(b.index))
    elif b.kind == "table":
        out.update(headers=[_cell(h, target) for h in b.headers],
                   rows=[[_cell(c, target) for c in r] for r in b.rows], caption=_text(b.caption, target))
        if target == "tex":  # a wide table is set in parts, each with the first column: no cell is shrunk
            cols = list(range(1, len(b.headers)))
            count = -(-len(cols) // (WIDEST - 1))  # as few parts as keep each to WIDEST columns, sizes even
            halves = [cols[len(cols) * k // count:len(cols) * (k + 1) // count] for k in range(count)] if cols else [cols]
            pick = lambda row, ks: [row[0], *(row[k] for k in ks)]  # noqa: E731
            out["parts"] = [{"headers": pick(out["headers"], ks), "rows": [pick(r, ks) for r in out["rows"]],
                             "widths": _widths([pick(b.headers, ks), *(pick(r, ks) for r in b.rows)])}
                            for ks in halves]
    elif b.kind == "definitions":
        rows = [f"{tex(a)} &\\mathrel{{:=}} {tex(e)}" for a, e in b.pairs]
        out.update(math=r"\begin{aligned}" + " \\\\\n".join(rows) + r"\end{aligned}",
                   caption=_text(b.caption, target))
    elif b.kind == "figure":
        out.update(slug=b.slug, caption=_text(b.caption, target), alt=_alt(b.caption))
    elif b.kind == "box":
        out.update(title=_text(b.title, target), edge=b.edge)
    if target == "tex" and "math" in out:
        out["fit"] = fit_args(out["math"])
    return out


WIDEST = 6  # columns of a LaTeX table; a wider one is set as several, each with the first column


def _visible(value) -> tuple[int, int]:
    """About how many characters a cell shows, and its longest unbreakable word (code counted
    wider, markup and LaTeX commands not counted)."""
    text = tex(value) if isinstance(value, sp.Basic) else str(value)
    text = re.sub(r"\\(?:left|right|mathrm|operatorname|frac|langle|rangle|bigl|bigr)\b|[${}*]|\]\([^)]*\)", "", text)
    text = re.sub(r"\\[a-zA-Z]+", "x", text)
    words = [len(w) * (1.3 if "`" in w else 1.0) for w in text.split()] or [0]
    return len(text.replace("`", "")), int(max(words)) + 1


def _widths(rows) -> list[int]:
    """Each column's share of a LaTeX table's width, in thousandths: by its longest cell, within
    bounds, so a column of formulas gets room and a column of short words does not waste it;
    never narrower than its longest unbreakable word."""
    sizes = [[_visible(r[k]) for r in rows] for k in range(len(rows[0]))]
    char, line = 6, 430  # a character's width and the table's width, in pt (about; small type)
    least = [char * max(w for _, w in col) for col in sizes]  # the longest word must fit
    want = [max(char * min(max(n for n, _ in col), 60), lo) for col, lo in zip(sizes, least)]
    if sum(want) <= line or sum(least) >= line:
        widths = want if sum(least) < line else least
    else:  # every column its longest word, the rest of the line by what it would like beyond that
        spare = line - sum(least)
        extra = sum(w - lo for w, lo in zip(want, least))
        widths = [lo + spare * (w - lo) / extra for w, lo in zip(want, least)]
    total = sum(widths)
    shares = [int(1000 * w // total) for w in widths]
    shares[-1] += 1000 - sum(shares)
    return shares


def _alt(text: str) -> str:
    """An image's alt text: no markup renders there, so math is read aloud (``$x_t$`` → ``x_t``)."""
    return prose.to_markdown(plain_math(text).replace("[", "(").replace("]", ")"), inline=True)


def _name_tex(name: str) -> str:
    """A variable's name as math: ``k^0`` → ``k^{0}``, ``gamma_i`` → ``\\gamma_{i}``, ``b_k'`` → ``b_{k}'``."""
    if name in SYMBOLS:
        return SYMBOLS[name]
    stem = name.rstrip("'")
    if stem != name and stem and stem.replace("_", "").replace("^", "").isalnum():
        return tex(sp.Symbol(stem)) + "'" * (len(name) - len(stem))
    if not name.replace("_", "").replace("^", "").isalnum():
        return r"\text{" + name.replace("_", r"\_") + "}"
    return tex(sp.Symbol(name))


def _value_text(value) -> str:
    """A witness value (a number, a nested list of numbers, an interval) as text that can
    break across lines in a narrow column; a minus sign is a minus, not a hyphen."""
    text = str(value).replace("'", "").replace('"', "")
    return re.sub(r"(?<![\w.])-(?=[\d.])", "−", text)


def _value_math(value) -> str:
    """A witness value as math source: ``[[0, -1]]``, ``(-τ, -2τ)``, ``-\\infty``."""
    text = re.sub(r"\binf\b", r"\\infty", str(value).replace("'", "").replace('"', ""))
    return tex_math(text)  # Unicode symbols as commands: −τ → -\tau


def assignment(name: str, value) -> str:
    """``name = value`` as one math span of prose markup, e.g. ``$k^{0} = [[0], [1]]$``."""
    return f"${_name_tex(name)} = {_value_math(value)}$"


_assign = assignment


def _witness_text(w: dict | None) -> str:
    if not w:
        return ""
    inst = w["instance"]
    parts = [_assign(k, v) for k, v in inst.items()]
    idx = ", ".join(_assign(k, v) for k, v in w["indices"].items())
    return f"witness: {'; '.join(parts)}; {idx}: values {_value_text(format(w['lhs'], '.6g'))} vs {_value_text(format(w['rhs'], '.6g'))}" if isinstance(
        w["lhs"], float) else f"witness: {'; '.join(parts)}; {idx}"


def _instance_text(w: dict, assume: dict | None = None) -> str:
    parts = [_assign(k, v) for k, v in w["instance"].items()] + [_assign(k, v) for k, v in w["indices"].items()]
    if assume:  # an assumed value the instance states again (n) is listed once
        parts = [f"${tex(k)} = {tex(v)}$" for k, v in assume.items() if str(k) not in w["instance"]] + parts
    enc = w["enclosures"]
    side = lambda e: f"({', '.join(_value_text(x) for x in e)})" if isinstance(e, list) else _value_text(e)
    diff = f", difference {side(enc['difference'])}" if enc.get("difference") is not None else ""
    return (f"{'; '.join(parts)}: left side {side(enc['lhs'])}, right side {side(enc['rhs'])}{diff} "
            f"(certified at {enc['bits']} bits)")


def _merge_repeats(blocks: list[dict]) -> list[dict]:
    """A refutation whose display is the one just shown (two faults that compute the same formula)
    is not displayed again: its block says ``repeat`` and the document refers to the display above."""
    last = None
    for b in blocks:
        if b["kind"] in ("equation", "refutation", "chain"):
            b["repeat"] = b["kind"] == "refutation" and b["math"] == last
            last = b["math"]
        elif b["kind"] != "prose":
            last = None
    return blocks


def view(doc, target: str) -> dict:
    """Template context for ``target`` in {"md", "tex"}: the main text's blocks (the results box
    first), then the appendix's (after the References), then the checks."""
    numbers = {id(c): k + 1 for k, c in enumerate(doc.checks)}
    wheres = {id(b.check): b.where for b in doc.blocks if getattr(b, "where", None) is not None}
    cut = next((k for k, b in enumerate(doc.blocks) if b.kind == "appendix"), len(doc.blocks))
    main, rest = doc.blocks[:cut], doc.blocks[cut + 1:]
    return {
        "slug": doc.slug,
        "source": doc.source or f"proofs/{doc.slug.replace('-', '_')}.py",
        "rebuild": doc.rebuild or f"derive build {doc.source or 'proofs/' + doc.slug.replace('-', '_') + '.py'}",
        "title": _text(doc.title, target),
        "summary": _paragraphs(doc.summary, target),
        "blocks": _merge_repeats([_block(b, target, numbers) for b in main]),
        "appendix": _merge_repeats([_block(b, target, numbers) for b in rest]),
        "appendix_title": _text(doc.blocks[cut].title, target) if cut < len(doc.blocks) else "Appendix",
        "version": __version__,
        "n_proved": sum(1 for b in doc.blocks if b.kind in ("equation", "chain", "classification")),
        "n_checks": len(doc.checks),
        # equations shown without a numeric check (their two sides are one expression)
        "n_unchecked": sum(1 for b in doc.blocks if b.kind == "equation" and b.check is None),
        **_check_table(doc.checks, target, wheres),
        "replay_note": replay_note(doc.seals(), target),
        "references": references(doc.cited, target),
        "sym": {k.key: k.latex for k in SHEET},  # the notation sheet, for the templates' fixed sentences
    }


def references(keys, target: str) -> list[dict]:
    """The References section: the works cited, sorted by the name they are cited by, then year."""
    from derive.references import entry, ordered

    return [{**e, "text": _text(e["text"], target)} for e in map(entry, ordered(keys))]


def _check_table(checks, target: str, wheres: dict) -> dict:
    """The appendix: one row per check, numbered as the badges cite them. A column that says the
    same in every row is said once in the note instead (every check passed; one tolerance for
    abs and rel), so the rows list what differs between the checks."""
    js = [c.as_json() for c in checks]
    one_tol = all(j["tolerance"]["abs"] == j["tolerance"]["rel"] for j in js)
    all_passed = all(j["verdict"] == "passed" for j in js)
    md = target == "md"
    headers = ["#", "check", "instances"] + (["tolerance"] if one_tol else
                                               ["abs tolerance" if md else "abs tol.", "rel tolerance" if md else "rel tol."])
    headers += [] if all_passed else ["verdict"]
    rows = []
    for k, (c, j) in enumerate(zip(checks, js)):
        tol = j["tolerance"]
        row = [str(k + 1), _cell(j["name"], target), _cell(_instances(c, wheres.get(id(c))), target)]
        row += [f"{tol['abs']:g}"] if one_tol else [f"{tol['abs']:g}", f"{tol['rel']:g}"]
        rows.append(row + ([] if all_passed else [j["verdict"]]))
    note = CHECKS_NOTE.replace("with the tolerances of its row", "with abs = rel = the tolerance of its row"
                               if one_tol else "with the tolerances of its row")
    if all_passed and js:
        note += " Every check passed."
    return {"checks": rows, "check_headers": headers, "checks_note": _paragraphs(note, target)}


def _steps_json(doc) -> list[dict]:
    steps = []
    for b in doc.blocks:
        if b.kind == "equation":
            steps.append({"name": b.name, "kind": "equation", "statement": f"{tex(b.lhs)} = {tex(b.rhs)}",
                          "why": b.why, "verdict": b.verdict.status, "method": b.verdict.method,
                          "replay": _replay(b.verdict)})
        elif b.kind == "chain":
            steps.append({"name": b.name, "kind": "chain", "statement": " = ".join(tex(e) for e in b.exprs),
                          "why": b.whys, "verdict": "proved", "method": [v.method for v in b.verdicts],
                          "replay": [_replay(v) for v in b.verdicts]})
        elif b.kind == "refutation":
            w = b.verdict.witness
            steps.append({"name": b.name, "kind": "refutation", "statement": f"{tex(b.lhs)} \\neq {tex(b.rhs)}",
                          "why": b.why, "verdict": "refuted",
                          "witness": {k: v for k, v in w.items() if not k.startswith("_")}})
        elif b.kind == "classification":
            for label, c in b.rows:
                w = c.verdict.witness
                steps.append({"name": f"{b.name}: {label}", "kind": "classification", "statement": tex(c.expr),
                              "why": b.why, "verdict": c.verdict.status, "classification": c.label,
                              "replay": _replay(c.verdict),
                              "witness": {k: v for k, v in w.items() if not k.startswith("_")} if w else None})
    return steps


def _replay(verdict):
    seal = getattr(verdict, "seal", None)
    return None if seal is None else "replayed" if seal.replayed else "not replayed"


def to_json(doc) -> str:
    payload = {
        "derive_version": __version__,
        "document": doc.slug,
        "title": doc.title,
        "data": doc.data,
        "steps": _steps_json(doc),
        "checks": [c.as_json() for c in doc.checks],
        "replay": {"proofs": len(doc.seals()), "replayed": sum(s.replayed for _, s in doc.seals())},
        "references": [{k: v for k, v in r.items() if k != "text"} for r in references(doc.cited, "md")],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
