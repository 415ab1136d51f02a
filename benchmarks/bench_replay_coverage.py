"""Replay coverage: how many of derive's proofs replay in its independent checker, per suite.

    python benchmarks/bench_replay_coverage.py [--docs]

The suites: the atlas (derive/atlas), tests/specs (its own specs, the adversarial corpus
tests/specs/adversarial, the singular claims tests/specs/replay), tests/normalizer_specs, the
normalizer table (every built-in × every property), and with --docs the steps of every document
built from proofs/*.py. For each: the proved verdicts, how many of them replayed, how many are
"proved (not replayed)" (outside the checker's language, each with its reason, counted by reason),
and the CPU time the certificates cost (writing them and replaying them) beside the suite's whole
CPU time, as the share they add to the rest. Targets: ≥ 95% of the proved verdicts of each suite
of specs and of the documents' steps replay; certificates add at most 20% of CPU.
"""

from __future__ import annotations

import argparse
import collections
import glob
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SUITES = {
    "atlas": "derive/atlas/*.toml",
    "tests/specs": "tests/specs/*.toml",
    "adversarial corpus": "tests/specs/adversarial/*.toml",
    "singular claims": "tests/specs/replay/*.toml",
    "tests/normalizer_specs": "tests/normalizer_specs/*.toml",
}


def _cost():
    """CPU seconds spent writing and replaying certificates (derive.certify.seal.certificate and seal)."""
    import derive.certify.seal as seal

    spent = [0.0]
    for name in ("certificate", "seal"):
        inner = getattr(seal, name)

        def timed(*args, _inner=inner, **kw):
            t = time.process_time()
            try:
                return _inner(*args, **kw)
            finally:
                spent[0] += time.process_time() - t

        setattr(seal, name, timed)
    import derive.claims.certify as claims
    import derive.normalizers.certify as normalizers

    for module in (claims, normalizers):
        module.certificate, module.seal = seal.certificate, seal.seal
    return spent


def _line(name: str, proved: int, replayed: int, why: collections.Counter, cpu: float, total: float) -> None:
    share = f"{100 * replayed / proved:.1f}%" if proved else "—"
    print(f"{name:26s} {proved:4d} proved, {replayed:4d} replayed ({share}), {proved - replayed} not replayed"
          f"; certificates {cpu:.1f} s of {total:.1f} s CPU ({100 * cpu / max(total - cpu, 1e-9):.0f}% added)")
    short = collections.Counter()
    for reason, count in why.items():  # one line per kind of reason (not per difference it prints)
        short[reason.split(": ")[0][:110]] += count
    for reason, count in short.most_common():
        print(f"{'':28s}{count} × {reason}")


def specs(spent) -> None:
    from derive.claims.run import check_spec
    from derive.spec import load_spec

    for name, pattern in SUITES.items():
        proved = replayed = 0
        why: collections.Counter = collections.Counter()
        before, start = spent[0], time.process_time()
        for path in sorted(glob.glob(str(ROOT / pattern))):
            for c in check_spec(load_spec(path)).claims:
                if c.verdict == "proved":
                    proved += 1
                    if c.replay == "replayed":
                        replayed += 1
                    else:
                        why[c.seal.reason if c.seal is not None else "no certificate"] += 1
        _line(name, proved, replayed, why, spent[0] - before, time.process_time() - start)


def table(spent) -> None:
    from derive.normalizers.properties import PROPERTIES, derive_property
    from derive.normalizers.registry import names

    proved = replayed = 0
    why: collections.Counter = collections.Counter()
    before, start = spent[0], time.process_time()
    for name in names():
        for prop in PROPERTIES:
            v = derive_property(name, prop).verdict
            if v.proved:
                proved += 1
                replayed += v.seal.replayed
                if not v.seal.replayed:
                    why[v.seal.reason] += 1
    _line("normalizer table", proved, replayed, why, spent[0] - before, time.process_time() - start)


def documents(spent) -> None:
    from derive.build import load_document, proof_modules

    for path in proof_modules():
        before, start = spent[0], time.process_time()
        try:
            doc = load_document(path)
        except Exception:  # noqa: BLE001 - a page built otherwise (the atlas, the impl check): its own line
            continue
        steps = [s for n, s in doc.seals() if not n.startswith("cell ")]
        why = collections.Counter(s.reason for s in steps if not s.replayed)
        _line(f"document {doc.slug}", len(steps), sum(s.replayed for s in steps), why, spent[0] - before,
              time.process_time() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", action="store_true", help="also the documents' steps (slower)")
    args = parser.parse_args()
    spent = _cost()
    specs(spent)
    table(spent)
    if args.docs:
        documents(spent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
