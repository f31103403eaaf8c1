"""Every instructor notebook follows the course's exercise contract (solutions/EXERCISES.md)
and the cell conventions the grader relies on; the contract agrees with the team's shared
catalogue (../shared/EXERCISES.md) when that file is beside the repository."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from autograder import conventions, course
from autograder.conventions import HIDDEN_TESTS, MARK_SCHEME_REGION, SOLUTION

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


def _cells(assignment) -> tuple[conventions.Cell, ...]:
    return conventions.instructor(assignment).cells


def _exercises(assignment) -> dict[str, ast.AST]:
    found = {}
    for cell in _cells(assignment):
        if cell.kind == "answer":
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
    grade_ids = [c.grade_id for c in cells if c.kind not in ("export", "demo", "prose")]  # the nbgrader cells
    assert None not in grade_ids, f"an nbgrader cell of {assignment} has no grade_id"
    assert len(grade_ids) == len(set(grade_ids)), f"duplicate grade_ids in {assignment}"
    for name, node in _exercises(assignment).items():
        assert ast.get_docstring(node), f"exercise {name} needs a docstring stating shapes"
        for kind in ("visible", "hidden"):
            assert f"{name}_{kind}" in grade_ids, f"exercise {name} has no test cell {name}_{kind}"
    for cell in cells:
        if cell.kind == "test":
            assert cell.locked and (cell.points or 0) > 0, f"{cell.grade_id} must be locked and worth points"
            assert ast.get_docstring(ast.parse(cell.source.split(HIDDEN_TESTS[0])[0])), (
                f"{cell.grade_id} should start with a docstring saying what it checks"
            )
            if cell.grade_id.endswith("_hidden"):
                assert HIDDEN_TESTS[0] in cell.source, f"{cell.grade_id} has no hidden tests"


RUBRIC_LINE = re.compile(r"^- (\d+(?:\.\d+)?) points?: \S", re.MULTILINE)
CONVENTION = (
    "each written question is a markdown task cell (nbgrader task: true, locked, points: 0, grade_id "
    "'<answer id>_rubric') holding the question and, at its end, a rubric between '### BEGIN MARK SCHEME' and "
    "'### END MARK SCHEME' made of lines '- N point(s): element' that add up to the answer's points; right after "
    "it comes the answer cell (markdown, solution + grade) holding only the solution markers and a model answer"
)


def _written_answers(cells) -> list[int]:
    return [i for i, c in enumerate(cells) if c.kind == "written"]


def test_one_or_two_written_questions(assignment):
    answers = _written_answers(_cells(assignment))
    assert 1 <= len(answers) <= 2, f"{assignment} has {len(answers)} written questions; the course asks one or two"


def test_written_questions_have_a_rubric(assignment):
    """Rubrics use nbgrader's own mark-scheme regions, which nbgrader accepts only in task cells:
    stripped from the student version, restored by autograde so that formgrader shows them."""
    cells = _cells(assignment)
    for i in _written_answers(cells):
        answer = cells[i]
        source = answer.source.strip()
        assert source.startswith(SOLUTION[0]) and source.endswith(SOLUTION[1]), (
            f"{answer.grade_id}: the answer cell must hold only the solution markers and a model answer ({CONVENTION})"
        )
        question = cells[i - 1]
        assert question.kind == "rubric", (
            f"{answer.grade_id}: the cell before the answer must be the question as a task cell ({CONVENTION})"
        )
        rubric_id = f"{answer.grade_id}_rubric"
        assert question.locked and question.points == 0 and question.grade_id == rubric_id, (
            f"{answer.grade_id}: the question cell needs locked: true, points: 0, grade_id '{rubric_id}'; got "
            f"locked: {question.locked}, points: {question.points}, grade_id: {question.grade_id!r} ({CONVENTION})"
        )
        scheme = MARK_SCHEME_REGION.search(question.source)
        assert scheme, f"{answer.grade_id}: no mark-scheme region in the question cell ({CONVENTION})"
        total = sum(float(points) for points in RUBRIC_LINE.findall(scheme.group(1)))
        assert total == answer.points, (
            f"{answer.grade_id}: the rubric's points add up to {total:g}, the answer is worth {answer.points:g}"
        )


def test_written_question_ids_are_unique_across_the_course():
    seen = {}
    for assignment in course.assignments():
        cells = _cells(assignment)
        for i in _written_answers(cells):
            grade_id = cells[i].grade_id
            assert grade_id not in seen, f"written question {grade_id!r} is in both {seen[grade_id]} and {assignment}"
            seen[grade_id] = assignment


PERCEPTUALLY_UNIFORM = {"viridis", "plasma", "inferno", "magma", "cividis"}


def test_colour_maps_are_perceptually_uniform(assignment):
    """Heatmaps of weights use a colour map in which equal steps look equal (no jet, no rainbow)."""
    sources = [c.source for c in _cells(assignment) if c.cell_type == "code"]
    named = set(re.findall(r"cmap\s*=\s*[\"']([A-Za-z_]+)[\"']", "\n".join(sources)))
    bad = {name for name in named if name.removesuffix("_r") not in PERCEPTUALLY_UNIFORM}
    assert not bad, f"{assignment} uses colour maps that are not perceptually uniform: {sorted(bad)}"


MAX_TEST_CELL_LINES = 30


def test_student_test_cells_are_short(assignment):
    """Validate's dialog shows a failing test cell's whole source before its message, in a small box: every
    test cell of the student notebook is at most 30 lines, so that a failure reads as a few lines and one
    message (the helpers a test needs live in attention_course.checks, where a student can read them)."""
    too_long = {
        grade_id: len(cell.source.splitlines())
        for grade_id, cell in conventions.student(assignment).tests.items()
        if len(cell.source.splitlines()) > MAX_TEST_CELL_LINES
    }
    assert not too_long, (
        f"{assignment}: test cells over {MAX_TEST_CELL_LINES} lines (grade id: lines): {too_long}; move their "
        "helpers into attention_course/checks/ (one module per chapter)"
    )
