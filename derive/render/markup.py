"""Prose markup parsed once, rendered twice: GitHub Markdown and LaTeX.

Prose, captions, reasons and table cells are written in a small Markdown: ``$…$`` inline
math, ``**bold**``, ``*emphasis*``, `` `code` ``, ``[text](#anchor)`` links, numbered and
bulleted lists. They are parsed by markdown-it-py (CommonMark) with the ``dollarmath`` plugin,
and the syntax tree is printed for each target, so a ``*`` is emphasis or a literal star by
the same rule on both, and a numbered list stays a list.

>>> to_gfm("Step *one*: $x_i$ and s_star.")
'Step *one*: $`x_i`$ and `s_star`.'
>>> to_tex("Step *one*: $x_i$ and a literal \\\\* star.")
'Step \\\\emph{one}: $x_i$ and a literal * star.'
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from derive.render.breaking import cell_args, fit_args

__all__ = ["gfm_escape", "mark_pseudo_math", "math_text", "plain_math", "tex_code", "tex_math", "tex_text", "to_gfm", "to_tex"]


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # CommonMark without raw HTML (prose is text, "a < b" stays text); $…$ math; no $$ inline.
    # Imported here: a report without Markdown prose (derive check --format json) needs no parser.
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    return (MarkdownIt("commonmark", {"html": False})
            .disable(["heading", "lheading", "html_block", "html_inline", "hr", "code", "reference"])
            .use(dollarmath_plugin, allow_space=True, allow_digits=True, double_inline=False))


def _tree(text: str, inline: bool) -> SyntaxTreeNode:
    from markdown_it.tree import SyntaxTreeNode

    text = mark_pseudo_math(text)
    md = _parser()
    tokens = md.parseInline(text) if inline else md.parse(text)
    return SyntaxTreeNode(tokens)


# -- pseudo-math in plain text ------------------------------------------------------------
# Authors and engine messages write e^{−c}, M_{i,u}, c_i, lse_r in running text; they are
# printed as math. A snake_case name (s_star, zero_token) is a name: printed as code.

_LETTER = "A-Za-zα-ωΑ-Ωℓ"
_SCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ᵀⁿ₀₁₂₃₄₅₆₇₈₉ᵢⱼₖₜ₊₋"
_BRACED = r"\{(?:[^{}]|\{[^{}]*\})*\}"
_PSEUDO = re.compile(
    rf"(?<![\w./\\])(?P<path>[\w/-]*\w\.(?:py|md|toml|json|j2|yml|yaml))\b"
    rf"|(?<![\w\\])(?<!\w\.)(?P<tok>[{_LETTER}0-9][{_LETTER}0-9*{_SCRIPTS}]*"
    rf"(?:[_^](?:{_BRACED}|[{_LETTER}0-9*]+)[{_SCRIPTS}]*)+(?:'(?![A-Za-z]))*)(?:(?<=\}})|(?<=')|(?![\w(]))")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")


def _is_name(tok: str) -> bool:
    if not _NAME.fullmatch(tok):
        return False
    base, *rest = tok.split("_")
    return any(len(r) >= 3 for r in rest) or (len(base) >= 3 and any(len(r) >= 2 and r.islower() for r in rest))


def _pseudo_tex(tok: str) -> str:
    head = re.match(r"[A-Za-z]{2,}(?=[_^])", tok)
    if head:  # lse_r, acc_r: a multi-letter name is upright
        tok = rf"\mathrm{{{head.group()}}}" + tok[head.end():]
    tok = re.sub(r"([_^])([A-Za-z0-9]{2,})", r"\1{\2}", tok)  # lse_KV → lse_{KV}
    return tex_math(tok)


def _split_pseudo(text: str) -> list[tuple[str, str]]:
    """``[(kind, s)]`` with kind ``text``, ``math`` (LaTeX source) or ``code``."""
    out, pos = [], 0
    for m in _PSEUDO.finditer(text):
        tok = m.group("tok")
        if tok is None:
            kind, body = "code", m.group("path")
        elif _is_name(tok):
            kind, body = "code", tok
        elif "_" not in tok and "^" not in tok:
            continue
        else:
            kind, body = "math", _pseudo_tex(tok)
        out.append(("text", text[pos:m.start()]))
        out.append((kind, body))
        pos = m.end()
    out.append(("text", text[pos:]))
    out = [(k, v) for k, v in out if v]
    merged = []  # b_Q·b_K, e^{x_j}/Z: two math pieces joined by symbols are one formula
    for kind, v in out:
        if (kind == "math" and len(merged) >= 2 and merged[-2][0] == "math" and merged[-1][0] == "text"
                and _join_pattern().fullmatch(merged[-1][1])):
            joint = merged.pop()[1]
            merged[-1] = ("math", merged[-1][1] + _math_ops(joint) + v)
        else:
            merged.append((kind, v))
    return merged


@lru_cache(maxsize=1)
def _join_pattern() -> re.Pattern:
    return re.compile("[" + re.escape("".join(sorted(set(_MATH_SYMBOLS) - {"√"}))) + "/+-]+")


def _math_ops(ops: str) -> str:
    out = "".join(_math_run(c) + (" " if _math_run(c)[-1].isalpha() else "") if c in _MATH_SYMBOLS else c
                  for c in ops)
    return out


# math, code spans and link targets are left as they are
_PROTECTED = re.compile(r"(\$\$.*?\$\$|\$[^$\n]+\$|`[^`\n]*`|\]\([^)\s]*\))", re.S)


def mark_pseudo_math(text: str) -> str:
    """Mark pseudo-math in prose source as ``$…$`` math and snake_case names as code,
    before the Markdown parser sees their ``_``, ``^`` and ``*``.

    >>> mark_pseudo_math("the 1 becomes e^{−c} for M_{i,1}; s_star = 1, $x_i$ stays")
    'the 1 becomes $e^{-c}$ for $M_{i,1}$; `s_star` = 1, $x_i$ stays'
    >>> mark_pseudo_math("p_ij with b_k', the zero_token's key")
    "$p_{ij}$ with $b_k'$, the `zero_token`'s key"
    """
    parts = _PROTECTED.split(text)
    for k in range(0, len(parts), 2):
        parts[k] = "".join(v if kind == "text" else (f"`{v}`" if kind == "code" else f"${v}$")
                           for kind, v in _split_pseudo(parts[k]))
    return "".join(parts)


# -- GitHub Markdown ---------------------------------------------------------------------

# Characters that would start markup again when the text is read by GitHub's parser.
_GFM_ESCAPE = re.compile(r"([\\`*$]|<(?=[A-Za-z/!?]))|(?<![A-Za-z0-9])(_)|(_)(?![A-Za-z0-9])")


def gfm_escape(text: str) -> str:
    r"""Plain text for GitHub Markdown: ``*``, `` ` ``, ``$``, ``\`` and word-edge ``_`` escaped.

    >>> gfm_escape("x*2 for *every* s_t and _x_")
    'x\\*2 for \\*every\\* s_t and \\_x\\_'
    """
    return _gfm_text(text)


def _gfm_text(text: str) -> str:
    return _GFM_ESCAPE.sub(lambda m: "\\" + (m.group(1) or m.group(2) or m.group(3)), text)


def to_gfm(text: str, *, inline: bool = False) -> str:
    """GitHub Markdown for prose: math as ``$`…`$`` (safe with ``_``, ``\\\\`` and ``*``)."""
    if not text:
        return text
    out = _GfmWriter().render(_tree(text, inline))
    return out.strip("\n")


class _GfmWriter:
    def __init__(self):
        self.in_link = 0

    def render(self, node: SyntaxTreeNode, indent: str = "") -> str:
        t = node.type
        if t in ("root", "inline"):
            if t == "root" and node.children and node.children[0].type != "inline" and indent == "":
                return self._blocks(node.children, indent)
            return "".join(self.render(c, indent) for c in node.children)
        if t == "paragraph":
            return "".join(self.render(c, indent) for c in node.children)
        if t in ("bullet_list", "ordered_list"):
            return self._list(node, indent)
        if t == "math_block" or t == "math_block_label":
            body = node.content.strip().replace("\n", "\n" + indent)
            return f"```math\n{indent}{body}\n{indent}```"
        if t == "fence":
            return f"```{node.info}\n{node.content}```"
        if t == "blockquote":
            inner = self._blocks(node.children, "")
            return "\n".join("> " + ln if ln else ">" for ln in inner.split("\n"))
        if t == "text":
            return _gfm_text(node.content)
        if t == "softbreak":
            return "\n" + indent
        if t == "hardbreak":
            return "\\\n" + indent
        if t == "code_inline":
            fence = "``" if "`" in node.content else "`"
            pad = " " if "`" in node.content else ""
            return f"{fence}{pad}{node.content}{pad}{fence}"
        if t == "math_inline":
            # GitHub renders no math inside link text: the math's plain reading instead
            return _gfm_text(math_text(node.content)) if self.in_link else f"$`{node.content.strip()}`$"
        if t == "em":
            return "*" + self._inline(node, indent) + "*"
        if t == "strong":
            return "**" + self._inline(node, indent) + "**"
        if t == "link":
            self.in_link += 1
            label = self._inline(node, indent)
            self.in_link -= 1
            return f"[{label}]({node.attrs['href']})"
        raise ValueError(f"prose markup: no Markdown rendering for {t!r}")

    def _inline(self, node, indent):
        return "".join(self.render(c, indent) for c in node.children)

    def _blocks(self, children, indent: str) -> str:
        return ("\n\n" + indent).join(self.render(c, indent) for c in children)

    def _list(self, node, indent: str) -> str:
        lines = []
        start = int(node.attrs.get("start", 1)) if node.type == "ordered_list" else 1
        for k, item in enumerate(node.children):
            marker = f"{start + k}. " if node.type == "ordered_list" else "- "
            sub = indent + " " * len(marker)
            body = ("\n\n" + sub).join(self.render(c, sub) for c in item.children)
            lines.append(marker + body)
        return ("\n" + indent).join(lines)


# -- LaTeX --------------------------------------------------------------------------------

_TEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "#": r"\#", "_": r"\_", "{": r"\{",
    "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "$": r"\$",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}
# Symbols as math in running text (a minus is a minus, not a hyphen)
_MATH_SYMBOLS = {
    "→": r"\to", "−": "-", "·": r"\cdot", "≠": r"\neq", "≤": r"\leq", "≥": r"\geq", "∞": r"\infty",
    "≡": r"\equiv", "‖": r"\|", "⟨": r"\langle", "⟩": r"\rangle", "×": r"\times", "⟂": r"\perp",
    "∂": r"\partial", "≈": r"\approx", "±": r"\pm", "∈": r"\in", "∘": r"\circ", "∉": r"\notin",
    "ℓ": r"\ell", "⇒": r"\Rightarrow", "≢": r"\not\equiv", "⌈": r"\lceil", "⌉": r"\rceil",
    "∑": r"\sum", "←": r"\leftarrow", "√": r"\surd", "∀": r"\forall", "∃": r"\exists",
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\varepsilon", "ζ": r"\zeta",
    "η": r"\eta", "θ": r"\theta", "κ": r"\kappa", "λ": r"\lambda", "μ": r"\mu", "ν": r"\nu",
    "π": r"\pi", "ρ": r"\rho", "σ": r"\sigma", "τ": r"\tau", "φ": r"\varphi", "ψ": r"\psi",
    "ω": r"\omega", "Σ": r"\Sigma", "Δ": r"\Delta", "Π": r"\Pi", "Ω": r"\Omega", "⊙": r"\odot",
    "∣": r"\mid", "⌊": r"\lfloor", "⌋": r"\rfloor", "∅": r"\emptyset", "⊂": r"\subset", "⊆": r"\subseteq",
    "′": "'", "∪": r"\cup", "∩": r"\cap", "↦": r"\mapsto", "≪": r"\ll", "≫": r"\gg", "∝": r"\propto",
    "∓": r"\mp", "𝕄": r"\mathbb{M}",
}
_SUP = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ᵀⁿ", "0123456789+-()Tn"))
_SUB = dict(zip("₀₁₂₃₄₅₆₇₈₉ᵢⱼₖₜ₊₋", "0123456789ijkt+-"))
_TEXT_ONLY = {
    "—": "---", "–": "--", "…": r"\dots{}", "“": "``", "”": "''", "’": "'", "′": "'",
    "✅": r"$\checkmark$", "✔": r"$\checkmark$", "❌": r"$\times$", "❓": "?", "⊘": r"$\oslash$", "\u00a0": "~",
    "†": r"\textdagger{}",
}


def _math_run(chars: str) -> str:
    """A run of math characters (symbols, super- and subscripts) as one LaTeX math string."""
    out, k = [], 0
    while k < len(chars):
        c = chars[k]
        for table, op in ((_SUP, "^"), (_SUB, "_")):
            if c in table:
                j = k
                while j < len(chars) and chars[j] in table:
                    j += 1
                out.append(f"{op}{{{''.join(table[x] for x in chars[k:j])}}}")
                k = j
                break
        else:
            sym = _MATH_SYMBOLS[c]
            out.append(sym + (" " if sym[-1].isalpha() and sym.startswith("\\") else ""))
            k += 1
    return "".join(out).rstrip()


_MATHY = set(_MATH_SYMBOLS) | set(_SUP) | set(_SUB)
_RUN = re.compile("[" + re.escape("".join(sorted(_MATHY))) + "]+")


def tex_text(text: str) -> str:
    """Plain text (no markup) as LaTeX: specials escaped, Unicode symbols set as math.

    >>> tex_text("50% of k⁰₁ − 1 → √d")
    '50\\\\% of k$^{0}_{1}$ $-$ 1 $\\\\to$ $\\\\sqrt{d}$'
    """
    url = _URL.search(text)
    if url:  # a bare address: \url breaks it at / and . instead of running into the margin
        return (tex_text(text[:url.start()]) + "\\url{" + url.group().replace("%", "\\%").replace("#", "\\#") + "}"
                + tex_text(text[url.end():]))
    out, pos = [], 0
    for m in _SQRT.finditer(text):  # √d, √(d_k): the radical over its argument
        out.append(_symbols_text(text[pos:m.start()]))
        out.append(f"$\\sqrt{{{_math_run_text(m.group(1))}}}$")
        pos = m.end()
    out.append(_symbols_text(text[pos:]))
    return "".join(out)


_URL = re.compile(r"https?://[^\s<>()]+[^\s<>().,;:!?'\"]")
_SQRT = re.compile(r"√([A-Za-z0-9]+|\([^()]*\))")


def _math_run_text(arg: str) -> str:
    return tex_math(arg[1:-1] if arg.startswith("(") else arg)


def _symbols_text(text: str) -> str:
    out, pos = [], 0
    for m in _RUN.finditer(text):
        out.append(_plain(text[pos:m.start()]))
        out.append(f"${_math_run(m.group())}$")
        pos = m.end()
    out.append(_plain(text[pos:]))
    return "".join(out)


def _plain(text: str) -> str:
    return "".join(_TEXT_ONLY.get(c) or _TEX_SPECIAL.get(c) or _typesettable(c) for c in text)


def _typesettable(c: str) -> str:
    # pdflatex (utf8, T1) sets ASCII, Latin-1 and accented Latin letters (é, Ł); any other
    # character (a spec's name may contain one) would stop it with an error
    if c < "\x80" or "\xa0" <= c <= "\xff" or unicodedata.name(c, "").startswith("LATIN "):
        return c
    return "?"


def tex_code(code: str) -> str:
    """Code (a name, a claim, a JSON value) as LaTeX typewriter text, specials escaped.

    >>> tex_code("s_star & 50% #1")
    '\\\\texttt{s\\\\_star \\\\& 50\\\\% \\\\#1}'
    """
    return "\\texttt{" + tex_text(code).replace("'", "\\textquotesingle{}") + "}"


def tex_math(latex: str) -> str:
    """Math source for pdflatex: Unicode symbols typed inside ``$…$`` become commands."""
    out, pos = [], 0
    for m in _RUN.finditer(latex):
        out.append(latex[pos:m.start()])
        run = _math_run(m.group())
        out.append(run + (" " if run[-1:].isalpha() and m.end() < len(latex) and latex[m.end()].isalpha() else ""))
        pos = m.end()
    out.append(latex[pos:])
    return "".join(out)


def to_tex(text: str, *, inline: bool = False, cell: bool = False) -> str:
    """LaTeX for prose. ``[text](#anchor)`` links to a section, ``[text](other.md#x)`` to section x
    of the other document's PDF (beside this one), numbered steps become ``enumerate``."""
    if not text:
        return text
    return _TexWriter(fit=cell).render(_tree(text, inline or cell)).strip("\n")


class _TexWriter:
    def __init__(self, fit: bool = False):
        self.fit = fit  # in a table cell: each formula is scaled down to the column if wider

    def render(self, node: SyntaxTreeNode) -> str:
        t = node.type
        kids = lambda: "".join(self.render(c) for c in node.children)
        if t == "root":
            return "\n\n".join(self.render(c) for c in node.children) if node.children and \
                node.children[0].type != "inline" and node.children[0].type != "text" else kids()
        if t in ("inline", "paragraph"):
            return kids()
        if t in ("bullet_list", "ordered_list"):
            env = "enumerate" if t == "ordered_list" else "itemize"
            items = ["\\item " + "\n\n".join(self.render(c) for c in it.children) for it in node.children]
            return f"\\begin{{{env}}}\n" + "\n".join(items) + f"\n\\end{{{env}}}"
        if t in ("math_block", "math_block_label"):
            # \fitmath (document.tex.j2): a display, broken into lines if wider than the text
            return "\\fitmath" + fit_args(tex_math(node.content.strip()))
        if t == "fence":
            return "\\begin{verbatim}\n" + node.content + "\\end{verbatim}"
        if t == "blockquote":
            return "\\begin{quote}\n" + "\n\n".join(self.render(c) for c in node.children) + "\n\\end{quote}"
        if t == "text":
            return tex_text(node.content)
        if t == "softbreak":
            return "\n"
        if t == "hardbreak":
            return "\\\\\n"
        if t == "code_inline":
            return tex_code(node.content)
        if t == "math_inline":
            if self.fit:
                return "\\fitcell" + cell_args(tex_math(node.content.strip()))
            return f"${tex_math(node.content.strip())}$"
        if t == "em":
            return "\\emph{" + kids() + "}"
        if t == "strong":
            return "\\textbf{" + kids() + "}"
        if t == "link":
            href = node.attrs["href"]
            label = kids()
            if href.startswith("#"):
                return f"\\hyperlink{{{href[1:]}}}{{{label}}}"
            if re.match(r"https?://", href):
                return f"\\href{{{href.replace('%', chr(92) + '%').replace('#', chr(92) + '#')}}}{{{label}}}"
            doc = re.fullmatch(r"([\w-]+)\.md(?:#([\w-]+))?", href)
            if doc:  # another document: a link into its PDF, beside this one (hyperref: a GoToR action)
                target = doc.group(1) + ".pdf" + (chr(92) + "#" + doc.group(2) if doc.group(2) else "")
                return f"\\href{{{target}}}{{{label}}}"
            return label  # any other file (a JSON, a module): the text only
        raise ValueError(f"prose markup: no LaTeX rendering for {t!r}")


# -- math read aloud (for places that show no math: link text, plain JSON) -----------------

_COMMANDS = {v.strip(): k for k, v in _MATH_SYMBOLS.items() if v.startswith("\\")}
_COMMANDS.update({r"\le": "≤", r"\ge": "≥", r"\ne": "≠", r"\cdot": "·", r"\to": "→", r"\infty": "∞",
                  r"\log": "log", r"\exp": "exp", r"\max": "max", r"\min": "min", r"\sum": "∑",
                  r"\operatorname": "", r"\mathrm": "", r"\mathbf": "", r"\text": "", r"\left": "", r"\right": "",
                  r"\sqrt": "√", r"\,": " ", r"\;": " ", r"\quad": " "})


_BARS = {"lvert": "\x03", "rvert": "\x04", "lVert": "\x05", "rVert": "\x06",
         "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉"}
_BRACED_ARG = r"\{((?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)\}"
_FRAC = re.compile(r"\\frac\s*" + _BRACED_ARG + r"\s*" + _BRACED_ARG)


def _part(arg: str) -> str:
    arg_ = arg.strip()
    if arg_.startswith(r"\langle") and arg_.endswith(r"\rangle") and arg_.count(r"\langle") == 1:
        return arg  # one inner product ⟨a, b⟩ is an atom, whatever is inside
    atom = re.fullmatch(r"[\w\\{}^]*|\\sqrt\{\w*\}", arg_)
    return arg if atom else f"({arg})"


def math_text(latex: str) -> str:
    """A plain reading of simple LaTeX math (``\\sqrt{d}`` → ``√d``), for where no math renders.

    >>> math_text(r"\\langle q_i, k_j \\rangle / \\sqrt{d}")
    '⟨q_i, k_j⟩ / √d'
    >>> math_text(r"- r{\\left(- i + j \\right)} + r'{\\left(- i + j \\right)}")
    "−r(−i + j) + r'(−i + j)"
    >>> math_text(r"\\lvert y - p \\rvert \\le \\mathrm{eps} \\cdot \\lvert p \\rvert, s \\in \\{0, -\\infty\\}")
    '|y − p| ≤ eps · |p|, s ∈ {0, −∞}'
    >>> math_text(r"\\frac{\\langle b_{q}, R_{- i + j}\\,\\Delta b_{k} \\rangle}{\\sqrt{d}} + J_{jk}")
    '⟨b_q, R_(−i + j) Δb_k⟩/√d + J_jk'
    >>> math_text(r"\\frac{1}{N_i}")
    '1/N_i'
    >>> math_text(r"s^{*}_{i} - c, k^*")
    's*_i − c, k*'
    >>> math_text(r"s = - c, \\; b - c")
    's = −c, b − c'
    >>> math_text(r"\\min(1, \\frac{\\zeta - \\gamma + \\gamma N_{i}}{N_{i}})")
    'min(1, (ζ − γ + γ N_i)/N_i)'
    """
    s = latex.replace(r"\{", "\x01").replace(r"\}", "\x02")  # a literal brace: {0, 1.5}
    s = re.sub(r"\^\{?\\top\}?", "ᵀ", s)  # c^\top → cᵀ
    s = re.sub(r"\^\{?\*\}?", "*", s)  # s^*_i → s*_i, k^{*} → k*
    s = re.sub(r"\\[lr]vert\b|\\[lr]Vert\b|\\[lr]floor\b|\\[lr]ceil\b", lambda m: _BARS[m.group()[1:]], s)
    while _FRAC.search(s):  # \frac{1}{N_i} → 1/N_i, a compound part in parentheses
        s = _FRAC.sub(lambda m: f"{_part(m.group(1))}/{_part(m.group(2))}", s)
    s = re.sub(r"\\[A-Za-z]+|\\[,;]", lambda m: _COMMANDS.get(m.group(), m.group()[1:]), s)
    # innermost groups first: a one-token exponent as is (e^x_t), a compound one in parentheses
    # (e^{x - m} → e^(x − m)); a subscript and a plain group lose their braces
    sup = lambda m: m.group(1) + (m.group(2) if re.fullmatch(r"[\w'∞*,]*", m.group(2)) else f"({m.group(2)})")
    while (t := re.sub(r"([\^_])\{([^{}]*)\}", sup, re.sub(r"(?<![\^_])\{([^{}]*)\}", r"\1", s))) != s:
        s = t
    s = s.replace("{", "").replace("}", "")
    s = re.sub(r"([⟨(])\s+", r"\1", re.sub(r"\s+([⟩)])", r"\1", s))  # \left( - i + j \right) → (−i + j)
    s = re.sub(r"(^|[(=,\[]\s?)-\s", r"\1-", s).replace("-", "−")  # in math a hyphen is a minus: "= - c" → "= −c"
    s = re.sub(r"([∂√Δ])\s+", r"\1", s)  # \partial L → ∂L, \Delta b → Δb
    s = re.sub(r"\x03\s*", "|", re.sub(r"\s*\x04", "|", s))  # \lvert y - p \rvert → |y − p|
    s = re.sub(r"\x05\s*", "‖", re.sub(r"\s*\x06", "‖", s))
    return re.sub(r"\s+", " ", s).strip().replace("\x01", "{").replace("\x02", "}")


def plain_math(text: str) -> str:
    r"""Prose markup with each ``$…$`` math span read aloud (:func:`math_text`), for text shown
    where no math renders (a terminal, an image's alt text).

    >>> plain_math(r"seed $m_0 = -\infty$ and add $e^{\sigma - m}$ to $\ell$")
    'seed m_0 = −∞ and add e^(σ − m) to ℓ'
    """
    return re.sub(r"\$([^$\n]+)\$", lambda m: math_text(m.group(1)), text)
