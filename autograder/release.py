"""Generate the student notebooks in ``chapters/`` with nbgrader's ``generate_assignment``.

The configuration is ``autograder/nbgrader_config.py``; only the destination and the
gradebook are overridden: the gradebook used here is a throwaway one, so that regenerating
the student notebooks never touches the grading gradebook.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from autograder import course


def nbgrader_config(**sections):
    """The course's nbgrader config, with ``sections`` (``{"CourseDirectory": {...}}``) laid over it."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course.AUTOGRADER)).load_config()
    for section, values in sections.items():
        for key, value in values.items():
            config[section][key] = value
    return config


def venv_on_path() -> None:
    """nbgrader shells out to ``alembic`` when it creates a gradebook: it must be on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


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
