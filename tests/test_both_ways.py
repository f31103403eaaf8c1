"""Both ways: the reference earns every point of every test cell; the untouched stub earns none.

Scores come from ``nbgrader.utils.determine_grade`` (the rule nbgrader's Validator and
autograder apply) on notebooks executed once per run.
"""

from __future__ import annotations

from autograder.validate import errors_outside_tests, graded_cells


def test_reference_passes_every_test_cell(assignment, executed_reference):
    nb = executed_reference(assignment)
    results = graded_cells(nb)
    assert results, f"{assignment} has no graded test cells"
    failed = [f"{r.grade_id}: {r.reason}" for r in results if r.score != r.max_score]
    assert not failed, f"the reference solution of {assignment} fails: {failed}"


def test_reference_runs_without_errors(assignment, executed_reference):
    problems = errors_outside_tests(executed_reference(assignment))
    assert not problems, f"cells of solutions/{assignment} raise: {problems}"


def test_stub_fails_every_test_cell(assignment, executed_stub):
    results = graded_cells(executed_stub(assignment))
    assert results, f"chapters/{assignment} has no graded test cells"
    passed = [r.grade_id for r in results if r.score != 0]
    assert not passed, f"the untouched student notebook of {assignment} earns points in {passed}"
    not_loud = [r.grade_id for r in results if "NotImplementedError" not in r.reason]
    assert not not_loud, f"these cells should fail with the stub's NotImplementedError: {not_loud}"
