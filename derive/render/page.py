"""A whole Markdown page as LaTeX, for the PDF of a page written as Markdown (the atlas and the
implementation report, rendered by their commands, and ``docs/spec.md``, written by hand): its one
source is the Markdown, so the PDF cannot drift from it.

GitHub's Markdown is parsed with markdown-it-py (CommonMark, tables, raw HTML): headings, paragraphs,
lists, tables, block quotes, fenced code (``math`` fences set as displays), ``$`…`$`` math, links
(``#anchor`` within the page, ``other.md#anchor`` into the other document's PDF), and the few HTML
tags the pages use (``<a id>``, ``<details>``, ``<summary>``, ``<code>``, ``<sub>``). The preamble is
the documents' (``templates/preamble.tex.j2``).
"""

from __future__ import annotations

import re

__all__ = ["page_tex"]

_MATH = re.compile(r"\$`([^`]+)`\$")
_MARK = re.compile("\ue000(\\d+)\ue001")
_TAG = re.compile(r"<(/?)(a|code|sub|summary|details|br|b|strong|em|i)\b([^>]*)>", re.I)


def page_tex(markdown: str, *, version: str, source: str) -> str:
    """The LaTeX document of the Markdown page ``markdown`` (its first ``# `` heading is the title)."""
    from derive.render.output import environment

    maths: list[str] = []

    def stash(m: re.Match) -> str:
        maths.append(m.group(1))
        return f"\ue000{len(maths) - 1}\ue001"

    text = re.sub(r"^<!--.*?-->\n", "", markdown, flags=re.S)
    title, body = "", text
    head = re.match(r"# (.+)\n", text)
    if head:
        title, body = head.group(1), text[head.end():]
    body = _MATH.sub(stash, body)
    latex = _Writer(maths).render(_tree(body))
    title_tex = _Writer(maths).inline(_MATH.sub(stash, title))
    return environment().get_template("page.tex.j2").render(title=title_tex, body=latex, version=version,
                                                           source=source)


def _tree(text: str):
    from markdown_it import MarkdownIt
    from markdown_it.tree import SyntaxTreeNode

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    return SyntaxTreeNode(md.parse(text))


class _Writer:
    def __init__(self, maths: list[str]):
        self.maths = maths
        self.cell = False

    def math(self, text: str) -> str:
        from derive.render.markup import tex_math

        return _MARK.sub(lambda m: "$" + tex_math(self.maths[int(m.group(1))].strip()) + "$", text)

    def text(self, s: str) -> str:
        from derive.render.markup import tex_text

        parts = _MARK.split(s)  # text, index, text, index, …
        out = []
        for k, part in enumerate(parts):
            if k % 2:
                out.append(f"\ue000{part}\ue001")
            elif part:
                out.append(tex_text(part))
        return self.math("".join(out))

    def inline(self, s: str) -> str:
        tree = _tree(s)
        para = tree.children[0] if tree.children else None
        return self.kids(para.children[0]) if para is not None and para.children else ""

    def kids(self, node) -> str:
        return "".join(self.render(c) for c in node.children)

    def render(self, node) -> str:  # noqa: C901 - one case per node type, as the tree has them
        from derive.render.breaking import fit_args
        from derive.render.markup import tex_code, tex_math

        t = node.type
        if t == "root":
            return "\n\n".join(self.render(c) for c in node.children)
        if t == "heading":
            level = int(node.tag[1])
            cmd = {1: "section*", 2: "section*", 3: "subsection*"}.get(level, "subsubsection*")
            return f"\\{cmd}{{{self.kids(node)}}}"
        if t == "paragraph":
            return self.kids(node)
        if t == "inline":
            return self.kids(node)
        if t == "text":
            return self.text(node.content)
        if t == "softbreak":
            return "\n"
        if t == "hardbreak":
            return "\\\\\n"
        if t == "code_inline":
            return tex_code(node.content)
        if t == "em":
            return "\\emph{" + self.kids(node) + "}"
        if t == "strong":
            return "\\textbf{" + self.kids(node) + "}"
        if t == "link":
            return _link(node.attrs.get("href", ""), self.kids(node))
        if t == "image":
            return self.text(node.attrs.get("alt", "") or "")
        if t in ("bullet_list", "ordered_list"):
            env = "enumerate" if t == "ordered_list" else "itemize"
            items = ["\\item " + "\n\n".join(self.render(c) for c in it.children) for it in node.children]
            return f"\\begin{{{env}}}\n" + "\n".join(items) + f"\n\\end{{{env}}}"
        if t == "blockquote":
            return "\\begin{quote}\n" + "\n\n".join(self.render(c) for c in node.children) + "\n\\end{quote}"
        if t in ("fence", "code_block"):
            if t == "fence" and node.info.strip() == "math":
                return "\\fitmath" + fit_args(tex_math(node.content.strip()))
            return _code(node.content)
        if t == "hr":
            return "\\par\\noindent\\rule{\\linewidth}{0.4pt}\\par"
        if t == "table":
            return self.table(node)
        if t in ("html_block", "html_inline"):
            return _html(node.content, self)
        raise ValueError(f"page: no LaTeX for the Markdown node {t!r}")

    def table(self, node) -> str:
        from derive.render.view import WIDEST, _widths

        rows = []
        for part in node.children:  # thead, tbody
            for tr in part.children:
                rows.append([self.kids(td) for td in tr.children])
        raw = [[_plain(c) for c in r] for r in rows]
        headers, body = rows[0], rows[1:]
        cols = list(range(1, len(headers)))
        count = max(1, -(-len(cols) // (WIDEST - 1)))
        groups = [cols[len(cols) * k // count:len(cols) * (k + 1) // count] for k in range(count)] if cols else [[]]
        out = []
        for ks in groups:
            pick = lambda row: [row[0], *(row[k] for k in ks)]  # noqa: E731
            widths = _widths([pick(r) for r in raw])
            n = len(ks) + 1
            spec = "".join(f">{{\\raggedright\\arraybackslash}}p{{\\dimexpr\\cellwidth*{w}/1000\\relax}}" for w in widths)
            lines = [" & ".join(pick(headers)) + " \\\\", "\\midrule", "\\endhead"]
            lines += [" & ".join(pick(r)) + " \\\\" for r in body]
            out.append("\\begingroup\\small\\renewcommand{\\arraystretch}{1.3}\n"
                       f"\\setlength{{\\cellwidth}}{{\\dimexpr\\linewidth-{2 * n}\\tabcolsep\\relax}}\n"
                       f"\\begin{{longtable}}{{{spec}}}\n\\toprule\n" + "\n".join(lines)
                       + "\n\\bottomrule\n\\end{longtable}\n\\endgroup")
        return "\n".join(out)


def _plain(latex: str) -> str:
    """About what a cell shows, for its width: commands and braces dropped."""
    return re.sub(r"\\[a-zA-Z]+\*?|[{}$]", "", latex)


def _link(href: str, label: str) -> str:
    if href.startswith("#"):
        return f"\\hyperlink{{{href[1:]}}}{{{label}}}"
    if re.match(r"https?://", href):
        return f"\\href{{{href.replace('%', chr(92) + '%').replace('#', chr(92) + '#')}}}{{{label}}}"
    doc = re.fullmatch(r"(?:docs/)?([\w-]+)\.md(?:#([\w-]+))?", href)
    if doc:
        return f"\\href{{{doc.group(1)}.pdf" + (f"\\#{doc.group(2)}" if doc.group(2) else "") + f"}}{{{label}}}"
    return label


def _code(code: str) -> str:
    """A code block: typewriter lines, each kept whole where it fits and broken (hanging indent)
    after a space, a comma, an operator or a slash where it does not."""
    from derive.render.markup import tex_text

    lines = []
    for line in code.rstrip("\n").split("\n"):
        lead = len(line) - len(line.lstrip(" "))
        body = tex_text(line.lstrip(" ")).replace("'", "\\textquotesingle{}")
        body = re.sub(r"([,/=|:])(?!\\)", r"\1\\allowbreak{}", body)
        body = body.replace(" ", "\\ \\allowbreak{}")
        lines.append("\\hspace*{" + f"{lead * 0.5:g}" + "em}" + body if lead else body or "~")
    return ("\\begin{codeblock}\n" + "\\par\n".join(lines) + "\\par\n\\end{codeblock}")


def _html(raw: str, writer: _Writer) -> str:
    out, pos = [], 0
    for m in _TAG.finditer(raw):
        out.append(writer.text(raw[pos:m.start()]) if raw[pos:m.start()].strip() else raw[pos:m.start()].strip())
        close, tag, attrs = m.group(1) == "/", m.group(2).lower(), m.group(3)
        if tag == "a" and not close:
            anchor = re.search(r'id="([^"]+)"', attrs)
            out.append(f"\\hypertarget{{{anchor.group(1)}}}{{}}" if anchor else "")
        elif tag == "code":
            out.append("}" if close else "\\texttt{")
        elif tag in ("b", "strong", "summary"):
            out.append("}" if close else "\\par\\noindent\\textbf{" if tag == "summary" else "\\textbf{")
        elif tag in ("em", "i"):
            out.append("}" if close else "\\emph{")
        elif tag == "sub":
            out.append("}" if close else "{\\small ")
        elif tag == "br":
            out.append("\\\\")
        pos = m.end()
    tail = raw[pos:]
    out.append(writer.text(tail) if tail.strip() else "")
    return "".join(out)
