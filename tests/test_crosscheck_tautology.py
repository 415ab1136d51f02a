"""A numeric cross-check of two sides that are one expression cannot fail: the build refuses it."""

import pytest
import sympy as sp

from derive import Document
from derive.crosscheck.check import cross_check, same_computation
from derive.errors import StepFailed
from derive.model.attention import M, ScalarBase, i, j

x = ScalarBase("x")

TAUT = ("taut: the cross-check of {name!r} cannot fail: both sides are the same expression after "
        "substitution, so the comparison checks nothing (evaluate each side from its own "
        "definition, or do not claim a cross-check)")


def test_a_side_built_from_the_other_is_rejected_with_the_step_named():
    # e^{x + 0}: the left side is the right one rebuilt, and SymPy drops the + 0
    doc = Document("taut", "Tautologies")
    with pytest.raises(StepFailed) as err:
        doc.equation(sp.exp(x[i, j] + 0), sp.exp(x[i, j]), name="shift by zero", why="e^0 = 1.")
    assert str(err.value) == TAUT.format(name="shift by zero")


def test_identical_after_the_assumed_values_is_rejected():
    doc = Document("taut", "Tautologies")
    with pytest.raises(StepFailed) as err:
        doc.equation(M[i, j] * sp.exp(x[i, j]), sp.exp(x[i, j]), assume={M[i, j]: 1},
                     name="allowed key", why="M = 1.")
    assert str(err.value) == TAUT.format(name="allowed key")


def test_a_chain_whose_ends_are_one_expression_is_rejected():
    doc = Document("taut", "Tautologies")
    e = sp.exp(x[i, j])
    with pytest.raises(StepFailed) as err:
        doc.chain([e, sp.exp(x[i, j] / 2) ** 2, e], ["square of the half", "back"], name="round trip")
    assert str(err.value) == TAUT.format(name="round trip")


def test_the_engine_refuses_it_too_and_a_real_check_still_runs():
    e = sp.exp(x[i, j])
    with pytest.raises(StepFailed, match=r"^the cross-check of 'bare' cannot fail: both sides are the same"):
        cross_check("bare", e, e)
    with pytest.raises(StepFailed, match="cannot fail"):
        cross_check("bare", M[i, j] * e, e, assume={M[i, j]: 1})
    assert not same_computation(sp.exp(x[i, j] - x[i, 1]), sp.exp(x[i, j]) / sp.exp(x[i, 1]))
    doc = Document("taut", "Tautologies")
    step = doc.equation(sp.exp(x[i, j] - x[i, 1]), sp.exp(x[i, j]) / sp.exp(x[i, 1]), name="quotient", why="e^{a-b}.")
    assert step.check is not None and step.check.passed and step.check.examples > 0
    # without a claimed check the display is allowed: it states nothing numeric
    shown = doc.equation(sp.exp(x[i, j] + 0), sp.exp(x[i, j]), name="display", why="e^0 = 1.", check=False)
    assert shown.check is None
