"""Each instructor notebook runs once, and everything that needs its outputs reuses that run.

The one run is the graded run of :func:`autograder.authoring.check.grade_through_boundary`: the
reference answers graded by the class grader's runner (the cells in a kernel, the test cells in
the grader), cached under ``_build/graded/``. :func:`executed` lays that run's outputs onto the
instructor notebook, for the two editions of the book and the tests that compare with them; the
both-ways check and ``python -m autograder check`` read the same cached run (check.py owns the
cache and its key).
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from autograder import course
from autograder.authoring.check import grade_through_boundary


def executed(notebook_path: Path) -> nbformat.NotebookNode:
    """The instructor notebook ``solutions/NN_name/NN_name.ipynb`` with the outputs of its graded run.

    Cells keep their own source and metadata (captions, tags); each code cell gets the outputs and
    execution count that the same cell produced in the run (errors included, as outputs)."""
    notebook_path = Path(notebook_path).resolve()
    assignment = notebook_path.parent.name
    if notebook_path != course.solution_notebook(assignment).resolve():
        raise ValueError(f"{notebook_path}: only instructor notebooks (solutions/NN_name/NN_name.ipynb) are executed")
    nb = nbformat.read(notebook_path, as_version=4)
    graded = grade_through_boundary(notebook_path, assignment)
    if graded.notebook is None:
        raise RuntimeError(f"{assignment}: the instructor notebook was not graded ({graded.status})")
    run = nbformat.reads(graded.notebook, as_version=4)
    if [c.cell_type for c in run.cells] != [c.cell_type for c in nb.cells]:
        raise RuntimeError(f"{assignment}: the graded run's cells do not pair with the instructor notebook's")
    for cell, ran in zip(nb.cells, run.cells):
        if cell.cell_type == "code":
            cell.outputs = ran.get("outputs", [])
            cell.execution_count = ran.get("execution_count")
    return nb
