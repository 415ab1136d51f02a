"""The registry of row normalizers.

Each entry is written once, as a formula of :mod:`derive.normalizers.formula` (the language
of a spec's ``[normalizer]`` table: ``exp(x_j) / (exp(s) + sum_t(exp(x_t)))``), with its
citation. From the formula :func:`from_formula` derives, for a row of scores x (symbolic n,
mask M):

* ``weight(score, key, params)`` — the symbolic weight of ``key`` (a SymPy expression built
  from :mod:`derive.model.attention`: masked entries get weight 0);
* ``reference(x, mask, params)`` — the definition's exact weights (arb balls at an adaptive
  precision, :mod:`derive.normalizers.exact`) as mpmath numbers correct to the current
  precision, for one row given as a list (``mask``: True = allowed);

and ``stable(x, mask, params)``, a numpy implementation over the last axis in float64: the
overflow-free form derived from the formula (:mod:`derive.normalizers.overflow`, proved equal
to the definition by :mod:`derive.normalizers.stable`), vectorised over rows by
:mod:`derive.normalizers.vectorised`; where no such form is derived, the formula as written
(``entry.stable.reason`` says why).

Optional fields (with defaults) feed the generic property provers of
:mod:`derive.normalizers.properties`: ``domain`` (the parameter ranges, as symbols with
assumptions or expressions in them), ``sample`` (in-domain parameter values used for
counterexamples and plots), ``shift_effect`` (a *claim*, proved or refuted by the prover,
that a common shift c of the scores equals this or another entry with changed
parameters), ``token`` (the entry has a token of its own, given in a spec by its key and
value vectors: its score is a parameter, its value is mixed into the output with the
token's weight, ``extra_weight``), ``definition`` (LaTeX for documents), ``label`` (the
short plain-text name of reports) and, for a spec, ``roles`` (what each parameter is, in
words) and ``args_required`` (a spec must name the parameters).

Adding a normalizer is one :func:`from_formula` entry in :data:`REGISTRY`; every property
and check is derived from these definitions by generic machinery (the softmax family, its
extra logit and kernel forms by :mod:`derive.normalizers.family`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import sympy as sp

from derive.errors import InputError
from derive.model.attention import M, X, i, j
from derive.normalizers.parts import NEGATIVE, POSITIVE, REAL, Token, Trial
from derive.normalizers.vectorised import Stable

__all__ = ["REGISTRY", "SINK", "USER", "Normalizer", "Token", "Trial", "from_formula", "get", "names", "on_use",
           "register", "unregister", "user_entry"]


@dataclass(frozen=True)
class Normalizer:
    name: str
    title: str
    params: tuple[str, ...]
    weight: Callable[..., sp.Expr]
    stable: Callable[..., np.ndarray]
    reference: Callable[..., list]
    latex: str
    definition: str = ""
    domain: dict = field(default_factory=dict)  # param → symbol/expression with assumptions
    domain_text: str = ""
    sample: dict = field(default_factory=dict)  # param → in-domain value (counterexamples, plots)
    shift_effect: Callable | None = None  # (c, params) → (entry name, params) claimed equal
    token: Token | None = None  # a token of its own (key and value vectors in a spec)
    note: str = ""
    sources: tuple[str, ...] = ()  # keys of derive.references: where the normalizer comes from
    # A composition p_j = M_j·outer(p'_j, **params) with p' the weights of entry ``inner``
    # (checked by the provers before use, never assumed).
    inner: str | None = None
    outer: Callable | None = None
    # With a ``token``: (score, **params) → the weight of the entry's own token, which
    # multiplies its own value in the output (derived from the formula's softmax family).
    extra_weight: Callable | None = None
    formula: str = ""  # the weight in the formula language (derive.normalizers.formula)
    definition_of: object = field(default=None, compare=False, repr=False)  # its compiled Formula
    label: str = ""  # the short plain-text name of reports, e.g. softmax₁ (default: the name)
    roles: dict = field(default_factory=dict)  # param → what it is, in words ("the sink logit")
    args_required: bool = False  # a spec must name every parameter (else a plain NAME is accepted)
    trials: dict = field(default_factory=dict)  # param → its Trial, where the one of its sign does not fit

    def trial(self, p: str) -> Trial:
        """What ``derive impl`` tries for parameter ``p``: the entry's own, else by its sign."""
        if p in self.trials:
            return self.trials[p]
        sym = self.symbols().get(p)
        return POSITIVE if sym is not None and sym.is_positive else \
            NEGATIVE if sym is not None and sym.is_negative else REAL

    @property
    def extra_value(self) -> bool:
        """Does the entry mix a value vector of its own into the output?"""
        return self.token is not None

    def symbols(self) -> dict[str, sp.Expr]:
        """The symbolic parameters, with their domain (e.g. c > 0 for a soft cap)."""
        return {p: self.domain.get(p, sp.Symbol(p, real=True)) for p in self.params}

    def shown_parameter(self, p: str) -> str:
        """How a counterexample names the entry's own parameter ``p`` when no spec name is given
        for it: ``NAME.SYMBOL`` for a parameter that is one symbol (``softcap.c_cap``,
        ``sigmoid.b``), ``NAME.p`` for one that is an expression in another (clipped's ζ = 1 + ζ',
        ``clipped.zeta``) or a token's score (``bias_kv.s_star``); its value is the parameter's."""
        sym = self.symbols()[p]
        return f"{self.name}.{sym.name}" if isinstance(sym, sp.Symbol) and self.token is None else f"{self.name}.{p}"

    def shown_parameters(self, values: dict) -> dict:
        """``values`` (a counterexample's inputs) with each own parameter that is an expression in
        other symbols (clipped's ζ' ≥ 0, ζ = 1 + ζ') given as the parameter's value under
        :meth:`shown_parameter` instead of those symbols' values."""
        out = dict(values)
        for p, e in self.symbols().items():
            if isinstance(e, sp.Symbol) or not e.free_symbols:
                continue
            keys = {f"{self.name}.{s.name}": s for s in e.free_symbols}
            if not all(k in out and isinstance(out[k], (int, float)) for k in keys):
                continue
            value = e.xreplace({s: sp.nsimplify(out.pop(k)) for k, s in keys.items()})
            out[self.shown_parameter(p)] = int(value) if value.is_integer else float(value)
        return out

    def sample_values(self) -> dict[str, sp.Expr]:
        return {p: _exact(self.sample.get(p, 0)) for p in self.params}


def _exact(value) -> sp.Expr:
    """A sample value as an exact number (``nsimplify``: 0.1 is 1/10), once per value and type: the
    provers ask for an entry's sample values again and again."""
    try:
        return _exact_once(value)
    except TypeError:  # an unhashable value: converted each time
        return sp.nsimplify(value)


_exact_once = lru_cache(maxsize=None, typed=True)(sp.nsimplify)


REGISTRY: dict[str, Normalizer] = {}
SINK = sp.Symbol("s", real=True)  # the sink logit, a shared real parameter


def register(entry: Normalizer) -> Normalizer:
    REGISTRY[entry.name] = entry
    return entry


def unregister(name: str) -> None:
    REGISTRY.pop(name, None)


def _sample_value(sym) -> int:
    """A value inside the parameter's declared sign, for counterexamples (a refutation there
    refutes the claim for every value; a claim true there and false elsewhere stays undecided)."""
    return -1 if sym.is_negative else 1


def _kind(sym) -> str:
    return "positive" if sym.is_positive else "negative" if sym.is_negative else "nonzero" if sym.is_nonzero \
        else "real"


def from_formula(name: str, title: str, formula: str, *, params: tuple[str, ...] = (), domain: dict | None = None,
                 scalars: dict | None = None, ref_defaults: dict | None = None,
                 score2: bool = False, latex: str | None = None, definition: str | None = None,
                 compiled=None, **fields) -> Normalizer:
    """The entry of ``formula`` (see :mod:`derive.normalizers.formula`): its symbolic weight and
    its exact reference are the formula's. ``params``: the formula's scalars in the order the
    entry lists them (default: as they appear); ``domain``: param → symbol or expression over
    its range (the weight's default); ``scalars``: param → SymPy assumptions of the formula's
    own symbol; ``ref_defaults``: the values a reference call leaves out.

    What follows from a parameter's declared sign is derived, not retyped: a parameter with no
    ``domain`` is the formula's own symbol (``scalars``: ``{"tau": {"positive": True}}`` gives
    τ > 0), and unless given, its ``sample`` is a value of that sign and ``domain_text`` says
    the sign ("$tau$ positive")."""
    from derive.normalizers.formula import compile_weight

    domain = dict(domain or {})
    scalars = dict(scalars or {})
    names_ = set(params) | set(domain) | set(scalars)
    f = compiled or compile_weight(formula, {p: scalars.get(p, {}) for p in names_ or _scalar_names(formula)},
                                   score2=score2, defaults=domain)
    params = tuple(params) or f.params
    if set(params) != set(f.params):
        raise ValueError(f"{name}: the formula's parameters are {f.params}, the entry lists {params}")
    for p in params:  # the formula's own symbol, with its declared sign
        domain.setdefault(p, f.defaults[p])
    signed = {p: domain[p] for p in params if isinstance(domain[p], sp.Symbol)}
    fields.setdefault("sample", {p: _sample_value(s) for p, s in signed.items()})
    fields.setdefault("domain_text", ", ".join(f"${p}$ {_kind(s)}" for p, s in signed.items()))
    ref_defaults = dict(ref_defaults or {})

    def weight(score, key=j, score2=None, **p):
        return f.weight(score, key, score2, **{k: v for k, v in p.items() if k in f.params})

    def reference(x, mask=None, y=None, balls=False, row=None, **p):
        vals = {**ref_defaults, **{k: v for k, v in p.items() if k in f.params}}
        return f.reference(x, mask, y, row=row, balls=balls, **vals)

    if definition is None:
        from derive.render.latex import tex

        definition = "p_j = " + tex(f.weight(lambda k: X[i, k]).subs(M[i, j], 1))
    made: list = []
    if fields.get("token") is not None:  # the token's weight, E/(E + Σ e^x), from the softmax family
        from derive.normalizers.family import extra_weight

        fields["extra_weight"] = lambda score, **p: extra_weight(made[0], score, **p)
    made.append(Normalizer(name=name, title=title, params=params, weight=weight, reference=reference,
                           stable=Stable(f, params, ref_defaults), latex=latex or rf"\operatorname{{{name}}}",
                           definition=definition, domain=domain, formula=formula, definition_of=f,
                           label=fields.pop("label", "") or name, **fields))
    return made[0]


def _scalar_names(formula: str) -> dict:
    """Every name of ``formula`` that is not part of the language: its parameters (real)."""
    from derive.normalizers.formula import FUNCTIONS, REDUCTIONS
    from derive.language.parser import Name, parse, walk

    reserved = {"x_j", "x_t", "y_j", "y_t", "n", "i", "j", "t", *FUNCTIONS, *REDUCTIONS}
    return {nd.id: {} for nd in walk(parse(formula)) if isinstance(nd, Name) and nd.id not in reserved}


_s = SINK
_b = sp.Symbol("b", real=True)
_sstar = sp.Symbol("s^*_i", real=True)
_zeta = sp.Symbol("zeta", real=True)
_gamma = sp.Symbol("gamma", real=True)
_cap = sp.Symbol("c_cap", positive=True)  # the soft cap c (named apart from a shift c)
_SOFTMAX = "exp(x_j) / sum_t(exp(x_t))"

register(
    from_formula(
        "softmax", "softmax", _SOFTMAX,
        sources=("vaswani2017",),
        latex=r"\operatorname{softmax}",
        definition=r"p_j = \frac{e^{x_j}}{\sum_t e^{x_t}}",
    )
)
register(
    from_formula(
        "softmax1", "softmax₁ (QuietAttention)", "exp(x_j) / (1 + sum_t(exp(x_t)))",
        sources=("miller2023",),
        latex=r"\operatorname{softmax}_1",
        label="softmax₁",
        definition=r"p_j = \frac{e^{x_j}}{1 + \sum_t e^{x_t}}",
        shift_effect=lambda c, p: ("sink", {"s": -c}),
    )
)
register(
    from_formula(
        "sink", "sink logit s (gpt-oss)", "exp(x_j) / (exp(s) + sum_t(exp(x_t)))",
        sources=("gpt-oss2025",),  # Xiao et al.'s sink tokens have values: bias_kv
        params=("s",),
        label="sink_s", roles={"s": "the sink logit"}, args_required=True,
        ref_defaults={"s": 0.0},
        latex=r"\operatorname{sink}_s",
        definition=r"p_j = \frac{e^{x_j}}{e^{s} + \sum_t e^{x_t}}",
        domain={"s": _s},
        domain_text="$s$ real (learned per head)",
        sample={"s": 1},
        shift_effect=lambda c, p: ("sink", {"s": p["s"] - c}),
    )
)
register(
    from_formula(
        "zero_token", "zero-token attention (add_zero_attn)", "exp(x_j) / (exp(0) + sum_t(exp(x_t)))",
        sources=("pytorch-mha",),
        label="zero",
        latex=r"\operatorname{zero}",
        definition=r"p_j = \frac{e^{x_j}}{e^{0} + \sum_t e^{x_t}}\ \text{(extra key of score 0, value 0)}",
        shift_effect=lambda c, p: ("sink", {"s": -c}),
        note="the extra key's score is exactly 0 and its value is the zero vector",
    )
)
register(
    from_formula(
        "bias_kv", "learned key/value token (add_bias_kv)", "exp(x_j) / (exp(s_star) + sum_t(exp(x_t)))",
        sources=("pytorch-mha", "xiao2024"),
        params=("s_star",),
        # The learned key k* scores s*_i = ⟨q_i, k*⟩/√d (query-dependent); its weight
        # e^{s*}/(e^{s*} + Σ e^{x_t}) multiplies its own value v*.
        label="kv*_s*",
        token=Token("s_star", "dot(q, k_star) / sqrt(d)", ("k_star", "the learned key k*"),
                    ("v_star", "the learned value v*")),
        ref_defaults={"s_star": 0.0},
        latex=r"\operatorname{kv}^{*}",
        definition=r"p_j = \frac{e^{x_j}}{e^{x^*_i} + \sum_t e^{x_t}},\ x^*_i = \langle q_i, k^* \rangle/\sqrt{d}",
        domain={"s_star": _sstar},
        domain_text="$x^*_i = \\langle q_i, k^* \\rangle / \\sqrt{d}$ real, one per query row",
        sample={"s_star": 1},
        shift_effect=lambda c, p: ("bias_kv", {"s_star": p["s_star"] - c}),
        note="weights of the real keys only; the learned token adds $e^{x^*_i} v^* / (e^{x^*_i} + \\sum_t e^{x_t})$ to the output",
    )
)
register(
    from_formula(
        "sigmoid", "sigmoid attention", "sigmoid(x_j + b)",
        sources=("ramapuram2025",),
        params=("b",),
        label="σ", roles={"b": "the sigmoid bias"},
        ref_defaults={"b": 0.0},
        latex=r"\sigma",
        definition=r"p_j = \sigma(x_j + b) = \frac{1}{1 + e^{-(x_j + b)}}",
        domain={"b": _b},
        domain_text="$b$ real",
        sample={"b": 0},
        shift_effect=lambda c, p: ("sigmoid", {"b": p["b"] + c}),
    )
)
register(
    from_formula(
        "clipped", "clipped softmax (Quantizable Transformers)",
        "min(1, max(0, (zeta - gamma) * exp(x_j) / sum_t(exp(x_t)) + gamma))",
        sources=("bondarenko2023",),
        params=("zeta", "gamma"),
        label="clip",
        trials={"zeta": Trial(1.0, 5.0, (1.0, 1.5, 3.0), (1.5, 1.0)),
                "gamma": Trial(-5.0, 0.0, (0.0, -0.1, -2.0), (-0.75, -0.1))},
        ref_defaults={"zeta": 1.0, "gamma": -0.5},
        latex=r"\operatorname{clip}",
        definition=r"p_j = \min\bigl(1, \max\bigl(0, (\zeta - \gamma)\operatorname{softmax}(x)_j + \gamma\bigr)\bigr)",
        domain={"zeta": 1 + sp.Symbol("zeta'", nonnegative=True), "gamma": -sp.Symbol("gamma'", nonnegative=True)},
        domain_text="$\\zeta \\ge 1$, $\\gamma \\le 0$",
        sample={"zeta": 1, "gamma": sp.Rational(-1, 10)},
        inner="softmax",
        outer=lambda w, zeta=_zeta, gamma=_gamma, **p: sp.Min(1, sp.Max(0, (zeta - gamma) * w + gamma)),
    )
)
register(
    from_formula(
        "softcap", "soft-capped softmax (Gemma 2)", "exp(c * tanh(x_j / c)) / sum_t(exp(c * tanh(x_t / c)))",
        sources=("gemma2-2024",),
        params=("c",),
        scalars={"c": {"positive": True}},
        label="softcap_c",
        trials={"c": Trial(0.5, 100.0, (50.0, 1.0, 5.0), (1.5, 5.0))},
        ref_defaults={"c": 50.0},
        latex=r"\operatorname{softmax}\circ\operatorname{cap}_{c_{\mathrm{cap}}}",
        # The cap is written c_cap everywhere it is shown: c alone is a common shift of the scores.
        definition=r"p_j = \operatorname{softmax}\bigl(c_{\mathrm{cap}} \tanh(x/c_{\mathrm{cap}})\bigr)_j",
        domain={"c": _cap},
        domain_text=r"$c_{\mathrm{cap}} > 0$ (50 in Gemma 2)",
        sample={"c": 1},
    )
)


_eps = sp.Symbol("epsilon", positive=True)
_ss = sp.Symbol("lambda_ssmax", real=True)  # SSMax's scale s, shown λ (s is the sink logit: one symbol, one meaning)
register(
    from_formula(
        "softpick", "softpick", "relu(exp(x_j) - 1) / (sum_t(abs(exp(x_t) - 1)) + eps)",
        sources=("zuhri2025",),
        params=("eps",),
        ref_defaults={"eps": 1e-6},
        latex=r"\operatorname{softpick}",
        definition=r"p_j = \frac{\operatorname{ReLU}(e^{x_j} - 1)}{\sum_t \lvert e^{x_t} - 1 \rvert + \epsilon}",
        domain={"eps": _eps},
        domain_text="$\\epsilon > 0$ (small)",
        sample={"eps": sp.Rational(1, 1000)},
        note="rectified: a key with $x_j \\le 0$ gets weight exactly 0, so a row can give every key weight 0",
    )
)
register(
    from_formula(
        "ssmax", "Scalable-Softmax (SSMax)", "exp(s * log(n) * x_j) / sum_t(exp(s * log(n) * x_t))",
        sources=("nakanishi2025",),
        params=("s",),
        ref_defaults={"s": 1.0},
        latex=r"\operatorname{ssmax}_s",
        definition=r"p_j = \frac{e^{\lambda \log(N_i) x_j}}{\sum_t e^{\lambda \log(N_i) x_t}} = \frac{N_i^{\lambda x_j}}{\sum_t N_i^{\lambda x_t}},\ N_i = \text{allowed keys}",
        domain={"s": _ss},
        domain_text="$\\lambda$ (the parameter `s`) real, learned per head; $N_i$ the number of allowed keys of the row",
        sample={"s": 1},
    )
)
register(
    from_formula(
        "sigmoid_logn", "sigmoid attention with bias −log n", "sigmoid(x_j - log(n))",
        sources=("ramapuram2025",),
        latex=r"\sigma_{-\log N}",
        definition=r"p_j = \sigma(x_j - \log N_i),\ N_i = \text{allowed keys}",
        note="the bias $b = -\\log N_i$ recommended for sigmoid attention, with $N_i$ the row's allowed keys",
        # a shift c moves the bias −log N_i to c − log N_i: plain sigmoid, its bias fixed per row
        shift_effect=lambda c, p: ("sigmoid", {"b": c - sp.log(allowed_keys())}),
    )
)
register(
    from_formula(
        "stick_breaking", "stick-breaking attention", "sigmoid(x_j) * prod_t(1 - sigmoid(x_t), t > j)",
        sources=("tan2024",),
        latex=r"\operatorname{sb}",
        definition=r"p_j = \sigma(x_j) \prod_{t > j} \bigl(1 - \sigma(x_t)\bigr)",
        note="the product runs over the allowed keys after $j$ (the nearer keys of a causal row break the stick first)",
    )
)
register(
    from_formula(
        "relu_n", "ReLU attention divided by n", "relu(x_j) / n",
        sources=("wortsman2023",),
        latex=r"\operatorname{ReLU}/N",
        definition=r"p_j = \operatorname{ReLU}(x_j) / N_i,\ N_i = \text{allowed keys}",
    )
)


def allowed_keys() -> sp.Expr:
    """N_i, the number of keys row i may attend to, as the formula language reads ``n``."""
    from derive.model.attention import n

    r = sp.Symbol("r", integer=True, positive=True)
    return sp.Sum(M[i, r], (r, 1, n))


USER: dict[str, Normalizer] = {}  # the normalizers of specs' [normalizer] tables, by registry name


def user_entry(label: str, f) -> str:
    """The registry name of a spec's normalizer, the compiled formula ``f`` labelled ``label``:
    an entry with the same weight and parameters (built-in, or loaded before under this label) if there is one,
    else a new entry named ``label`` (``label#<digest of the definition>`` when taken). A formula
    whose symbolic reading drops a subterm that may have no value (``0/x_j``) is never another
    entry: the two readings agree, the weights as written do not."""
    import hashlib

    from derive.normalizers.partial import dropped

    mine = f.weight(lambda k: X[i, k])
    # a built-in of the same weight, or a user entry loaded before under this label: another spec's
    # label (a test's "t_differential") would name this spec's normalizer in its report
    mine_before = [e for k, e in USER.items() if k == label or k.startswith(f"{label}#")]
    for entry in list(REGISTRY.values()) + mine_before if not dropped(f) else ():
        if set(entry.params) != set(f.params):
            continue
        # the same parameters over the same domain (each a symbol with the declared sign)
        own = entry.symbols()
        if not all(isinstance(own[p], sp.Symbol) and own[p].assumptions0 == f.defaults[p].assumptions0
                   for p in f.params):
            continue
        if entry.weight(lambda k: X[i, k], j, **dict(f.defaults)) == mine:
            return entry.name
    key = label
    if key in REGISTRY or key in USER:
        digest = hashlib.sha256(f"{f.text}|{sorted(f.defaults.items(), key=str)}|{f.score2}".encode()).hexdigest()
        key = f"{label}#{digest[:6]}"
    tex_name = "".join(ch for ch in label if ch.isalnum()) or "p"
    USER[key] = from_formula(key, label, f.text, compiled=f, domain=dict(f.defaults),
                             latex=rf"\operatorname{{{tex_name}}}", score2=f.score2, note="defined in a spec")
    return key


def on_use(read: Callable[[], object]) -> Callable[[], object]:
    """A table read off the registry (``read()``), computed when it is asked for and remembered
    while the registry holds the same entries: an entry registered later (a user's, or a test's
    temporary one) or removed is seen by the next call, whenever the reader's module was imported."""
    memo: dict = {}

    def view():
        state = tuple((name, id(entry)) for name, entry in REGISTRY.items())
        if memo.get("state") != state:
            # the entries are kept with the table, so none of these ids can be reused while it is remembered
            memo.update(state=state, entries=tuple(REGISTRY.values()), table=read())
        return memo["table"]

    view.__doc__ = read.__doc__
    view.__name__ = read.__name__
    return view


def names() -> list[str]:
    return sorted(REGISTRY)


def get(name: str) -> Normalizer:
    if name in USER:
        return USER[name]
    try:
        return REGISTRY[name]
    except KeyError:
        import difflib

        near = difflib.get_close_matches(name, names(), n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise InputError(f"unknown normalizer {name!r}: expected one of {', '.join(names())}{hint}") from None
