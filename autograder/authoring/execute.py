"""Execute a course notebook once and reuse the result.

Every consumer of an executed notebook (the both-ways validation, the two editions of the
book, the tests) goes through :func:`executed`, which keeps the executed copy under
``_build/executed/`` keyed by a hash of everything that can change its outputs: the notebook
itself and the files beside it, the generated reference module, and the student package
(its sources and the data it ships).
"""

from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from pathlib import Path

import nbformat

from autograder import course

CACHE = course.BUILD / "executed"
CELL_TIMEOUT_S = 120


def cache_key(notebook_path: Path) -> str:
    """A hash of everything that can change the notebook's outputs (also keys the graded cache of check.py)."""
    digest = hashlib.sha256(b"v1")
    beside = notebook_path.parent.rglob("*")
    folder_files = sorted(p for p in beside if p.is_file() and ".ipynb_checkpoints" not in p.parts)
    package = (course.ROOT / "attention_course").rglob("*")  # its code and its shipped data (assets/)
    package_files = sorted(p for p in package if p.is_file() and "__pycache__" not in p.parts)
    inputs = [*folder_files, *package_files]
    assignment = notebook_path.parent.name
    if course.ASSIGNMENT_ID.match(assignment):
        inputs.append(course.reference_module_path(assignment))
    for path in inputs:
        digest.update((path.relative_to(course.ROOT) if path.is_relative_to(course.ROOT) else path).as_posix().encode())
        digest.update(path.read_bytes() if path.exists() else b"<missing>")
    return digest.hexdigest()


@contextmanager
def _course_environment():
    """Let the kernel import ``autograder.reference`` (see :func:`course.environment_with_course`)."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = course.environment_with_course()["PYTHONPATH"]
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def execute(notebook_path: Path) -> nbformat.NotebookNode:
    """Run every cell (errors are recorded in the outputs, not raised) and return the notebook."""
    from nbclient import NotebookClient

    nb = nbformat.read(notebook_path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(notebook_path.parent)}},
    )
    with _course_environment():
        client.execute()
    return nb


def executed(notebook_path: Path) -> nbformat.NotebookNode:
    """The executed notebook, from the cache when its inputs have not changed."""
    notebook_path = Path(notebook_path).resolve()
    target = CACHE / notebook_path.relative_to(course.ROOT)
    key_file = target.with_suffix(".key")
    key = cache_key(notebook_path)
    if target.exists() and key_file.exists() and key_file.read_text() == key:
        return nbformat.read(target, as_version=4)
    nb = execute(notebook_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    key_file.write_text(key)
    return nb
