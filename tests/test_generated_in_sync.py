"""Generated files (student notebooks, reference modules) match their one source: solutions/."""

from __future__ import annotations

from pathlib import Path

from autograder import course
from autograder.authoring.generate import generate_student_notebooks
from autograder.authoring.reference_export import reference_source


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_chapters_are_what_nbgrader_generates(tmp_path):
    """Regenerating chapters/ from solutions/ gives exactly the committed files, no more, no less."""
    generate_student_notebooks(course.assignments(), tmp_path)
    fresh, committed = _files(tmp_path), _files(course.CHAPTERS)
    assert sorted(fresh) == sorted(committed), (
        f"chapters/ holds {sorted(committed)} but solutions/ generates {sorted(fresh)}; "
        "run `python -m autograder generate`"
    )
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"chapters/ is out of date for {stale}; run `python -m autograder generate`"


def test_reference_modules_are_derived_from_the_notebooks(assignment):
    """autograder/reference/chNN.py is exactly what the instructor notebook's solution cells give."""
    path = course.reference_module_path(assignment)
    assert path.exists(), f"{path} is missing; run `python -m autograder generate`"
    assert path.read_text(encoding="utf-8") == reference_source(assignment), (
        f"{path.name} has drifted from solutions/{assignment}; run `python -m autograder generate`"
    )


def test_no_orphan_reference_modules():
    """Every reference module belongs to an assignment that still exists."""
    expected = {course.reference_module_path(a).name for a in course.assignments()} | {"__init__.py"}
    present = {p.name for p in course.REFERENCE.glob("*.py")}
    assert present == expected, f"unexpected files in autograder/reference/: {sorted(present - expected)}"
