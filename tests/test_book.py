"""Both editions build with warnings as errors, offline, and show what readers should see."""

from __future__ import annotations

import re

import pytest
import yaml
from bs4 import BeautifulSoup

from autograder import course
from autograder.authoring import book
from autograder.conventions import is_demo_cell

EXTERNAL = re.compile(r"^(https?:)?//", re.IGNORECASE)


def _pages(html_dir):
    return sorted(p for p in html_dir.rglob("*.html") if "_static" not in p.parts)


def _image_outputs(nb) -> int:
    return sum(
        1
        for cell in nb.cells
        if is_demo_cell(cell)
        for output in cell.get("outputs", [])
        if any(key.startswith("image/") for key in output.get("data", {}))
    )


def test_every_assignment_is_in_the_toc(assignment):
    entries = book.toc_entries(yaml.safe_load((course.ROOT / "_toc.yml").read_text()))
    assert f"chapters/{assignment}/{assignment}" in entries, f"_toc.yml does not list chapters/{assignment}"


@pytest.mark.parametrize("edition", book.EDITIONS)
def test_no_page_loads_anything_from_another_host(edition, request):
    html_dir = request.getfixturevalue(f"{edition}_html")
    offenders = []
    for page in _pages(html_dir):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for tag, attribute in (
            ("script", "src"),
            ("link", "href"),
            ("img", "src"),
            ("iframe", "src"),
            ("source", "src"),
        ):
            for element in soup.find_all(tag):
                url = element.get(attribute) or ""
                if tag == "link" and "stylesheet" not in (element.get("rel") or []) and element.get("as") is None:
                    continue  # a plain hyperlink-like <link> (canonical, search) loads nothing
                if EXTERNAL.match(url):
                    offenders.append(f"{page.relative_to(html_dir)}: <{tag} {attribute}={url!r}>")
    assert not offenders, f"pages load resources from other hosts: {offenders[:10]}"


@pytest.mark.parametrize("edition", book.EDITIONS)
def test_pages_load_the_local_mathjax(edition, request, assignment):
    """The typesetting itself is checked in a browser (test_browser.py); here: the files are there."""
    html_dir = request.getfixturevalue(f"{edition}_html")
    assert (html_dir / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert (html_dir / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()
    folder = "chapters" if edition == "student" else "solutions"
    page = (html_dir / folder / assignment / f"{assignment}.html").read_text(encoding="utf-8")
    assert "_static/mathjax/tex-chtml.js" in page, f"{assignment} does not load the local MathJax"
    assert 'class="math' in page, f"{assignment} has no math to typeset"


def test_student_pages_show_the_reference_figures_and_no_traceback(student_html, assignment, executed_reference):
    page = student_html / "chapters" / assignment / f"{assignment}.html"
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    text = soup.get_text()
    outputs = " ".join(area.get_text() for area in soup.select(".cell_output"))
    assert "Traceback" not in outputs and "Error:" not in outputs, f"{page.name} shows an error in a cell's output"
    expected = _image_outputs(executed_reference(assignment))
    images = [img for img in soup.select("article img") if img.get("src", "").startswith("../../_images/")]
    assert len(images) >= expected, f"{page.name} shows {len(images)} figures, the reference draws {expected}"
    for img in images:
        assert (page.parent / img["src"]).resolve().is_file(), f"figure {img['src']} is missing"
    assert "raise NotImplementedError()" in text, "the student page should show the exercise stubs"


def test_instructor_pages_show_solutions(instructor_html, assignment):
    text = (instructor_html / "solutions" / assignment / f"{assignment}.html").read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" in text and "Model answer" in text


def test_a_build_is_reused_only_from_the_same_inputs(tmp_path, monkeypatch):
    """book.build runs jupyter-book again when any staged file changed, never after a failed build, and
    reuses the last passing build of exactly the same inputs (README's first command builds both editions;
    the tests read them)."""
    import subprocess

    source = tmp_path / "stage"
    source.mkdir()
    (source / "page.md").write_text("# one")
    runs, outcome = [], {"returncode": 0}

    def jupyter_book(command, **kwargs):
        runs.append(command)
        html = tmp_path / "build" / "student" / "_build" / "html"
        html.mkdir(parents=True, exist_ok=True)
        (html / "index.html").write_text("<h1>built</h1>")
        (html.parent / ".doctrees").mkdir(exist_ok=True)
        return subprocess.CompletedProcess(command, outcome["returncode"], "", "a warning")

    monkeypatch.setattr(course, "BUILD", tmp_path / "build")
    monkeypatch.setattr(book, "stage", lambda edition: source)
    monkeypatch.setattr(book.subprocess, "run", jupyter_book)
    book.build("student")
    book.build("student")
    assert len(runs) == 1, "the same inputs were built twice"
    (source / "page.md").write_text("# two")
    book.build("student")
    assert len(runs) == 2, "a changed page was not built"
    outcome["returncode"] = 1
    (source / "page.md").write_text("# three")
    with pytest.raises(RuntimeError, match="a warning"):
        book.build("student")
    assert not (tmp_path / "build" / "student" / "_build" / ".doctrees").exists(), "a failed build kept its env"
    outcome["returncode"] = 0
    book.build("student")
    assert len(runs) == 4, "a failed build was reused"
    # An incremental build rewrites only changed pages, whose neighbours keep a stale sidebar (a new
    # chapter missing from every other page's navigation): a build that runs writes every page.
    assert all("--all" in command for command in runs), f"a build must rewrite every page: {runs}"
