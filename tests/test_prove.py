import time

import pytest
import sympy as sp

from derive.model.attention import M, ScalarBase, i, j, n, scale, softmax_weight, t
from derive.model.vectors import Dot, VectorBase, expand_dot, vectors
from derive.prove.equality import prove_equal
from derive.timeout import TimeLimit, time_limit
from derive.prove.verdict import PROVED, REFUTED, UNDECIDED, Verdict
from derive.settings import DEFAULT

q0, k0, delta = VectorBase("q^0"), VectorBase("k^0"), VectorBase("delta")
bQ, bK = vectors("b_Q b_K")
s = ScalarBase("s")
c = sp.Symbol("c", real=True)


def weights(key_shift):
    return softmax_weight(lambda x: scale(Dot(q0[i], k0[x] + key_shift(x))))


def test_common_key_bias_cancels_for_any_mask():
    v = prove_equal(weights(lambda x: bK), weights(lambda x: 0))
    assert v.status == PROVED


def test_per_token_shift_claimed_invariant_is_refuted():
    v = prove_equal(weights(lambda x: delta[x]), weights(lambda x: 0))
    assert v.status == REFUTED
    w = v.witness
    assert w["instance"]["d"] <= 3 and w["instance"]["n"] <= 3
    assert abs(w["lhs"] - w["rhs"]) > 1e-6


def test_wrong_expansion_step_is_refuted():
    # the cross term b_Q·b_K is missing
    wrong = Dot(q0[i], k0[j]) + Dot(bQ, k0[j]) + Dot(q0[i], bK)
    v = prove_equal(Dot(q0[i] + bQ, k0[j] + bK), wrong)
    assert v.status == REFUTED
    assert "Dot(b_K, b_Q)" in v.reason


def test_shift_invariance_of_raw_scores():
    lhs = M[i, j] * sp.exp(s[i, j] + c) / sp.Sum(M[i, t] * sp.exp(s[i, t] + c), (t, 1, n))
    rhs = M[i, j] * sp.exp(s[i, j]) / sp.Sum(M[i, t] * sp.exp(s[i, t]), (t, 1, n))
    assert prove_equal(lhs, rhs).status == PROVED


def test_shift_by_key_dependent_amount_is_refuted():
    lhs = M[i, j] * sp.exp(s[i, j] + j) / sp.Sum(M[i, t] * sp.exp(s[i, t] + t), (t, 1, n))
    rhs = M[i, j] * sp.exp(s[i, j]) / sp.Sum(M[i, t] * sp.exp(s[i, t]), (t, 1, n))
    assert prove_equal(lhs, rhs).status == REFUTED


def test_numeric_agreement_alone_never_proves():
    # Zero on every value the search can draw, but not identically zero: without a
    # symbolic reduction to 0 the answer is undecided, not proved.
    from derive.crosscheck.witness import VALUES

    x = sp.Symbol("x", real=True)
    lhs = sp.Mul(*[x - v for v in VALUES], evaluate=False)
    v = prove_equal(lhs, sp.S.Zero, cfg=DEFAULT.merge(witness_examples=50))
    assert v.status == UNDECIDED


def test_sin_pi_x_is_refuted_at_a_half():
    # 0 on every integer, so a search over integers alone could never refute it.
    x = sp.Symbol("x", real=True)
    v = prove_equal(sp.sin(sp.pi * x), sp.S.Zero, cfg=DEFAULT.merge(witness_examples=50))
    assert v.status == REFUTED
    assert v.witness["instance"]["x"] not in (-3, -2, -1, 0, 1, 2, 3, 5, -7)


def test_time_limit_gives_undecided():
    x = sp.Symbol("x", real=True)
    y = sp.Symbol("y", real=True)
    v = prove_equal((x + y + 1) ** 60, sp.expand((x + y + 1) ** 60), cfg=DEFAULT.merge(time_limit=1e-3),
                    search=False)
    assert v.status == UNDECIDED
    assert "time limit of 0.001 s hit" in v.reason


def test_refuted_verdict_needs_a_witness():
    import pytest

    with pytest.raises(ValueError, match="counterexample"):
        Verdict(REFUTED, "no witness")
    with pytest.raises(ValueError, match="proved, refuted or undecided"):
        Verdict("probably", "")


def test_expansion_is_derived_not_typed():
    expanded = expand_dot(Dot(q0[i] + bQ, k0[j] + bK))
    assert set(sp.Add.make_args(expanded)) == {
        Dot(q0[i], k0[j]), Dot(bQ, k0[j]), Dot(q0[i], bK), Dot(bQ, bK)}


def test_time_limit_counts_cpu_time_not_waiting():
    """A loaded machine must not turn a proof into *undecided*: the bound is CPU time."""
    with time_limit(0.2):
        time.sleep(0.5)  # waiting (as when other processes have the CPU) does not count
    with pytest.raises(TimeLimit):
        with time_limit(0.2):
            end = time.process_time() + 5
            while time.process_time() < end:
                pass


def test_a_positive_factor_comes_out_of_max_min_and_abs():
    """Positive homogeneity: max(0, c·a) = c·max(0, a) for c > 0, and only for c > 0."""
    x, y, m = sp.symbols("x y m", real=True)
    c = sp.exp(-m)
    assert prove_equal(sp.Max(0, c * (sp.exp(x) - 1)), c * sp.Max(0, sp.exp(x) - 1)).status == PROVED
    assert prove_equal(sp.Min(c * x, 2 * c * y) / c, sp.Min(x, 2 * y)).status == PROVED
    assert prove_equal(sp.Abs(c * x - c * y), c * sp.Abs(x - y)).status == PROVED
    # a factor of unknown sign stays in: max(0, −a) is not −max(0, a)
    assert prove_equal(sp.Max(0, -c * x), -c * sp.Max(0, x)).status == REFUTED
    assert prove_equal(sp.Max(0, y * x), y * sp.Max(0, x)).status == REFUTED


# Adversarial identities: a prover that remembers or skips work must still refuse each false one.

def test_an_identity_false_only_by_a_sign_is_refuted():
    x = sp.Symbol("x", real=True)
    assert prove_equal(1 / (1 + sp.exp(-x)), sp.exp(x) / (1 + sp.exp(x))).status == PROVED
    assert prove_equal(1 / (1 + sp.exp(x)), sp.exp(x) / (1 + sp.exp(x))).status == REFUTED
    tanh = (sp.exp(x) - sp.exp(-x)) / (sp.exp(x) + sp.exp(-x))
    assert prove_equal(sp.tanh(x), tanh).status == PROVED
    assert prove_equal(sp.tanh(x), 1 / tanh).status == REFUTED


def test_an_identity_false_only_at_n_1_is_refuted_at_n_1():
    v = prove_equal(sp.Max(n - 1, 1), n - 1)
    assert v.status == REFUTED
    assert v.witness["instance"]["n"] == 1


def test_exact_identities_need_exact_arithmetic():
    r2 = sp.sqrt(2)
    exact = (1 + r2) ** 200 * (r2 - 1) ** 200  # 1, through integers of about 150 digits
    assert prove_equal(exact, sp.S.One).status == PROVED
    assert prove_equal(exact + sp.Rational(1, 10**300), sp.S.One).status != PROVED
    # e^{π√163} is within 10⁻¹² of an integer: no agreement in double precision makes it one
    assert prove_equal(sp.exp(sp.pi * sp.sqrt(163)), sp.Integer(640320**3 + 744)).status == REFUTED


def test_a_remembered_proof_is_the_same_proof():
    from derive.prove.equality import _FORMS, normal_form

    lhs = weights(lambda x: bK) - weights(lambda x: 0)
    first = normal_form(lhs)
    _FORMS.clear()
    assert normal_form(lhs) == first
    assert normal_form(lhs) is normal_form(lhs)
