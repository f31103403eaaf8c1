"""The repository's Python passes ruff (configured in pyproject.toml), and no run of six or more lines
repeats among the grader's and the tests' helpers (pylint's duplicate-code checker)."""

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


# Where the rule "no run of six or more lines repeats" applies (issue 33): the grader's and the tests' helpers.
# Left out, on purpose: the test modules, the wrong and valid answers (tests/wrong_answers/ch*.py and cells/:
# each a whole cell as a student writes it), and autograder/reference/, generated from the notebooks (chapter
# 07's reference repeats chapter 04's MultiHeadAttention, as the chapter asks the student to).
def _helpers() -> list[Path]:
    root = course.ROOT
    grader = [p for p in (root / "autograder").rglob("*.py") if "reference" not in p.relative_to(root).parts]
    tests = [p for p in (root / "tests").glob("*.py") if not p.name.startswith("test_")]
    return sorted(grader + tests + sorted((root / "tests" / "wrong_answers").glob("__*__.py")))


def test_no_run_of_six_lines_repeats_among_the_helpers(tmp_path):
    """pylint's duplicate-code checker (its defaults: comments, docstrings, imports and signatures do not count)
    finds no run of six or more lines that two helper modules share. A copy of six lines of
    autograder/grading/deadline.py, checked in the same run, shows that the checker sees a repeat."""
    helpers = _helpers()
    deadline = course.ROOT / "autograder" / "grading" / "deadline.py"
    lines = deadline.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "previous = signal.signal" in line)
    control = tmp_path / "control_copy.py"
    control.write_text("def copied():\n" + "\n".join(lines[start : start + 6]) + "\n")
    # --min-similarity-lines=5: pylint reports the runs longer than the number it is given (six lines and more)
    completed = subprocess.run(
        [sys.executable, "-m", "pylint", "--disable=all", "--enable=duplicate-code", "--min-similarity-lines=5"]
        + ["--score=n", "--persistent=n", *map(str, helpers), str(control)],
        cwd=course.ROOT,
        capture_output=True,
        text=True,
    )
    reports = completed.stdout.split("R0801: ")[1:]
    assert any("control_copy" in r and "deadline" in r for r in reports), completed.stdout + completed.stderr
    repeats = [r for r in reports if "control_copy" not in r]
    assert not repeats, f"{len(repeats)} run(s) of six or more lines repeat (move them to one home):\n" + "\n".join(
        repeats
    )
