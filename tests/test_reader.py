"""A reader's path: the chapter's notebook alone, run where only the course's wheel is installed.

For every chapter: the wheel is built (``pip wheel --no-deps``) and installed into a fresh
virtual environment that has the pinned dependencies but neither the repository on
``sys.path`` nor the editable install (tests/course_venv.py); the student notebook is copied
alone into an empty folder, its answer cells are filled in with the reference answers (the
instructor notebook's solution cells), and it is executed with that environment's kernel.
Every cell must run: the setup cell finds the package, and the data the chapter reads comes
from the wheel. Also: the wheel holds every shipped data file and no exercise solution.

Every chapter runs on every run (a chapter must run from the wheel alone: nothing else checks
that), two at a time in the one fresh venv: each run is one kernel executing a notebook on one
thread while this process waits, so two share a 2-core machine.
"""

from __future__ import annotations

import json
import subprocess
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from course_venv import KERNEL, build_wheel, clean_env, fresh_venv
from test_leaks import _leaks_in, secrets

from autograder import conventions, course
from autograder.conventions import SOLUTION, grade_id, is_answer_cell, without_markers

CELL_TIMEOUT_S = 600
# The kernel talks over Unix sockets in a folder of its own: two runs starting kernels at the same moment
# could otherwise both pick a free TCP port that only one can then bind.
RUNNER = f"""
import os, shutil, sys, tempfile
import nbformat
from nbclient import NotebookClient
from traitlets.config import Config

nb = nbformat.read(sys.argv[1], as_version=4)
sockets = tempfile.mkdtemp(prefix="reader-", dir="/tmp")
config = Config()
config.KernelManager.transport = "ipc"
config.KernelManager.ip = os.path.join(sockets, "kernel")
client = NotebookClient(nb, timeout={CELL_TIMEOUT_S}, kernel_name={KERNEL!r}, allow_errors=True,
                        resources={{"metadata": {{"path": "."}}}}, config=config)
try:
    client.execute()
finally:
    shutil.rmtree(sockets, ignore_errors=True)
nbformat.write(nb, sys.argv[2])
"""
WHERE = "import attention_course, sys; print(attention_course.__file__); print(sys.prefix)"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def reader(tmp_path_factory, wheel):
    """(python of a fresh venv with the wheel installed, environment variables, seconds taken)."""
    started = time.monotonic()
    root = tmp_path_factory.mktemp("reader")
    python = fresh_venv(root / "venv")
    env = clean_env(root / "home")
    before = subprocess.run([str(python), "-c", "import attention_course"], env=env, cwd=root, capture_output=True)
    assert before.returncode != 0, "the fresh venv sees a course package before the wheel is installed"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)],
        env=env, cwd=root, check=True, capture_output=True,
    )  # fmt: skip
    return python, env, time.monotonic() - started


def test_wheel_holds_the_package_and_every_shipped_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {
        path.relative_to(course.ROOT).as_posix()
        for path in (course.ROOT / "attention_course").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    missing = sorted(shipped - names)
    assert not missing, f"the wheel lacks {missing}: add their pattern to pyproject.toml's package-data"
    assert not [n for n in names if n.startswith(("autograder/", "solutions/", "chapters/", "experiments/"))]


# Layer constructors of the given models (chapter 01's tagger, the given encoder of chapters
# 05-07) that a solution repeats word for word; each reveals no exercise's logic. Reviewed one
# by one; any other line of a solution region found in the wheel fails the test.
GIVEN_IN_THE_PACKAGE = {
    "attention_course/taggers.py": {
        "self.out = nn.Linear(hidden_dim, vocab_size)",
        "self.embedding = nn.Embedding(vocab_size, emb_dim)",
    },
    "attention_course/translation.py": {
        "self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)",
    },
}


def test_wheel_holds_no_secret(wheel, tmp_path):
    """The leak rules of chapters/ (tests/test_leaks.py), applied to everything in the wheel."""
    zipfile.ZipFile(wheel).extractall(tmp_path)
    every_secret = set().union(*(secrets(a) for a in course.assignments()))
    allowed = {f"{path}: {line!r}" for path, lines in GIVEN_IN_THE_PACKAGE.items() for line in lines}
    leaked = [hit for hit in _leaks_in(tmp_path, every_secret) if hit not in allowed]
    assert not leaked, f"the wheel contains solution or hidden-test lines: {leaked[:10]}"
    for path, lines in GIVEN_IN_THE_PACKAGE.items():  # the list above stays true
        text = (tmp_path / path).read_text()
        assert all(line in text for line in lines), f"GIVEN_IN_THE_PACKAGE is out of date for {path}"
    # Positive control: the same detector finds secrets in the reference modules.
    assert _leaks_in(course.REFERENCE, every_secret), "the detector found no secret in autograder/reference/"


def filled_in(assignment: str) -> nbformat.NotebookNode:
    """The student notebook with each answer cell replaced by the instructor's solution."""
    student = nbformat.read(course.student_notebook(assignment), as_version=4)
    answers = {exercise: c.source for exercise, c in conventions.instructor(assignment).answers.items()}
    filled = 0
    for cell in student.cells:
        if is_answer_cell(cell):
            cell.source = without_markers(answers[grade_id(cell)], SOLUTION)
            filled += 1
    assert filled == len(answers) > 0, f"{assignment}: filled {filled} of {len(answers)} answers"
    return student


def _run_alone(assignment: str, reader, scratch: Path) -> tuple[subprocess.CompletedProcess, Path, float]:
    """The filled-in student notebook alone in an empty folder, executed with the reader's kernel:
    (the runner's process, the folder, seconds taken)."""
    python, env, _ = reader
    folder = scratch / "download"
    folder.mkdir()
    nb = filled_in(assignment)
    nb.cells.append(nbformat.v4.new_code_cell(WHERE))
    nbformat.write(nb, folder / f"{assignment}.ipynb")
    runner = scratch / "run.py"
    runner.write_text(RUNNER)
    started = time.monotonic()
    completed = subprocess.run(
        [str(python), str(runner), f"{assignment}.ipynb", "executed.ipynb"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    return completed, folder, time.monotonic() - started


@pytest.fixture(scope="module")
def reader_runs(request, reader, tmp_path_factory):
    """assignment -> the Future of :func:`_run_alone`, for the chapters whose test this run selected
    (``-k 03`` runs chapter 03 only), two at a time; each chapter's test reads its own."""
    selected = [
        item.callspec.params["assignment"]
        for item in request.session.items
        if item.module is request.module and "assignment" in getattr(getattr(item, "callspec", None), "params", {})
    ]
    with ThreadPoolExecutor(max_workers=2) as pool:
        yield {a: pool.submit(_run_alone, a, reader, tmp_path_factory.mktemp(f"reader-{a}")) for a in selected}


def test_chapter_runs_alone_with_the_wheel(reader, reader_runs, assignment):
    python, _, setup_s = reader
    completed, folder, seconds = reader_runs[assignment].result()
    assert completed.returncode == 0, completed.stderr[-3000:]
    executed = nbformat.read(folder / "executed.ipynb", as_version=4)
    failures = [
        f"cell {index}: {output.get('ename')}: {output.get('evalue')}"
        for index, cell in enumerate(executed.cells)
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert not failures, f"{assignment} alone with the wheel: {failures}"
    unrun = [i for i, c in enumerate(executed.cells) if c.cell_type == "code" and c.execution_count is None]
    assert not unrun, f"{assignment}: cells {unrun} did not run"
    where = "".join(o.get("text", "") for o in executed.cells[-1].outputs).split()
    assert where[0].startswith(str(python.parent.parent)), f"attention_course came from {where[0]}, not the wheel"
    assert str(course.ROOT) not in where[0]
    print(json.dumps({"chapter": assignment, "venv_and_wheel_s": round(setup_s, 1), "run_s": round(seconds)}))
