"""The decided fraction of the adversarial corpus (tests/specs/adversarial/), per category.

    python tests/adversarial_decided.py            # the pinned verdicts (verdicts.json)
    python tests/adversarial_decided.py --run      # every spec checked again (minutes)
    python tests/adversarial_decided.py --run --write   # … and the result pinned in verdicts.json

The categories are data (categories.json: category → spec stems); every spec with a claim is in
exactly one. A verdict is wrong when it is proved for a false claim or refuted for a true one
(truth.json); a wrong verdict is listed by name.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

CORPUS = Path(__file__).parent / "specs" / "adversarial"


def load(name: str) -> dict:
    return json.loads((CORPUS / name).read_text())


def verdicts_of(stem: str) -> dict:
    """The verdict of each claim of a spec; a spec rejected as bad input leaves every claim undecided."""
    from derive.claims.run import check_spec
    from derive.errors import InputError
    from derive.spec import load_spec

    try:
        return {c.name: c.verdict for c in check_spec(load_spec(CORPUS / f"{stem}.toml")).claims}
    except InputError as exc:
        print(f"rejected: {exc}", file=sys.stderr)
        return {name: "undecided" for name in load("truth.json")[stem]}


def run(stems: list, jobs: int) -> dict:
    with ProcessPoolExecutor(jobs) as pool:
        return dict(zip(stems, pool.map(verdicts_of, stems)))


def table(verdicts: dict, truth: dict, categories: dict) -> tuple[list, list]:
    """Rows (category, claims, decided, wrong) with a last row for the whole corpus, and the wrong verdicts."""
    rows, wrong, total = [], [], [0, 0, 0]
    for cat, stems in categories.items():
        claims = decided = bad = 0
        for stem in stems:
            for name, t in truth[stem].items():
                v = verdicts[stem][name]
                claims += 1
                decided += v != "undecided"
                if v != "undecided" and (v == "proved") != t:
                    bad += 1
                    wrong.append((stem, name, v))
        rows.append((cat, claims, decided, bad))
        total = [total[0] + claims, total[1] + decided, total[2] + bad]
    rows.append(("all", *total))
    return rows, wrong


def report(rows: list) -> str:
    out = [f"{'category':<26} {'claims':>6} {'decided':>8} {'fraction':>9} {'wrong':>6}"]
    for cat, claims, decided, bad in rows:
        out.append(f"{cat:<26} {claims:>6} {decided:>8} {decided / claims:>8.1%} {bad:>6}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", action="store_true", help="check every spec again instead of reading verdicts.json")
    ap.add_argument("--write", action="store_true", help="with --run: pin the verdicts in verdicts.json")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    truth, categories = load("truth.json"), load("categories.json")
    verdicts = run(sorted(truth), args.jobs) if args.run else load("verdicts.json")
    rows, wrong = table(verdicts, truth, categories)
    print(report(rows))
    for stem, name, v in wrong:
        print(f"WRONG: {stem}.{name} is {v}")
    if args.run and args.write:
        pinned = {stem: dict(sorted(claims.items())) for stem, claims in sorted(verdicts.items())}
        (CORPUS / "verdicts.json").write_text(json.dumps(pinned, indent=1) + "\n")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
