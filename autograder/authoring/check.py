"""Both ways, through the class grader's own boundary: the reference earns every point, the stub none.

``python -m autograder check`` and ``tests/test_both_ways.py`` grade a chapter's instructor
notebook and its untouched student notebook with the grader that grades the class
(:func:`autograder.grading.runner.grade`), in its no-sandbox mode (no root needed): the
student's cells run in a kernel of their own, every test cell in the grader, through the
proxies. So a test cell that cannot cross the boundary (autograder/BOUNDARY.md lists the patterns) fails
here, on every machine and in CI, and not only in the root-only grader tests.

This module owns the cache of graded runs: each notebook is graded once and the result kept under
``_build/graded/``, keyed by a hash of everything that can change it (:func:`cache_key`): the
notebook and the files beside it, the instructor notebook (the template), the reference module,
the student package (its sources and the data it ships) and the grader's own sources.
The instructor notebook's graded run is also the one run the book's outputs come from
(:func:`autograder.authoring.execute.executed`). :func:`grade_all` grades several notebooks into
the cache at once, one process per notebook, as ``python -m autograder book`` and ``check`` do.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
import shutil
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat

from autograder import course
from autograder.conventions import is_test_cell

CACHE = course.BUILD / "graded"
TIMEOUT_S = 1800  # one notebook, everything included (chapter 05 trains a small model)
CALL_TIMEOUT_S = 600


@dataclasses.dataclass
class CellResult:
    grade_id: str
    score: float
    max_score: float
    reason: str  # "passed", or the failure's first line


@dataclasses.dataclass
class Graded:
    status: str
    cells: list[CellResult]
    notebook: str | None  # the graded notebook (nbformat JSON): the outputs of every cell


def _outputs_key(notebook_path: Path) -> str:
    """A hash of everything that can change the notebook's outputs: the notebook and the files
    beside it, the student package (its code and its shipped data in assets/) and, for a course
    assignment, its generated reference module."""
    digest = hashlib.sha256(b"v1")
    beside = notebook_path.parent.rglob("*")
    folder_files = sorted(p for p in beside if p.is_file() and ".ipynb_checkpoints" not in p.parts)
    package = (course.ROOT / "attention_course").rglob("*")
    package_files = sorted(p for p in package if p.is_file() and "__pycache__" not in p.parts)
    inputs = [*folder_files, *package_files]
    assignment = notebook_path.parent.name
    if course.ASSIGNMENT_ID.match(assignment):
        inputs.append(course.reference_module_path(assignment))
    for path in inputs:
        digest.update((path.relative_to(course.ROOT) if path.is_relative_to(course.ROOT) else path).as_posix().encode())
        digest.update(path.read_bytes() if path.exists() else b"<missing>")
    return digest.hexdigest()


def cache_key(notebook_path: Path, assignment: str) -> str:
    """The key of a graded run: what can change the notebook's outputs, the instructor notebook
    (the template), the student notebook and the grader's own sources (conventions.py included: it
    reads the template; grading/kernel/ too)."""
    digest = hashlib.sha256(_outputs_key(notebook_path).encode())
    grader = [course.AUTOGRADER / "conventions.py", *sorted((course.AUTOGRADER / "grading").rglob("*.py"))]
    for path in (course.solution_notebook(assignment), course.student_notebook(assignment), *grader):
        digest.update(path.name.encode())
        digest.update(path.read_bytes() if path.exists() else b"<missing>")
    return digest.hexdigest()


def _target(notebook_path: Path, assignment: str) -> Path:
    return CACHE / f"{assignment}-{notebook_path.parent.parent.name}.json"


def _cached(notebook_path: Path, assignment: str, key: str) -> Graded | None:
    target = _target(notebook_path, assignment)
    if target.exists():
        saved = json.loads(target.read_text())
        if saved.get("key") == key:
            return Graded(saved["status"], [CellResult(**c) for c in saved["cells"]], saved["notebook"])
    return None


def grade_through_boundary(notebook_path: Path, assignment: str) -> Graded:
    """Grade one notebook of ``assignment`` as the class grader does (no sandbox); cached."""
    from autograder.grading import runner

    notebook_path = Path(notebook_path).resolve()
    target = _target(notebook_path, assignment)
    key = cache_key(notebook_path, assignment)
    cached = _cached(notebook_path, assignment, key)
    if cached is not None:
        return cached
    workdir = Path(tempfile.mkdtemp(prefix="ag-check-", dir="/tmp"))  # short: it holds the kernel's sockets
    try:
        options = runner.Options(unsafe=True, timeout=TIMEOUT_S, call_timeout=CALL_TIMEOUT_S, workdir=workdir)
        result = runner.grade("check", notebook_path.read_bytes(), assignment, options, slot=0)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    cells = [CellResult(c.grade_id, c.score, c.max_score, c.reason) for c in result.cells if c.kind == "test"]
    graded = Graded(result.status, cells, result.notebook)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    partial.write_text(json.dumps({"key": key, **dataclasses.asdict(graded)}))
    partial.replace(target)  # atomic: a concurrent run reads the old file or the new one
    return graded


def _one_thread() -> None:
    """A worker of :func:`grade_all` runs the test cells on one PyTorch thread, as the class grader's workers
    do (autograder/grading/batch.py): the kernels beside it have the other cores."""
    import torch

    torch.set_num_threads(1)


def grade_all(notebooks: list[tuple[Path, str]], jobs: int | None = None) -> None:
    """Grade into the cache each ``(notebook, assignment)`` that is not there yet, ``jobs`` at a time
    (default: two, or one on a one-core machine), each in a process of its own that grades as
    :func:`grade_through_boundary` does; the callers then read the cache. A graded run is mostly one
    kernel executing a notebook while the grader waits, so two share a 2-core machine; a failure to
    grade is recorded in the cache as it would be by one process."""
    pending = []
    for notebook_path, assignment in notebooks:
        notebook_path = Path(notebook_path).resolve()
        if _cached(notebook_path, assignment, cache_key(notebook_path, assignment)) is None:
            pending.append((notebook_path, assignment))
    jobs = min(len(pending), jobs or min(2, os.cpu_count() or 1))
    if jobs < 2:
        return  # nothing to share: the callers grade what is missing themselves
    # spawn: a fresh interpreter per worker (forking a process that runs threads, such as pytest's, is unsafe)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=spawn, initializer=_one_thread) as pool:
        for future in [pool.submit(grade_through_boundary, path, assignment) for path, assignment in pending]:
            future.result()


def errors_outside_tests(graded: Graded) -> list[str]:
    """Errors raised by cells that are not test cells (prose demos, figures, exercises)."""
    if graded.notebook is None:
        return [f"the notebook was not graded: {graded.status}"]
    problems = []
    for index, cell in enumerate(nbformat.reads(graded.notebook, as_version=4).cells):
        if cell.cell_type != "code" or is_test_cell(cell):
            continue
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                problems.append(f"cell {index}: {output.ename}: {output.evalue}")
    return problems
