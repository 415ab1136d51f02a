"""What every registry entry yields, against the reviewed golden file (see tests/registries.py).

A change to a normalizer, a claim kind, a mask form, a fault or a format that moves any derived
fact (a fault that applies or stops applying, a kernel form that appears, a parameter's sign)
fails here until ``python tests/registries.py`` rewrites the file and the diff is reviewed."""

from __future__ import annotations

import json

from registries import GOLDEN, snapshot


def test_the_registries_yield_what_the_golden_file_says():
    assert snapshot() == json.loads(GOLDEN.read_text(encoding="utf-8")), "regenerate: python tests/registries.py"


def test_the_golden_file_is_what_the_command_writes():
    from registries import text

    assert GOLDEN.read_text(encoding="utf-8") == text(), "regenerate: python tests/registries.py"


def test_facts_the_golden_file_must_keep():
    """A few entries of the file checked by their mathematics, not by the file: tanh(x/c) is odd
    in c, so c·tanh(x/c) is even in c and flipping c's sign changes nothing (no sign fault for
    softcap); softmax has no extra term to leave unshifted; a sink of its own logit has every fault
    of the extra logit."""
    facts = snapshot()["normalizers"]
    assert "param-sign-flipped" not in facts["softcap"]["row_faults"]
    assert "unshifted-extra-term" not in facts["softmax"]["row_faults"]
    assert {"unshifted-extra-term", "extra-logit-scaled", "param-sign-flipped"} <= set(facts["sink"]["row_faults"])
