"""Q bias vs K bias in scaled dot-product attention (docs/qk-bias.md).

Reproduces and extends the Q/K-bias article (the source of the worked example): the four-term expansion, the
row-constant classification, softmax's shift invariance for any allowed set, the exact
condition under which a Q bias has no effect, the per-token control, and the worked
example with its eight checks.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from derive.document.api import Document
from derive.document.notation import notation
from derive.model.attention import M, ScalarBase, d, i, j, n, t, u
from derive.model.vectors import Dot, VectorBase, expand_dot, vectors
from derive.normalizers.properties import derive_property
from derive.normalizers.table import anchor
from derive.render.latex import tex

q0, k0, v, delta = VectorBase("q^0"), VectorBase("k^0"), VectorBase("v"), VectorBase("delta")
bQ, bK = vectors("b_Q b_K")
SQRT_D = sp.sqrt(d)


def _weight(score):
    """p(a, b): the softmax weight of key b in row a for the score function ``score``."""
    return lambda a, b: M[a, b] * sp.exp(score(a, b)) / sp.Sum(M[a, t] * sp.exp(score(a, t)), (t, 1, n))


def _scores(qb, kb):
    return lambda a, b: Dot(q0[a] + qb, k0[b] + kb) / SQRT_D


# Named notation: displayed by name, proved and checked by definition.
s0 = notation("s0", _scores(0, 0), latex="x^{0}", nargs=2)
sQ = notation("sQ", _scores(bQ, 0), latex="x^{Q}", nargs=2)
sK = notation("sK", _scores(0, bK), latex="x^{K}", nargs=2)
sB = notation("sB", _scores(bQ, bK), latex="x", nargs=2)
p0 = notation("p0", _weight(_scores(0, 0)), latex="p^{0}", nargs=2)
pQ = notation("pQ", _weight(_scores(bQ, 0)), latex="p^{Q}", nargs=2)
pK = notation("pK", _weight(_scores(0, bK)), latex="p^{K}", nargs=2)
pB = notation("pB", _weight(_scores(bQ, bK)), latex="p", nargs=2)


def _out(weight):
    return lambda a: sp.Sum(weight(a, u) * v[u], (u, 1, n))


out0 = notation("out0", _out(_weight(_scores(0, 0))), latex=r"\mathrm{out}^{0}", nargs=1)
outK = notation("outK", _out(_weight(_scores(0, bK))), latex=r"\mathrm{out}^{K}", nargs=1)

# ---- the worked example of the Q/K-bias article ------------------------------------------
EX_Q = (1, 0)
EX_KEYS = ((1, 0), (0, 1), (-1, 0))
EX_BQ, EX_BK = (0, 1), (3, -2)
SEED_TABLE = {  # the article's table, to 6 decimals
    "no bias": ((0.707107, 0.0, -0.707107), (0.575975, 0.283995, 0.140029)),
    "Q bias": ((0.707107, 0.707107, -0.707107), (0.445808, 0.445808, 0.108383)),
    "K bias": ((2.828427, 2.121320, 1.414214), (0.575975, 0.283995, 0.140029)),
    "both": ((1.414214, 1.414214, 0.0), (0.445808, 0.445808, 0.108383)),
}
CONDITIONS = {"no bias": (0, 0), "Q bias": (1, 0), "K bias": (0, 1), "both": (1, 1)}


def _exact_scores(q, keys, bq, bk, dim=2):
    qv = sp.Matrix(q) + sp.Matrix(bq)
    return [sp.nsimplify((qv.T * (sp.Matrix(k) + sp.Matrix(bk)))[0] / sp.sqrt(dim)) for k in keys]


def _exact_weights(scores):
    z = sum(sp.exp(s) for s in scores)
    return [sp.exp(s) / z for s in scores]


def _numpy_attention(q, keys, bq, bk):
    """An independent float64 implementation (max-subtracted softmax)."""
    q = np.asarray(q, float) + np.asarray(bq, float)
    kk = np.asarray(keys, float) + np.asarray(bk, float)
    s = kk @ q / np.sqrt(q.size)
    e = np.exp(s - s.max())
    return s, e / e.sum()


def _example(doc: Document) -> dict:
    zero = (0, 0)
    rows = {}
    for cond, (use_q, use_k) in CONDITIONS.items():
        bq, bk = (EX_BQ if use_q else zero), (EX_BK if use_k else zero)
        exact_s = _exact_scores(EX_Q, EX_KEYS, bq, bk)
        exact_p = _exact_weights(exact_s)
        num_s, num_p = _numpy_attention(EX_Q, EX_KEYS, bq, bk)
        rows[cond] = (exact_s, exact_p, num_s, num_p)
        fs = [float(x) for x in exact_s]
        fp = [float(x) for x in exact_p]
        doc.example_check(f"seed table, {cond}: scores", fs, SEED_TABLE[cond][0], tol=5e-7,
                          detail="engine's exact scores vs the seed's 6-decimal table")
        doc.example_check(f"seed table, {cond}: weights", fp, SEED_TABLE[cond][1], tol=5e-7,
                          detail="engine's exact weights vs the seed's 6-decimal table")
        doc.example_check(f"numpy agrees, {cond}", list(num_p) + list(num_s), fp + fs,
                          detail="independent float64 max-subtracted softmax vs exact values")
    return rows


def _minus(a, b):
    """a − b kept in reading order for display (SymPy would print −b + a)."""
    return sp.Add(a, sp.Mul(-1, b, evaluate=False), evaluate=False)


def _fmt(xs) -> str:
    """6 decimals of exact (SymPy) values, evaluated at 30 digits: the same on every machine."""
    return "(" + ", ".join(f"{float(sp.N(x, 30)):.6f}".replace("-", "−") for x in xs) + ")"


def document() -> Document:
    doc = Document(
        "qk-bias",
        "Q bias vs K bias in scaled dot-product attention",
        summary=(
            "The linear layers that make queries and keys often add a learned bias. Is the key's bias worth its "
            "parameters? A bias added to every key shifts each row of scores by a constant, which softmax "
            "cancels; a bias added to the query shifts each score by a key-dependent amount, which softmax keeps. "
            "This document derives both facts for any head dimension, any number of keys and any mask, states the "
            "exact condition under which a Q bias has no effect, and grades each statement of an article on Q and "
            "K biases {cite:qkbias-article}, quoted as it wrote it, recomputing its worked example."
        ),
    )

    # 1 ------------------------------------------------------------------------------
    doc.section("1. The model")
    doc.prose(
        "Symbols are those of the [notation sheet](notation.md#notation). Scaled dot-product attention "
        "{cite:vaswani2017}: row $i$ has a query $q_i = h_i W_Q + b_Q$ and keys $k_j = h_j W_K + b_K$, $h$ the "
        "tokens' representations. We write $q^{0}_{i} = h_i W_Q$ and $k^{0}_{j} = h_j W_K$ for the projections without bias; "
        "$b_Q$ and $b_K$ are shared by all tokens of the head. Vectors live in $\\mathbb{R}^d$ for a "
        "symbolic $d$ and are never expanded into components; $\\langle a, b \\rangle$ is the dot product. "
        "A mask $M_{i,t} \\in \\{0, 1\\}$ marks the keys row $i$ may attend to: all $n$ keys, a causal "
        "prefix, or any non-empty set; every sum over keys below runs over $t = 1, \\dots, n$ weighted by $M$."
    )
    doc.definitions(
        [
            [sB(i, j), sB(i, j).unfolded()],
            [pB(i, j), pB(i, j).unfolded()],
            [sp.Symbol(r"\mathrm{out}_{i}"), sp.Sum(pB(i, u) * v[u], (u, 1, n))],
            [s0(i, j), s0(i, j).unfolded()],
            [sQ(i, j), sQ(i, j).unfolded()],
            [sK(i, j), sK(i, j).unfolded()],
        ],
        caption="$p^{0}$, $p^{Q}$, $p^{K}$ are the weights computed from $x^{0}$, $x^{Q}$, $x^{K}$ as $p$ from $x$.",
    )

    # 2 ------------------------------------------------------------------------------
    doc.section("2. The four-term expansion")
    lhs = Dot(q0[i] + bQ, k0[j] + bK)
    expanded = expand_dot(lhs)
    doc.equation(lhs, expanded, name="four-term expansion",
                 why="The engine expands $\\langle \\cdot, \\cdot \\rangle$ by bilinearity; the right-hand side is its output, "
                     "not typed in.")
    doc.equation(sB(i, j), expanded / SQRT_D, name="scaled scores",
                 why="Dividing by $\\sqrt{d}$ does not change which terms appear.")

    # 3 ------------------------------------------------------------------------------
    doc.section("3. Which terms are the same for every key")
    doc.prose(
        "A term $f(j)$ is **row-constant** when $f(j_1) = f(j_2)$ for any two keys of the row. "
        "The engine proves this by reducing $f(j_1) - f(j_2)$ to $0$; it shows a term is "
        "**key-dependent** by a concrete instance, found by Hypothesis and then shrunk, on which the "
        "two values certainly differ (certified by ball arithmetic)."
    )
    terms = sorted(sp.Add.make_args(expanded), key=sp.default_sort_key)
    labels = {Dot(k0[j], q0[i]): r"$\langle q^{0}, k^{0} \rangle$", Dot(bQ, k0[j]): r"$\langle b_Q, k^{0} \rangle$",
              Dot(bK, q0[i]): r"$\langle q^{0}, b_K \rangle$", Dot(bK, bQ): r"$\langle b_Q, b_K \rangle$"}
    rows = [(labels[term], term) for term in terms]
    expect_j = {labels[Dot(k0[j], q0[i])]: "key-dependent", labels[Dot(bQ, k0[j])]: "key-dependent"}
    doc.classify(rows, j, name="row-constant terms",
                 why="Classification of each term over the keys $j$ of a row:",
                 expect=[expect_j.get(lbl, "row-constant") for lbl, _ in rows])
    doc.prose("The classification is not read off the letter $j$: appendix A.1 gives the engine two terms made to "
              "fool such a reading, and it classifies both right.")

    # 4 ------------------------------------------------------------------------------
    doc.section("4. Softmax cancels a row-constant shift")
    s = ScalarBase("x")
    c = sp.Symbol("c_i", real=True)
    shifted = M[i, j] * sp.exp(s[i, j] + c) / sp.Sum(M[i, t] * sp.exp(s[i, t] + c), (t, 1, n))
    factored = sp.Mul(
        sp.Mul(M[i, j], sp.exp(c), sp.exp(s[i, j]), evaluate=False),
        sp.Pow(sp.Mul(sp.exp(c), sp.Sum(M[i, t] * sp.exp(s[i, t]), (t, 1, n)), evaluate=False), -1, evaluate=False),
        evaluate=False,
    )
    plain = M[i, j] * sp.exp(s[i, j]) / sp.Sum(M[i, t] * sp.exp(s[i, t]), (t, 1, n))
    doc.prose(
        "Let $x_{i,t}$ be any scores and $c_i$ any number that does not depend on the key. "
        "For symbolic $n$ and any mask:"
    )
    doc.chain([shifted, factored, plain],
              ["$e^{a + b} = e^{a} e^{b}$, and the factor $e^{c_i}$ is the same in every term of the sum",
               "$e^{c_i} \\neq 0$ cancels"],
              name="shift invariance")
    doc.prose("With $c_i = \\langle q^{0}_{i}, b_K \\rangle / \\sqrt{d}$ this is the common K bias:")
    doc.equation(_minus(sK(i, j), s0(i, j)), Dot(q0[i], bK) / SQRT_D, name="K bias shifts the scores",
                 why="The scores themselves change, by the same amount for every key of row $i$.")
    doc.classify([("score shift $c_i$", Dot(q0[i], bK) / SQRT_D)], i, name="the shift differs between rows",
                 why="The shift is not one number for the whole matrix: it depends on the query row $i$.",
                 expect=["depends on $i$"])
    doc.equation(pK(i, j), p0(i, j), name="K bias leaves the weights unchanged",
                 why="Shift invariance with the row-constant $c_i$.")
    doc.equation(outK(i), out0(i), name="K bias leaves the output unchanged",
                 why="The outputs mix the same values with the same weights.")
    doc.equation(pB(i, j), pQ(i, j), name="K bias cancels with a Q bias present",
                 why="The terms $\\langle q^{0}_{i}, b_K \\rangle$ and $\\langle b_Q, b_K \\rangle$ are both row-constant.")

    # 5 ------------------------------------------------------------------------------
    doc.section("5. A Q bias adds a key-dependent term")
    doc.equation(_minus(sQ(i, j), s0(i, j)), Dot(bQ, k0[j]) / SQRT_D, name="Q bias shifts the scores",
                 why="The extra term pairs $b_Q$ with each key.")
    doc.classify([("Q-bias shift", Dot(bQ, k0[j]) / SQRT_D)], j, name="the Q-bias shift is key-dependent",
                 why="Unlike the K-bias shift, this one varies over the keys:", expect=["key-dependent"])
    doc.equation(_minus(_minus(sQ(i, 1), sQ(i, 2)), _minus(s0(i, 1), s0(i, 2))), Dot(bQ, _minus(k0[1], k0[2])) / SQRT_D,
                 name="extra score difference of keys 1 and 2",
                 why="The Q bias changes the gap between two keys by $\\langle b_Q, k^{0}_{1} - k^{0}_{2} \\rangle / \\sqrt{d}$.")
    doc.equation(pB(i, 1) / pB(i, 2), sp.exp(_minus(sB(i, 1), sB(i, 2))), name="weight ratio",
                 assume={M[i, 1]: 1, M[i, 2]: 1},
                 why="For two allowed keys ($M_{i,1} = M_{i,2} = 1$) the normalizer cancels in the ratio.")

    # 6 ------------------------------------------------------------------------------
    doc.section("6. Exactly when a Q bias has no effect")
    zq = sp.Sum(M[i, t] * sp.exp(sQ(i, t)), (t, 1, n))
    z0 = sp.Sum(M[i, t] * sp.exp(s0(i, t)), (t, 1, n))
    Z0 = notation("Z0", lambda: z0, latex="Z^{0}_{i}", nargs=0)
    ZQ = notation("ZQ", lambda: zq, latex="Z^{Q}_{i}", nargs=0)
    doc.equation(pQ(i, j) / p0(i, j), sp.exp(Dot(bQ, k0[j]) / SQRT_D) * Z0() / ZQ(), assume={M[i, j]: 1},
                 name="ratio of weights with and without Q bias",
                 why="For an allowed key $j$, the weights differ by the factor "
                     "$\\exp(\\langle b_Q, k^{0}_{j} \\rangle / \\sqrt{d})$ times a ratio of normalizers.")
    doc.classify([("ratio of normalizers", Z0() / ZQ())], j, name="the normalizer ratio is row-constant",
                 why="The ratio of normalizers, $Z^{0}_i = \\sum_t M_{i,t} e^{x^{0}_{it}}$ over "
                     "$Z^{Q}_i = \\sum_t M_{i,t} e^{x^{Q}_{it}}$, is the same for every key:", expect=["row-constant"])
    gamma = sp.Symbol("gamma_i", real=True)
    s_gamma = lambda a, b: (Dot(q0[a], k0[b]) + gamma) / SQRT_D
    doc.prose(
        "So the weights of row $i$ are unchanged for every allowed key exactly when "
        "$\\exp(\\langle b_Q, k^{0}_{j} \\rangle / \\sqrt{d})$ equals the same number for every allowed $j$, "
        "and since $\\exp$ is injective: **exactly when $\\langle b_Q, k^{0}_{j} \\rangle$ takes one value "
        "$\\gamma_i$ on all allowed keys of the row.** Conversely, when it does, the Q bias is a "
        "row-constant shift:"
    )
    doc.equation(_weight(s_gamma)(i, j), p0(i, j), name="Q bias with a constant inner product",
                 why="If $\\langle b_Q, k^{0}_{t} \\rangle = \\gamma_i$ for all allowed $t$, the Q-bias scores are "
                     "$x^{0}_{ij} + \\gamma_i / \\sqrt{d}$: shift invariance.")
    doc.prose(
        "$b_Q = 0$ is one case. Another, from the article's numbers: $b_Q = (0, 1) \\neq 0$ and a row whose "
        "allowed keys all lie on the first axis, e.g. $k^{0}_1 = (1, 0)$ and $k^{0}_3 = (-1, 0)$; then "
        "$\\langle b_Q, k^{0}_j \\rangle = 0$ for both and the weights do not change (the check "
        "“Q-bias no-effect exception” in the appendix)."
    )

    # 7 ------------------------------------------------------------------------------
    doc.section("7. Control: a different shift for each key")
    doc.classify([("per-token shift", Dot(q0[i], delta[j]) / SQRT_D)], j, name="per-token K shift",
                 why="Adding a different vector $\\delta_j$ to each key adds $\\langle q^{0}_i, \\delta_j \\rangle/\\sqrt{d}$, which is key-dependent:",
                 expect=["key-dependent"])

    shifts = ((1, 0), (0, 0), (0, 0))
    # exact weights, rounded for display (a float64 softmax's last bits depend on numpy's SIMD exp)
    p_before = _exact_weights(_exact_scores(EX_Q, EX_KEYS, (0, 0), (0, 0)))
    p_after = _exact_weights(_exact_scores(EX_Q, [tuple(a + b for a, b in zip(k, s_)) for k, s_ in zip(EX_KEYS, shifts)],
                                           (0, 0), (0, 0)))
    doc.prose(
        "A concrete counterexample with the article's query and keys: shift only the first key, "
        "$\\delta_1 = (1, 0)$, $\\delta_2 = \\delta_3 = 0$. Its score rises by $1/\\sqrt{2}$ and the weights change:"
    )
    doc.table(["keys", "weights"], [["$k^{0}_j$", _fmt(p_before)], ["$k^{0}_j + \\delta_j$", _fmt(p_after)]])

    # 8 ------------------------------------------------------------------------------
    doc.section("8. The max-subtracted softmax is the same invariance")
    m = sp.Symbol("m_i", real=True)
    doc.equation(M[i, j] * sp.exp(s[i, j] - m) / sp.Sum(M[i, t] * sp.exp(s[i, t] - m), (t, 1, n)), plain,
                 name="max subtraction",
                 why="Implementations subtract $m_i = \\max_{t : M_{i,t} = 1} x_{i,t}$, a row-constant, so that "
                     "every exponent is $\\le 0$ and $\\exp$ cannot overflow; the weights are unchanged.")

    # 9 ------------------------------------------------------------------------------
    doc.section("9. The worked example")
    ex = _example(doc)
    for kind in ("numpy agrees", "seed table"):
        ran = [c for c in doc.checks if c.name.startswith(kind)]
        doc.fact(f"{kind} checks", "passed" if ran and all(c.passed for c in ran) else "failed")
    doc.prose(
        "The article's numbers: $q = (1, 0)$; $k_1 = (1, 0)$, $k_2 = (0, 1)$, $k_3 = (-1, 0)$; "
        "$b_Q = (0, 1)$; $b_K = (3, -2)$; $d = 2$. The engine computes exact scores and weights; an "
        f"independent float64 implementation agrees with them within {doc.cfg.rtol:g} "
        "({verdict:numpy agrees checks=passed}, for all four conditions), and the exact values, rounded to 6 "
        "decimals, are the article's table ({verdict:seed table checks=passed}, checks 14–25):"
    )
    doc.table(
        ["condition", "scores $x_1, x_2, x_3$ (exact)", "weights $p_1, p_2, p_3$ (6 decimals)"],
        [[cond, "(" + ", ".join(f"${tex(v)}$" for v in ex[cond][0]) + ")", _fmt(ex[cond][1])] for cond in CONDITIONS],
        caption="The article's table {cite:qkbias-article} has these scores to 6 decimals and these weights.",
    )
    # each over the row's sum e^{s_1} + e^{s_2} + e^{s_3}, as the definition writes it (SymPy's own
    # form of the third, 1/((…) e^{√2/2}), hides that); each fraction is the engine's weight exactly
    scores, weights = ex["no bias"][0], ex["no bias"][1]
    den = sp.Add(*[sp.exp(v) for v in scores])
    if any(sp.simplify(sp.exp(v) / den - w) != 0 for v, w in zip(scores, weights)):
        raise AssertionError("an exact weight is not e^{s_j} over the row's sum")
    rows = " \\\\\n".join(f"p^{{0}}_{{i{k + 1}}} &= \\frac{{{tex(sp.exp(v))}}}{{{tex(den)}}}"
                         for k, v in enumerate(scores))
    doc.prose("The exact weights without bias, for instance, are\n\n$$\n\\begin{aligned}" + rows
              + "\\end{aligned}\n$$")
    _seed_checks(doc, ex)
    doc.figure("weights", _draw_weights(ex), "Softmax weights of the three keys under the four conditions.")
    doc.record("inputs", {"q": list(EX_Q), "keys": [list(k) for k in EX_KEYS], "b_Q": list(EX_BQ),
                          "b_K": list(EX_BK), "d": 2})
    doc.record("conditions", {
        cond: {"scores": [round(float(x), 12) for x in ex[cond][0]],
               "weights": [round(float(x), 12) for x in ex[cond][1]],
               "scores_exact": [sp.sstr(x) for x in ex[cond][0]]}
        for cond in CONDITIONS
    })

    # 10 -----------------------------------------------------------------------------
    doc.section("10. Where this stops holding")
    doc.prose(
        "The proofs above used exactly these assumptions; drop one and the conclusion must be derived again:"
    )
    # Which normalizers cancel a row constant: shift invariance, decided in normalizers.md.
    for name in ("softmax1", "sink", "sigmoid", "softcap", "clipped"):
        doc.fact(f"{name}: shift_invariant", derive_property(name, "shift_invariant"))
    for name in ("softmax", "clipped", "softmax1", "sink", "sigmoid", "softcap"):  # read by the results
        doc.fact(f"{name}: k_bias_cancels", derive_property(name, "k_bias_cancels"))
    link = lambda name, text: f"[{text}](normalizers.md#{anchor(name, 'shift_invariant')})"
    shift_row = (
        "the weights ignore a row constant exactly when the normalizer is shift-invariant (adding one constant to "
        f"every input of the normalizer leaves the weights unchanged). {link('softmax1', 'softmax₁')} "
        "(shift invariance {verdict:softmax1: shift_invariant=refuted}), " f"{link('sink', 'sinks')} "
        "({verdict:sink: shift_invariant=refuted}), " f"{link('sigmoid', 'sigmoid attention')} "
        "({verdict:sigmoid: shift_invariant=refuted}) and " f"{link('softcap', 'soft-capping')} "
        "({verdict:softcap: shift_invariant=refuted}: the cap acts before the softmax) are not, so they do not "
        f"cancel a row constant; {link('clipped', 'clipped softmax')}, a function of the softmax weights, is "
        "(shift invariance {verdict:clipped: shift_invariant=proved})"
    )
    doc.table(["assumption", "why it matters"], [
        ["one head, one query row at a time", "the shift $c_i = \\langle q^{0}_{i}, b_K \\rangle / \\sqrt{d}$ differs between "
                                              "rows and heads; each row is normalized on its own"],
        ["the same b_K is added to every key", "a per-token shift $\\delta_j$ is key-dependent (section 7) and changes the weights"],
        ["a shift-invariant normalizer (softmax)", shift_row],
        ["no position-dependent transform between the bias and the dot product", "with RoPE {cite:su2021} applied after the bias, $R_j b_K$ differs per key; the extra term is no longer row-constant"],
        ["a non-empty allowed set", "a fully masked row has no softmax weights at all"],
        ["exact real arithmetic", "floating point can round a cancelled shift differently; the numeric "
                                  "cross-checks sample inputs and compare within a tolerance of "
                                  f"{doc.cfg.rtol:g} (relative and absolute): evidence on the samples, not a bound"],
    ])
    doc.appendix("Appendix: reference material")
    _controls(doc)
    _results(doc)
    return doc


def _controls(doc: Document) -> None:
    """A.1: two terms made to fool a classifier that reads the letter j."""
    doc.section("A.1. Two controls of the classification", anchor="controls", level=3)
    rows = [("function of a row-constant term", sp.exp(Dot(bQ, bK)) * sp.tanh(Dot(q0[i], bK))),
            ("cancelling key terms", Dot(q0[i], k0[j] + bK) - Dot(k0[j], q0[i]))]
    doc.classify(rows, j, name="controls", why="Two terms made to fool a classifier that looks for the letter $j$:",
                 expect=["row-constant", "row-constant"])
    has_j = lambda e: "contains $j$" if e.has(j) else "has no $j$"  # noqa: E731
    doc.fact("cancelling key terms and j", has_j(rows[1][1]))
    doc.fact("function of a row-constant term and j", has_j(rows[0][1]))
    doc.prose(
        "The second {verdict:cancelling key terms and j=contains $j$} and is still "
        "{verdict:controls: cancelling key terms=row-constant}, because its key terms cancel; the first "
        "{verdict:function of a row-constant term and j=has no $j$}, and a function of row-constant terms is "
        "{verdict:controls: function of a row-constant term=row-constant}. They test the engine, not attention."
    )


def _results(doc: Document) -> None:
    """The results box: what is proved, and each statement of the article as it wrote it, graded."""
    from _bound import bound  # proofs/_bound.py, beside this module

    article = [  # (what the article writes, in its own notation, translated from Japanese where in words; steps)
        ("$(s_1 + c) - (s_2 + c) = s_1 - s_2$: a common K bias adds the same $c_i = q_i \\cdot b_K / \\sqrt{d_k}$ "
         "to every score of a row", ("K bias shifts the scores",)),
        ("$\\exp(s_j + c) / \\sum_t \\exp(s_t + c) = \\exp(c)\\exp(s_j) / [\\exp(c)\\sum_t \\exp(s_t)] = "
         "\\exp(s_j) / \\sum_t \\exp(s_t)$", ("shift invariance", "K bias leaves the weights unchanged",
                                                 "K bias leaves the output unchanged")),
        ("$(q_i^0 + b_Q) \\cdot (k_j^0 + b_K) = q_i^0 \\cdot k_j^0 + b_Q \\cdot k_j^0 + q_i^0 \\cdot b_K + "
         "b_Q \\cdot b_K$; “$q_i^0 \\cdot b_K$ and $b_Q \\cdot b_K$ do not change with the key within a row”",
         ("four-term expansion", "row-constant terms")),
        ("“a Q bias does not always change the weights: if $b_Q$ is 0, or its inner product with every allowed "
         "key is the same, the extra term is a common shift too”", ("ratio of weights with and without Q bias",
                                                                     "Q bias with a constant inner product")),
        ("the extra score difference of keys 1 and 2 is $b_Q \\cdot (k_1^0 - k_2^0) / \\sqrt{d_k}$",
         ("extra score difference of keys 1 and 2",)),
        ("$p_1 / p_2 = \\exp(s_1 - s_2)$", ("weight ratio",)),
        ("the table of scores and weights of the worked example, and “all eight checks passed”",
         ("seed table, no bias: weights", "seed table, both: weights", "base scores", "per-token K shift control")),
    ]
    with doc.results():
        doc.prose(
            "For any head dimension $d$, any number of keys $n$ and any mask: a bias added to every key leaves the "
            f"weights and the output unchanged ({bound(doc, 'K bias leaves the weights unchanged', 'K bias leaves the output unchanged')}), "
            f"with or without a Q bias ({bound(doc, 'K bias cancels with a Q bias present')}), although the scores "
            f"themselves move ({bound(doc, 'K bias shifts the scores')}). A Q bias adds the key-dependent term "
            f"$\\langle b_Q, k^{{0}}_j \\rangle / \\sqrt{{d}}$ ({bound(doc, 'Q bias shifts the scores')}) and leaves row "
            "$i$'s weights unchanged **exactly when** that term takes one value on all allowed keys "
            f"({bound(doc, 'ratio of weights with and without Q bias', 'Q bias with a constant inner product')}). "
            "Of the normalizers of section 10, the K bias cancels under softmax "
            f"([{{verdict:softmax: k_bias_cancels=proved}}](normalizers.md#{anchor('softmax', 'k_bias_cancels')})) and "
            f"clipped softmax ([{{verdict:clipped: k_bias_cancels=proved}}](normalizers.md#{anchor('clipped', 'k_bias_cancels')})), "
            + ", ".join(f"{label} ([{{verdict:{name}: k_bias_cancels=refuted}}](normalizers.md#{anchor(name, 'k_bias_cancels')}))"
                        for name, label in (("softmax1", "not under softmax₁"), ("sink", "a sink"),
                                            ("sigmoid", "sigmoid attention"))) +
            f" or soft-capping ([{{verdict:softcap: k_bias_cancels=refuted}}](normalizers.md#{anchor('softcap', 'k_bias_cancels')}))."
        )
        doc.prose("The article {cite:qkbias-article}, statement by statement, in its own notation ($s$ its scores, "
                  "$d_k$ its head dimension; statements in words translated from the Japanese):")
        doc.table(["the article writes", "verdict"],
                  [[said, f"**confirmed** ({bound(doc, *steps)})" + (" and sharpened: *exactly* when"
                                                                     if "does not always" in said else "")]
                   for said, steps in article])


def _seed_checks(doc: Document, ex: dict) -> None:
    """The eight checks of the Q/K-bias article, on the worked example."""
    sq = 1 / np.sqrt(2)
    base_s, base_p = [float(x) for x in ex["no bias"][0]], [float(x) for x in ex["no bias"][1]]
    k_s, k_p = [float(x) for x in ex["K bias"][0]], [float(x) for x in ex["K bias"][1]]
    q_s, q_p = [float(x) for x in ex["Q bias"][0]], [float(x) for x in ex["Q bias"][1]]
    b_p = [float(x) for x in ex["both"][1]]
    doc.example_check("base scores", base_s, [sq, 0.0, -sq], detail="q·k_j/√2")
    doc.example_check("common K shift of scores", [a - b for a, b in zip(k_s, base_s)], [3 * sq] * 3,
                      detail="every score of the row moves by q·b_K/√2 = 3/√2")
    doc.example_check("softmax weights preserved", k_p, base_p, detail="K bias only vs no bias")
    doc.example_check("Q-bias relative change", [(q_s[0] - q_s[1]) - (base_s[0] - base_s[1])], [-sq],
                      detail="b_Q·(k₁ − k₂)/√2 = −1/√2")
    doc.example_check("both biases", b_p, q_p, detail="both biases vs Q bias only")
    q2 = (0, 1)
    s_a, p_a = _numpy_attention(q2, EX_KEYS, (0, 0), (0, 0))
    s_b, p_b = _numpy_attention(q2, EX_KEYS, (0, 0), EX_BK)
    doc.example_check("another query row", list(s_b - s_a) + list(p_b),
                      [-2 * sq] * 3 + list(p_a), detail="q = (0, 1): shift −2/√2 ≠ 3/√2, weights preserved")
    keys13 = (EX_KEYS[0], EX_KEYS[2])
    _, p_none = _numpy_attention(EX_Q, keys13, (0, 0), (0, 0))
    _, p_q = _numpy_attention(EX_Q, keys13, EX_BQ, (0, 0))
    doc.example_check("Q-bias no-effect exception", list(p_q), list(p_none),
                      detail="b_Q = (0, 1) ⟂ k₁, k₃: weights unchanged")
    shifts = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    _, p_shift = _numpy_attention(EX_Q, np.asarray(EX_KEYS, float) + shifts, (0, 0), (0, 0))
    change = float(np.max(np.abs(p_shift - np.asarray(base_p))))
    doc.example_check("per-token K shift control", [change > 1e-3], [True],
                      detail=f"δ₁ = (1, 0), δ₂ = δ₃ = 0 changes the weights by up to {change:.6f}")


def _draw_weights(ex: dict):
    def draw(ax):
        width = 0.2
        xs = np.arange(3)
        for k, cond in enumerate(CONDITIONS):
            ax.bar(xs + (k - 1.5) * width, [float(w) for w in ex[cond][1]], width, label=cond)
        ax.set_xticks(xs, ["key 1", "key 2", "key 3"])
        ax.set_ylabel("softmax weight")
        ax.set_ylim(0, 0.7)
        ax.legend(frameon=False)

    return draw
