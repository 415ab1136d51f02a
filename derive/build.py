"""The build: load each derivation module, check it, render it, write or compare files.

``proofs/NAME.py`` defines ``document() -> Document``. Building a module proves and
cross-checks every step (a failing step raises :class:`~derive.errors.StepFailed` and the
build exits 1; an exception of derive's engine stops it as an internal error, exit 3; one the
module's own code raises is bad input, exit 2), renders Markdown + JSON + SVG figures into
``docs/`` and LaTeX into ``build/`` (with the figures as PDF unless ``--no-pdf`` or
``--check``), and compiles the PDF when ``pdflatex`` is installed.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import importlib.metadata
import importlib.util
import multiprocessing
import multiprocessing.connection
import os
import pickle
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from derive import progress, shared
from derive.errors import DeriveError, InputError
from derive.render import Rendered, render_document

__all__ = ["BuildReport", "build", "cache_key", "load_document", "proof_modules"]

# Libraries whose behaviour can change a document's bytes: part of every cache key.
KEYED_DISTRIBUTIONS = ("derive", "sympy", "numpy", "python-flint", "mpmath", "hypothesis", "jinja2", "matplotlib",
                       "markdown-it-py")
_PACKAGE = Path(__file__).resolve().parent


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
    """The derivation module at ``path``; a helper module beside it (``proofs/_name.py``, no document
    of its own) is importable from it by its name."""
    name = f"_derive_proof_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    here = str(path.resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    spec.loader.exec_module(module)
    if not hasattr(module, "document") and not hasattr(module, "rendered"):
        raise InputError(f"{path}: defines neither document() nor rendered(); expected `def document() -> Document`")
    return module


def load_document(path: Path):
    """The checked :class:`Document` that the module at ``path`` builds."""
    module = _load_module(path)
    if not hasattr(module, "document"):
        raise InputError(f"{path}: defines no document() function; expected `def document() -> Document`")
    return _document(module, path)


def _document(module, path: Path):
    """``module.document()``, every step checked (a step that fails raises as it is added)."""
    doc = module.document()
    doc.source = _display_path(path)
    doc.rebuild = rebuild_command(path)
    return doc


def rebuild_command(path: Path | None = None) -> str:
    """The command that rebuilds the documents where they are built: ``python build_docs.py`` in a
    project that has that script at its root (derive's own repository: the root above ``proofs/``
    for a module ``path``, else the working directory) and for derive's own documents built from an
    installed package (its shipped ``proofs/``: a page's header must not depend on where it was
    built), else ``derive build`` (with the module ``path``, ``derive build proofs/my_variant.py``)."""
    root = path.resolve().parent.parent if path is not None else Path.cwd()
    shipped = path is not None and path.resolve().parent == _PACKAGE / "proofs"
    if shipped or (root / "build_docs.py").is_file():
        return "python build_docs.py"
    return f"derive build {_display_path(path)}" if path is not None else "derive build"


def _render_module(path: Path, figure_pdfs: bool = True) -> tuple[str, Rendered, int, int]:
    """(name, files, steps, checks) of one module (``figure_pdfs``: see :func:`render_document`).

    A module defines ``document()`` (a checked derivation, rendered by the templates), or
    ``rendered()`` for a page that a command renders itself (a report, a comparison table);
    either way its files go through the same write and ``--check``. ``rendered()`` returns
    ``{file name: text}``, or a :class:`~derive.render.Rendered` whose ``steps`` and
    ``checks`` count what the page proved and cross-checked (the atlas's claims), for the log.
    """
    module = _load_module(path)
    if hasattr(module, "document"):
        doc = _document(module, path)
        page = render_document(doc, figure_pdfs)
        return doc.slug, page, page.steps, page.checks
    page = module.rendered()
    if not isinstance(page, Rendered):
        page = Rendered(docs={k: v.encode() for k, v in page.items()})
    for name, content in list(page.docs.items()):  # the page's PDF comes from its one source, the Markdown
        if name.endswith(".md") and f"{name[:-3]}.tex" not in page.build:
            page.build[f"{name[:-3]}.tex"] = _page_tex(content.decode(), _display_path(path))
    return path.stem, page, page.steps, page.checks


def _page_tex(markdown: str, source: str) -> bytes:
    from derive import __version__
    from derive.render.output import _tidy
    from derive.render.page import page_tex

    return _tidy(page_tex(markdown, version=__version__, source=source)).encode()


def _failure(exc: Exception, path: Path) -> DeriveError:
    """What an exception that ended the build of the module at ``path`` is: the module's own
    mistake (raised by its code, or a syntax error in it: bad input, exit 2), else a failure of
    derive's engine (:class:`~derive.errors.InternalError`, exit 3, never :class:`StepFailed`),
    described here, in the process that built the document (a traceback does not travel)."""
    from derive.errors import internal, where

    here, line, tb = path.resolve(), None, exc.__traceback__
    while tb is not None:  # the innermost frame that is the module's or derive's decides
        name = tb.tb_frame.f_code.co_filename
        if Path(name).resolve() == here:
            line = tb.tb_lineno
        elif name.startswith(str(Path(__file__).resolve().parent)):
            line = None
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == here:
        line = exc.lineno
    if line is not None or not where(exc):
        first = (str(exc).strip().splitlines() or [""])[0]
        at = f", line {line}" if line is not None else ""
        return InputError(f"{_display_path(path)}{at}: the module raised {type(exc).__name__}"
                          + (f": {first}" if first else ""))
    return internal(exc, f"building {_display_path(path)}")


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
    decided: int = 0  # claims decided outside steps (table cells)
    stale: list[str] | None = None
    pdfs: int = 0
    seconds: float = 0.0  # wall
    cpu: float = 0.0  # user + system seconds of the build's process and every child process it waited for
    cached: int = 0  # documents taken from the cache
    # per document, in module order: (slug, wall seconds, CPU seconds incl. its child processes, cached)
    timings: list = field(default_factory=list)


# -- the cache ----------------------------------------------------------------------------

def _tree_digest(h, root: Path, patterns: tuple[str, ...]) -> None:
    for pattern in patterns:
        for f in sorted(root.rglob(pattern)):
            if "__pycache__" in f.parts:
                continue
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")


_INPUTS_DIGEST: str | None = None


def _inputs_digest() -> str:
    """What every document depends on: derive's sources, the templates, library versions."""
    global _INPUTS_DIGEST
    if _INPUTS_DIGEST is None:
        h = hashlib.sha256()
        h.update(f"python {platform.python_implementation()} {sys.version_info[:3]}\n".encode())
        for dist in KEYED_DISTRIBUTIONS:
            try:
                version = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                version = "absent"
            h.update(f"{dist} {version}\n".encode())
        _tree_digest(h, _PACKAGE, ("*.py", "*.toml", "*.j2", "*.json"))
        from derive.render.output import template_dir

        _tree_digest(h, template_dir(), ("*",))
        _INPUTS_DIGEST = h.hexdigest()
    return _INPUTS_DIGEST


def cache_key(path: Path) -> str:
    """A content hash of everything the document of ``path`` is built from.

    The module's path as the document shows it, every ``.py`` file next to it (the module and any helper it may
    import), every file of the ``derive`` package (sources, atlas specs), the templates,
    and the versions of Python and of the libraries in :data:`KEYED_DISTRIBUTIONS`. A
    change to any of them gives another key.
    """
    h = hashlib.sha256(_inputs_digest().encode())
    h.update(_display_path(path).encode() + b"\0")  # the document prints it
    for f in sorted(path.resolve().parent.glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _cache_get(cache: Path | None, key: str):
    if cache is None:
        return None
    f = cache / f"{key}.pickle"
    try:
        with f.open("rb") as fh:
            value = pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
        return None
    return value if isinstance(value, tuple) and len(value) == 4 else None


def _cache_put(cache: Path | None, key: str, value) -> None:
    if cache is None:
        return
    cache.mkdir(parents=True, exist_ok=True)
    tmp = cache / f"{key}.{os.getpid()}.tmp"
    tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    tmp.replace(cache / f"{key}.pickle")  # atomic: a reader never sees half a file


# -- one document, in this process or a worker -----------------------------------------------

def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _build_one(path: Path, cache: Path | None, figure_pdfs: bool):
    """((slug, rendered, steps, checks), wall s, CPU s, cached) for one module."""
    t0, c0 = time.perf_counter(), _cpu()
    key = cache_key(path) if cache is not None else ""
    hit = _cache_get(cache, key) if cache is not None else None
    if hit is not None and figure_pdfs and not _has_figure_pdfs(hit[1]):
        hit = None  # stored by a build without PDFs: rebuilt, and stored again with them
    if hit is None:
        try:
            result = _render_module(path, figure_pdfs)
        except DeriveError:
            raise
        except Exception as exc:  # noqa: BLE001 - the module's own mistake (exit 2) or the engine's (exit 3)
            raise _failure(exc, path) from exc
        _cache_put(cache, key, result)
    else:
        result = hit
    return result, time.perf_counter() - t0, _cpu() - c0, hit is not None


def _has_figure_pdfs(rendered: Rendered) -> bool:
    """Whether each figure (an SVG for docs/) has its PDF for build/."""
    return all(f"{name[:-4]}.pdf" in rendered.build for name in rendered.docs if name.endswith(".svg"))


def _child(path: Path, cache: Path | None, figure_pdfs: bool, conn) -> None:
    """A worker process: build one document and send back its result or its exception."""
    try:
        payload = ("ok", _build_one(path, cache, figure_pdfs))
    except BaseException as exc:  # noqa: BLE001 - re-raised in the parent
        try:
            pickle.dumps(exc)
        except Exception:  # noqa: BLE001 - an exception that cannot travel is described instead
            exc = DeriveError(f"{path}: {type(exc).__name__}: {exc}")
        payload = ("error", exc)
    conn.send(payload)
    conn.close()


def _results(modules: list[Path], jobs: int, cache: Path | None, figure_pdfs: bool):
    """Each module's result in module order, built ``jobs`` at a time in their own processes.

    Each document is built in a fresh fork of this process, so it sees the same interpreter
    state whichever other documents run beside it or before it: the output never depends
    on scheduling. Documents start in module order (no table of their costs to keep up to
    date); results are handed out in module order, and the first failure (in module order)
    is raised.
    """
    if jobs <= 1 or len(modules) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        for path in modules:  # (no fork on Windows: one process)
            yield _build_one(path, cache, figure_pdfs)
        return
    ctx = multiprocessing.get_context("fork")
    _preload()
    # Frozen, the objects a child inherits are left out of its garbage collections, which
    # would otherwise visit (and so copy) every page of this process's heap.
    gc.freeze()
    waiting = list(range(len(modules)))
    running: dict = {}  # k → (process, receiving end)
    done: dict = {}
    try:
        for k in range(len(modules)):
            while k not in done:
                while waiting and len(running) < jobs:
                    j = waiting.pop(0)
                    recv, send = ctx.Pipe(duplex=False)
                    proc = ctx.Process(target=_child, args=(modules[j], cache, figure_pdfs, send), name=f"derive-build-{j}")
                    proc.start()
                    send.close()
                    running[j] = (proc, recv)
                ready = multiprocessing.connection.wait([r for _, r in running.values()])
                for j in [j for j, (_, r) in running.items() if r in ready]:
                    proc, recv = running.pop(j)
                    try:
                        done[j] = recv.recv()
                    except EOFError:
                        done[j] = ("error", DeriveError(f"{modules[j]}: the build process died"))
                    recv.close()
                    proc.join()
            status, value = done.pop(k)
            if status == "error":
                raise value
            yield value
    finally:
        gc.unfreeze()
        for proc, recv in running.values():
            proc.terminate()
            proc.join()
            recv.close()


# Modules that several documents import on first use (SymPy's simplify its units, the
# cross-check numpy's and Hypothesis's generators, two documents matplotlib): imported once here
# before the documents' processes are forked, which inherit them instead of each importing them.
PRELOAD = ("jinja2", "numpy.random", "secrets", "hypothesis.internal.conjecture.optimiser", "sympy.physics.units",
           "derive.normalizers.properties", "derive.claims.run", "derive.kernels", "derive.impl.api",
           "derive.render.figures", "matplotlib.pyplot")


def _preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional library that is missing: the document that needs it says so
            pass
    # The templates every document renders through, compiled once here (each environment is
    # one per process), and the Markdown parser built, instead of once in every document.
    from derive.impl.report.row import _template
    from derive.render.markup import _parser
    from derive.render.output import environment
    from derive.report.render import environment as report_environment

    for name in ("document.md.j2", "document.tex.j2"):
        environment().get_template(name)
    report_environment().get_template("check.md.j2")
    _template()
    _parser()
    # Hypothesis's first search in a process sets itself up (its PRNG registry, a garbage
    # collection): done once here, and the default cross-check's searched instances drawn.
    from derive.crosscheck.check import searched_draws
    from derive.settings import DEFAULT

    searched_draws(DEFAULT.examples, DEFAULT.max_d, DEFAULT.max_n)


def _write(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != content:
        path.write_bytes(content)


def build(paths: list[str] | None = None, *, docs: Path = Path("docs"), out: Path = Path("build"),
          check: bool = False, pdf: bool = True, log=print, jobs: int = 1, cache: Path | None = None,
          show_progress: bool = False) -> BuildReport:
    """Build ``paths`` (default: every module of ``proofs/``) and write or compare the files.

    ``jobs`` documents are built at once, each in its own process; the files written are
    the same, and are written and logged in module order, for any ``jobs``. ``cache`` is a folder
    of results keyed by :func:`cache_key` (``None``: build everything). A failing document
    raises after the documents before it (in module order) are written, as a sequential
    build would. Results several documents need (see :mod:`derive.shared`) are computed
    once per parallel build, as a sequential build computes them once in its process.
    """
    start, cpu0 = time.perf_counter(), _cpu()
    report = BuildReport(stale=[])
    modules = proof_modules(paths)
    have_pdflatex = shutil.which("pdflatex") is not None
    parallel = jobs > 1 and len(modules) > 1 and "fork" in multiprocessing.get_all_start_methods()
    with tempfile.TemporaryDirectory(prefix="derive-shared-") as shared_dir, \
            _environ({progress.ENV: "1" if show_progress else "0", shared.ENV: shared_dir if parallel else None}):
        _build_all(modules, report, docs, out, check, pdf, have_pdflatex, log, jobs, cache, whole=not paths)
    if not check and pdf and not have_pdflatex:
        log("  pdflatex not found: wrote the .tex files, skipped the PDFs (for them, install a TeX "
            "distribution that has pdflatex, such as TeX Live; --no-pdf builds without them)")
    report.seconds, report.cpu = time.perf_counter() - start, _cpu() - cpu0
    return report


@contextlib.contextmanager
def _environ(values: dict):
    """Set (or, for None, unset) environment variables for the build and its processes."""
    old = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _build_all(modules, report, docs, out, check, pdf, have_pdflatex, log, jobs, cache, whole=False) -> None:
    # The figures' PDFs serve LaTeX only: drawn when PDFs are asked for (also without pdflatex,
    # so the .tex files in build/ can be compiled later), never for --check or --no-pdf.
    figure_pdfs = pdf and not check
    written: dict = {}  # the files of docs/ the modules made
    for path, ((slug, rendered, steps, checks), wall, cpu, cached) in zip(
            modules, _results(modules, jobs, cache, figure_pdfs)):
        report.documents += 1
        report.cached += cached
        report.timings.append((slug, wall, cpu, cached))
        report.steps += steps
        report.checks += checks
        report.decided += sum(rendered.decided.values())
        if check:
            for name, content in rendered.docs.items():
                target = docs / name
                if not target.exists() or target.read_bytes() != content:
                    report.stale.append(str(target))
        else:
            for name, content in rendered.docs.items():
                _write(docs / name, content)
            shutil.rmtree(out / "certificates" / slug, ignore_errors=True)  # none left from an earlier build
            for name, content in rendered.build.items():
                _write(out / name, content.replace(STAMP, source_stamp(path).encode()) if name.endswith(".tex")
                       else content)
            for tex in sorted(name for name in rendered.build if name.endswith(".tex")):
                if pdf and have_pdflatex:
                    compile_pdf(out / tex)
                    report.pdfs += 1
        written.update(rendered.docs)
        how = "from the cache" if cached else f"{wall:.1f} s, CPU {cpu:.1f} s"
        what = (f"{steps} steps proved or refuted, {checks} checks passed" + _decided(rendered.decided)
                if steps or checks else
                f"rendered {', '.join(rendered.docs)}: {rendered.summary}" if rendered.summary else
                f"rendered {', '.join(rendered.docs)}, no derivation steps of its own")
        log(f"  {slug}: {what} ({how})")
    if whole and pdf and not check:  # every module built: the pages of docs/ no module makes get their PDF too
        report.pdfs += _hand_written(docs, out, written, have_pdflatex, log)


def _hand_written(docs: Path, out: Path, written: dict, have_pdflatex: bool, log) -> int:
    """A page of ``docs/`` that no module makes (``docs/spec.md``, written by hand) gets its LaTeX from
    its one source, the Markdown, and its PDF beside the documents' (their links reach it). Returns
    the number of PDFs made."""
    made = 0
    for md in sorted(docs.glob("*.md")) if docs.is_dir() else []:
        if md.name in written:
            continue
        tex = out / f"{md.stem}.tex"
        _write(tex, _page_tex(md.read_text(encoding="utf-8"), _display_path(md)).replace(
            STAMP, source_stamp(md.resolve().parent / "_").encode()))
        if have_pdflatex:
            compile_pdf(tex)
            made += 1
        log(f"  {md.stem}: written by hand, {tex.name}" + (" and its PDF" if have_pdflatex else ""))
    return made


def _decided(counts: dict) -> str:
    """``, 182 table claims decided (103 proved, 58 refuted, 21 undecided)``, or nothing."""
    if not counts:
        return ""
    parts = ", ".join(f"{counts[s]} {s}" for s in ("proved", "refuted", "undecided") if counts.get(s))
    return f", {sum(counts.values())} table claims decided ({parts})"


STAMP = b"@@DERIVE-SOURCE@@"  # the title block's source line in a .tex, filled in when it is written


def source_stamp(module: Path) -> str:
    return _stamp(str(module.resolve().parent.parent))


@functools.lru_cache(maxsize=8)
def _stamp(root: str) -> str:
    """The title block's source line: the commit the documents were built from, and whether the
    sources (``derive/``, ``proofs/``, ``templates/``) had changes not committed; empty outside a git
    checkout. Only the PDFs in ``build/`` carry it (``docs/`` stays the same from commit to commit), and
    the same commit gives the same line: the build stays reproducible."""
    git = shutil.which("git")
    if git is None:
        return ""
    try:
        head = subprocess.run([git, "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=20)
        dirty = subprocess.run([git, "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--",
                                "derive", "proofs", "templates"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ""
    if head.returncode != 0 or not head.stdout.strip():
        return ""
    return f"source: commit {head.stdout.strip()}" + (", with uncommitted changes" if dirty.stdout.strip() else "")


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
