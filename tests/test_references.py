"""Citations: every document names its sources, from one bibliography, and cites only listed works."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from derive.atlas import ORDER, SOURCES
from derive.document.api import Document
from derive.references import REFERENCES, citation, markdown_section
from derive.errors import InputError
from derive.normalizers.registry import REGISTRY

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_citation_text_is_author_and_year():
    assert citation(["miller2023"]) == "(Miller, 2023)"
    assert citation(["dao2022", "dao2023"]) == "(Dao et al., 2022; Dao, 2023)"
    assert citation(["pytorch-mha"]) == "(PyTorch documentation)"  # living documentation has no year


def test_prose_citation_is_recorded_once_in_order_of_first_use():
    doc = Document("demo", "Demo", summary="Softmax {cite:vaswani2017}.")
    doc.prose("Off by one {cite:miller2023}; again {cite:miller2023,vaswani2017}.")
    assert doc.summary == "Softmax (Vaswani et al., 2017)."
    assert doc.blocks[-1].text == "Off by one (Miller, 2023); again (Miller, 2023; Vaswani et al., 2017)."
    assert doc.cited == ["vaswani2017", "miller2023"]


def test_unknown_citation_key_stops_the_build():
    doc = Document("demo", "Demo")
    with pytest.raises(InputError, match=r"demo: the citation \{cite:miler2023\} names 'miler2023', which "
                                         r"derive/references.py does not list"):
        doc.prose("Off by one {cite:miler2023}.")


def test_markdown_section_lists_each_work_once_sorted():
    text = markdown_section(["vaswani2017", "miller2023", "vaswani2017"])
    assert text.splitlines()[0] == "## References"
    entries = [line for line in text.splitlines() if line.startswith("- ")]
    assert len(entries) == 2 and entries[0].startswith("- E. Miller (2023). *Attention is off by one*.")


def test_every_source_is_a_listed_work():
    assert set(SOURCES) == set(ORDER)
    for keys in list(SOURCES.values()) + [e.sources for e in REGISTRY.values()]:
        assert set(keys) <= set(REFERENCES)


@pytest.mark.parametrize("name", ["qk-bias.md", "softmax-one.md", "normalizers.md", "kernels.md", "atlas.md",
                                  "impl-check.md"])
def test_each_document_has_a_references_section_listing_what_it_cites(name):
    text = (DOCS / name).read_text(encoding="utf-8")
    body, _, refs = text.partition("\n## References\n")
    assert refs, f"{name} has no References section"
    refs = refs.split("\n## ", 1)[0]
    listed = [line for line in refs.splitlines() if line.startswith("- ")]
    assert listed
    atlas = {k for keys in SOURCES.values() for k in keys}
    for ref in REFERENCES.values():  # a listed work is cited in the body (the atlas: by a variant), and vice versa
        cited = (ref.key in atlas) if name == "atlas.md" else (
            f"({ref.short}, {ref.year}" if ref.year else f"({ref.short}") in body.replace("; ", "; (")
        shown = any(ref.title in line.replace("`", "") for line in listed)  # snake_case names print as code
        assert cited == shown, (name, ref.key, cited, shown)


def test_sources_named_by_the_issue_are_cited():
    text = {n: (DOCS / n).read_text(encoding="utf-8") for n in ("qk-bias.md", "softmax-one.md", "normalizers.md")}
    assert "Attention is off by one" in text["softmax-one.md"]
    assert "add_zero_attn" in text["normalizers.md"] and "Gemma 2" in text["normalizers.md"]
    assert re.search(r"Bondarenko et al\., 2023", text["normalizers.md"])
    assert "an article on Q and K biases (Q/K-bias article)" in text["qk-bias.md"]
    assert "The article's table (Q/K-bias article) has these scores" in text["qk-bias.md"]  # its table, recomputed


@pytest.mark.parametrize("name", ["atlas.md", "normalizers.md", "softmax-one.md", "qk-bias.md", "kernels.md"])
def test_links_to_anchors_land_on_an_anchor(name):
    """Every [text](#id) and [text](normalizers.md#id) link lands on an <a id> of its target."""
    text = (DOCS / name).read_text(encoding="utf-8")
    def ids(f: str) -> set[str]:  # explicit <a id> anchors and GitHub's heading slugs
        t = (DOCS / f).read_text(encoding="utf-8")
        slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.*)$", t, re.M)}
        return set(re.findall(r'<a id="([^"]+)"', t)) | slugs

    for target, anchor in re.findall(r"\]\(((?:[a-z0-9-]+\.md)?)#([A-Za-z0-9_-]+)\)", text):
        assert anchor in ids(target or name), (name, target, anchor)


def test_normalizer_derivations_are_grouped_by_property_with_each_claim_stated_once():
    text = (DOCS / "normalizers.md").read_text(encoding="utf-8")
    assert text.count("**Claim** (") == text.count('<a id="nrm-prop-')
    # one entry for derivations that read the same: softmax₁ and the zero token, wherever they appear
    headings = [h for h in re.findall(r"^#### (.*)$", text, re.M) if "`softmax1`" in h]
    assert len(headings) == 14 and all("`zero_token`" in h for h in headings), headings
    assert sum("`softmax1`, `zero_token`" in h for h in headings) >= 12, headings
    section = text.split('<a id="nrm-prop-weights-sum-to-one">')[1].split('<a id="nrm-prop-mass-range">')[0]
    # the counterexamples of one property share their instance: it is stated once, not per normalizer
    assert section.count("$`x = [[2, 1], [0, -1]]`$") == 1, section
    # one statement per verdict: no "Proved — …" paragraph above a checked equation that says it again
    assert "Result:" not in text and "**Proved** —" not in text


def test_atlas_states_each_claim_once():
    text = (DOCS / "atlas.md").read_text(encoding="utf-8")
    assert "| Claim | Statement | Verdict | Reason |" not in text  # the details state each claim
    assert "numeric cross-check: 20 random instances" not in text  # stated once, above the details
    assert "by the row-constant term" in text and "by the row-constant," not in text
    assert "sum to 1 > 0" not in text and "every row with an allowed key sum to 1 (proved)" in text


def test_embedded_report_states_each_step_once():
    from derive.report.render import _embedded_steps

    steps = [{"text": "score", "latex": "s"}, {"text": "compared with", "latex": "s'"},
             {"text": "difference of the scores, expanded by bilinearity", "latex": "b' - b"},
             {"text": "the difference does not involve the key j", "latex": ""},
             {"text": "the same, writing b' = b + Δb", "latex": "Δb"},
             {"text": "numeric cross-check: 20 random instances", "latex": ""}]
    shown = _embedded_steps(steps, "s", "numeric cross-check: 20 random instances", "a reason")
    assert shown == [{"text": "difference of the scores, expanded by bilinearity, writing b' = b + Δb", "latex": "Δb"},
                     {"text": "the difference does not involve the key j", "latex": ""}]
    # a formula the reason shows is not shown again; a score other than the variant's stays
    assert _embedded_steps(steps[2:5], "t", None, "changes by $Δb$") == [steps[3]]
    assert _embedded_steps(steps[:1], "t", None, None) == steps[:1]
