"""Shared fixtures: each notebook is executed once per run (and cached across runs by
autograder/execute.py), and each edition of the book is built once per run."""

from __future__ import annotations

import pytest

from autograder import book, course
from autograder.execute import executed

ASSIGNMENTS = course.assignments()


def pytest_generate_tests(metafunc):
    if "assignment" in metafunc.fixturenames:
        metafunc.parametrize("assignment", ASSIGNMENTS)


@pytest.fixture(scope="session")
def executed_reference():
    """assignment -> the executed instructor notebook."""
    cache = {}

    def get(assignment: str):
        if assignment not in cache:
            cache[assignment] = executed(course.solution_notebook(assignment))
        return cache[assignment]

    return get


@pytest.fixture(scope="session")
def executed_stub():
    """assignment -> the executed, untouched student notebook."""
    cache = {}

    def get(assignment: str):
        if assignment not in cache:
            cache[assignment] = executed(course.student_notebook(assignment))
        return cache[assignment]

    return get


@pytest.fixture(scope="session")
def student_html():
    """The student edition, built with warnings as errors; its HTML folder."""
    return book.build("student")


@pytest.fixture(scope="session")
def instructor_html():
    """The instructor edition, built with warnings as errors; its HTML folder."""
    return book.build("instructor")
