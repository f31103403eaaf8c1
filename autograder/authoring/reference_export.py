"""Derive the reference module of an assignment from its instructor notebook.

The hidden tests compare a student's answer with ``autograder.reference.chNN_name``. That
module is never written by hand: it is the notebook's cells tagged ``export`` (the imports)
followed by every autograded-answer code cell, in notebook order, with nbgrader's solution
markers removed. ``python -m autograder generate`` writes it; a test fails when the
committed file and the notebook drift apart.
"""

from __future__ import annotations

from autograder import conventions, course
from autograder.conventions import without_markers


def reference_source(assignment: str) -> str:
    """The text of ``autograder/reference/ch<assignment>.py``, derived from the notebook."""
    notebook_path = course.solution_notebook(assignment)
    parts = []
    for cell in conventions.read(notebook_path).cells:
        if cell.kind == "export":
            parts.append(cell.source.strip())
        elif cell.kind == "answer":
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
