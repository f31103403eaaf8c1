"""Where things live in the course repository, and which assignments exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"  # instructor notebooks (nbgrader source)
CHAPTERS = ROOT / "chapters"  # student notebooks (generated, committed)
AUTOGRADER = ROOT / "autograder"
REFERENCE = AUTOGRADER / "reference"  # reference modules (generated, committed)
BUILD = ROOT / "_build"  # ignored: execution cache and the built books

ASSIGNMENT_ID = re.compile(r"^\d\d_[a-z0-9_]+$")


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
