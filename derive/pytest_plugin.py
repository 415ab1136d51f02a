"""A pytest plugin: every ``*.derive.toml`` file is a test module, each claim one test.

Enable with ``-p derive.pytest_plugin`` (or the ``pytest11`` entry point
``derive = "derive.pytest_plugin"``). A claim passes when it gets its expected verdict, as
``derive check`` decides: ``NAME = { claim = "CLAIM", expect = "refuted" }`` (proved by default).
A claim whose name ends in ``__refuted`` is expected to be refuted too (the older spelling).
A claim on which derive's engine failed fails with :class:`~derive.errors.InternalError`, chained
to the engine's exception and its traceback: never a pass, never an undecided verdict.
"""

from __future__ import annotations

import pytest

__all__ = ["pytest_collect_file"]


def pytest_collect_file(parent, file_path):
    if file_path.name.endswith(".derive.toml"):
        return SpecFile.from_parent(parent, path=file_path)
    return None


class SpecFile(pytest.File):
    def collect(self):
        from derive.spec import load_spec

        spec = load_spec(self.path)
        for claim in spec.claims:
            yield ClaimItem.from_parent(self, name=claim.name, spec=spec, claim=claim.name)


class ClaimItem(pytest.Item):
    def __init__(self, *, spec, claim, **kwargs):
        super().__init__(**kwargs)
        self.spec, self.claim = spec, claim

    def runtest(self):
        from derive.claims.run import check_spec
        from derive.spec.load import Spec

        one = Spec(**{**self.spec.__dict__, "claims": tuple(c for c in self.spec.claims if c.name == self.claim)})
        (res,) = check_spec(one).claims
        if res.is_error:
            from derive.errors import InternalError

            raise InternalError(f"{self.claim} = {res.claim!r}: {res.reason}") from res.exception
        want = "refuted" if self.claim.endswith("__refuted") and res.expected == "proved" else res.expected
        if res.verdict != want:
            raise ClaimFailed(res, want)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ClaimFailed):
            from derive.render.markup import plain_math

            r, want = excinfo.value.args
            return f"{self.claim} = {r.claim!r}: {r.verdict} (expected {want}): {plain_math(r.reason)}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"{self.path.name}::{self.claim}"


class ClaimFailed(Exception):
    pass
