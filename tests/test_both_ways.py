"""Both ways, through the class grader's boundary: the reference earns every point of every test
cell; the untouched stub earns none, each test failing with the stub's NotImplementedError.

Each notebook is graded once by the grader's own runner in its no-sandbox mode
(autograder/authoring/check.py, cached under _build/graded/), exactly as ``python -m autograder check``
does: the tests run in the grader, the student's code in a kernel of its own, so a test cell that
cannot cross the boundary fails here, on every machine. The notebooks the selected tests read are
graded first, two at a time (check.grade_all); the instructor notebooks are usually in the cache
already, from README's first command (the book's outputs come from the same runs).
"""

from __future__ import annotations

import functools

import pytest

from autograder import course
from autograder.authoring.check import errors_outside_tests, grade_all, grade_through_boundary


@pytest.fixture(scope="module", autouse=True)
def _graded_two_at_a_time(request):
    chosen = sorted(
        {item.callspec.params["assignment"] for item in request.session.items if item.module is request.module}
    )
    grade_all([(path, a) for a in chosen for path in (course.solution_notebook(a), course.student_notebook(a))])


@functools.cache
def _graded(assignment: str, which: str):
    path = course.solution_notebook(assignment) if which == "reference" else course.student_notebook(assignment)
    return grade_through_boundary(path, assignment)


def test_reference_passes_every_test_cell(assignment):
    graded = _graded(assignment, "reference")
    assert graded.status == "graded" and graded.cells, f"{assignment} was not graded: {graded.status}"
    failed = [f"{r.grade_id}: {r.reason}" for r in graded.cells if r.score != r.max_score]
    assert not failed, f"the reference solution of {assignment} fails through the grader: {failed}"


def test_reference_runs_without_errors(assignment):
    problems = errors_outside_tests(_graded(assignment, "reference"))
    assert not problems, f"cells of solutions/{assignment} raise: {problems}"


def test_stub_fails_every_test_cell(assignment):
    graded = _graded(assignment, "stub")
    assert graded.status == "graded" and graded.cells, f"chapters/{assignment} was not graded: {graded.status}"
    passed = [r.grade_id for r in graded.cells if r.score != 0]
    assert not passed, f"the untouched student notebook of {assignment} earns points in {passed}"
    not_loud = [f"{r.grade_id}: {r.reason}" for r in graded.cells if "NotImplementedError" not in r.reason]
    assert not not_loud, f"these cells should fail with the stub's NotImplementedError: {not_loud}"
