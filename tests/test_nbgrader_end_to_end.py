"""The instructor's path through nbgrader itself, on a scratch copy of the course:
generate_assignment, two submissions (the reference answers and the untouched stub),
autograde, export, generate_feedback. The reference earns every autograded point and the stub
none; formgrader's autograded notebook shows the rubrics, and the students' feedback shows
neither the rubrics nor the hidden tests."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup

from autograder import course
from autograder.conventions import HIDDEN_REGION, MARK_SCHEME_REGION, inside_and_outside, normalise, secret_lines
from autograder.nbgrader_course import nbgrader_environment, scratch_course


def _nbgrader(scratch: Path, *args: str) -> None:
    completed = subprocess.run(
        [str(Path(sys.executable).parent / "nbgrader"), *args],
        cwd=scratch,
        env=nbgrader_environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, (
        f"nbgrader {' '.join(args)} failed:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    )


def _grade_with_nbgrader(assignment: str, root: Path) -> Path:
    """nbgrader's whole path for ``assignment`` in a scratch course under ``root``: generate_assignment,
    two submissions (the reference answers, the untouched stub), autograde, export, generate_feedback.
    Returns the course folder; a failing command raises with nbgrader's output."""
    scratch = scratch_course(assignment, root / "course")
    _nbgrader(scratch, "generate_assignment", assignment, "--force")
    released = scratch / "release" / assignment / f"{assignment}.ipynb"
    for student, notebook in (("reference", course.solution_notebook(assignment)), ("stub", released)):
        target = scratch / "submitted" / student / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True)
        shutil.copy(notebook, target)
    _nbgrader(scratch, "autograde", assignment, "--create")
    _nbgrader(scratch, "export", "--to", str(scratch / "grades.csv"))
    _nbgrader(scratch, "generate_feedback", assignment, "--force")
    return scratch


@pytest.fixture(scope="module")
def nbgrader_courses(request, tmp_path_factory):
    """assignment -> the Future of its scratch course graded by nbgrader (:func:`_grade_with_nbgrader`), for
    the chapters whose test this run selected (``-k 03`` grades chapter 03 only).

    Two chapters run at a time: each run is mostly one kernel executing a notebook, so two share a
    2-core machine well, and this is one of the longest tests of CI (whose budget is 30 minutes).
    Each chapter's test reads its own result, so a failure is reported by that chapter's test."""
    selected = [
        item.callspec.params["assignment"]
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec")
    ]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return {a: pool.submit(_grade_with_nbgrader, a, tmp_path_factory.mktemp(a)) for a in selected}


def test_reference_full_marks_and_stub_zero(nbgrader_courses, assignment):
    scratch = nbgrader_courses[assignment].result()
    released = scratch / "release" / assignment / f"{assignment}.ipynb"
    assert released.read_bytes() == course.student_notebook(assignment).read_bytes()

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{scratch / 'gradebook.db'}") as gradebook:
        reference = gradebook.find_submission(assignment, "reference")
        stub = gradebook.find_submission(assignment, "stub")
        assert reference.max_code_score > 0
        assert reference.code_score == reference.max_code_score, (
            f"reference earned {reference.code_score}/{reference.max_code_score} autograded points"
        )
        assert stub.code_score == 0, f"the untouched stub earned {stub.code_score} points"
        expected = {"reference": reference.code_score, "stub": 0.0}
    with open(scratch / "grades.csv", newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert {s: float(rows[s]["raw_score"]) for s in expected} == expected

    rubric, hidden = _instructor_only_lines(assignment)
    assert rubric, f"{assignment} has no rubric lines to look for"
    autograded = (scratch / "autograded" / "stub" / assignment / f"{assignment}.ipynb").read_text(encoding="utf-8")
    autograded_text = normalise(" ".join(cell.source for cell in nbformat.reads(autograded, as_version=4).cells))
    missing = [line for line in rubric if line not in autograded_text]
    assert not missing, f"formgrader's autograded notebook lacks the rubric lines {missing[:3]}"

    page = scratch / "feedback" / "stub" / assignment / f"{assignment}.html"
    text = normalise(BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").get_text(" "))
    leaked = [line for line in (*rubric, *hidden) if line in text]
    assert not leaked, f"the student's feedback shows instructor-only lines: {leaked[:3]}"


def _instructor_only_lines(assignment: str) -> tuple[list[str], list[str]]:
    """(rubric elements, hidden-test lines) of the instructor notebook that appear neither outside its
    marked regions nor in the student notebook, normalised, long enough to matter
    (autograder.conventions.secret_lines)."""
    nb = nbformat.read(course.solution_notebook(assignment), as_version=4)
    rubric, hidden = [], []
    for cell in nb.cells:
        for match in MARK_SCHEME_REGION.finditer(cell.source):
            rubric += [normalise(line.lstrip("- ")) for line in match.group(1).splitlines()]
        for match in HIDDEN_REGION.finditer(cell.source):
            hidden += [normalise(line) for line in match.group(1).splitlines()]
    released = nbformat.read(course.student_notebook(assignment), as_version=4)
    public = "\n".join(inside_and_outside(nb.cells)[1] + inside_and_outside(released.cells)[1])
    return sorted(secret_lines(set(rubric), public)), sorted(secret_lines(set(hidden), public))
