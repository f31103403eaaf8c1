"""The model of a course notebook (autograder.conventions): one rule for the cell kinds, parsed once per content."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import conventions
from autograder.grading.names import defined_names


def _graded(cell, **meta):
    cell.metadata["nbgrader"] = {"schema_version": 3, "locked": False, "solution": False, "grade": False, **meta}
    return cell


def _small() -> nbformat.NotebookNode:
    """One cell of each kind: export, prose, answer, visible and hidden tests, demo, rubric, written answer."""
    export = new_code_cell("import numpy as np")
    export.metadata["tags"] = ["export"]
    return new_notebook(
        cells=[
            export,
            new_markdown_cell("# Toy"),
            _graded(new_code_cell("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION"),
                    grade_id="f", solution=True),
            _graded(new_code_cell('"""f returns x."""\nassert f(1) == 1'), grade_id="f_visible", grade=True,
                    locked=True, points=1),
            _graded(new_code_cell('"""More."""\n### BEGIN HIDDEN TESTS\nassert f(2.5) == 2.5\n### END HIDDEN TESTS'),
                    grade_id="f_hidden", grade=True, locked=True, points=2),
            new_code_cell("print(f(3))"),
            _graded(new_markdown_cell("Why?\n### BEGIN MARK SCHEME\n- 2 points: because\n### END MARK SCHEME"),
                    grade_id="why_rubric", task=True, locked=True, points=0),
            _graded(new_markdown_cell("### BEGIN SOLUTION\nBecause.\n### END SOLUTION"), grade_id="why",
                    solution=True, grade=True, points=2),
        ],
        metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
    )  # fmt: skip


def test_the_kinds_points_and_pairs_of_a_small_notebook(tmp_path):
    path = tmp_path / "toy.ipynb"
    nbformat.write(_small(), path)
    nb = conventions.read(path)
    assert [c.kind for c in nb.cells] == ["export", "prose", "answer", "test", "test", "demo", "rubric", "written"]
    assert list(nb.answers) == ["f"] and nb.exercises == ("f",)
    assert [c.grade_id for c in nb.tests_of("f")] == ["f_visible", "f_hidden"]
    assert [c.hidden for c in nb.tests_of("f")] == [False, True]
    assert list(nb.written) == ["why"] and nb.by_grade_id["why_rubric"].points == 0
    assert nb.grade_ids == {"f", "f_visible", "f_hidden", "why_rubric", "why"}
    assert nb.total_points == 1 + 2 + 2  # two test cells and the written answer; the rubric is worth nothing
    assert nb.hidden_lines() == {"assert f(2.5) == 2.5"}
    assert nb.kernel_name == "python3"
    # the cell-level rule agrees with the parsed cells
    assert [conventions.kind(c) for c in _small().cells] == [c.kind for c in nb.cells]


def test_a_notebook_is_parsed_once_per_content(tmp_path):
    path = tmp_path / "toy.ipynb"
    nb = _small()
    nbformat.write(nb, path)
    first = conventions.read(path)
    assert conventions.read(path) is first
    conventions.nbgrader(nb.cells[3])["points"] = 5
    nbformat.write(nb, path)
    changed = conventions.read(path)
    assert changed is not first and changed.tests["f_visible"].points == 5 and first.tests["f_visible"].points == 1
    with pytest.raises(AttributeError):
        changed.cells[0].source = "changed"  # immutable: a reader cannot change what the next one reads


def test_a_graded_code_answer_is_refused(tmp_path):
    """nbgrader's manually graded code answer (solution and grade) is no kind of the course: no reader may
    count it as an answer cell and another as a test cell."""
    nb = _small()
    conventions.nbgrader(nb.cells[2])["grade"] = True
    nbformat.write(nb, tmp_path / "toy.ipynb")
    with pytest.raises(ValueError, match="both solution and grade"):
        conventions.read(tmp_path / "toy.ipynb")


def test_each_answer_cell_defines_its_exercise(assignment):
    """The docstring's convention: an exercise's answer cell defines the function or class its grade id names."""
    nb = conventions.instructor(assignment)
    for exercise in nb.exercises:
        assert exercise in defined_names(nb.answers[exercise].source), (
            f"{assignment}: answer cell {exercise} does not define {exercise}"
        )
