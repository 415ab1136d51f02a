"""Keep claims about a variant in your own test suite.

    from derive.testing import assert_claims

    def test_my_variant():
        assert_claims("variants/my_variant.derive.toml")

Every claim of the spec must be *proved*; otherwise the AssertionError lists the claims
that were refuted or undecided, with their reasons. The pytest plugin
(:mod:`derive.pytest_plugin`) does the same for every ``*.derive.toml`` file it collects.
"""

from __future__ import annotations

__all__ = ["assert_claims"]


def assert_claims(path, *, allow: dict | None = None) -> list:
    """Check the spec at ``path``; fail unless each claim is proved (or has the verdict in ``allow``).

    ``allow`` maps a claim name to the verdict expected instead (e.g. ``{"k_bias": "refuted"}``).
    Returns the claim results.
    """
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    result = check_spec(load_spec(path))
    allow = dict(allow or {})
    bad = []
    for c in result.claims:
        want = allow.pop(c.name, "proved")
        if c.verdict != want:
            bad.append(f"  {c.name} = {c.claim!r}: {c.verdict} (expected {want}): {c.reason}")
    if allow:
        bad.append(f"  no such claims: {', '.join(sorted(allow))}")
    if bad:
        raise AssertionError(f"{path}: claims not as expected:\n" + "\n".join(bad))
    return result.claims
