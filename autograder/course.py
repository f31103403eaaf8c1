"""Where things live in the course repository, and which assignments exist."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"  # instructor notebooks (nbgrader source)
CHAPTERS = ROOT / "chapters"  # student notebooks (generated, committed)
AUTOGRADER = ROOT / "autograder"
REFERENCE = AUTOGRADER / "reference"  # reference modules (generated, committed)
BUILD = ROOT / "_build"  # ignored: execution cache and the built books
GRADING_WORK = ROOT / "_grading"  # ignored: a class's submissions, autograded notebooks, feedback, gradebook.db

ASSIGNMENT_ID = re.compile(r"^\d\d_[a-z0-9_]+$")

# Seconds one cell (or one call into a student's code) may run before it is interrupted: the class
# grader, nbgrader's Execute.timeout when autograding (autograder/nbgrader_config.py), and Validate
# in the student's own JupyterLab (scripts/student_lab/nbgrader_config.py). Chapters keep every
# cell well under it.
CELL_TIMEOUT = 120


def assignments() -> list[str]:
    """Assignment ids (``NN_name``) that have an instructor notebook, in order."""
    return sorted(
        path.name
        for path in SOLUTIONS.iterdir()
        if path.is_dir() and ASSIGNMENT_ID.match(path.name) and (path / f"{path.name}.ipynb").exists()
    )


def solution_notebook(assignment: str) -> Path:
    return SOLUTIONS / assignment / f"{assignment}.ipynb"


def student_notebook(assignment: str) -> Path:
    return CHAPTERS / assignment / f"{assignment}.ipynb"


def reference_module_name(assignment: str) -> str:
    """``03_attention_steps`` -> ``ch03_attention_steps`` (a module name cannot start with a digit)."""
    return f"ch{assignment}"


def reference_module_path(assignment: str) -> Path:
    return REFERENCE / f"{reference_module_name(assignment)}.py"


def environment_with_course(env: dict | None = None) -> dict[str, str]:
    """A copy of ``env`` (default: this process's environment) whose ``PYTHONPATH`` starts with the
    repository root, so that a child process (a kernel, jupyter-book, nbgrader, torchrun) can
    import ``autograder.reference`` and ``experiments``, which are not installed. Every child
    process of the course's tools gets its path from here."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def pins(lines) -> dict[str, str]:
    """The ``name==version`` pins among ``lines`` (a requirements file's lines, or the pip lines of
    environment.yml), as ``{name: version}``: names in lower case with ``-`` for ``_``, comments and
    environment markers (``; python_version ...``) left out. The one reader of the course's pins."""
    found = {}
    for line in lines:
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*==\s*([^\s;]+)(\s*;.*)?", line.split("#", 1)[0].strip())
        if match:
            found[match.group(1).lower().replace("_", "-")] = match.group(2)
    return found
