"""A figure's PDF serves LaTeX only: drawn when the build makes PDFs, never for --no-pdf or --check."""

from pathlib import Path

from derive.build import build

DATA = Path(__file__).parent / "data"
MODULE = DATA / "figure_doc.py"


def _build(tmp: Path, **kw):
    return build([str(MODULE)], docs=tmp / "docs", out=tmp / "build", log=lambda m: None, **kw)


def test_no_pdf_writes_the_svg_and_no_figure_pdf(tmp_path, monkeypatch):
    _build(tmp_path, pdf=False)
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == ["figure-doc-line.svg", "figure-doc.json",
                                                                     "figure-doc.md"]
    assert sorted(p.name for p in (tmp_path / "build").iterdir()) == ["figure-doc.tex"]


def test_a_pdf_build_writes_the_figure_pdf_even_without_pdflatex(tmp_path, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)  # no pdflatex: the .tex can be compiled later
    _build(tmp_path, pdf=True)
    pdf = tmp_path / "build" / "figure-doc-line.pdf"
    assert pdf.read_bytes().startswith(b"%PDF")
    svg = (tmp_path / "docs" / "figure-doc-line.svg").read_bytes()
    _build(tmp_path / "again", pdf=False)  # the SVG is the same whether or not the PDF is drawn beside it
    assert (tmp_path / "again" / "docs" / "figure-doc-line.svg").read_bytes() == svg


def test_check_compares_the_svg(tmp_path):
    _build(tmp_path, pdf=False)
    assert _build(tmp_path, pdf=False, check=True).stale == []
    (tmp_path / "docs" / "figure-doc-line.svg").write_bytes(b"<svg/>")
    assert _build(tmp_path, pdf=False, check=True).stale == [str(tmp_path / "docs" / "figure-doc-line.svg")]


def test_a_cached_result_without_figure_pdfs_does_not_serve_a_pdf_build(tmp_path, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    cache = tmp_path / "cache"
    assert _build(tmp_path / "a", pdf=False, cache=cache).cached == 0
    assert _build(tmp_path / "b", pdf=True, cache=cache).cached == 0  # no figure PDF stored: rebuilt
    assert (tmp_path / "b" / "build" / "figure-doc-line.pdf").read_bytes().startswith(b"%PDF")
    assert _build(tmp_path / "c", pdf=True, cache=cache).cached == 1  # stored again, with it
    assert _build(tmp_path / "d", pdf=False, cache=cache).cached == 1  # serves a build without PDFs too


def test_the_log_line_of_a_page_says_what_it_ran(tmp_path):
    """A page without steps of its own (rendered()) says what it ran; a document its counts."""
    page = tmp_path / "page.py"
    page.write_text("from derive.render import Rendered\n\n\ndef rendered():\n"
                    "    return Rendered(docs={'page.md': b'x\\n'}, summary='3 things run (1 failed, as shown)')\n")
    bare = tmp_path / "bare.py"
    bare.write_text("def rendered():\n    return {'bare.md': 'y\\n'}\n")
    lines: list[str] = []
    build([str(page), str(bare), str(MODULE)], docs=tmp_path / "docs", out=tmp_path / "build", pdf=False,
          log=lines.append)
    assert lines[0].startswith("  page: rendered page.md: 3 things run (1 failed, as shown) (")
    assert lines[1].startswith("  bare: rendered bare.md, no derivation steps of its own (")
    assert lines[2].startswith("  figure-doc: rendered figure-doc.md, figure-doc.json, figure-doc-line.svg, no derivation")
