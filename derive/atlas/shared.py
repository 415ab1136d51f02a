"""Derivations the atlas states once: a claim whose steps are the same in several variants.

A claim is *shared* when at least :data:`MIN_VARIANTS` variants state it (same name and statement)
and, once the steps every embedded claim leaves out are gone (the score, the changed score, the
cross-check the atlas states once), their steps are the same list — the same step labels (a
step's words before its first comma or colon), the same formulas, no instance data — and the
variants with one verdict give one reason. Each variant then keeps its own verdict line, linked
to the one statement of the derivation, which lists what each variant's steps gave where they
differ (e.g. "weights sum to one: proved" or "refuted"). Everything shown is the engine's data:
formulas, verdicts, reasons and counterexamples; nothing is written by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MIN_VARIANTS", "Shared", "shared_claims"]

MIN_VARIANTS = 3


@dataclass(frozen=True)
class Shared:
    name: str  # the claim's name, e.g. v_bias_shifts_output
    claim: str  # its statement, e.g. output_shift(b_v)
    title: str  # the atlas column it fills, or the name
    members: tuple  # (result, claim) of every variant that shares it, in atlas order
    steps: tuple  # (label, latex or "", {variant name: its own outcome} or None)

    @property
    def anchor(self) -> str:
        from derive.report.render import anchor

        return anchor("shared", self.name)


def _label(text: str) -> tuple[str, str | None]:
    """A step's label and the outcome after its colon (``weights sum to one: proved (…)`` →
    (``weights sum to one``, ``proved``)); the label stops at the first comma (the method: how
    the expansion went, which differs with the score, not what it gave)."""
    head, sep, tail = text.partition(": ")
    outcome = tail.split(" (")[0] if sep else None
    return head.split(",")[0], outcome


def _shown(c, quiet: str | None) -> list | None:
    """The steps of claim ``c`` a variant's details would show, or None where one carries data
    (an instance) or a cross-check other than the usual one."""
    out = []
    for s in c.steps:
        text = s.get("text", "")
        if text in ("score", "compared with") or (quiet is not None and text == quiet):
            continue
        if s.get("data") or text.startswith("numeric cross-check"):
            return None
        out.append(s)
    return out


def shared_claims(results, quiet: str | None, titles: dict) -> list[Shared]:
    """The claims stated once (:class:`Shared`), in the order of the atlas's columns."""
    by: dict[tuple, list] = {}
    for r in results:
        for c in r.claims:
            by.setdefault((c.name, c.claim), []).append((r, c))
    out = []
    for (name, claim), members in by.items():
        if len(members) < MIN_VARIANTS:
            continue
        shown = [_shown(c, quiet) for _r, c in members]
        if any(s is None or not s for s in shown):
            continue
        shapes = {tuple((_label(s.get("text", ""))[0], s.get("latex") or "") for s in steps) for steps in shown}
        reasons: dict[str, set] = {}
        for _r, c in members:
            reasons.setdefault(c.verdict, set()).add(c.reason)
        if len(shapes) != 1 or any(len(v) != 1 for v in reasons.values()):
            continue
        steps = []
        for k, (label, latex) in enumerate(next(iter(shapes))):
            outcomes = {r.name: _label(s[k].get("text", ""))[1] for (r, _c), s in zip(members, shown)}
            whole = {s[k].get("text", "").partition(": ")[0] for s in shown}
            label = whole.pop() if len(whole) == 1 else label  # the method too, where every variant has one
            steps.append((label, latex, outcomes if set(outcomes.values()) != {None} else None))
        out.append(Shared(name, claim, titles.get(name, name), tuple(members), tuple(steps)))
    order = list(titles)
    return sorted(out, key=lambda s: order.index(s.name) if s.name in order else len(order))


def shared_markdown(shared: list[Shared]) -> list[str]:
    """The section that states each shared derivation once: its steps, what each variant's steps
    gave where they differ, each verdict with its reason and the variants that have it, and the
    certified counterexamples."""
    from derive.claims.result import ICONS
    from derive.render.instance import instance_md
    from derive.render.markup import gfm_escape, to_gfm
    from derive.report.render import anchor, expect_note_text

    if not shared:
        return []
    lines = ["## Derivations shared by several variants", "",
             "A claim whose derivation has the same steps in several variants is stated here once; each "
             "variant's details link to it. Every variant's steps were proved or refuted on their own.", ""]
    for sh in shared:
        link = lambda r, c: f"[{r.name}](#{anchor(r.name)})"  # noqa: E731
        lines += [f'<a id="{sh.anchor}"></a>', "", f"### {sh.title}", "",
                  f"`{sh.name}` — `{sh.claim}`, stated by {len(sh.members)} variants, each in these steps:", ""]
        for k, (label, latex, outcomes) in enumerate(sh.steps, 1):
            text = gfm_escape(label) + (f": $`{latex}`$ in every variant" if latex else "")
            if outcomes:
                groups: dict[str, list] = {}
                for r, c in sh.members:
                    groups.setdefault(outcomes[r.name], []).append((r, c))
                if all(o == c.verdict for o, who in groups.items() for _r, c in who):  # the verdicts below
                    text += ": " + ", ".join(f"{o} for the {ICONS[o]} variants below" for o in groups)
                else:
                    text += ": " + "; ".join(f"{o} for {', '.join(link(r, c) for r, c in who)}"
                                             for o, who in groups.items())
            lines.append(f"{k}. {text}")
        lines.append("")
        verdicts: dict[str, list] = {}
        for r, c in sh.members:
            verdicts.setdefault(c.verdict, []).append((r, c))
        for verdict, members in verdicts.items():
            c0 = members[0][1]
            note = expect_note_text(c0.expected, verdict) if all(c.expected == c0.expected for _r, c in members) \
                else ""
            reason = to_gfm(" ".join(str(c0.reason).split()), inline=True)
            lines += [f"{c0.icon} **{verdict}**{note} for {', '.join(link(r, c) for r, c in members)}: "
                      f"{reason[:1].upper() + reason[1:]}.", ""]
            ces = [(r, c.counterexample) for r, c in members if c.counterexample]
            if ces:
                lines += [*_counterexamples(ces, instance_md), ""]
    return lines


def _counterexamples(ces, instance_md) -> list[str]:
    """The certified counterexamples, one line per variant; the enclosures once where they agree."""
    from derive.report.render import _ball, _md_prose

    def encl(ce) -> str:
        e = ce.get("enclosures")
        if not e:
            return ""
        labels = [_md_prose(t) for t in ce.get("compared", ["as specified", "changed"])]
        diff = f"; difference {_ball(e['difference'])}, certainly not 0" if e.get("difference") is not None else ""
        return f"{_ball(e['lhs'])} ({labels[0]}) vs {_ball(e['rhs'])} ({labels[1]}){diff}"

    texts = {encl(ce) for _r, ce in ces}
    bits = {ce.get("enclosures", {}).get("bits") for _r, ce in ces}
    how = "exact inputs"
    if len(bits) == 1 and None not in bits:
        how = f"certified by ball arithmetic at {bits.pop()} bits"
    same = texts.pop() if len(texts) == 1 else None
    out = [f"Counterexamples ({how}){': enclosures ' + same + ', on' if same else ''}:", ""]
    common = _common_instance([ce for _r, ce in ces]) if same is not None else None
    if common is not None:  # one instance, each variant's own parameters added
        base, extra = common
        groups: dict[str, list] = {}
        for (r, _ce), own in zip(ces, extra):
            groups.setdefault(instance_md({"values": own}) if own else "", []).append(r.name)
        out.append(f"- {', '.join(groups.pop(''))}: {instance_md(base, True)}")
        out += [f"- {', '.join(names)}: the same with {text}" for text, names in groups.items()]
        return out
    for r, ce in ces:
        tail = "" if same is not None else f"; enclosures {encl(ce)}"
        out.append(f"- {r.name}: {instance_md(ce, True)}{tail}")
    return out


def _common_instance(ces: list[dict]):
    """(the instance every counterexample shares, each one's own further values), or None where
    they differ in more than values some of them add (a normalizer's parameter, e.g. s = 0)."""
    head = ("d", "n", "mask", "indices", "functions")
    if any(any(ce.get(k) != ces[0].get(k) for k in head) for ce in ces) or ces[0].get("functions"):
        return None
    keys = [set(ce["values"]) for ce in ces]
    shared = set.intersection(*keys)
    if any(ce["values"][k] != ces[0]["values"][k] for ce in ces for k in shared):
        return None
    base = {**{k: ces[0].get(k) for k in head}, "values": {k: v for k, v in ces[0]["values"].items() if k in shared}}
    extra = [{k: v for k, v in ce["values"].items() if k not in shared} for ce in ces]
    if not any(not e for e in extra):  # no variant has the shared instance alone: list each in full
        return None
    return base, extra
