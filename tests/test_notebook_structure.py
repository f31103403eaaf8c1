"""Every instructor notebook follows the course's exercise contract (solutions/EXERCISES.md)
and the cell conventions the grader relies on; the contract agrees with the team's shared
catalogue (../shared/EXERCISES.md) when that file is beside the repository."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from autograder import course

CONTRACT = course.SOLUTIONS / "EXERCISES.md"  # the course's own contract (always present)
SHARED_CONTRACT = course.ROOT.parent / "shared" / "EXERCISES.md"  # the team's catalogue (optional)
ENTRY = re.compile(r"^- `(class )?([A-Za-z_][A-Za-z0-9_]*)\(([^)]*)\)")


def contract_sections(path: Path) -> dict[str, dict[str, list[str] | None]]:
    """assignment -> {name -> parameter names (None for a class)} from a contract file."""
    sections = {}
    for match in re.finditer(r"^## (\d\d_[a-z0-9_]+)\b.*?(?=^## |\Z)", path.read_text(), re.MULTILINE | re.DOTALL):
        entries = {}
        for line in match.group(0).splitlines():
            entry = ENTRY.match(line)
            if entry:
                is_class, name, params = entry.groups()
                entries[name] = None if is_class else [p.split("=")[0].strip() for p in params.split(",") if p.strip()]
        sections[match.group(1)] = entries
    return sections


def contract(assignment: str) -> dict[str, list[str] | None]:
    """name -> parameter names (None for a class) from the assignment's section of the course's contract."""
    sections = contract_sections(CONTRACT)
    assert assignment in sections, f"{assignment} has no section in {CONTRACT.relative_to(course.ROOT)}"
    return sections[assignment]


def test_every_assignment_of_the_contract_exists():
    missing = sorted(set(contract_sections(CONTRACT)) - set(course.assignments()))
    assert not missing, f"solutions/EXERCISES.md names assignments without an instructor notebook: {missing}"


@pytest.mark.skipif(not SHARED_CONTRACT.exists(), reason="no ../shared/EXERCISES.md beside this clone")
def test_the_contract_agrees_with_the_shared_catalogue():
    """Every exercise of the team's catalogue is in the course's contract with the same parameters
    (the course may add exercises)."""
    ours, shared = contract_sections(CONTRACT), contract_sections(SHARED_CONTRACT)
    for assignment, entries in shared.items():
        assert assignment in ours, f"{assignment} is in ../shared/EXERCISES.md but not in solutions/EXERCISES.md"
        for name, params in entries.items():
            assert name in ours[assignment], f"{assignment}.{name} is missing from solutions/EXERCISES.md"
            assert ours[assignment][name] == params, (
                f"{assignment}.{name}: shared parameters {params}, course contract {ours[assignment][name]}"
            )


def _cells(assignment):
    return nbformat.read(course.solution_notebook(assignment), as_version=4).cells


def _exercises(assignment) -> dict[str, ast.AST]:
    found = {}
    for cell in _cells(assignment):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution") and not meta.get("grade"):
            for node in ast.parse(cell.source).body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    found[node.name] = node
    return found


def test_exercises_match_the_contract(assignment):
    expected, written = contract(assignment), _exercises(assignment)
    assert sorted(written) == sorted(expected), f"{assignment}: contract {sorted(expected)}, notebook {sorted(written)}"
    for name, params in expected.items():
        if params is not None:
            got = [a.arg for a in written[name].args.args]
            assert got == params, f"{name}: contract parameters {params}, notebook {got}"


def test_each_exercise_has_a_docstring_and_visible_and_hidden_tests(assignment):
    cells = _cells(assignment)
    grade_ids = [c.metadata["nbgrader"]["grade_id"] for c in cells if "nbgrader" in c.metadata]
    assert len(grade_ids) == len(set(grade_ids)), f"duplicate grade_ids in {assignment}"
    for name, node in _exercises(assignment).items():
        assert ast.get_docstring(node), f"exercise {name} needs a docstring stating shapes"
        for kind in ("visible", "hidden"):
            assert f"{name}_{kind}" in grade_ids, f"exercise {name} has no test cell {name}_{kind}"
    for cell in cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            assert meta.get("locked") and meta.get("points", 0) > 0, (
                f"{meta['grade_id']} must be locked and worth points"
            )
            assert ast.get_docstring(ast.parse(cell.source.split("### BEGIN HIDDEN TESTS")[0])), (
                f"{meta['grade_id']} should start with a docstring saying what it checks"
            )
            if meta["grade_id"].endswith("_hidden"):
                assert "### BEGIN HIDDEN TESTS" in cell.source, f"{meta['grade_id']} has no hidden tests"


def test_at_least_one_written_question(assignment):
    written = [
        c
        for c in _cells(assignment)
        if c.cell_type == "markdown"
        and c.metadata.get("nbgrader", {}).get("grade")
        and c.metadata["nbgrader"].get("solution")
    ]
    assert written, f"{assignment} needs a manually graded written question"
    for cell in written:
        assert cell.source.strip().startswith("### BEGIN SOLUTION") and cell.source.strip().endswith(
            "### END SOLUTION"
        ), "a written answer cell must hold only the solution markers and the model answer"


PERCEPTUALLY_UNIFORM = {"viridis", "plasma", "inferno", "magma", "cividis"}


def test_colour_maps_are_perceptually_uniform(assignment):
    """Heatmaps of weights use a colour map in which equal steps look equal (no jet, no rainbow)."""
    sources = [c.source for c in _cells(assignment) if c.cell_type == "code"]
    named = set(re.findall(r"cmap\s*=\s*[\"']([A-Za-z_]+)[\"']", "\n".join(sources)))
    bad = {name for name in named if name.removesuffix("_r") not in PERCEPTUALLY_UNIFORM}
    assert not bad, f"{assignment} uses colour maps that are not perceptually uniform: {sorted(bad)}"
