"""The repository's Python passes ruff (configured in pyproject.toml)."""

import subprocess
import sys
from pathlib import Path

from autograder import course


def test_ruff_check():
    ruff = Path(sys.executable).parent / "ruff"
    completed = subprocess.run([str(ruff), "check", "--no-cache", "."], cwd=course.ROOT, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_ruff_format():
    """The code is as `ruff format` writes it (generated modules and notebooks are excluded in pyproject.toml)."""
    ruff = Path(sys.executable).parent / "ruff"
    completed = subprocess.run(
        [str(ruff), "format", "--check", "--no-cache", "."], cwd=course.ROOT, capture_output=True, text=True
    )
    assert completed.returncode == 0, "run `ruff format .`:\n" + completed.stdout + completed.stderr
