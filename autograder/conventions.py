"""The notebook conventions of the course, in one place.

An instructor notebook (``solutions/NN_name/NN_name.ipynb``) is nbgrader's source. Its cells:

- **export** cell: a code cell tagged ``export`` with the imports the solutions need;
- **answer** cell: a code cell with ``solution: true`` (and no ``grade``) defining one exercise,
  its body between the solution markers;
- **test** cell: a code cell with ``grade: true`` (and no ``solution``), locked, worth points,
  its hidden part between the hidden-test markers;
- **written answer**: a markdown cell with ``solution: true, grade: true`` holding only the
  solution markers around a model answer;
- **rubric** (question) cell: a markdown task cell (``task: true``, locked, 0 points) holding the
  question and, between the mark-scheme markers, the rubric;
- **demo** cell: any other code cell (figures, examples): readers see its output.

Text inside the three kinds of marked region is for instructors only; a long enough line of
it that appears nowhere outside a region is a *secret*, which must never reach a student.
"""

from __future__ import annotations

import re

SOLUTION = ("### BEGIN SOLUTION", "### END SOLUTION")
HIDDEN_TESTS = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
MARK_SCHEME = ("### BEGIN MARK SCHEME", "### END MARK SCHEME")

REGION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS|MARK SCHEME)(.*?)### END \1", re.DOTALL)
HIDDEN_REGION = re.compile(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", re.DOTALL)
MARK_SCHEME_REGION = re.compile(r"### BEGIN MARK SCHEME\n(.*?)\n### END MARK SCHEME", re.DOTALL)

MIN_SECRET_LENGTH = 12  # shorter lines ("return out") are too common to count as a leak


def nbgrader(cell) -> dict:
    """The cell's nbgrader metadata ({} for a plain cell)."""
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def is_export_cell(cell) -> bool:
    return cell["cell_type"] == "code" and "export" in cell.get("metadata", {}).get("tags", [])


def is_answer_cell(cell) -> bool:
    meta = nbgrader(cell)
    return cell["cell_type"] == "code" and bool(meta.get("solution")) and not meta.get("grade")


def is_test_cell(cell) -> bool:
    meta = nbgrader(cell)
    return cell["cell_type"] == "code" and bool(meta.get("grade")) and not meta.get("solution")


def is_written_answer(cell) -> bool:
    meta = nbgrader(cell)
    return cell["cell_type"] == "markdown" and bool(meta.get("solution")) and bool(meta.get("grade"))


def is_rubric_cell(cell) -> bool:
    return cell["cell_type"] == "markdown" and bool(nbgrader(cell).get("task"))


def is_demo_cell(cell) -> bool:
    """A code cell that is neither an exercise nor a test: its output is shown to readers."""
    return cell["cell_type"] == "code" and "nbgrader" not in cell.get("metadata", {})


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
    """(normalised lines inside marked regions, normalised lines outside them) of some cells."""
    inside, outside = set(), []
    for cell in cells:
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        for match in REGION.finditer(source):
            inside.update(normalise(line) for line in match.group(2).splitlines())
        outside.extend(normalise(line) for line in without_regions(source).splitlines())
    return inside, outside


def secret_lines(inside: set[str], public_text: str) -> set[str]:
    """The lines of ``inside`` long enough to matter that appear nowhere in ``public_text``."""
    return {line for line in inside if len(line) >= MIN_SECRET_LENGTH and line not in public_text}
