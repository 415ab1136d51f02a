"""Sums over one index (derive/prove/sums.py) as a proof step: what it proves, and what it must not.

The registry rows of docs/kernels.md (Σ_u p_u v_u against the output of the definition) and
softmax₁'s total mass in docs/softmax-one.md are proved by this rewriting and cross-checked;
each false variant below is refuted, and a renaming that would capture an index is not done.
"""

import sympy as sp

from derive.kernels.forms import exact_den, exact_out, sigma, v, w, x
from derive.model.attention import M, i, n, t, u
from derive.normalizers.registry import get
from derive.prove.equality import prove_equal
from derive.prove.sums import canon_sums, renames_safely
from derive.prove.verdict import PROVED, REFUTED
from derive.settings import DEFAULT

CFG = DEFAULT.merge(examples=20)
ONE_INDEX = "sums written over one index (a bound index renamed, factors free of it taken out)"


def _mix(name: str, **params) -> sp.Expr:
    return sp.Sum(get(name).weight(lambda k: x[i, k], key=u, **params) * v[u], (u, 1, n))


def _out(logit, value=0) -> sp.Expr:
    """The output of the definition with extra logit ``logit`` (None: none) and extra value ``value``."""
    return exact_out(False) if logit is None else exact_out(True).subs({sigma: logit, w: value})


def test_a_registry_row_of_the_kernels_document_is_proved_by_renaming_its_index():
    s = sp.Symbol("s", real=True)
    got = prove_equal(_out(s), _mix("sink", s=s), cfg=CFG)
    assert got.status == PROVED and got.method == ONE_INDEX, got


def test_a_registry_row_with_the_wrong_extra_logit_is_refuted():
    """Softmax's Σ_u p_u v_u claimed equal to the output with an extra logit σ = 0 (softmax₁'s)."""
    got = prove_equal(_out(0), _mix("softmax"), cfg=CFG)
    assert got.status == REFUTED and got.witness is not None, got
    assert prove_equal(_out(0), _mix("softmax1"), cfg=CFG).status == PROVED


def test_softmax_one_total_mass_is_proved_and_a_wrong_mass_refuted():
    mass = sp.Sum(get("softmax1").weight(lambda k: x[i, k], key=u), (u, 1, n))
    Z = sp.Sum(M[i, t] * sp.exp(x[i, t]), (t, 1, n))
    right = prove_equal(mass, Z / (1 + Z), cfg=CFG)
    assert right.status == PROVED and right.method == ONE_INDEX, right
    wrong = prove_equal(mass, Z / (2 + Z), cfg=CFG)
    assert wrong.status == REFUTED and wrong.witness is not None, wrong
    assert exact_den(False) == Z


def test_no_renaming_that_captures_an_index():
    """Σ_u e^{x_u} Σ_t e^{x_u x_t}: renaming u to t would turn the inner sum into Σ_t e^{x_t²} and
    give (Σ_t e^{x_t})(Σ_t e^{x_t²}), which is false (n = 2, x = (1, 0): e² + e + 2 against (e + 1)²)."""
    inner = sp.Sum(sp.exp(x[i, u] * x[i, t]), (t, 1, n))
    assert not renames_safely(sp.exp(x[i, u]) * inner, u, t)
    nested = sp.Sum(sp.exp(x[i, u]) * inner, (u, 1, n))
    assert canon_sums(nested) == nested
    captured = sp.Sum(sp.exp(x[i, t]), (t, 1, n)) * sp.Sum(sp.exp(x[i, t] ** 2), (t, 1, n))
    assert prove_equal(nested, captured, cfg=CFG).status == REFUTED
    # an index in the range is not captured either: Σ_{u=1}^{t} x_u is not Σ_{t=1}^{t} x_t
    assert not renames_safely(x[i, u], u, t, (1, t))
    assert canon_sums(sp.Sum(x[i, u], (u, 1, t))) == sp.Sum(x[i, u], (u, 1, t))


def test_a_sum_over_two_indices_is_kept_whole():
    """SymPy writes Σ_u Σ_t f as one sum with two ranges; rebuilding it over its first range alone
    would drop the other."""
    double = sp.Sum(sp.Sum(x[i, u] * v[t], (t, 1, n)), (u, 1, n))
    assert len(double.limits) == 2
    assert canon_sums(double) == double


def test_factors_free_of_the_index_leave_the_sum_and_nested_sums_are_renamed():
    a = sp.Symbol("a", positive=True)
    inner = sp.Sum(M[i, t] * sp.exp(x[i, t]), (t, 1, n))
    e = sp.Sum(a * x[i, u] / inner, (u, 1, n))
    assert canon_sums(e) == a * sp.Sum(x[i, t], (t, 1, n)) / inner
    sep = sp.Sum(x[i, u] * sp.Sum(v[t], (t, 1, n)), (u, 1, n))
    assert canon_sums(sep) == sp.Sum(x[i, t], (t, 1, n)) * sp.Sum(v[t], (t, 1, n))


def test_the_documents_cross_check_these_rows():
    """The committed documents (build_docs.py --check keeps them current) prove the registry rows of
    docs/kernels.md (softmax₁ and zero_token, one formula, in one step) and softmax₁'s total mass by
    this rewriting, and each has a numeric check."""
    import json
    from pathlib import Path

    docs = Path(__file__).resolve().parent.parent / "docs"
    for doc, names in (("kernels.json", ("bias_kv in the family", "sink in the family", "softmax in the family",
                                         "softmax1 in the family")),
                       ("softmax-one.json", ("total mass",))):
        data = json.loads((docs / doc).read_text(encoding="utf-8"))
        for prefix in names:
            (step,) = [s for s in data["steps"] if s["name"].replace("`", "").startswith(prefix)]
            assert (step["verdict"], step["method"]) == ("proved", ONE_INDEX), step
            (check,) = [c for c in data["checks"] if c["name"] == step["name"]]
            assert check["verdict"] == "passed" and check["examples"] > 0, check
