"""The template of an assignment: what its instructor notebook says a submission must contain.

Built once per assignment from the one model of the course notebook (:mod:`autograder.conventions`):
the test cells (the instructor's source, hidden tests included, and the source as released in
``chapters/``), the answer cells and the names each defines, the written answers with the question
above each, the read-only cells, the trusted imports, the lines of the hidden tests, the points.
:func:`sanitize.prepare` repairs a submission against it; the runner, the reports and the failed
rows (every graded cell at 0) read their cells and points from it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import nbformat

from autograder import conventions, course
from autograder.conventions import normalise as _normalise
from autograder.conventions import without_regions
from autograder.grading.names import defined_names, import_statements


@dataclass
class TestCell:
    grade_id: str
    points: float
    source: str  # the instructor's, hidden tests included
    released: str  # what students see
    index: int  # position in the instructor notebook
    hidden: bool  # has a hidden part


@dataclass
class Template:
    """What the instructor notebook of an assignment says a submission must contain."""

    assignment: str
    notebook: nbformat.NotebookNode
    tests: dict[str, TestCell]
    answers: dict[str, tuple[int, set[str]]]  # grade_id -> (index, names it defines)
    written: dict[str, tuple[int, float, str]]  # grade_id -> (index, points, normalised prompt above it)
    locked: dict[str, int]  # other nbgrader cells (read-only text) -> index
    imports: list[tuple[str, set[str]]]  # trusted import statements and the names they bind
    hidden_lines: set[str]  # normalised lines of the hidden tests that appear nowhere public
    kernel_name: str
    indices: dict[str, int]  # grade_id -> position in the instructor notebook
    given: set[str] = field(default_factory=set)  # normalised code cells every student receives as they are

    @property
    def grade_ids(self) -> set[str]:
        return set(self.tests) | set(self.answers) | set(self.written) | set(self.locked)

    @property
    def max_score(self) -> float:
        return sum(t.points for t in self.tests.values()) + sum(w[1] for w in self.written.values())

    def cell(self, grade_id: str):
        return self.notebook.cells[self.indices[grade_id]]


@functools.cache
def load_template(assignment: str) -> Template:
    """The template of an assignment: the model of its instructor notebook (autograder.conventions),
    with the test cells as released in ``chapters/``."""
    model, released = conventions.instructor(assignment), conventions.student(assignment)
    tests, answers, written, locked, imports = {}, {}, {}, {}, []
    previous_markdown = ""
    for cell in model.cells:
        if cell.kind == "test":
            released_cell = released.by_grade_id.get(cell.grade_id)
            tests[cell.grade_id] = TestCell(
                cell.grade_id, cell.points or 0.0, cell.source,
                cell.source if released_cell is None else released_cell.source, cell.index, cell.hidden,
            )  # fmt: skip
        elif cell.kind == "answer":
            answers[cell.grade_id] = (cell.index, defined_names(cell.source))
        elif cell.kind == "written":
            written[cell.grade_id] = (cell.index, cell.points or 0.0, previous_markdown)
        elif cell.grade_id:
            locked[cell.grade_id] = cell.index
        if cell.cell_type == "code" and cell.kind != "test":
            imports.extend(import_statements(cell.source))
        if cell.cell_type == "markdown" and cell.kind != "written":
            previous_markdown = _normalise(without_regions(cell.source))  # as released: no rubric
    indices = {grade_id: cell.index for grade_id, cell in model.by_grade_id.items()}
    given = {_normalise(c.source) for c in released.cells if c.cell_type == "code"}
    return Template(assignment, model.node(), tests, answers, written, locked, imports, model.hidden_lines(),
                    model.kernel_name, indices, given)  # fmt: skip


@functools.cache
def other_assignments(assignment: str) -> dict[str, tuple[set[str], set[str]]]:
    """For every other assignment: (its grade ids, the names its answers define)."""
    others = {}
    for other in course.assignments():
        if other != assignment:
            try:
                t = load_template(other)
            except (OSError, ValueError):  # a chapter being written (no student notebook yet)
                continue
            others[other] = (t.grade_ids, set().union(*(names for _, names in t.answers.values())))
    return others
