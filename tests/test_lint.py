"""The repository's Python passes ruff (configured in pyproject.toml)."""

import subprocess
import sys
from pathlib import Path

from autograder import course


def test_ruff_check():
    ruff = Path(sys.executable).parent / "ruff"
    completed = subprocess.run([str(ruff), "check", "--no-cache", "."], cwd=course.ROOT, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stdout + completed.stderr
