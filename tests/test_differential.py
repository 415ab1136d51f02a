"""Differential test: ``derive check`` against an independent evaluator (tests/differential.py).

Every input form (hand-written score, score_mod, mask_mod, document(IDS), sliding_window,
prefix_lm, a per-head table, each normalizer) × the claim kinds × the names each can vary. The
evaluator draws random instances at 50 digits with d and n larger than derive searches. No
"proved" may be contradicted; every "refuted" must be confirmed, on derive's counterexample
when its values can be read, else on the evaluator's own instances. A small matrix runs by
default; ``--slow`` runs every form with every normalizer. ``python tests/test_differential.py
[--large]`` prints the tally.
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

import mpmath as mp
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from differential import (  # noqa: E402
    LABELS, PER_HEAD, POS, SCALAR, TABLE, TOKVEC, VEC, Form, add, dot, holds, qk, search, witness_envs,
)

MODS = """import torch

slopes = torch.tensor([0.5, 0.25])


def ident(score, b, h, q_idx, kv_idx):
    return score


def twice(score, b, h, q_idx, kv_idx):
    return score * 2.0


def alibi(score, b, h, q_idx, kv_idx):
    return score - slopes[h] * (q_idx - kv_idx)


def causal(b, h, q_idx, kv_idx):
    return kv_idx <= q_idx


def future(b, h, q_idx, kv_idx):
    return kv_idx > q_idx
"""
QKV = {"q": TOKVEC, "k": TOKVEC, "v": TOKVEC}


def causal(env, i, j):
    return j <= i


FORMS = [
    Form("hand_bias", {"score": "dot(q + b_q, k + b_k) / sqrt(d)", "value": "v + b_v", "mask": "causal",
                       "symbols": {"b_q": "vector", "b_k": "vector", "b_v": "vector"}},
         lambda e, i, j: dot(add(e["q"][i - 1], e["b_q"]), add(e["k"][j - 1], e["b_k"])) / mp.sqrt(e["d"]),
         {**QKV, "b_q": VEC, "b_k": VEC, "b_v": VEC},
         ["invariant(b_k)", "invariant(b_q)", "depends(b_k)", "output_invariant(b_k)", "output_invariant(b_v)",
          "invariant(v)", "equivalent('dot(q + b_q, k) / sqrt(d)')", "weights_sum_to_one", "shift_invariant"],
         mask=causal, value=lambda e, j: add(e["v"][j - 1], e["b_v"]),
         exprs={"dot(q + b_q, k) / sqrt(d)": lambda e, i, j: dot(add(e["q"][i - 1], e["b_q"]), e["k"][j - 1])
                / mp.sqrt(e["d"])}),
    Form("hand_window", {"score": "dot(q, k) / sqrt(d) - m * abs(i - j) + r(j - i)", "mask": "sliding_window(2)",
                         "symbols": {"m": "scalar positive", "r": "function"}},
         lambda e, i, j: qk(e, i, j) - e["m"] * abs(i - j) + e["r"](j - i),
         {**QKV, "m": POS, "r": TABLE},
         ["invariant(m)", "invariant(r)", "output_invariant(k)", "equivalent('dot(q, k) / sqrt(d) + r(j - i)')",
          "weights_sum_to_one"],
         mask=lambda e, i, j: abs(i - j) < 2,
         exprs={"dot(q, k) / sqrt(d) + r(j - i)": lambda e, i, j: qk(e, i, j) + e["r"](j - i)}),
    Form("score_mod_ident", {"score_mod": "mods.py:ident"}, qk, dict(QKV),
         ["invariant(q)", "invariant(k)", "depends(q)", "depends(k)", "output_invariant(q)", "output_invariant(k)",
          "output_invariant(v)"], mods=MODS),
    Form("score_mod_twice", {"score_mod": "mods.py:twice", "mask": "causal"}, lambda e, i, j: 2 * qk(e, i, j),
         dict(QKV), ["invariant(q)", "invariant(k)", "depends(k)", "output_invariant(q)",
                     "equivalent('2 * dot(q, k) / sqrt(d)')"], mask=causal, mods=MODS,
         exprs={"2 * dot(q, k) / sqrt(d)": lambda e, i, j: 2 * qk(e, i, j)}),
    Form("per_head_table", {"score_mod": "mods.py:alibi", "mask": "causal"},
         lambda e, i, j: qk(e, i, j) - e["slopes"][e["h"]] * (i - j), {**QKV, "slopes": PER_HEAD},
         ["invariant(slopes)", "depends(slopes)", "invariant(q)", "output_invariant(v)"], mask=causal, mods=MODS,
         heads=2, data={"slopes": [mp.mpf("0.5"), mp.mpf("0.25")]}),
    Form("mask_mod", {"score": "dot(q, k) / sqrt(d)", "mask_mod": "mods.py:causal"}, qk, dict(QKV),
         ["invariant(k)", "output_invariant(v)", "weights_sum_to_one"], mask=causal, mods=MODS),
    Form("mask_mod_empty_rows", {"score": "dot(q, k) / sqrt(d)", "mask_mod": "mods.py:future"}, qk, dict(QKV),
         ["weights_sum_to_one", "invariant(q)"], mask=lambda e, i, j: j > i, mods=MODS),
    Form("document", {"score": "dot(q, k) / sqrt(d)", "mask": "document(IDS)", "symbols": {"IDS": "function"}},
         qk, {**QKV, "IDS": LABELS},
         ["invariant(IDS)", "output_invariant(IDS)", "depends(IDS)", "invariant(k)", "weights_sum_to_one"],
         mask=lambda e, i, j: e["IDS"](i - 1) == e["IDS"](j - 1)),
    Form("prefix_lm", {"score": "dot(q, k) / sqrt(d) + c * j", "mask": "prefix_lm(2)", "symbols": {"c": "scalar"}},
         lambda e, i, j: qk(e, i, j) + e["c"] * j, {**QKV, "c": SCALAR},
         ["invariant(c)", "depends(c)", "equivalent('dot(q, k) / sqrt(d)')", "weights_sum_to_one"],
         mask=lambda e, i, j: j <= 2 or j <= i, exprs={"dot(q, k) / sqrt(d)": qk}),
]
# each normalizer: its text, the names it adds ([symbols] kind, evaluator kind), the claims about them
NORMALIZERS = {
    "softmax": ("softmax", {}, []),
    "softmax1": ("softmax1", {}, ["shift_invariant", "weights_sum_to_one"]),
    "sink": ("sink(s0)", {"s0": ("scalar", SCALAR)}, ["invariant(s0)", "depends(s0)"]),
    "sigmoid": ("sigmoid", {}, ["weights_sum_to_one", "shift_invariant"]),
    "sigmoid_b": ("sigmoid(b0)", {"b0": ("scalar", SCALAR)}, ["invariant(b0)", "output_invariant(b0)"]),
    "bias_kv": ("bias_kv(ks, vs)", {"ks": ("vector", VEC), "vs": ("vector", VEC)},
                ["invariant(ks)", "invariant(vs)", "output_invariant(vs)", "invariant(q)"]),
}
SMALL = [("hand_bias", "softmax"), ("hand_window", "sink"), ("score_mod_ident", "softmax"),
         ("score_mod_twice", "softmax1"), ("per_head_table", "sigmoid_b"), ("mask_mod_empty_rows", "softmax"),
         ("document", "bias_kv"), ("prefix_lm", "sigmoid")]
LARGE = [(f.key, nm) for f in FORMS for nm in NORMALIZERS]
SIZES = {"small": dict(trials=6, dims=(3, 4, 5), sizes=(4, 5, 6)),
         "large": dict(trials=16, dims=(3, 5, 7), sizes=(4, 6, 8, 9))}


def _toml(value) -> str:
    if isinstance(value, dict):
        return "\n".join(f"{k} = {_toml(v)}" for k, v in value.items())
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def spec_text(form: Form, norm: str) -> tuple[str, Form, list]:
    text, extra, claims = NORMALIZERS[norm]
    keys = {k: v for k, v in form.spec.items() if k != "symbols"}
    symbols = {**form.spec.get("symbols", {}), **{k: v[0] for k, v in extra.items()}}
    all_claims = list(dict.fromkeys(form.claims + claims))
    lines = [f'name = "{form.key} {norm}"', f'normalizer = "{text}"', _toml(keys)]
    if symbols:
        lines += ["[symbols]", _toml(symbols)]
    lines += ["[claims]"] + [f"c{n} = {_toml(c)}" for n, c in enumerate(all_claims)]
    kinds = {**form.kinds, **{k: v[1] for k, v in extra.items()}}
    return "\n".join(lines) + "\n", Form(**{**form.__dict__, "kinds": kinds}), all_claims


def run_matrix(pairs, size: str, root: Path, seed: int = 19) -> tuple[Counter, list[str]]:
    from derive.claims.run import DEFAULT_CHECK, check_spec
    from derive.spec import load_spec

    forms = {f.key: f for f in FORMS}
    tally, problems = Counter(), []
    rng = random.Random(seed)
    for key, norm in pairs:
        text, form, claims = spec_text(forms[key], norm)
        where = root / f"{key}-{norm}"
        where.mkdir(parents=True, exist_ok=True)
        if form.mods:
            (where / "mods.py").write_text(form.mods)
        (where / "spec.toml").write_text(text)
        result = check_spec(load_spec(where / "spec.toml"), DEFAULT_CHECK)
        tally["specs"] += 1
        for c in result.claims:
            label = f"{key} / {norm} / {c.claim}: {c.verdict}"
            found = search(form, norm_text(norm), c.claim, rng, **SIZES[size])
            existential = c.claim.startswith("depends")
            tally["claims"] += 1
            tally[c.verdict] += 1
            false_by_evaluator = (found is not None) != existential  # found a violation, or found no change
            if c.verdict == "proved" and (found is not None) != existential:
                problems.append(f"{label}, but the evaluator contradicts it ({c.reason})")
            elif c.verdict == "proved":
                tally["confirmed"] += 1  # no counterexample, or (depends) a change the evaluator found too
            elif c.verdict == "refuted" and existential:
                if found is not None:
                    problems.append(f"{label}, but the evaluator finds a change ({c.reason})")
                else:
                    tally["confirmed"] += 1
            elif c.verdict == "refuted":
                how = _confirm(form, norm, c, rng)
                if how is None and found is None:
                    problems.append(f"{label}, and the evaluator confirms no counterexample ({c.reason})")
                else:
                    tally["confirmed"] += 1
                    tally["on derive's counterexample" if how else "by the evaluator's search"] += 1
            else:
                tally["undecided, false by the evaluator" if false_by_evaluator else "undecided, true"] += 1
    return tally, problems


def norm_text(norm: str) -> str:
    return NORMALIZERS[norm][0]


def _confirm(form: Form, norm: str, c, rng) -> bool | None:
    """True when derive's own counterexample, read as an instance, falsifies the claim."""
    ce = c.counterexample or {}
    kind, _, arg = c.claim.partition("(")
    changed = arg.rstrip(")").strip() if kind in ("invariant", "output_invariant") else None
    try:
        env, env2 = witness_envs(form, ce, changed)
        ok = holds(form, norm_text(norm), c.claim, env, rng, env2)
    except (KeyError, ValueError, TypeError, IndexError, ZeroDivisionError):
        return None
    return True if not ok else None


def summary(tally: Counter, problems: list) -> str:
    t = tally
    own, search_ = t["on derive's counterexample"], t["by the evaluator's search"]
    return (f"differential matrix: {t['specs']} specs, {t['claims']} claims: {t['proved']} proved, {t['refuted']} "
            f"refuted, {t['undecided']} undecided; {len(problems)} wrong, {t['confirmed']} decided and confirmed by "
            f"the evaluator (refutations: {own} on derive's counterexample, {search_} by its own search); "
            f"undecided: {t['undecided, false by the evaluator']} false and {t['undecided, true']} true on every "
            f"instance by the evaluator")


def _run(pairs, size, tmp_path):
    pytest.importorskip("torch", reason="the score_mod and mask_mod forms are traced with torch")
    tally, problems = run_matrix(pairs, size, tmp_path)
    print(summary(tally, problems))
    assert not problems, "\n".join(problems)
    assert tally["claims"] >= 40 and tally["proved"] and tally["refuted"]


@pytest.mark.slow
def test_small_matrix(tmp_path):
    _run(SMALL, "small", tmp_path)


@pytest.mark.slow
def test_large_matrix(tmp_path):
    _run(LARGE, "large", tmp_path)


if __name__ == "__main__":
    import tempfile

    large = "--large" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        t, p = run_matrix(LARGE if large else SMALL, "large" if large else "small", Path(tmp))
    print(summary(t, p))
    print("\n".join(p))
    sys.exit(1 if p else 0)
