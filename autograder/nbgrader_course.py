"""The course as an nbgrader course: its configuration, and throwaway copies of it.

Shared by authoring (``generate`` writes the student notebooks with nbgrader) and grading (the
gradebook, collecting submissions); the configuration itself is ``autograder/nbgrader_config.py``.
"""

from __future__ import annotations

import os
import shutil
import sys
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


def nbgrader_environment() -> dict[str, str]:
    """The environment for an ``nbgrader`` command run as a child process: ``alembic`` on PATH
    (see :func:`venv_on_path`) and the repository on PYTHONPATH (the grading kernel imports
    ``autograder.reference``)."""
    env = course.environment_with_course()
    env["PATH"] = os.pathsep.join(p for p in (str(Path(sys.executable).parent), env.get("PATH")) if p)
    return env


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
        # Kernels talk over Unix sockets in root/kernels/ instead of TCP ports: two nbgrader processes
        # starting kernels at the same moment could otherwise both pick a free port that only one can then
        # bind, and the other kernel dies before it replies (seen once in CI with two chapters at a time).
        + 'c.KernelManager.transport = "ipc"\n'
        + f"c.KernelManager.ip = {str(root / 'kernels' / 'kernel')!r}\n"
    )
    (root / "kernels").mkdir(exist_ok=True)
    return root
