#!/usr/bin/env python3
"""Words of each document's main text, the measure of "readable in a sitting".

**Main text** is the Markdown document from its title to the start of its References section (or of
its appendix, whichever comes first): the results box, the sections and their captions, tables and
step notes included; the References, the appendix (reference material, the numeric checks) and
the generated-file comment excluded. A **word** is a whitespace-separated token with a letter or a
digit in it; a formula written inline (``$`…`$``) counts as one word, a displayed formula
(a ``math`` block) as none, a link counts its text only, an HTML anchor nothing. The ``wc -w`` column
counts every whitespace-separated token of the whole file, formulas' pieces included, for comparison.

    python benchmarks/doc_words.py                 # every document in docs/, main text and all
    python benchmarks/doc_words.py --ref main      # the same documents at a git revision, beside today's

``tests/test_readability.py`` holds qk-bias, softmax-one, kernels and normalizers to LIMIT words.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 5000
HELD = ("qk-bias.md", "softmax-one.md", "kernels.md", "normalizers.md")  # the documents held to LIMIT

_ENDS = re.compile(r"^(## References|<a id=\"appendix\"></a>|## Appendix)", re.M)


def main_text(markdown: str) -> str:
    """The main text of a generated document (see the module docstring)."""
    text = re.sub(r"<!--.*?-->", "", markdown, flags=re.S)
    end = _ENDS.search(text)
    return text[:end.start()] if end else text


def words(markdown: str) -> int:
    """Words of ``markdown`` by the rule of the module docstring."""
    text = re.sub(r"```math\n.*?```", " ", markdown, flags=re.S)  # displays: no words
    text = re.sub(r"```.*?```", " ", text, flags=re.S)  # other code blocks count as their text
    text = re.sub(r"\$`[^`]*`\$", " M ", text)  # an inline formula: one word
    text = re.sub(r"<a id=\"[^\"]*\"></a>", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)  # a link: its text
    return sum(1 for tok in text.split() if re.search(r"[^\W_]", tok))


def main_words(markdown: str) -> int:
    return words(main_text(markdown))


def _at(ref: str, name: str) -> str | None:
    out = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:docs/{name}"], capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", help="also measure the documents at this git revision")
    args = ap.parse_args()
    head = f"{'document':22} {'main text':>10} {'all':>8} {'wc -w':>8}"
    if args.ref:
        head += f"   {'main text at ' + args.ref:>20} {'all at ' + args.ref:>14} {'wc -w at ' + args.ref:>14}"
    print(head)
    over = []
    for path in sorted((ROOT / "docs").glob("*.md")):
        md = path.read_text(encoding="utf-8")
        line = f"{path.name:22} {main_words(md):10d} {words(md):8d} {len(md.split()):8d}"
        if args.ref:
            old = _at(args.ref, path.name)
            line += (f"   {main_words(old):20d} {words(old):14d} {len(old.split()):14d}" if old is not None
                     else f"   {'—':>20} {'—':>14} {'—':>14}")
        print(line + ("   (held to ≤ %d)" % LIMIT if path.name in HELD else ""))
        if path.name in HELD and main_words(md) > LIMIT:
            over.append(path.name)
    if over:
        print(f"over {LIMIT} words of main text: {', '.join(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
