"""No solution or hidden-test text reaches students: not in chapters/, not in the student book.

A "secret" is a line inside a solution, hidden-test or mark-scheme region of an instructor
notebook that appears nowhere outside those regions (long enough not to be a coincidence).
As a positive control, the instructor edition must contain the secrets: that shows the
detector can see them where they are.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from autograder import conventions, course
from autograder.conventions import normalise as _normalise
from autograder.conventions import secret_lines


def _regions_and_rest(assignment: str) -> tuple[set[str], str]:
    """(lines inside marked regions, all text outside them) of one instructor notebook."""
    inside, outside = conventions.instructor(assignment).regions()
    return inside, "\n".join(outside)


def secrets(assignment: str) -> set[str]:
    """Lines of this notebook's regions that no instructor notebook shows outside its regions
    (not even as part of a longer line, e.g. prose that names the call to make)."""
    inside, _ = _regions_and_rest(assignment)
    public = "\n".join(_regions_and_rest(a)[1] for a in course.assignments())
    public += "\n" + re.sub(r"[`*]", "", public)  # prose as rendered: without its markdown marks
    return secret_lines(inside, public)


def _notebook_text(data: str) -> str:
    nb = json.loads(data)
    parts = []
    for cell in nb.get("cells", []):
        parts.append("".join(cell.get("source", "")))
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            parts.extend("".join(v) for k, v in output.get("data", {}).items() if k.startswith("text/"))
            parts.extend(output.get("traceback", []))
    return "\n".join(parts)


def readable_text(path: Path) -> str:
    """What a person could read in a file of the built book, whitespace collapsed."""
    data = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix in (".html", ".htm"):
        data = BeautifulSoup(data, "html.parser").get_text()
    elif path.suffix == ".ipynb":
        data = _notebook_text(data)
    return _normalise(data)


TEXT_SUFFIXES = {".html", ".htm", ".ipynb", ".txt", ".md", ".js", ".json", ".py"}


def _leaks_in(folder: Path, secret_lines: set[str]) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in TEXT_SUFFIXES and "mathjax" not in path.parts:
            text = readable_text(path)
            found += [f"{path.relative_to(folder)}: {line!r}" for line in secret_lines if line in text]
    return found


def test_every_assignment_has_secrets(assignment):
    """Otherwise the leak checks below could not fail."""
    assert secrets(assignment), f"found no solution or hidden-test lines in solutions/{assignment}"


def test_student_notebooks_hold_no_secret(assignment):
    nb_text = _normalise(_notebook_text(course.student_notebook(assignment).read_text(encoding="utf-8")))
    leaked = [line for line in secrets(assignment) if line in nb_text]
    assert not leaked, f"chapters/{assignment} contains solution or hidden-test lines: {leaked}"
    raw = course.student_notebook(assignment).read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in raw and "BEGIN HIDDEN TESTS" not in raw


def test_student_book_holds_no_secret(student_html):
    every_secret = set().union(*(secrets(a) for a in course.assignments()))
    leaked = _leaks_in(student_html, every_secret)
    assert not leaked, f"the student book shows solution or hidden-test lines: {leaked[:10]}"


def test_detector_sees_secrets_in_the_instructor_book(instructor_html, assignment):
    page = instructor_html / "solutions" / assignment / f"{assignment}.html"
    text = readable_text(page)
    seen = [line for line in secrets(assignment) if line in text]
    if not seen:
        pytest.fail(f"none of the {len(secrets(assignment))} secret lines was found in {page}: the detector is blind")
