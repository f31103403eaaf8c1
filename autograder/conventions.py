"""The course notebook: its conventions and its one parsed model, in one place.

An instructor notebook (``solutions/NN_name/NN_name.ipynb``) is nbgrader's source. Its cells
(:func:`kind`, the one rule every reader uses):

- **export** cell: a code cell tagged ``export`` with the imports the solutions need;
- **answer** cell: a code cell with ``solution: true`` (and no ``grade``) defining one exercise,
  its body between the solution markers; its ``grade_id`` is the exercise's name;
- **test** cell: a code cell with ``grade: true`` (and no ``solution``), locked, worth points,
  its hidden part between the hidden-test markers; exercise ``f``'s are ``f_visible`` and ``f_hidden``;
- **written answer**: a markdown cell with ``solution: true, grade: true`` holding only the
  solution markers around a model answer;
- **rubric** (question) cell: a markdown task cell (``task: true``, locked, 0 points) holding the
  question and, between the mark-scheme markers, the rubric;
- **demo** cell: any other code cell without nbgrader metadata (figures, examples): readers see its output;
- **prose**: a markdown (or raw) cell without nbgrader metadata; **locked**: any other nbgrader cell.

A code cell with both ``solution`` and ``grade`` (nbgrader's manually graded code answer) is no
kind the course uses (:func:`kind` calls it locked): :func:`read` refuses it, and an ``export``
cell with nbgrader metadata too.

:func:`read` parses a course notebook once per content (:class:`Notebook`: immutable cells with
their kind, grade id and points, the exercises and their test cells, the assignment's grade ids and
points); :func:`instructor` is the instructor notebook of an assignment. Nothing outside this module
reads nbgrader's cell metadata, except the grader's reading of a submission (which trusts none of
it) and tests that forge notebooks (``tests/test_layout.py`` checks).

Text inside the three kinds of marked region is for instructors only; a long enough line of
it that appears nowhere outside a region is a *secret*, which must never reach a student.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from autograder import course

SOLUTION = ("### BEGIN SOLUTION", "### END SOLUTION")
HIDDEN_TESTS = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
MARK_SCHEME = ("### BEGIN MARK SCHEME", "### END MARK SCHEME")

REGION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS|MARK SCHEME)(.*?)### END \1", re.DOTALL)
HIDDEN_REGION = re.compile(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", re.DOTALL)
MARK_SCHEME_REGION = re.compile(r"### BEGIN MARK SCHEME\n(.*?)\n### END MARK SCHEME", re.DOTALL)

MIN_SECRET_LENGTH = 12  # shorter lines ("return out") are too common to count as a leak


def nbgrader(cell) -> dict:
    """The cell's nbgrader metadata ({} for a plain cell, or where it is not a mapping)."""
    metadata = cell.get("metadata", {})
    meta = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return meta if isinstance(meta, dict) else {}


def grade_id(cell) -> str | None:
    """The cell's nbgrader ``grade_id`` (None for a plain cell)."""
    return nbgrader(cell).get("grade_id")


def kind(cell) -> str:
    """The cell's kind (one of :data:`KINDS`), by the rules of this module's docstring."""
    meta, cell_type = nbgrader(cell), cell["cell_type"]
    metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
    solution, grade = bool(meta.get("solution")), bool(meta.get("grade"))
    if cell_type == "code" and solution and not grade:
        return "answer"
    if cell_type == "code" and grade and not solution:
        return "test"
    if cell_type == "markdown" and solution and grade:
        return "written"
    if cell_type == "markdown" and meta.get("task"):
        return "rubric"
    if "nbgrader" in metadata:
        return "locked"
    if cell_type == "code":
        return "export" if "export" in metadata.get("tags", []) else "demo"
    return "prose"


KINDS = ("export", "answer", "test", "written", "rubric", "demo", "prose", "locked")


def is_export_cell(cell) -> bool:
    return kind(cell) == "export"


def is_answer_cell(cell) -> bool:
    return kind(cell) == "answer"


def is_test_cell(cell) -> bool:
    return kind(cell) == "test"


def is_written_answer(cell) -> bool:
    return kind(cell) == "written"


def is_rubric_cell(cell) -> bool:
    return kind(cell) == "rubric"


def is_demo_cell(cell) -> bool:
    """A code cell that is neither an exercise nor a test (the export cell too): readers see its output."""
    return kind(cell) in ("demo", "export")


def normalise(text: str) -> str:
    """Whitespace-insensitive form of a source or a line, for comparisons."""
    return " ".join(text.split())


def without_markers(source: str, markers: tuple[str, str] = SOLUTION) -> str:
    """``source`` without the lines that are exactly the two ``markers`` (the region's text stays)."""
    return "\n".join(line for line in source.splitlines() if line.strip() not in markers)


def without_regions(source: str) -> str:
    """``source`` with every marked region (markers and text) removed."""
    return REGION.sub("", source)


def inside_and_outside(cells) -> tuple[set[str], list[str]]:
    """(normalised lines inside marked regions, normalised lines outside them) of some cells
    (:class:`Cell`, nbformat's or JSON's)."""
    inside, outside = set(), []
    for cell in cells:
        source = cell.source if isinstance(cell, Cell) else cell["source"]
        source = source if isinstance(source, str) else "".join(source)
        for match in REGION.finditer(source):
            inside.update(normalise(line) for line in match.group(2).splitlines())
        outside.extend(normalise(line) for line in without_regions(source).splitlines())
    return inside, outside


def secret_lines(inside: set[str], public_text: str) -> set[str]:
    """The lines of ``inside`` long enough to matter that appear nowhere in ``public_text``."""
    return {line for line in inside if len(line) >= MIN_SECRET_LENGTH and line not in public_text}


# ---- the parsed notebook --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One cell of a course notebook, as the course reads it."""

    index: int  # position in the notebook
    kind: str  # one of KINDS
    cell_type: str
    source: str
    grade_id: str | None = None
    points: float | None = None  # nbgrader's points (None where the cell has none)
    locked: bool = False
    id: str = ""

    @property
    def hidden(self) -> bool:
        """A test cell with a hidden part."""
        return self.kind == "test" and bool(HIDDEN_REGION.search(self.source))


@dataclass(frozen=True)
class Notebook:
    """A course notebook, parsed once (:func:`read`): immutable; :meth:`node` gives a copy to edit."""

    path: Path
    text: str  # the file as read
    cells: tuple[Cell, ...]
    kernel_name: str
    by_grade_id: Mapping[str, Cell] = field(repr=False)  # the cells with a grade id

    def of_kind(self, kind: str) -> Mapping[str, Cell]:
        """grade_id -> cell of one kind, in notebook order."""
        return MappingProxyType({c.grade_id: c for c in self.cells if c.kind == kind})

    @property
    def answers(self) -> Mapping[str, Cell]:
        return self.of_kind("answer")

    @property
    def tests(self) -> Mapping[str, Cell]:
        return self.of_kind("test")

    @property
    def written(self) -> Mapping[str, Cell]:
        return self.of_kind("written")

    @property
    def exports(self) -> tuple[Cell, ...]:
        return tuple(c for c in self.cells if c.kind == "export")

    @property
    def exercises(self) -> tuple[str, ...]:
        """The answer cells that have a visible test cell, in notebook order (an answer cell without
        one is no exercise: chapter 07's optional cell for a student's chapter 04 code)."""
        return tuple(g for g in self.answers if f"{g}_visible" in self.tests)

    def tests_of(self, exercise: str) -> tuple[Cell, ...]:
        """The exercise's test cells that exist, of (visible, hidden)."""
        return tuple(self.tests[g] for g in (f"{exercise}_visible", f"{exercise}_hidden") if g in self.tests)

    @property
    def grade_ids(self) -> frozenset[str]:
        return frozenset(self.by_grade_id)

    @property
    def total_points(self) -> float:
        """What the assignment is worth: its test cells and its written answers."""
        return sum(c.points or 0.0 for c in self.cells if c.kind in ("test", "written"))

    def regions(self) -> tuple[set[str], list[str]]:
        """(normalised lines inside marked regions, normalised lines outside them) of the notebook."""
        return inside_and_outside(self.cells)

    def hidden_lines(self) -> set[str]:
        """Normalised lines of the hidden tests, long enough to matter, that appear nowhere outside a region."""
        inside, outside = set(), set()
        for cell in self.cells:
            outside.update(normalise(line) for line in without_regions(cell.source).splitlines())
            if cell.kind == "test":
                for match in HIDDEN_REGION.finditer(cell.source):
                    inside.update(normalise(line) for line in match.group(1).splitlines())
        return {line for line in inside - outside if len(line) >= MIN_SECRET_LENGTH}

    def node(self):
        """A fresh nbformat notebook of the file (the caller's to change)."""
        import nbformat

        return nbformat.reads(self.text, as_version=4)


def read(path) -> Notebook:
    """The course notebook at ``path``, parsed once per content (a changed file is parsed again)."""
    path = Path(path)
    return _parse(path, path.read_text(encoding="utf-8"))


def instructor(assignment: str) -> Notebook:
    """The instructor notebook of an assignment (``solutions/``)."""
    return read(course.solution_notebook(assignment))


def student(assignment: str) -> Notebook:
    """The student notebook of an assignment (``chapters/``, generated from the instructor's)."""
    return read(course.student_notebook(assignment))


@functools.lru_cache(maxsize=64)
def _parse(path: Path, text: str) -> Notebook:
    import nbformat

    nb = nbformat.reads(text, as_version=4)
    cells = []
    for index, raw in enumerate(nb.cells):
        meta = nbgrader(raw)
        if raw.cell_type == "code" and meta.get("solution") and meta.get("grade"):
            raise ValueError(
                f"{path}: cell {index} ({meta.get('grade_id')}) is a code cell with both solution and grade "
                "(a manually graded code answer), which the course does not use: make it an answer cell "
                "(solution) with test cells (grade)"
            )
        if meta and "export" in raw.metadata.get("tags", []):
            raise ValueError(f"{path}: cell {index} is tagged export and has nbgrader metadata: it is one or the other")
        points = meta.get("points")
        cells.append(
            Cell(index, kind(raw), raw.cell_type, raw.source, meta.get("grade_id"),
                 None if points is None else float(points), bool(meta.get("locked")), raw.get("id", ""))
        )  # fmt: skip
    by_grade_id = MappingProxyType({c.grade_id: c for c in cells if c.grade_id})
    kernel = nb.metadata.get("kernelspec", {}).get("name", "python3")
    return Notebook(path, text, tuple(cells), kernel, by_grade_id)
