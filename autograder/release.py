"""Generate the student notebooks in ``chapters/`` with nbgrader's ``generate_assignment``.

The configuration is ``autograder/nbgrader_config.py``; only the destination and the
gradebook are overridden: the gradebook used here is a throwaway one, so that regenerating
the student notebooks never touches the grading gradebook. (The config adds one preprocessor
after nbgrader's own: autograder/setup_cell.py's setup cell and kernel specification.)
"""

from __future__ import annotations

import os
import shutil
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


def scratch_course(assignment: str, root: Path) -> Path:
    """A throwaway nbgrader course in ``root`` holding one assignment's instructor notebook.

    Its ``nbgrader_config.py`` loads the course's config and points every folder and the
    gradebook into ``root`` (``source``, ``release``, ``submitted``, ``autograded``,
    ``feedback``), so nbgrader's own commands can run there with ``cwd=root`` without touching
    the repository. Used by the end-to-end test and the grader benchmark.
    """
    shutil.copytree(course.SOLUTIONS / assignment, root / "source" / assignment)
    folders = "".join(
        f"c.CourseDirectory.{step}_directory = {step!r}\n"
        for step in ("source", "release", "submitted", "autograded", "feedback")
    )
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"load_subconfig({str(course.AUTOGRADER / 'nbgrader_config.py')!r})\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        + folders
        + f"c.CourseDirectory.db_url = {'sqlite:///' + str(root / 'gradebook.db')!r}\n"
    )
    return root
