"""Helpers for a user's own pytest suite: claims about a variant, and implementations.

    from derive.testing import assert_claims, assert_implements

    def test_my_variant():
        assert_claims("variants/my_variant.derive.toml")

    def test_my_softmax1():
        assert_implements(my_softmax1, "softmax1", dtypes=("float32", "float64"))

``assert_claims`` requires every claim of the spec to be *proved* (or to have the verdict
given in ``allow``); a claim on which derive's engine failed is never a pass: it raises
:class:`~derive.errors.InternalError`, chained to the engine's exception. The pytest plugin
(:mod:`derive.pytest_plugin`) does the same for every ``*.derive.toml`` file it collects.
``assert_implements`` runs the differential check of ``derive impl`` and fails with its report.
"""

from __future__ import annotations

__all__ = ["assert_claims", "assert_implements"]


def assert_claims(path, *, allow: dict | None = None) -> list:
    """Check the spec at ``path``; fail unless each claim gets its expected verdict: the spec's own
    ``expect`` (proved by default), or the verdict ``allow`` gives it.

    ``allow`` maps a claim name to the verdict expected instead (e.g. ``{"k_bias": "refuted"}``).
    Returns the claim results. A claim on which the engine failed (no verdict) raises
    :class:`~derive.errors.InternalError` from the engine's exception, whatever ``allow`` says.
    """
    from derive.claims.run import check_spec
    from derive.errors import InternalError
    from derive.spec import load_spec
    from derive.render.markup import plain_math

    result = check_spec(load_spec(path))
    failed = result.errors
    if failed:
        lines = [f"  {c.name} = {c.claim!r}: {c.reason}" for c in failed]
        raise InternalError(f"{path}: the engine failed on {len(failed)} claim{'' if len(failed) == 1 else 's'}:\n"
                            + "\n".join(lines)) from failed[0].exception
    allow = dict(allow or {})
    bad = []
    for c in result.claims:
        want = allow.pop(c.name, c.expected)
        if c.verdict != want:
            bad.append(f"  {c.name} = {c.claim!r}: {c.verdict} (expected {want}): {plain_math(c.reason)}")
    if allow:
        bad.append(f"  no such claims: {', '.join(sorted(allow))}")
    if bad:
        raise AssertionError(f"{path}: claims not as expected:\n" + "\n".join(bad))
    return result.claims


def assert_implements(fn, normalizer: str, *, params: dict | None = None, dim: int = -1,
                      dtypes=None, examples: int | None = None, timeout: float | None = None,
                      form: str = "row", lse: str = "natural", env: dict | None = None,
                      per_head: bool = False):
    """Assert that ``fn`` implements ``normalizer`` (differential testing, as ``derive impl``).

    ``fn`` is a callable or a ``FILE.py:func`` / ``module:func`` string. Raises
    :class:`AssertionError` carrying the Markdown report (counterexample and diagnosis) when
    it disagrees; raises :class:`derive.errors.InputError` on bad usage (or when the function
    exits, hangs past ``timeout`` seconds per call, or writes to stdout). ``fn`` runs in a child
    process, so a callable must be picklable by reference (defined at module level). Returns
    the report. ``form`` (``online``, ``split``, ``backward``) checks kernel-shaped code, as
    ``derive impl --form`` does; ``lse`` is then the convention of a returned lse. ``env`` is
    added to the environment of the child process before it imports ``fn``; ``per_head`` passes
    the parameters as arrays (H,), one per head, as ``--per-head`` does.
    """
    from derive.impl import DEFAULT_DTYPES, check_implementation
    from derive.impl.run.target import DEFAULT_TIMEOUT

    report = check_implementation(fn, normalizer, params=params, dim=dim,
                                  dtypes=DEFAULT_DTYPES if dtypes is None else dtypes, examples=examples,
                                  timeout=DEFAULT_TIMEOUT if timeout is None else timeout, form=form, lse=lse, env=env,
                                  per_head=per_head)
    if getattr(report, "verdict", "agrees" if report.agrees else "disagrees") != "agrees":  # undecided is no pass
        raise AssertionError(report.to_markdown())
    return report
