"""Which chapters go through the costly grading paths: the representatives, or every chapter.

Every grading path keeps its end-to-end check on every run (tests/README.md). Where a path
costs a whole run of a chapter's notebook for each chapter (nbgrader's own autograde, the class
grader's sandbox with a crash and a forger per chapter), the default run takes the
representative chapters below, each chosen for what it brings to those paths, and the full matrix
takes every chapter: ``COURSE_FULL_MATRIX=1 .venv/bin/python -m pytest`` (the instructor before a
release; the GitHub workflow on a version tag, before it releases, and when started by hand).

Whatever every chapter needs stays on every run, for every chapter, new ones included: the
reference earns every point and the stub none through the class grader's runner
(test_both_ways.py), the chapter runs from the wheel alone (test_reader.py), its wrong answers
fail its tests (test_wrong_answers.py), its book pages build and open (test_book.py,
test_browser.py), nbgrader regenerates its student notebook exactly (test_generated_in_sync.py).

A representative is chosen for a reason, and the reason is checked: tests/test_chapter_matrix.py
reads what each chapter brings to a grading path (:func:`features`: the libraries its cells
import, written answers, test cells that record the student's operations) and fails, naming the
chapter and the feature, when a chapter brings something no representative has. A new chapter
therefore joins the representatives only when it brings something new.
"""

from __future__ import annotations

import ast
import os
import re
import sys

import nbformat
import pytest

from autograder import course
from autograder.conventions import is_test_cell, is_written_answer

FULL_MATRIX_VARIABLE = "COURSE_FULL_MATRIX"

# chapter -> (why it stands for the others on the costly paths: nbgrader's autograde in one kernel,
# the class grader's sandbox; the features of :func:`features` that reason names, which
# tests/test_chapter_matrix.py checks it still has). Listed chapters that do not exist yet are left out.
REPRESENTATIVES = {
    "03_attention_steps": (
        "answers in NumPy and in PyTorch, figures, two written questions with rubrics; "
        "also the chapter of the hostile zoo, the hub's cycle and the student lab",
        {"imports numpy", "imports torch", "imports matplotlib", "written answers"},
    ),
    "08_attention_at_scale": (
        "PyTorch modules as answers, test cells that record the student's operations (record_ops) "
        "through the boundary and the sandbox, the course's largest tensors (the sandbox's memory limit)",
        {"imports torch", "test cells that record operations (record_ops)"},
    ),
}


def full_matrix() -> bool:
    """Whether this run takes every chapter through every path (``COURSE_FULL_MATRIX=1``)."""
    return os.environ.get(FULL_MATRIX_VARIABLE, "") == "1"


def representatives() -> list[str]:
    """The representative chapters that exist, in course order."""
    return [a for a in course.assignments() if a in REPRESENTATIVES]


def runs(assignment: str) -> bool:
    """Whether a costly path takes ``assignment`` in this run."""
    return full_matrix() or assignment in REPRESENTATIVES


def params(assignments: list[str]) -> list:
    """``assignments`` as pytest parameters; outside the full matrix, those that are not
    representatives are skipped with the reason and the way to run them."""
    skip = pytest.mark.skip(
        reason=f"not a representative chapter (tests/chapter_matrix.py): {FULL_MATRIX_VARIABLE}=1 runs every chapter"
    )
    return [pytest.param(a, marks=() if runs(a) else skip) for a in assignments]


def _imported(source: str) -> set[str]:
    """Top-level names of the modules a cell imports (IPython magics and shell lines ignored)."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:  # not Python after all: read its import lines as written
        return {m.group(1) for m in re.finditer(r"^\s*(?:from|import)\s+(\w+)", source, re.MULTILINE)}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def features(assignment: str) -> set[str]:
    """What a chapter brings to a grading path: each library outside Python's own that its cells
    import (their objects cross the grader's boundary, their files must be in the sandbox and on
    the hub), written answers (manual grades, rubrics in nbgrader's feedback), and test cells that
    record the student's operations (record_ops crosses the boundary with the call)."""
    return features_of(nbformat.read(course.solution_notebook(assignment), as_version=4))


def features_of(nb: nbformat.NotebookNode) -> set[str]:
    """:func:`features` of an instructor notebook."""
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    libraries = set().union(*(_imported(cell.source) for cell in code)) - set(sys.stdlib_module_names)
    # every hidden test imports autograder; every kernel has IPython (IPython.display)
    found = {f"imports {name}" for name in libraries - {"autograder", "IPython", "ipykernel"}}
    if any(is_written_answer(cell) for cell in nb.cells):
        found.add("written answers")
    if any(is_test_cell(cell) and "record_ops" in cell.source for cell in nb.cells):
        found.add("test cells that record operations (record_ops)")
    return found
