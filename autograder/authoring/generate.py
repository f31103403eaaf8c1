"""Generate the student notebooks in ``chapters/`` with nbgrader's ``generate_assignment``.

The configuration is ``autograder/nbgrader_config.py``; only the destination and the
gradebook are overridden: the gradebook used here is a throwaway one, so that regenerating
the student notebooks never touches the grading gradebook. (The config adds one preprocessor
after nbgrader's own: the setup cell and kernel specification of
``autograder/authoring/setup_cell.py``.)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from autograder.nbgrader_course import nbgrader_config, venv_on_path


def generate_student_notebooks(assignments: list[str], release_dir: Path) -> None:
    """Write ``release_dir/<assignment>/<assignment>.ipynb`` for each assignment."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    venv_on_path()
    with tempfile.TemporaryDirectory(prefix="gradebook-") as scratch:
        config = nbgrader_config(
            CourseDirectory={
                "release_directory": str(release_dir.resolve()),
                "db_url": f"sqlite:///{Path(scratch) / 'gradebook.db'}",
            }
        )
        api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
        for assignment in assignments:
            result = api.generate_assignment(assignment, force=True, create=True)
            if not result["success"]:
                raise RuntimeError(
                    f"generate_assignment {assignment} failed:\n{result.get('error', '')}\n{result.get('log', '')}"
                )
