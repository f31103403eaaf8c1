"""Grade an executed notebook the way nbgrader's autograder does, cell by cell.

nbgrader decides a test cell's score from its outputs (``nbgrader.utils.determine_grade``:
an error or anything on stderr is zero, otherwise full marks); this module applies that same
rule to a notebook executed once by :mod:`autograder.execute`, so the both-ways check does
not execute anything a second time.
"""

from __future__ import annotations

from dataclasses import dataclass

from nbgrader.utils import determine_grade, is_grade


@dataclass
class CellResult:
    grade_id: str
    score: float
    max_score: float
    reason: str  # the error's last line, or "" when the cell passed


def _reason(cell) -> str:
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            return f"{output.ename}: {output.evalue}".strip()
        if output.output_type == "stream" and output.name == "stderr":
            return "wrote to stderr: " + output.text.strip().splitlines()[-1][:200]
    return ""


def graded_cells(nb) -> list[CellResult]:
    """One result per autograded test cell (code cells with ``grade: true``)."""
    results = []
    for cell in nb.cells:
        if cell.cell_type == "code" and is_grade(cell) and not cell.metadata["nbgrader"].get("solution", False):
            score, max_score = determine_grade(cell)
            results.append(CellResult(cell.metadata["nbgrader"]["grade_id"], score, max_score, _reason(cell)))
    return results


def errors_outside_tests(nb) -> list[str]:
    """Errors raised by cells that are not test cells (prose demos, figures, exercises)."""
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or is_grade(cell):
            continue
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                problems.append(f"cell {index}: {output.ename}: {output.evalue}")
    return problems
