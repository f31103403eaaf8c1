"""The instructor's path through nbgrader itself, on a scratch copy of the course:
generate_assignment, two submissions (the reference answers and the untouched stub),
autograde, export. The reference earns every autograded point and the stub none."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

from autograder import course
from autograder.release import scratch_course


def _nbgrader(scratch: Path, *args: str) -> None:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # nbgrader needs alembic
    env["PYTHONPATH"] = str(course.ROOT)  # the grading kernel imports autograder.reference
    completed = subprocess.run(
        [str(Path(sys.executable).parent / "nbgrader"), *args],
        cwd=scratch,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, (
        f"nbgrader {' '.join(args)} failed:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    )


def test_reference_full_marks_and_stub_zero(tmp_path, assignment):
    scratch = scratch_course(assignment, tmp_path / "course")
    _nbgrader(scratch, "generate_assignment", assignment, "--force")
    released = scratch / "release" / assignment / f"{assignment}.ipynb"
    assert released.read_bytes() == course.student_notebook(assignment).read_bytes()

    for student, notebook in (("reference", course.solution_notebook(assignment)), ("stub", released)):
        target = scratch / "submitted" / student / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True)
        shutil.copy(notebook, target)
    _nbgrader(scratch, "autograde", assignment, "--create")
    _nbgrader(scratch, "export", "--to", str(scratch / "grades.csv"))

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{scratch / 'gradebook.db'}") as gradebook:
        reference = gradebook.find_submission(assignment, "reference")
        stub = gradebook.find_submission(assignment, "stub")
        assert reference.max_code_score > 0
        assert reference.code_score == reference.max_code_score, (
            f"reference earned {reference.code_score}/{reference.max_code_score} autograded points"
        )
        assert stub.code_score == 0, f"the untouched stub earned {stub.code_score} points"
        expected = {"reference": reference.code_score, "stub": 0.0}
    with open(scratch / "grades.csv", newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert {s: float(rows[s]["raw_score"]) for s in expected} == expected
