"""The per-student records in ``OUT/results/``: written atomically, and what each was graded from.

A record is the finished grading of one submission (``<student_id>.json``). It is written last,
after the gradebook, through a temporary file renamed over the old one, so a run killed at any
moment leaves either the old record or the new one, never half of one; a file that does not parse
(a record of an older grader killed while writing) counts as not graded.

``graded_from`` says what the grade depends on: the notebook's bytes, the assignment (instructor
notebook, released notebook, reference module, the course package the sandbox imports), the
grader's own code, and the options that change a grade (time and memory limits, the sandbox).
A later run skips a submission whose record has the same ``graded_from``: :func:`up_to_date`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from functools import cache
from pathlib import Path

from autograder import course

HERE = Path(__file__).parent
# modules that make reports, not grades: changing them regrades nobody
REPORTING = {"batch", "cli", "collect", "ids", "report", "records", "lateness", "gradebook", "classreport",
             "rebuild", "release", "leftovers", "feedback", "__init__", "engine", "slots", "certs"}  # fmt: skip


def _digest(paths) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(Path(path).relative_to(course.ROOT)).encode() + b"\0")
        h.update(Path(path).read_bytes() + b"\0")
    return h.hexdigest()[:32]


def grading_modules() -> dict[str, Path]:
    """The modules whose code can change a grade, by name (``kernel/rpc`` for the kernel's side)."""
    modules = {p.relative_to(HERE).with_suffix("").as_posix(): p for p in HERE.rglob("*.py")}
    return {name: path for name, path in modules.items() if name not in REPORTING}


@cache
def grader_version() -> str:
    return _digest(grading_modules().values())


@cache
def assignment_digest(assignment: str) -> str:
    paths = [course.solution_notebook(assignment), course.student_notebook(assignment)]
    reference = course.reference_module_path(assignment)
    paths += [reference] if reference.exists() else []
    paths += list((course.ROOT / "attention_course").rglob("*.py"))
    return _digest(paths)


def options_key(options) -> dict:
    limits = options.limits
    return {"timeout": options.timeout, "call_timeout": options.call_timeout, "memory_mb": limits.memory_mb,
            "cpu_s": limits.cpu_s, "unsafe": options.unsafe}  # fmt: skip


def graded_from(data: bytes | None, assignment: str, options) -> dict:
    return {
        "notebook": hashlib.sha256(data).hexdigest() if data is not None else None,
        "assignment": assignment_digest(assignment),
        "grader": grader_version(),
        "options": options_key(options),
    }


def path(out: Path, student_id: str) -> Path:
    return Path(out) / "results" / f"{student_id}.json"


def load(out: Path, student_id: str) -> dict | None:
    """The finished record of a student, or None (none, or unreadable)."""
    try:
        return json.loads(path(out, student_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def load_all(out: Path, assignment: str) -> list[dict]:
    """Every finished record of this assignment in OUT/results/, by student id."""
    records = []
    for file in sorted((Path(out) / "results").glob("*.json")):
        try:
            record = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # half-written by a grader of an older version: not graded
        if isinstance(record, dict) and record.get("assignment") == assignment:
            records.append(record)
    return sorted(records, key=lambda r: r["student_id"])


def save(out: Path, record: dict) -> None:
    """Write a record atomically (a temporary file in the same folder, flushed, renamed over the old)."""
    target = path(out, record["student_id"])
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(record, file, indent=1)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def clean_partial(out: Path) -> None:
    """Remove the temporary files of records a killed run was writing."""
    for file in (Path(out) / "results").glob(".*.part"):
        with contextlib.suppress(OSError):
            file.unlink()


def up_to_date(record: dict | None, key: dict, retry_failed: bool = False) -> bool:
    """Whether a record stands for a submission graded from ``key`` (and, with ``retry_failed``,
    graded at all: a submission that could not be graded is tried again)."""
    if record is None or record.get("graded_from") != key:
        return False
    return not (retry_failed and record.get("status") != "graded")
