"""One golden file for derive's registries: what each entry of each registry yields.

``tests/golden/registries.json`` holds, for every normalizer, claim kind, mask form, row fault,
kernel fault and floating-point format, the facts the rest of derive derives from it (which
faults apply to a normalizer, which kernel faults each ``--form`` tries, the words of a mask
form, …). ``tests/test_registry_golden.py`` compares the file with what the registries give now,
so adding an entry is the entry plus this file regenerated and reviewed in the diff:

    python tests/registries.py          # rewrite tests/golden/registries.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden" / "registries.json"
SIGNS = ("real", "positive", "nonnegative", "negative", "nonpositive")  # what SymPy proves of a parameter


def snapshot() -> dict:
    from derive.floats import FORMATS
    from derive.impl.faults.row import FAULTS as ROW_FAULTS
    from derive.impl.faults.row import variants
    from derive.kernels.faults import FAULTS as KERNEL_FAULTS
    from derive.kernels.faults import faults_for
    from derive.model.masks import FORMS
    from derive.normalizers.family import row_ratio
    from derive.normalizers.registry import get, names
    from derive.spec.claim_kinds import KINDS

    forms = sorted({form for f in KERNEL_FAULTS for form in f.checked})
    normalizers = {}
    for name in names():
        e = get(name)
        ratio, why = row_ratio(e)
        normalizers[name] = {
            "label": e.label, "params": list(e.params), "formula": e.formula,
            "symbols": {p: str(s) for p, s in e.symbols().items()},
            "signs": {p: [k for k in SIGNS if getattr(s, f"is_{k}")] for p, s in e.symbols().items()},
            "sample": {p: str(v) for p, v in e.sample.items()},
            "own_token": e.token is not None,
            "ratio_form": "yes" if ratio is not None else f"no: {why}",
            "row_faults": sorted({f.name for f, _, _ in variants(name)}),
            "kernel_faults": {form: list(faults_for(e, form)) for form in forms},
        }
    return {
        "normalizers": normalizers,
        "claim_kinds": {k.name: {"usage": k.usage, "of_normalizer": k.of_normalizer, "by_proof": k.by_proof,
                                 "says_proved": k.says_proved, "says_refuted": k.says_refuted} for k in KINDS},
        "mask_forms": {f.name: {"spelled": f.spelled, "meaning": f.meaning} for f in FORMS},
        "row_faults": {f.name: {"numeric": f.numeric, "closed": f.closed.__name__ if f.closed else None,
                                "fix_form": f.fix_form} for f in ROW_FAULTS},
        "kernel_faults": {f.key: {"form": f.form, "checked": list(f.checked), "part": f.part,
                                  "guard": f.guard, "adds": list(f.adds)} for f in KERNEL_FAULTS},
        "formats": {n: {"precision": f.precision, "eps": f.eps, "tiny": f.tiny,
                        "smallest_subnormal": f.smallest_subnormal, "max": f.max, "digits": f.digits,
                        "numpy": f.numpy} for n, f in FORMATS.items()},
    }


def text() -> str:
    return json.dumps(snapshot(), indent=1, ensure_ascii=False, sort_keys=False) + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(GOLDEN.parent.parent.parent))
    GOLDEN.write_text(text(), encoding="utf-8")
    print(f"wrote {GOLDEN.relative_to(Path.cwd()) if GOLDEN.is_relative_to(Path.cwd()) else GOLDEN}")
