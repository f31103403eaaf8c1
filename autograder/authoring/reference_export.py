"""Derive the reference module of an assignment from its instructor notebook.

The hidden tests compare a student's answer with ``autograder.reference.chNN_name``. That
module is never written by hand: it is the notebook's cells tagged ``export`` (the imports)
followed by every autograded-answer code cell, in notebook order, with nbgrader's solution
markers removed. ``python -m autograder generate`` writes it; a test fails when the
committed file and the notebook drift apart.
"""

from __future__ import annotations

import nbformat

from autograder import course
from autograder.conventions import is_answer_cell, is_export_cell, without_markers


def reference_source(assignment: str) -> str:
    """The text of ``autograder/reference/ch<assignment>.py``, derived from the notebook."""
    notebook_path = course.solution_notebook(assignment)
    nb = nbformat.read(notebook_path, as_version=4)
    parts = []
    for cell in nb.cells:
        if is_export_cell(cell):
            parts.append(cell.source.strip())
        elif is_answer_cell(cell):
            parts.append(without_markers(cell.source).strip())
    relative = notebook_path.relative_to(course.ROOT).as_posix()
    header = (
        f'"""Reference implementations for {assignment}.\n\n'
        f"GENERATED from {relative} by `python -m autograder generate`: the cells tagged\n"
        '"export" and every autograded-answer cell, in order, without the solution markers.\n'
        "Do not edit: edit the notebook and regenerate.\n"
        '"""\n'
    )
    return header + "\n\n\n".join(parts) + "\n"


def write_reference(assignment: str) -> None:
    path = course.reference_module_path(assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(reference_source(assignment), encoding="utf-8")
