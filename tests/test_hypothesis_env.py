"""Searches draw the same instances whatever modules the process has imported."""

from __future__ import annotations

from derive.crosscheck.hypothesis_env import no_local_constants


def test_local_constants_are_empty_inside_and_restored_after():
    from hypothesis.internal.conjecture import providers

    before = providers._get_local_constants
    with no_local_constants():
        assert len(providers._get_local_constants()) == 0
    assert providers._get_local_constants is before


def _draws(guard: bool) -> list[int]:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    seen: list[int] = []

    @settings(max_examples=300, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.integers(0, 10**6))
    def search(k):
        seen.append(k)

    if guard:
        with no_local_constants():
            search()
    else:
        search()
    return seen


def test_draws_do_not_depend_on_the_constants_of_imported_modules(tmp_path, monkeypatch):
    """A local module full of integer constants is imported between two identical searches."""
    before = _draws(guard=True)
    (tmp_path / "derive_constants_probe.py").write_text(
        "VALUES = [" + ", ".join(str(777_000 + k) for k in range(200)) + "]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__("derive_constants_probe")
    assert _draws(guard=True) == before
    unguarded = _draws(guard=False)  # the test has teeth: without the guard the probe's constants are drawn
    from hypothesis.internal.conjecture import providers

    if hasattr(providers, "_get_local_constants"):
        assert any(777_000 <= k < 777_200 for k in unguarded)
