"""The build: load each derivation module, check it, render it, write or compare files.

``proofs/NAME.py`` defines ``document() -> Document``. Building a module proves and
cross-checks every step (a failing step raises :class:`~derive.errors.StepFailed` and the
build exits 1), renders Markdown + JSON + figures into ``docs/`` and LaTeX + figure PDFs
into ``build/``, and compiles the PDF when ``pdflatex`` is installed.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from derive.errors import DeriveError, InputError
from derive.render import Rendered, render_document

__all__ = ["BuildReport", "build", "load_document", "proof_modules"]


def proofs_dir() -> Path:
    """The top-level ``proofs/`` of a checkout, else the copy shipped in the package."""
    here = Path(__file__).resolve().parent
    for candidate in (Path.cwd() / "proofs", here.parent / "proofs", here / "proofs"):
        if candidate.is_dir() and any(candidate.glob("*.py")):
            return candidate
    raise InputError("no proofs/ folder found: run from a derive checkout or name a module")


def proof_modules(paths: list[str] | None = None) -> list[Path]:
    if paths:
        found = []
        for p in paths:
            path = Path(p)
            if not path.is_file() or path.suffix != ".py":
                raise InputError(f"{p}: not a Python file; expected a derivation module like proofs/qk_bias.py")
            found.append(path)
        return found
    return sorted(p for p in proofs_dir().glob("*.py") if not p.name.startswith("_"))


def _load_module(path: Path):
    name = f"_derive_proof_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if not hasattr(module, "document") and not hasattr(module, "rendered"):
        raise InputError(f"{path}: defines neither document() nor rendered(); expected `def document() -> Document`")
    return module


def load_document(path: Path):
    """The checked :class:`Document` that the module at ``path`` builds."""
    module = _load_module(path)
    if not hasattr(module, "document"):
        raise InputError(f"{path}: defines no document() function; expected `def document() -> Document`")
    doc = module.document()
    doc.source = _display_path(path)
    return doc


def _render_module(path: Path) -> tuple[str, Rendered, int, int]:
    """(name, files, steps, checks) of one module.

    A module defines ``document()`` (a checked derivation, rendered by the templates), or
    ``rendered() -> dict[str, str]`` for a page that a command renders itself (a report,
    a comparison table); either way its files go through the same write and ``--check``.
    """
    module = _load_module(path)
    if hasattr(module, "document"):
        doc = module.document()
        doc.source = _display_path(path)
        steps = sum(1 for b in doc.blocks if b.kind in ("equation", "chain", "classification"))
        return doc.slug, render_document(doc), steps, len(doc.checks)
    files = module.rendered()
    return path.stem, Rendered(docs={k: v.encode() for k, v in files.items()}), 0, 0


def _display_path(path: Path) -> str:
    """``proofs/qk_bias.py`` style: relative to the working directory when possible."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return f"{path.parent.name}/{path.name}"


class PdfFailed(DeriveError):
    """pdflatex rejected a generated .tex file (a bug in a template or a document)."""

    exit_code = 1


@dataclass
class BuildReport:
    documents: int = 0
    steps: int = 0
    checks: int = 0
    stale: list[str] | None = None
    pdfs: int = 0
    seconds: float = 0.0


def _write(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != content:
        path.write_bytes(content)


def build(paths: list[str] | None = None, *, docs: Path = Path("docs"), out: Path = Path("build"),
          check: bool = False, pdf: bool = True, log=print) -> BuildReport:
    start = time.perf_counter()
    report = BuildReport(stale=[])
    modules = proof_modules(paths)
    have_pdflatex = shutil.which("pdflatex") is not None
    for path in modules:
        t0 = time.perf_counter()
        slug, rendered, steps, checks = _render_module(path)
        report.documents += 1
        report.steps += steps
        report.checks += checks
        if check:
            for name, content in rendered.docs.items():
                target = docs / name
                if not target.exists() or target.read_bytes() != content:
                    report.stale.append(str(target))
        else:
            for name, content in rendered.docs.items():
                _write(docs / name, content)
            for name, content in rendered.build.items():
                _write(out / name, content)
            tex = f"{slug}.tex"
            if pdf and have_pdflatex and tex in rendered.build:
                compile_pdf(out / tex)
                report.pdfs += 1
        log(f"  {slug}: {steps} steps proved, {checks} checks passed ({time.perf_counter() - t0:.1f} s)")
    if not check and pdf and not have_pdflatex:
        log("  pdflatex not found: wrote the .tex files, skipped the PDFs")
    report.seconds = time.perf_counter() - start
    return report


def compile_pdf(tex: Path) -> Path:
    """Compile ``tex`` with pdflatex (twice, for references) next to it; raise on error."""
    for _ in range(2):
        proc = subprocess.run(
            ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name],
            cwd=tex.parent, capture_output=True, text=True, errors="replace", timeout=120,
        )
        if proc.returncode != 0:
            errors = [ln for ln in proc.stdout.splitlines() if ln.startswith("!")][:3]
            raise PdfFailed(f"pdflatex failed on {tex} (see {tex.with_suffix('.log')}): {' / '.join(errors)}")
    return tex.with_suffix(".pdf")
