"""softmax₁ ("Attention is off by one") derived: docs/softmax-one.md.

Reproduces and checks Evan Miller's “Attention is off by one” and its discussion: QuietAttention's
definition, the total mass, abstention, the limits to −∞ along three kinds of path, the
ratio identity, the Jacobian, the K bias, the zero-prefix-token argument with its exact
conditions, the learned key/value token, the overflow-free form and the widespread faulty
form, and a float-format table.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from derive.crosscheck.evaluate import Instance
from derive.crosscheck.witness import certify
from derive.document.api import Document
from derive.document.notation import notation
from derive.model.attention import M, ScalarBase, d, i, j, n, t, u
from derive.model.vectors import Dot
from derive.normalizers import calculus, equivalences, limits
from derive.normalizers.properties import B_K, C, K, Q, derive_property
from derive.kernels.forms import registry_forms
from derive.normalizers.registry import get, names
from derive.normalizers.stable import DTYPES, FORMS, MSHIFT, faulty_weight, float_table, stable_form
from derive.normalizers.table import anchor
from derive.prove.verdict import REFUTED, Verdict
from derive.render.latex import tex
from derive.render.view import assignment

x = ScalarBase("x")
S1, SM, SINK = get("softmax1"), get("softmax"), get("sink")
sc = lambda k: x[i, k]
Zsum = sp.Sum(M[i, t] * sp.exp(x[i, t]), (t, 1, n))
Zn = notation("Z", lambda: Zsum, latex="Z", nargs=0)
p1 = notation("p1", lambda a: S1.weight(sc, key=a), latex="p^{(1)}", nargs=1)
p0 = notation("p0", lambda a: SM.weight(sc, key=a), latex="p", nargs=1)
SQRT_D = sp.sqrt(d)


def _link(name: str, prop: str, text: str) -> str:
    return f"[{text}](normalizers.md#{anchor(name, prop)})"


def _fact(doc: Document, name: str, prop: str):
    """The derivation of a normalizer property, registered as the fact ``name.prop`` for prose."""
    der = derive_property(name, prop)
    if f"{name}.{prop}" not in doc.facts:
        doc.fact(f"{name}.{prop}", der)
    return der


def _v(doc: Document, name: str, prop: str, stated: str) -> str:
    """A link whose text states the property's verdict; the build checks the statement."""
    _fact(doc, name, prop)
    return _link(name, prop, "{verdict:%s.%s=%s}" % (name, prop, stated))


def _val(doc: Document, name: str, prop: str, stated: str | None = None) -> str:
    """A link whose text is the property's value; a stated value is checked by the build."""
    _fact(doc, name, prop)
    ref = f"{name}.{prop}" + ("" if stated is None else f"={stated}")
    return _link(name, prop, "{value:%s}" % ref)


def _w(der) -> str:
    w = der.verdict.witness or {}
    inst = w.get("instance", {})
    return "; ".join(assignment(k, v) for k, v in inst.items()) + (f"; values {w['lhs']} vs {w['rhs']}" if "lhs" in w else "")


def document() -> Document:
    doc = Document(
        "softmax-one",
        "softmax₁: attention that can abstain, derived",
        summary=(
            "Softmax makes every attention head put weight 1 somewhere, even when nothing in the context is worth "
            "attending to. Evan Miller's “Attention is off by one” {cite:miller2023} proposes adding 1 to the "
            "denominator, so that a head can give every key a weight near 0. This document derives softmax₁'s "
            "properties for any number of keys and any mask, grades each statement of the post and of its "
            "discussion against them (each quoted as its source wrote it), derives exactly when a zero token, "
            "PyTorch's `add_zero_attn` or a learned key/value (`add_bias_kv`) {cite:pytorch-mha} computes softmax₁, "
            "and shows which overflow-free implementation is exact and what a faulty one found in public code "
            "computes instead."
        ),
    )

    # 1 ------------------------------------------------------------------------------
    doc.section("1. softmax₁ and QuietAttention")
    doc.prose(
        "Symbols are those of the [notation sheet](notation.md#notation): row $i$ has scores "
        "$x_{i,t} = \\langle q_i, k_t \\rangle/\\sqrt{d}$ over the allowed keys ($M_{i,t} = 1$) of a row of symbolic "
        "length $n$ ($x_t$ with the row fixed). QuietAttention replaces softmax by softmax₁, "
        "$\\mathrm{QuietAttention}(Q, K, V) = \\operatorname{softmax}_1(QK^T/\\sqrt{d})V$:"
    )
    doc.definitions([
        [p1(j), p1(j).unfolded()], [p0(j), p0(j).unfolded()], [Zn(), Zsum],
    ], caption="$Z > 0$ when at least one key is allowed.")
    # the sink's weight at s = 0 with e^0 left unevaluated: built directly, SymPy makes it 1 and both
    # sides would be one expression, which no display or comparison could test
    s_ = sp.Symbol("s", real=True)
    sink0 = SINK.weight(sc, key=j, s=s_).xreplace({sp.exp(s_): sp.Pow(sp.E, sp.S.Zero, evaluate=False)})
    doc.equation(sink0, p1(j), name="softmax₁ is a sink logit of 0",
                 why="A sink logit $s$ adds $e^{s}$ to the denominator; $e^{0} = 1$.")
    doc.prose("The extra 1 is the weight $e^0$ of an implicit key of score 0 whose value is the zero vector "
              "(the post's “ghostmax”; flaxformer's extra zero logit {cite:flaxformer}). Section 8 derives exactly when "
              "an actual zero token implements it.")

    # 2 ------------------------------------------------------------------------------
    doc.section("2. A common shift is a sink logit")
    num = sp.Mul(M[i, j], sp.exp(C), sp.exp(x[i, j]), evaluate=False)
    den = sp.Add(1, sp.Mul(sp.exp(C), Zsum, evaluate=False), evaluate=False)
    doc.chain([S1.weight(lambda k: x[i, k] + C, key=j), num / den, SINK.weight(sc, key=j, s=-C)],
              ["$e^{a + b} = e^{a} e^{b}$; $e^{c}$ is common to every term of the sum",
               "divide numerator and denominator by $e^{c}$: the 1 becomes $e^{-c}$"], name="shift by c")
    inv = derive_property("softmax1", "shift_invariant")
    family = list(registry_forms().extra)
    invariant = [nm for nm in names() if derive_property(nm, "shift_invariant").verdict.proved]
    for nm in names():
        _fact(doc, nm, "shift_invariant")
    inside = [nm for nm in family if nm in invariant]
    if inside != ["softmax"]:
        raise AssertionError(f"the sentence says softmax alone of the family is shift-invariant; it is {inside}")
    outside = [nm for nm in invariant if nm not in family]
    doc.prose(
        f"So softmax₁ is **not** shift-invariant: the claim “softmax₁ is shift-invariant” is "
        f"{_v(doc, 'softmax1', 'shift_invariant', 'refuted')} by a certified counterexample ({_w(inv)}). "
        "A shift by $c$ is the same as a sink logit $-c$. Of the softmax family ("
        + ", ".join(f"`{nm}`" for nm in family) + "), softmax alone ignores a shift "
        f"({_v(doc, 'softmax', 'shift_invariant', 'proved')}; every other member "
        + ", ".join(_v(doc, nm, "shift_invariant", "refuted") for nm in family if nm != "softmax")
        + "); outside the family "
        + " and ".join(f"`{nm}` ({_v(doc, nm, 'shift_invariant', 'proved')})" for nm in outside)
        + " ignore it too. So “subtract the row maximum” needs care for softmax₁ (section 9)."
    )

    # 3 ------------------------------------------------------------------------------
    doc.section("3. The weights sum to $Z/(1 + Z)$: strictly between 0 and 1")
    mass = notation("mass", lambda: sp.Sum(S1.weight(sc, key=u), (u, 1, n)),
                    latex="\\sum_{u=1}^{n} p^{(1)}_{u}", nargs=0)
    doc.equation(mass(), Zn() / (1 + Zn()), name="total mass",
                 why="The sum runs over the allowed keys ($M_{i,u} = 1$), and $\\sum_u e^{x_{i,u}}$ over them is $Z$.")
    Zs = sp.Symbol("Z", positive=True)
    dmass = notation("dmass", lambda: sp.diff(Zs / (1 + Zs), Zs), latex="\\frac{d}{dZ}\\frac{Z}{1 + Z}", nargs=0)
    doc.equation(dmass(), 1 / (1 + Zs) ** 2, name="the mass increases with Z",
                 why="$Z/(1 + Z)$ has derivative $1/(1 + Z)^{2} > 0$.")
    rng = derive_property("softmax1", "mass_range")
    doc.prose(
        f"$Z$ takes every value in $(0, \\infty)$ (one allowed key with score $\\log Z$), so the mass takes every value "
        f"in {_val(doc, 'softmax1', 'mass_range', '(0, 1)')} and never 0 or 1: it tends to 0 as all scores tend to $-\\infty$ "
        f"and to 1 as one score tends to $+\\infty$: the open interval, both ends approached. For softmax the same "
        f"computation gives exactly 1 "
        f"({_v(doc, 'softmax', 'weights_sum_to_one', 'proved')})."
    )

    # 4 ------------------------------------------------------------------------------
    doc.section("4. Abstention")
    ab1, ab0 = derive_property("softmax1", "can_abstain"), derive_property("softmax", "can_abstain")
    doc.prose(
        f"softmax₁ can abstain (every weight can be made to tend to 0): {_v(doc, 'softmax1', 'can_abstain', 'proved')} "
        f"— every weight is at most the mass $Z/(1 + Z)$, which tends to 0. softmax cannot: "
        f"{_v(doc, 'softmax', 'can_abstain', 'refuted')}, "
        "because its weights sum to 1 in every row. This is a statement about the exact function, so more "
        "precision cannot change it."
    )

    # 5 ------------------------------------------------------------------------------
    doc.section("5. Limits as the scores go to $-\\infty$: three different statements")
    tau = limits.TAU
    doc.prose("**(a) The uniform path** $x = -\\tau\\mathbf{1}$, $\\tau \\to \\infty$, with $N_i$ allowed keys:")
    on_path = lambda e: e.weight(lambda k: -tau, key=j).subs(M[i, j], 1)
    count = sp.Sum(M[i, t], (t, 1, n))
    doc.equation(on_path(SM), 1 / count, name="softmax on the uniform path",
                 why="Every allowed term of the row sum equals $e^{-\\tau}$; the sum of the $M_{i,t}$ counts the allowed keys, $N_i$.")
    doc.equation(on_path(S1), 1 / (sp.exp(tau) + count), name="softmax₁ on the uniform path",
                 why="Multiply numerator and denominator by $e^{\\tau}$; as $\\tau \\to \\infty$ this tends to 0.")
    lu0, lu1 = derive_property("softmax", "limit_uniform"), derive_property("softmax1", "limit_uniform")
    doc.prose(f"The limits are {_val(doc, 'softmax', 'limit_uniform')} for softmax and "
              f"{_val(doc, 'softmax1', 'limit_uniform')} for softmax₁.")
    doc.prose(
        "**(b) The iterated limits** as the post writes them, $\\lim_{x_1\\to-\\infty}\\cdots\\lim_{x_n\\to-\\infty}$ "
        "(the post counts the keys with $k$), the innermost ($x_n$) first. Explicitly, for small $n$ (examples computed "
        "with SymPy's limit, not a proof):"
    )
    rows = []
    for k in (1, 2, 3, 4):
        e0, e1 = limits.explicit_iterated(SM, {}, k), limits.explicit_iterated(S1, {}, k)
        rows.append([str(k), sp.Tuple(*e0), sp.Tuple(*e1), sp.Tuple(*[sp.Rational(1, k)] * k)])
    doc.table(["$n$", "softmax", "softmax₁", "the post's softmax value $1/n$"], rows)
    doc.record("iterated_limits", {str(r[0]): {"softmax": [str(v) for v in r[1]], "softmax1": [str(v) for v in r[2]]}
                                   for r in rows})
    it0, it1 = derive_property("softmax", "limit_iterated"), derive_property("softmax1", "limit_iterated")
    doc.prose(
        f"For symbolic $n$ the induction of {_link('softmax', 'limit_iterated', 'the derivation')} gives: softmax puts "
        f"weight 1 on key 1 — the key whose limit is taken **last** — and 0 on the others ({it0.value_text()}); "
        f"softmax₁ gives {it1.value_text()}. So the post's value $1/n$ for softmax is not the iterated limit as "
        "written ($1/n$ is the limit along paths on which all differences $x_t - x_j$ tend to 0, see (d)), while "
        "its softmax₁ value 0 is."
    )
    ap0, ap1 = derive_property("softmax", "limit_any_path"), derive_property("softmax1", "limit_any_path")
    w = ap0.verdict.witness or {}
    doc.prose(
        f"**(c) Every path** on which all $x_j \\to -\\infty$: for softmax the limit "
        f"{_val(doc, 'softmax', 'limit_any_path', 'depends on the path')} — with two keys, $x = (-\\tau, -2\\tau)$ "
        f"gives {tuple(w.get('lhs', ()))} and $x = (-2\\tau, -\\tau)$ gives {tuple(w.get('rhs', ()))}; a path that "
        "alternates between the two has no limit at all. For softmax₁ every weight tends to 0 on every such path "
        f"({_v(doc, 'softmax1', 'limit_any_path', 'proved')}): each weight is at most $Z/(1 + Z)$ and $Z \\to 0$."
    )
    doc.prose("**(d) Where softmax's $1/N_i$ comes from.** For an allowed key $j$, softmax depends on the differences only:")
    doc.equation(p0(j), 1 / sp.Sum(M[i, t] * sp.exp(x[i, t] - x[i, j]), (t, 1, n)), assume={M[i, j]: 1},
                 name="softmax in differences", why="Divide numerator and denominator by $e^{x_{i,j}}$.")
    doc.prose(
        "So whenever every difference $x_t - x_j$ of allowed keys tends to 0, each of the $N_i$ terms tends to 1 and "
        "every weight to $1/N_i$ — on the uniform path, where the differences are 0, and on any other such path, "
        "whether or not the scores go to $-\\infty$. Conversely, if every weight tends to $1/N_i$ the ratios "
        "$p_j/p_k = e^{x_j - x_k}$ tend to 1 (section 6), so the differences tend to 0."
    )

    # 6 ------------------------------------------------------------------------------
    doc.section("6. Ratios are those of softmax")
    allowed = {M[i, 1]: 1, M[i, 2]: 1}
    doc.equation(p1(1) / p1(2), sp.exp(x[i, 1] - x[i, 2]), assume=allowed, name="softmax₁ ratio",
                 why="For two allowed keys the denominators cancel.")
    doc.equation(p1(1) / p1(2), p0(1) / p0(2), assume=allowed, name="same ratios as softmax",
                 check=False,  # the common denominators cancel as SymPy builds the ratios: one expression
                 why="Both equal $e^{x_{i,1} - x_{i,2}}$: the post's ratio identity.")

    # 7 ------------------------------------------------------------------------------
    doc.section("7. The Jacobian: positive on the diagonal, negative off it")
    W = calculus.two_key(S1, {})
    xj, xk, r = calculus.XJ, calculus.XK, calculus.R
    pj = notation("p1j", lambda: sp.exp(xj) / (1 + sp.exp(xj) + sp.exp(xk) + r), latex="p^{(1)}_j", nargs=0)()
    pk = notation("p1k", lambda: sp.exp(xk) / (1 + sp.exp(xj) + sp.exp(xk) + r), latex="p^{(1)}_k", nargs=0)()
    doc.prose("Two allowed keys $j \\ne k$ and $R \\ge 0$ for the sum over the remaining allowed keys describe every "
              "row with at least two allowed keys; with $p^{(1)}_j = e^{x_j}/(1 + e^{x_j} + e^{x_k} + R)$:")
    djj = notation("djj", lambda: sp.diff(W, xj), latex="\\frac{\\partial p^{(1)}_j}{\\partial x_j}", nargs=0)
    djk = notation("djk", lambda: sp.diff(W, xk), latex="\\frac{\\partial p^{(1)}_j}{\\partial x_k}", nargs=0)
    doc.equation(djj(), pj * (1 - pj), name="diagonal", why="Quotient rule (SymPy differentiates; the engine checks the result).")
    doc.equation(djk(), -pj * pk, name="off-diagonal", check=False,  # SymPy's derivative is already -p_j p_k
                 why="Only the denominator depends on $x_{i,k}$.")
    doc.prose(
        f"With $0 < p^{{(1)}}_j < 1$ the diagonal is positive ({_v(doc, 'softmax1', 'jacobian_diagonal', 'proved')}), also for a "
        "single allowed key, where softmax's is 0; the off-diagonal entries are negative "
        f"({_v(doc, 'softmax1', 'jacobian_offdiagonal', 'proved')}): “the derivatives are positive” holds for "
        "$\\partial p^{(1)}_j/\\partial x_j$ only. Clipped softmax {cite:bondarenko2023}, by contrast, has regions of zero "
        f"gradient ({_v(doc, 'clipped', 'gradient_nonvanishing', 'refuted')})."
    )

    # 8 ------------------------------------------------------------------------------
    doc.section("8. K bias, zero tokens and learned tokens")
    kb = lambda k: Dot(Q[i], K[k] + B_K) / SQRT_D
    k0 = lambda k: Dot(Q[i], K[k]) / SQRT_D
    doc.equation(S1.weight(kb, key=j), SINK.weight(k0, key=j, s=-Dot(Q[i], B_K) / SQRT_D), name="K bias under softmax₁",
                 why="The K bias shifts row $i$ by $c_i = \\langle q_i, b_K \\rangle / \\sqrt{d}$, and a shift is a sink logit $-c_i$.")
    kc = derive_property("softmax1", "k_bias_cancels")
    doc.prose(f"So with softmax₁ a common K bias is no longer redundant ({_v(doc, 'softmax1', 'k_bias_cancels', 'refuted')}, "
              f"counterexample {_w(kc)}): it becomes a query-dependent sink. Under softmax it cancels "
              f"({_v(doc, 'softmax', 'k_bias_cancels', 'proved')}).")
    doc.section("The zero-prefix token and the learned token", anchor="nrm-equivalences", level=3)
    doc.prose(
        "**The zero-prefix token.** The post suggests prepending a zero vector to every context so that each "
        "softmax denominator gains $e^0 = 1$. Model one extra token with key $k^{*}$ and value $v^{*}$, always "
        "allowed; each claim below is proved, or refuted by a certified counterexample (the row $i$ it is on "
        "named with it):"
    )
    results = equivalences.decide_all()
    eq_rows = []
    for e, v in results:
        if v.proved and e.lhs() != e.rhs():
            doc.equation(e.lhs(), e.rhs(), name=e.name, why=f"{e.statement}; {e.condition}.")
        w = v.witness or {}
        shown = {**w.get("instance", {}), **w.get("indices", {})}
        eq_rows.append([e.name, e.condition, f"**{v.status}**",
                        "—" if not w else "; ".join(assignment(k, val) for k, val in shown.items())])
        if v.status != e.expect:
            raise AssertionError(f"{e.name}: {v.status}, expected {e.expect}")
        doc.fact(f"token: {e.name}", v)
    doc.record("equivalences", {e.name: {"verdict": v.status, "condition": e.condition,
                                         "witness": (v.witness or {}).get("instance")} for e, v in results})
    doc.table(["claim", "condition", "verdict", "counterexample"], eq_rows,
              caption="Zero-token attention is softmax₁ exactly when the token's score is 0 relative to the real keys "
                      "and its value is 0.")
    doc.prose(
        "A K bias that reaches the real keys reaches the token alike (it is added after the same projection): "
        "then it shifts every score of the row by $\\langle q_i, b_K \\rangle/\\sqrt{d}$, the token's included, "
        "and the result is softmax₁ of the *bias-free* scores "
        "({verdict:token: K bias on every key, token included=proved}): $b_K$ silently has no effect at all — not "
        "the shift softmax₁ would show if the bias reached the real keys alone "
        "({verdict:token: … but not softmax₁ of the biased scores=refuted}). A positional term or a V bias that "
        "reaches the token breaks the equivalence (refuted above; the score $\\langle q_i, p_0 \\rangle/\\sqrt{d}$ "
        "is 0 only for queries orthogonal to $p_0$)."
    )
    beta, gamma_ln = np.array([0.3, -1.2, 0.5]), np.array([1.5, 0.7, 2.0])
    zero = np.zeros(3)
    ln = gamma_ln * (zero - zero.mean()) / np.sqrt(zero.var() + 1e-5) + beta
    doc.example_check("LayerNorm(0) = β", list(ln), list(beta), detail="γ = (1.5, 0.7, 2), β = (0.3, −1.2, 0.5), ε = 1e-5")
    rms = gamma_ln * zero / np.sqrt(np.mean(zero ** 2) + 1e-5)
    doc.example_check("RMSNorm(0) = 0", list(rms), [0.0, 0.0, 0.0], detail="γ = (1.5, 0.7, 2), ε = 1e-5")
    doc.prose(
        "**What reaches a prepended zero vector.** It enters the network as an input, so everything the network "
        "does to inputs reaches it. In the first layer a LayerNorm maps it to "
        "$\\mathrm{LayerNorm}(0) = \\beta$ (checked; mean and variance of 0 are 0, the normalized part "
        "is $0/\\sqrt{\\varepsilon} = 0$): its key becomes $\\beta W_K + b_K$ — a query-dependent score, like a "
        "positional term — and its value $\\beta W_V + b_V$, like a V bias; both break the equivalence. An RMSNorm "
        "keeps it 0 ($\\mathrm{RMSNorm}(0) = 0$, checked), so without biases the first layer is softmax₁. From the "
        "second layer on, the token's key and value are whatever the layers below wrote at its position, and "
        "nothing keeps them 0: a zero *input* gives softmax₁ in the first layer at most. A zero key and value "
        "appended in every layer **after** the projections — PyTorch's `add_zero_attn`, flaxformer's zero "
        "logit — is softmax₁ in every layer ({verdict:token: zero token ≡ softmax₁=proved})."
    )

    # 9 ------------------------------------------------------------------------------
    doc.section("9. The overflow-free form, and a faulty one")
    m = MSHIFT
    doc.equation(stable_form(S1, {}), p1(j), name="stable form",
                 why="For **any** real $m$: write $x = (x - m) + m$ and use section 2 — the 1 becomes $e^{-m}$.")
    doc.prose(
        "The form is exact whatever $m$ is; what makes it correct is that the 1 is shifted with the scores, to "
        "$e^{-m}$. The choice of $m$ only guards against overflow: with $m = \\max(0, \\max_j x_j)$ every exponent "
        "$x_t - m$ and $-m$ is $\\le 0$, so no exp overflows, and the term that attains the maximum (the implicit "
        "zero logit or a key) contributes $e^0 = 1$, so the denominator is $\\ge 1$ — no division by 0, even on a "
        "fully masked row (all weights 0, as the definition says). That is the only reason the zero logit joins "
        "the maximum."
    )
    ft = notation("ft", faulty_weight, latex="\\tilde{p}", nargs=1)
    p1m = notation("p1m", lambda a: S1.weight(lambda k: x[i, k] - m, key=a), latex="p^{(1)}(x - m)", nargs=1)
    fw = ft(j)
    doc.prose("A faulty form found in public code {cite:informer-softmax-one} subtracts $m = \\max_j x_j$ and then "
              "adds a plain 1, left unshifted:")
    doc.definitions([[ft(j), faulty_weight(j)]])
    doc.equation(fw, p1m(j), name="$\\tilde{p} = p^{(1)}(x - m)$",
                 check=False,  # the faulty form is built as softmax₁ of x − m: one expression
                 why="It is softmax₁ applied to the shifted scores.")
    doc.equation(fw, SINK.weight(sc, key=j, s=m), name="$\\tilde{p}$ is a sink of logit $m$", why="Section 2 with $c = -m$.")
    doc.equation(fw / p1(j), (1 + Zn()) / (sp.exp(m) + Zn()), assume={M[i, j]: 1}, name="$\\tilde{p}_j / p^{(1)}_j$",
                 why="The ratio for an allowed key; it is 1 exactly when $e^{m} = 1$, i.e. $m = 0$: the fault is the 1 "
                     "left unshifted (it should be $e^{-m}$), not the choice of $m$.")
    bad = _faulty_counterexample(doc, (2, 1))
    doc.prose("The claim “the faulty form equals softmax₁” is **{verdict:faulty form equals softmax₁=refuted}**: "
              f"{bad}.")
    rho = sp.Symbol("rho", nonnegative=True)
    Sx = 1 + rho
    doc.prose("Its weights sum to $S/(1 + S)$ with $S = \\sum_t e^{x_t - m} \\ge 1$, because the maximal key "
              "contributes $e^0 = 1$; write $S = 1 + \\rho$, $\\rho \\ge 0$:")
    doc.equation(Sx / (1 + Sx) - sp.Rational(1, 2), rho / (2 * (2 + rho)), name="faulty mass minus one half",
                 why="Common denominator.")
    doc.prose("The right-hand side is $\\ge 0$, so on every row with an allowed key the faulty form's weights "
              "**always sum to at least 1/2** (and at most $N_i/(N_i + 1)$, since $S \\le N_i$): it can never "
              "abstain, which was the point of softmax₁. On a fully masked row it returns NaN ($-\\infty - (-\\infty)$). "
              "A concrete row:")
    xs = [-10.0, -10.0]
    faulty = FORMS["softmax₁ faulty"][1]
    from derive.normalizers.stable import run_form
    got_f, got_s = run_form("softmax₁ faulty", xs, None, "float64"), run_form("softmax₁ stable", xs, None, "float64")
    e10 = float(np.exp(-10.0))
    doc.example_check("faulty form on x = (−10, −10)", list(got_f), [1 / 3, 1 / 3], detail="m = −10: e^0/(1 + 2)")
    doc.example_check("softmax₁ on x = (−10, −10)", list(got_s), [e10 / (1 + 2 * e10)] * 2, detail="e^{−10}/(1 + 2e^{−10})")
    # printed from the exact value, not from the float64 run (whose last bits depend on numpy's SIMD exp)
    w10 = sp.exp(-10) / (1 + 2 * sp.exp(-10))
    doc.prose(f"At $x = (-10, -10)$ softmax₁ gives {float(w10.evalf(30)):.6g} to each key "
              f"(mass {float((2 * w10).evalf(30)):.4g}); the faulty form gives 1/3 to each (mass 2/3).")
    _ = faulty
    doc.prose("[Appendix A](#floats) runs the naive, stable and faulty forms of softmax and softmax₁ in four "
              "floating-point formats on rows that overflow or underflow.")

    # 10 -----------------------------------------------------------------------------
    doc.section("10. Plots")
    doc.figure("mass-vs-shift", _draw_mass, "Total attention mass of the row $x = (0.5, -1, 1.5, 0)$ shifted by $c$.")
    doc.figure("uniform-path", _draw_uniform,
               "Weight of one key along the uniform path $x = -t \\cdot \\mathbf{1}$ (4 keys); the soft-capped softmax "
               "(markers) coincides with softmax at 1/4. Each normalizer has the same colour in both figures.")

    # the results box: each statement of the post and of its discussion, as its source wrote it, graded
    eqs = {e.name: v.status for e, v in results}
    P = "proved"

    def st(name, prop):
        return derive_property(name, prop).verdict.status

    post, talk = "the post {cite:miller2023}", "a comment {cite:hn-offbyone}"
    findings = [
        ("$\\lim_{x_1 \\to -\\infty} \\ldots \\lim_{x_k \\to -\\infty} (\\mathrm{softmax}(x))_i = \\frac{1}{k} > 0$",
         post, "wrong as written",
         st("softmax", "limit_iterated") == P and "(1, 0" in it0.value_text() and st("softmax", "limit_any_path") == "refuted",
         "the iterated limit gives 1 to the key whose limit is taken last and 0 to the others; $1/n$ is the limit on "
         "the paths on which all differences $x_t - x_j$ tend to 0 (section 5)"),
        ("$\\lim_{x_1 \\to -\\infty} \\ldots \\lim_{x_k \\to -\\infty} (\\mathrm{softmax}_1(x))_i = 0$", post, "confirmed",
         st("softmax1", "limit_iterated") == P and st("softmax1", "limit_any_path") == P,
         "as written and along every path (section 5)"),
        ("$\\frac{(\\mathrm{softmax}_1(x))_i}{(\\mathrm{softmax}_1(x))_j} = \\frac{(\\mathrm{softmax}(x))_i}"
         "{(\\mathrm{softmax}(x))_j} = \\frac{\\exp(x_i)}{\\exp(x_j)}$", post, "confirmed",
         st("softmax1", "ratio_identity") == P, "section 6"),
        ("“the derivative is positive, so the gradient is never zero”", post, "refined",
         st("softmax1", "jacobian_diagonal") == P and st("softmax1", "jacobian_offdiagonal") == P,
         "$\\partial p^{(1)}_{j} / \\partial x_{j} > 0$, but $\\partial p^{(1)}_{j} / \\partial x_{k} < 0$ for $k \\neq j$ "
         "(section 7)"),
        ("“the sum lies between 0 and 1”", post, "confirmed",
         st("softmax1", "mass_range") == P and rng.value_text() == "(0, 1)",
         "exactly the open interval $(0, 1)$, both ends approached (section 3)"),
        ("“a head can choose to pass”", post, "confirmed",
         st("softmax1", "can_abstain") == P and st("softmax", "can_abstain") == "refuted",
         "every weight can tend to 0; softmax's sum is 1 (section 4)"),
        ("“a mathematical problem, not one of numerical precision”", post, "confirmed",
         st("softmax", "weights_sum_to_one") == P, "softmax's weights sum to 1 as an identity of the exact function"),
        ("“prepend a zero vector to every input, with no bias (positional encoding included) added to it; passed "
         "through, it adds 1 to each later softmax denominator”", post, "refined",
         eqs["zero token ≡ softmax₁"] == P and "refuted" == eqs["positional term reaches the token"]
         == eqs["V bias reaches the token"],
         "only where its key gives score 0 and its value is 0: a LayerNorm breaks it in the first layer, and from "
         "the second on the token is what the layers below wrote (section 8)"),
        ("“PyTorch's add_zero_attn adds a 0 to the logits, so $e^0 = 1$ in the denominator” (also flaxformer's "
         "code)", talk, "confirmed",
         eqs["zero token ≡ softmax₁"] == P, "the zero key and value are appended after the projections, in every layer"),
        ("“softmax is implemented as $\\exp(x_i - \\max(x))$, summed in the denominator”", talk, "refined",
         doc.facts["faulty form equals softmax₁"].status == "refuted",
         "for softmax₁ the 1 must be shifted with the scores, to $e^{-m}$, for any $m$; left as 1 the result is a "
         "sink of logit $m$. Including 0 in the maximum only prevents overflow (section 9)"),
        ("“a learned attention sink attached before QK and removed after the softmax, so the weights do not sum "
         "to 1”", talk, "refined",
         eqs["sink(0) ≡ softmax₁"] == P and eqs["learned key/value token"] == P,
         "that sink is a query-dependent extra logit $\\langle q_i, k^{*} \\rangle/\\sqrt{d}$ without a value, "
         "softmax₁ only where that score is 0; gpt-oss's sink {cite:gpt-oss2025} is a learned logit per head "
         "(softmax₁ is the one at 0), StreamingLLM's sink tokens {cite:xiao2024} are real keys with values "
         "(the learned key/value token, section 8)"),
    ]
    for statement, _src, label, ok, _ in findings:
        if not ok:
            raise AssertionError(f"the derivations do not support “{label}” for: {statement}")
    doc.appendix("Appendix: reference material")
    doc.section("A. Where each form fails in floating point", anchor="floats", level=3)
    doc.prose("Outcomes against a 50-digit reference (tolerance: 2e-3 float16, 1.6e-2 bfloat16, 1e-6 float32, "
              "1e-12 float64); bfloat16 is emulated (float32 operations rounded to bfloat16 after each step, as "
              "checked against PyTorch's bfloat16 in the tests). “ok, exp underflows to 0”: the true weights are "
              "below the smallest positive number of the format, so 0 is the correctly rounded answer.")
    ftable = float_table()
    doc.table(["form", "row", *DTYPES], ftable)
    doc.record("float_table", {"dtypes": list(DTYPES), "rows": ftable})
    with doc.results():
        doc.prose(
            f"softmax₁ is softmax with an extra logit fixed at 0: its weights sum to "
            f"{_val(doc, 'softmax1', 'mass_range', '(0, 1)')}, every weight can tend to 0 "
            f"({_v(doc, 'softmax1', 'can_abstain', 'proved')}), its ratios are softmax's, and a shift of the scores "
            f"is a sink logit, so it is not shift-invariant ({_v(doc, 'softmax1', 'shift_invariant', 'refuted')}). "
            "A zero token computes it only with score 0 and value 0; the overflow-free form is exact for any "
            "shift, and a faulty one found in public code can never abstain. Each statement of the post "
            "(Miller, 2023) and of its discussion, as its source wrote it, graded by the derivations below "
            "(a verdict that changed would stop the build):"
        )
        doc.table(["statement, as written", "source", "finding"],
                  [[q, src, f"**{lab}**: {why}"] for q, src, lab, _, why in findings],
                  caption="The comments are quoted as the Japanese summary {cite:offbyone-summary} of the post and "
                          "its discussion gives them; statements in words are translated.")
    doc.record("article", [{"statement": q, "finding": lab, "detail": why} for q, _src, lab, _, why in findings])
    return doc


def _faulty_counterexample(doc: Document, row: tuple) -> str:
    """The faulty form against softmax₁ on one row, with m = max x as the form defines it.

    Both weights of key 1 are evaluated exactly (closed forms in e) and shown different by ball
    arithmetic (python-flint ``arb``); registers the fact “faulty form equals softmax₁”.
    """
    m = max(row)
    subs = {n: len(row), MSHIFT: m, **{M[i, k + 1]: 1 for k in range(len(row))},
            **{x[i, k + 1]: v for k, v in enumerate(row)}}
    exact = lambda e: sp.simplify(e.subs(n, len(row)).doit().subs(subs))
    got, want = exact(faulty_weight(1)), exact(S1.weight(sc, key=1))
    if certify(got, want, Instance(d=1, n=len(row)), {}) is None:  # ball arithmetic proves got ≠ want
        raise AssertionError(f"faulty form vs softmax₁ on {row}: no certified difference")
    status = Verdict(REFUTED, "the two sides differ on a row", witness={"x": list(row), "m": m})
    doc.fact("faulty form equals softmax₁", status)
    xs = ", ".join(str(v) for v in row)
    return (f"on the row $x = ({xs})$, where $m = \\max_j x_j = {m}$ as the form prescribes, key 1 gets "
            f"${tex(got)} \\approx {float(got):.4f}$ from the faulty form and "
            f"${tex(want)} \\approx {float(want):.4f}$ from softmax₁ (exact values)")


# one colour per curve, the same in both figures (a normalizer keeps its colour)
COLOURS = {"softmax": "C0", "softmax₁": "C1", "sink s = −2": "C2", "sink s = 2": "C3", "sigmoid": "C4",
           "soft cap": "C5"}


def _draw_mass(ax):
    row = np.array([0.5, -1.0, 1.5, 0.0])
    cs = np.linspace(-10, 10, 201)
    for label, name, params in [("softmax", "softmax", {}), ("softmax₁", "softmax1", {}),
                                ("sink s = −2", "sink", {"s": -2.0}), ("sink s = 2", "sink", {"s": 2.0}),
                                ("sigmoid", "sigmoid", {"b": 0.0})]:
        e = get(name)
        ax.plot(cs, e.stable(row[None, :] + cs[:, None], **params).sum(axis=-1), color=COLOURS[label],
                label=label + (" (b = 0)" if name == "sigmoid" else ""))  # one row per c
    ax.set_xlabel("common shift c")
    ax.set_ylabel("Σ weights")
    ax.set_yscale("log")
    ax.set_ylim(1e-5, 10)
    ax.legend(frameon=False, fontsize=8)


def _draw_uniform(ax):
    ts = np.linspace(-5, 10, 151)
    for label, name, params in [("softmax", "softmax", {}), ("softmax₁", "softmax1", {}),
                                ("sink s = 2", "sink", {"s": 2.0}), ("sigmoid", "sigmoid", {"b": 0.0}),
                                ("soft cap", "softcap", {"c": 1.0})]:
        e = get(name)
        ys = e.stable(np.repeat(-ts[:, None], 4, axis=1), **params)[:, 0]  # one row per t
        if name == "softcap":  # equal to softmax's 1/4 all along: markers, so the curve under it stays visible
            ax.plot(ts[::10], ys[::10], "o", color=COLOURS[label], markersize=4, label=r"soft cap $c_{\mathrm{cap}} = 1$")
        else:
            ax.plot(ts, ys, "-", color=COLOURS[label], label=label + (" (b = 0)" if name == "sigmoid" else ""))
    ax.set_xlabel("t (scores x = −t·1)")
    ax.set_ylabel("weight of one key")
    ax.legend(frameon=False, fontsize=8)
