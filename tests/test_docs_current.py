"""The committed documents are what the build writes, byte for byte, on any machine.

``test_committed_docs_are_current`` builds every document (no PDF) into a temporary folder
and compares each file with ``docs/``; it is slow (CI runs it, beside ``build_docs.py --check``). The
other slow tests build again in a subprocess with numpy's SIMD code paths switched off
(``NPY_DISABLE_CPU_FEATURES``) and OpenBLAS forced onto another kernel
(``OPENBLAS_CORETYPE``), as on another x86 machine, and compare the same way: a document
that printed a measured float64 error would differ there.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from derive.build import build

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
HANDWRITTEN = {"spec.md"}  # files in docs/ that no derivation module writes


def differences(fresh: Path, committed: Path = DOCS) -> list[str]:
    """Why ``fresh`` (a build's docs folder) is not ``committed``: one message per file."""
    made = {p.name for p in fresh.iterdir()}
    problems = []
    for name in sorted(made):
        new, old = (fresh / name).read_bytes(), committed / name
        if not old.exists():
            problems.append(f"{name}: written by the build but not committed")
        elif old.read_bytes() != new:
            diff = difflib.unified_diff(old.read_text(encoding="utf-8", errors="replace").splitlines(),
                                        new.decode("utf-8", errors="replace").splitlines(),
                                        f"committed/{name}", f"built/{name}", n=0, lineterm="")
            problems.append(f"{name} differs:\n" + "\n".join(list(diff)[:30]))
    for p in sorted(committed.iterdir()):
        if p.name not in made and p.name not in HANDWRITTEN:
            problems.append(f"{p.name}: committed but no longer written by the build")
    return problems


@pytest.fixture(scope="module")
def fresh_docs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fresh")
    build(docs=out / "docs", out=out / "build", pdf=False, log=lambda m: None, jobs=os.cpu_count() or 1)
    return out / "docs"


@pytest.mark.slow
def test_committed_docs_are_current(fresh_docs):
    problems = differences(fresh_docs)
    assert not problems, "run `python build_docs.py --no-pdf`:\n" + "\n".join(problems)


@pytest.mark.slow
def test_every_certificate_of_the_documents_and_the_atlas_replays(fresh_docs):
    """The build writes each document's certificates (and the atlas's) to build/certificates/;
    derive replay checks them all in a fresh interpreter, with the checker alone."""
    folder = fresh_docs.parent / "build" / "certificates"
    assert {p.name for p in folder.iterdir()} >= {"atlas", "kernels", "normalizers", "qk-bias", "softmax-one"}
    proc = subprocess.run([sys.executable, "-m", "derive", "replay", str(folder), "--quiet"], capture_output=True,
                          text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert re.search(r"(\d+) certificates: \1 replayed, 0 rejected, 0 malformed", proc.stdout), proc.stdout[-500:]


def test_no_measured_error_is_printed():
    """Measured float64 errors differ between machines; documents state tolerances only."""
    figure = re.compile(r"(abs|rel)\w* error\W{0,6}\d", re.IGNORECASE)

    def keys(node):
        if isinstance(node, dict):
            for k, v in node.items():
                yield k
                yield from keys(v)
        elif isinstance(node, list):
            for v in node:
                yield from keys(v)

    for path in sorted(DOCS.glob("*.md")):
        assert not figure.search(path.read_text(encoding="utf-8")), path.name
    for path in sorted(DOCS.glob("*.json")):
        assert not [k for k in keys(json.loads(path.read_text(encoding="utf-8"))) if "error" in k], path.name


def test_documents_exist_and_link_to_each_other():
    one = (DOCS / "softmax-one.md").read_text()
    table = (DOCS / "normalizers.md").read_text()
    assert "normalizers.md#nrm-softmax1-shift-invariant" in one
    for anchor in ("nrm-softmax1-shift-invariant", "nrm-clipped-gradient-nonvanishing", "nrm-table"):
        assert f'<a id="{anchor}"></a>' in table
    assert (DOCS / "softmax-one.json").exists()
    assert (DOCS / "softmax-one-mass-vs-shift.svg").exists()


# ---- another machine: numpy without its vector code paths -----------------------------

_FEATURES = """
import json
try:
    from numpy._core import _multiarray_umath as m
except ImportError:  # numpy < 2
    from numpy.core import _multiarray_umath as m
print(json.dumps({"baseline": list(m.__cpu_baseline__), "dispatch": list(m.__cpu_dispatch__),
                  "on": sorted(k for k, v in m.__cpu_features__.items() if v)}))
"""


def cpu_features(env: dict | None = None) -> dict:
    """numpy's baseline, its dispatched (runtime-selected) features, and those in use."""
    out = subprocess.run([sys.executable, "-c", _FEATURES], capture_output=True, text=True, check=True,
                         env={**os.environ, **(env or {})})
    return json.loads(out.stdout)


def machine_env(machine: str) -> dict:
    """Environment that makes numpy and OpenBLAS compute as on a smaller x86 machine.

    Only dispatched features can be switched off (naming a baseline feature is an error),
    so the list is the dispatched features this CPU has: all of them ("no-simd": numpy's
    baseline code only, OpenBLAS's oldest generic kernel), or those of AVX-512
    ("no-avx512": an AVX2 machine, OpenBLAS's Haswell kernel).
    """
    feats = cpu_features()
    usable = [f for f in feats["dispatch"] if f in feats["on"]]
    if machine == "no-avx512":
        usable = [f for f in usable if "512" in f or f == "X86_V4"]
        core = "Haswell" if "AVX2" in feats["on"] else None  # a kernel the CPU lacks would crash
    else:
        core = "Prescott"
    env = {}
    if core and "SSE2" in feats["on"]:  # OpenBLAS's x86 kernel names
        env["OPENBLAS_CORETYPE"] = core
    if usable:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(usable)
    return env


@pytest.mark.slow
@pytest.mark.parametrize("machine", ["no-simd", "no-avx512"])
def test_docs_do_not_depend_on_simd(machine, tmp_path):
    env = machine_env(machine)
    disabled = env.get("NPY_DISABLE_CPU_FEATURES", "").split()
    assert not set(disabled) & set(cpu_features(env)["on"]), "numpy ignored NPY_DISABLE_CPU_FEATURES"
    proc = subprocess.run(
        [sys.executable, "build_docs.py", "--no-pdf", "--docs", str(tmp_path / "docs"), "--out", str(tmp_path / "build")],
        cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=1200, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    problems = differences(tmp_path / "docs")
    assert not problems, f"with {env}:\n" + "\n".join(problems)
