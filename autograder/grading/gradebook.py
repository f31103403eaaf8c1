"""Keep nbgrader's gradebook in step, so that formgrader, manual grading and export keep working.

The gradebook (``gradebook.db`` in the working folder, ``_grading/`` by default, as in
``autograder/nbgrader_config.py``) gets the assignment from nbgrader's own
``generate_assignment`` (cells, points, checksums), then, per student, the submission, the
automatic score of each test cell (``auto_score``) and the autograded notebook under
``autograded/<student>/<assignment>/``, which formgrader shows. Manual scores are never
touched: a written answer graded in formgrader keeps its score through any re-grading, and
:func:`hand_grades` reads them back (test-cell overrides and extra credit included) for the reports.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
import warnings
from pathlib import Path

from autograder import course


def db_url(work: Path) -> str:
    """The gradebook's URL; also puts the venv's ``bin`` on PATH (nbgrader runs ``alembic`` from it)."""
    from autograder.nbgrader_course import venv_on_path

    venv_on_path()
    return f"sqlite:///{Path(work).resolve() / 'gradebook.db'}"


def ensure_assignment(work: Path, assignment: str) -> None:
    """Put the assignment in the gradebook (again, when its instructor notebook changed)."""
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    from autograder.nbgrader_course import nbgrader_config

    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    stamp = work / f".{assignment}.source-sha256"
    digest = hashlib.sha256(course.solution_notebook(assignment).read_bytes()).hexdigest()
    with Gradebook(db_url(work)) as gradebook:
        try:
            gradebook.find_assignment(assignment)
            known = stamp.exists() and stamp.read_text() == digest
        except MissingEntry:
            known = False
    if known:
        return
    with tempfile.TemporaryDirectory(prefix="release-") as scratch:
        config = nbgrader_config(CourseDirectory={"release_directory": scratch, "db_url": db_url(work),
                                                  "root": str(course.ROOT)})  # fmt: skip
        api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
        result = api.generate_assignment(assignment, force=True, create=True)
    if not result["success"]:
        raise RuntimeError(f"nbgrader generate_assignment {assignment} failed: {result.get('error', '')}")
    stamp.write_text(digest)


def record(work: Path, result) -> None:
    """Write one student's automatic scores and autograded notebook (manual scores are kept)."""
    from sqlalchemy.exc import OperationalError

    for attempt in range(5):  # sqlite is locked while another writer (formgrader, a second run) commits
        try:
            _record(work, result)
            break
        except OperationalError:
            if attempt == 4:
                raise
            time.sleep(1 + attempt)
    target = Path(work) / "autograded" / result.student_id / result.assignment / f"{result.assignment}.ipynb"
    if result.notebook is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(result.notebook, encoding="utf-8")
    elif target.exists():
        target.unlink()


def _record(work: Path, result) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(db_url(work)) as gradebook, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's add_submission trips SQLAlchemy's autoflush warnings
        gradebook.update_or_create_student(result.student_id)
        gradebook.update_or_create_submission(result.assignment, result.student_id)
        graded = result.status == "graded"
        for cell in result.cells:
            grade = gradebook.find_grade(cell.grade_id, result.assignment, result.assignment, result.student_id)
            if not graded:  # no automatic score: formgrader lists it as needing a person
                grade.auto_score, grade.needs_manual_grade = None, grade.manual_score is None
            elif cell.kind == "test":
                grade.auto_score = cell.score
                grade.needs_manual_grade = grade.manual_score is not None
            else:
                grade.auto_score = None
                if grade.manual_score is None:
                    grade.needs_manual_grade = True
        gradebook.db.commit()


def hand_grades(work: Path, assignment: str) -> dict[str, dict[str, tuple[float | None, float | None]]]:
    """student -> grade_id -> (manual score, extra credit), for every grade a person entered in
    formgrader: written answers, and test cells whose automatic score was overridden."""
    from nbgrader.api import Assignment, Grade, Gradebook, GradeCell, Student, SubmittedAssignment, SubmittedNotebook

    grades: dict[str, dict[str, tuple[float | None, float | None]]] = {}
    if not (Path(work) / "gradebook.db").exists():
        return grades
    with Gradebook(db_url(work)) as gradebook:
        rows = (
            gradebook.db.query(Student.id, GradeCell.name, Grade.manual_score, Grade.extra_credit)
            .join(SubmittedAssignment, SubmittedAssignment.student_id == Student.id)
            .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
            .join(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .join(Grade, Grade.notebook_id == SubmittedNotebook.id)
            .join(GradeCell, GradeCell.id == Grade.cell_id)
            .filter(Assignment.name == assignment)
            .filter((Grade.manual_score.isnot(None)) | (Grade.extra_credit.isnot(None)))
            .all()
        )
    for student, grade_id, manual, extra in rows:
        grades.setdefault(student, {})[grade_id] = (
            None if manual is None else float(manual),
            None if extra is None else float(extra),
        )
    return grades


def comments(work: Path, assignment: str) -> dict[str, dict[str, str]]:
    """student -> cell name -> the comment a person wrote in formgrader."""
    from nbgrader.api import Assignment, BaseCell, Comment, Gradebook, SubmittedAssignment, SubmittedNotebook

    found: dict[str, dict[str, str]] = {}
    if not (Path(work) / "gradebook.db").exists():
        return found
    with Gradebook(db_url(work)) as gradebook:
        rows = (
            gradebook.db.query(SubmittedAssignment.student_id, BaseCell.name, Comment.manual_comment)
            .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
            .join(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .join(Comment, Comment.notebook_id == SubmittedNotebook.id)
            .join(BaseCell, BaseCell.id == Comment.cell_id)
            .filter(Assignment.name == assignment, Comment.manual_comment.isnot(None), Comment.manual_comment != "")
            .all()
        )
    for student, cell, text in rows:
        found.setdefault(student, {})[cell] = text
    return found
