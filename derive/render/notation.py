"""The notation sheet: every symbol the documents share, written once, with its one meaning.

Each :class:`Symbol` is how the documents write a quantity (LaTeX), what it means, and, where the
engine has a symbol of its own for it, the engine's name: :data:`SYMBOLS` (the LaTeX printer's
table, :mod:`derive.render.latex`) is read off the sheet, so an engine symbol prints as the sheet
writes it in every document. ``docs/notation.md`` prints the sheet once (``proofs/notation.py``);
the documents link to it and define only what is their own, and the templates take the symbols
of their fixed sentences from it (:func:`math`).

:data:`RETIRED` lists spellings the documents no longer use, each with the symbol that replaced
it: ``tests/test_notation.py`` fails when a document's math uses one.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GROUPS", "RETIRED", "SHEET", "SYMBOLS", "Symbol", "math"]


@dataclass(frozen=True)
class Symbol:
    key: str  # how code and templates ask for it
    latex: str  # how every document writes it
    meaning: str  # prose markup
    group: str  # the sheet's section
    engine: str = ""  # the engine's own symbol name, printed as ``latex`` (empty: none)


GROUPS = ("Rows, keys and masks", "Scores and weights", "The extra token", "Kernels", "Backward pass",
          "Functions")

SHEET: tuple[Symbol, ...] = (
    # rows, keys and masks
    Symbol("i", "i", "the query row", GROUPS[0]),
    Symbol("t", "t, u", "a key of the row, bound by a sum over the row", GROUPS[0]),
    Symbol("j", "j, k", "particular keys of the row ($k \\ne j$ in a Jacobian)", GROUPS[0]),
    Symbol("n", "n", "the number of keys of a row (symbolic); $1, \\dots, n$ are its keys", GROUPS[0]),
    Symbol("M", "M_{i,t}", "the mask: 1 if row $i$ may attend to key $t$, else 0 (any set of allowed keys)",
           GROUPS[0]),
    Symbol("N", "N_i", "the number of allowed keys of row $i$, $N_i = \\sum_t M_{i,t}$", GROUPS[0]),
    Symbol("d", "d", "the head dimension (symbolic): vectors live in $\\mathbb{R}^d$", GROUPS[0]),
    Symbol("qkv", "q_i, k_t, v_t", "the query of row $i$, the key and value of key $t$", GROUPS[0]),
    Symbol("bias", "b_Q, b_K, b_V", "biases added to every query, key, value (after the projection)", GROUPS[0]),
    Symbol("proj", "q^{0}_i, k^{0}_t", "the projections without bias", GROUPS[0]),
    Symbol("dot", "\\langle a, b \\rangle", "the dot product of two vectors", GROUPS[0]),
    # scores and weights
    Symbol("x", "x_{i,t}", "the score of key $t$ in row $i$, $\\langle q_i, k_t \\rangle / \\sqrt{d}$ unless a "
           "document says otherwise ($x_t$ when the row is fixed); $x^{0}, x^{Q}, x^{K}$: without bias, with a Q "
           "bias, with a K bias", GROUPS[1]),
    Symbol("p", "p_{i,t}", "the weight of key $t$ in row $i$ (softmax unless a normalizer is named); "
           "$p^{0}, p^{Q}, p^{K}$ are the weights of $x^{0}, x^{Q}, x^{K}$", GROUPS[1]),
    Symbol("p1", "p^{(1)}", "the weights of softmax₁, $e^{x_j}/(1 + \\sum_t e^{x_t})$", GROUPS[1]),
    Symbol("Z", "Z_i", "the sum over the allowed keys $\\sum_t M_{i,t} e^{x_{i,t}}$ (no extra term)", GROUPS[1]),
    Symbol("Zstar", "Z^{*}_i", "the normalizer with the extra token, $e^{x^{*}} + Z_i$", GROUPS[2]),
    Symbol("out", "\\mathrm{out}_i", "the output of row $i$, $\\sum_t p_{i,t} v_t$ (plus the extra token's "
           "share $p_* v^*$)", GROUPS[1]),
    Symbol("c", "c, c_i", "a shift added to every score of a row (row-constant)", GROUPS[1]),
    Symbol("s", "s", "a sink logit: a learned per-head logit in the softmax denominator (gpt-oss)", GROUPS[1],
           engine="s"),
    Symbol("lambda", "\\lambda", "the scale of Scalable-Softmax, $p_j \\propto e^{\\lambda \\log(N_i) x_j}$ "
           "(the entry's parameter `s`)", GROUPS[1], engine="lambda_ssmax"),
    Symbol("ccap", "c_{\\mathrm{cap}}", "the soft cap of Gemma 2 ($c$ alone is a shift)", GROUPS[1],
           engine="c_cap"),
    Symbol("tau", "\\tau", "the parameter of a path of scores, e.g. $x = -\\tau \\mathbf{1}$", GROUPS[1]),
    # the extra token
    Symbol("kstar", "k^{*}, v^{*}", "the extra token's key and value: a learned key/value token "
           "(`add_bias_kv`), the zero token ($k^{*} = 0$, $v^{*} = 0$); a sink has no value ($v^{*} = 0$)",
           GROUPS[2], engine="v^*"),
    Symbol("xstar", "x^{*}", "the extra token's score, the *extra logit*: $\\langle q_i, k^{*} \\rangle/\\sqrt{d}$ "
           "for a learned token ($x^{*}_i$, one per row), 0 for softmax₁ and the zero token, $s$ for a sink",
           GROUPS[2], engine="x_star"),
    Symbol("xstari", "x^{*}_{i}", "the learned token's score in row $i$, $\\langle q_i, k^{*} \\rangle/\\sqrt{d}$",
           GROUPS[2], engine="s_star"),
    Symbol("pstar", "p_{*}", "the extra token's weight, $e^{x^{*}}/(e^{x^{*}} + Z_i)$", GROUPS[2]),
    # kernels
    Symbol("state", "m_b, \\ell_b, \\mathrm{acc}_b", "the state of an online kernel after $b$ tiles: running "
           "maximum, sum and accumulator", GROUPS[3]),
    Symbol("tiles", "a_b, B", "tile $b$ ends at key $a_b$; $B$ tiles in all ($B$ also counts how often a faulty "
           "kernel adds the extra logit)", GROUPS[3], engine="B"),
    Symbol("splits", "r, S", "split $r$ of $S$ in a split-KV kernel", GROUPS[3]),
    Symbol("lse", "\\mathrm{lse}_i", "the log-sum-exp a forward pass saves, $\\log(e^{x^{*}} + Z_i)$", GROUPS[3]),
    Symbol("ratio", "\\varphi, \\psi, E", "the per-key terms and the constant of a ratio of row sums "
           "$p_j = \\varphi(x_j)/(E + \\sum_t M_t \\psi(x_t))$", GROUPS[3]),
    # backward
    Symbol("dO", "\\mathrm{dO}_i", "the upstream gradient of $\\mathrm{out}_i$; the loss of the row is "
           "$L = \\langle \\mathrm{dO}_i, \\mathrm{out}_i \\rangle$", GROUPS[4], engine="dO"),
    Symbol("D", "D_i", "$\\langle \\mathrm{dO}_i, \\mathrm{out}_i \\rangle$ (FlashAttention-2's "
           "$\\mathrm{rowsum}(\\mathrm{dO} \\circ O)$)", GROUPS[4]),
    Symbol("dS", "\\mathrm{dS}_{i,t}", "$\\partial L / \\partial x_{i,t}$; $\\mathrm{dQ}, \\mathrm{dK}, "
           "\\mathrm{dV}$ the gradients of the queries, keys and values", GROUPS[4]),
    Symbol("rest", "R, U", "the other allowed keys of a row: $R = \\sum_{t \\ne j} M_t e^{x_t}$, "
           "$U = \\sum_{t \\ne j} M_t e^{x_t} v_t$", GROUPS[4], engine="U"),
    # functions
    Symbol("sigma", "\\sigma", "the logistic function $1/(1 + e^{-x})$, and nothing else", GROUPS[5]),
    Symbol("H", "H", "the unit step, $H(y) = 1$ for $y > 0$, else 0", GROUPS[5]),
    Symbol("kappa", "\\kappa", "the condition number of a row in `derive impl`'s tolerance (never a key)", GROUPS[5]),
    Symbol("relu", "\\operatorname{ReLU}", "$\\max(0, \\cdot)$", GROUPS[5]),
)

# engine symbol name → LaTeX, for the printer (one table, read off the sheet)
SYMBOLS: dict[str, str] = {
    "c_cap": r"c_{\mathrm{cap}}",
    "s_star": r"x^{*}_{i}",
    "s^*_i": r"x^{*}_{i}",  # the registry's symbol for add_bias_kv's parameter s_star
    "x_star": r"x^{*}",
    "lambda_ssmax": r"\lambda",
    "dO": r"\mathrm{dO}",
    "B": "B",
    "v^*": r"v^{*}",
    "k^*": r"k^{*}",
}
assert {s.engine for s in SHEET if s.engine} | {"k^*", "s^*_i"} >= set(SYMBOLS), "every printed engine symbol is on the sheet"

# spellings the documents no longer use (LaTeX as the printer writes it) → what replaced them
RETIRED: dict[str, str] = {
    "s_{ij}": "x_{i,j}",
    "s^{0}": "x^{0}",
    "s^{Q}": "x^{Q}",
    "s^{K}": "x^{K}",
    "s^{*}_{i}": "x^{*}_{i}",
    "\\nu": "v^{*}",
    "P_\\sigma": "p_{*}",
    "\\theta": "H",
}


def math(key: str) -> str:
    """The LaTeX of the sheet's symbol ``key`` (for templates and fixed sentences)."""
    for s in SHEET:
        if s.key == key:
            return s.latex
    raise KeyError(f"the notation sheet has no symbol {key!r}")
