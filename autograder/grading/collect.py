"""Find each student's notebook in what the instructor downloaded.

SUBMISSIONS may be

- a folder with one folder per student (``alice/03_attention_steps.ipynb``; deeper layouts
  such as nbgrader's ``submitted/alice/03_attention_steps/...`` work too): the student id is
  the folder name;
- a flat folder of ``<student_id>.ipynb`` files;
- nbgrader's own layouts, where a folder named after the assignment sits in the student's
  folder (``submitted/ada/03_attention_steps/...``, ``late/ada/03_attention_steps/...``, or the
  folder ``submitted/ada`` itself): the student is the folder above the assignment's, and the
  exchange's ``timestamp.txt`` beside the notebook is the submission time;
- a zip file or folder as a learning platform downloads it (Canvas, Moodle, Blackboard: ids.py
  reads their file names), holding either of the above. As with nbgrader's ``zip_collect``, a
  file whose name matches ``FileNameCollector.named_regexp`` from the nbgrader config takes its
  student id from the ``student_id`` group; the newest ``timestamp`` wins when a student has several.

Files that are not notebooks never make a student of their own (a receipt, ``notes.txt``).

A student's notebook is their only ``.ipynb``, whatever its name ("renamed" is noted); among
several, the one named ``<assignment>.ipynb``, else the only one whose name contains the
assignment id, else the only one holding the assignment's nbgrader cells. Otherwise the
student gets a row with status ``ambiguous`` (or ``no_notebook``). Symbolic links and other
special files are never followed; zip members are read in memory, never extracted, and their
sizes are capped.
"""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from autograder.grading import ids

MAX_BYTES = 32 << 20  # a bigger notebook gets status too_large
MAX_MEMBERS = 20000
JUNK = ("__MACOSX", ".ipynb_checkpoints", "__pycache__")


@dataclass
class Submission:
    student_id: str
    data: bytes | None  # the notebook's bytes; None when there is nothing to grade
    source: str  # where it came from, relative to SUBMISSIONS
    status: str = "graded"  # or no_notebook, ambiguous, too_large
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timestamp: str = ""  # when it was handed in (ISO 8601, UTC as nbgrader keeps it); "" when unknown
    lms_late: bool = False  # the learning platform marked it late
    secret: str = ""  # nbgrader's submission_secret.txt (exchange submissions): names its released feedback


@dataclass
class _File:
    parts: tuple[str, ...]  # path components below the root
    size: int
    read: object  # () -> bytes
    student_id: str | None = None
    timestamp: str = ""
    name: str | None = None  # the notebook's own name (None in a flat folder: there it is the student id)
    receipt: bool = False  # a platform's receipt of an attempt: its time, never a notebook
    late: bool = False  # the platform marked it late


def safe_student_id(text: str) -> str:
    """A student id usable as a file name and a gradebook key."""
    cleaned = re.sub(r"[^A-Za-z0-9._@+-]+", "_", text.strip()).strip("._") or "unknown"
    return cleaned[:100]


def _junk(parts) -> bool:
    return any(p in JUNK or p.startswith(".") or p.startswith("~$") for p in parts)


def _folder_files(root: Path) -> list[_File]:
    files = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not _junk([d]) and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(names):
            path = Path(folder) / name
            parts = path.relative_to(root).parts
            if _junk(parts) or path.is_symlink() or not path.is_file():
                continue
            files.append(_File(parts, path.stat().st_size, path.read_bytes))
    return files


def _zip_files(archive: zipfile.ZipFile) -> list[_File]:
    files = []
    for info in archive.infolist()[:MAX_MEMBERS]:
        if info.is_dir():
            continue
        parts = tuple(p for p in PurePosixPath(info.filename.replace("\\", "/")).parts if p not in ("", "."))
        if not parts or ".." in parts or parts[0] == "/" or _junk(parts):
            continue
        if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symbolic link stored in the zip
            continue
        files.append(_File(parts, info.file_size, lambda info=info: _read_member(archive, info)))
    return files


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    with archive.open(info) as handle:
        data = handle.read(MAX_BYTES + 1)  # never trust the size the zip declares
    return data


def _named_regexps() -> list[re.Pattern]:
    """nbgrader's FileNameCollector.named_regexp from the course config."""
    patterns = []
    try:
        from autograder.nbgrader_course import nbgrader_config

        configured = nbgrader_config().get("FileNameCollector", {}).get("named_regexp", "")
        if configured:
            patterns.append(configured)
    except Exception:
        pass
    return [re.compile(p) for p in patterns]


def _assign_students(files: list[_File], regexps, fmt: str | None, id_from: str, assignment: str,
                     root_name: str) -> list[_File]:  # fmt: skip
    """Each file's student: nbgrader's layout, a platform's file name, else its folder, else its own
    name (a notebook's only: other files never make a student). Returns the files that have one."""
    for f in files:  # nbgrader: <student>/<assignment>/<files>, or the student's folder itself
        if assignment in f.parts[:-1]:
            at = f.parts.index(assignment)
            f.student_id = f.parts[at - 1] if at > 0 else root_name
            f.name = f.parts[-1] if f.student_id else None
    rest = [f for f in files if not f.student_id]
    root_files = [f for f in rest if len(f.parts) == 1]
    top_dirs = {f.parts[0] for f in rest if len(f.parts) > 1}
    # a single wrapping folder ("submissions/...") holding student folders or several notebooks
    if not root_files and len(top_dirs) == 1 and not (fmt and ids.match((*top_dirs, "x.ipynb"), fmt)):
        inner = [f for f in rest if len(f.parts) > 1]
        if any(len(f.parts) > 2 for f in inner) or sum(f.parts[-1].endswith(".ipynb") for f in inner) > 1:
            for f in rest:
                f.parts = f.parts[1:]
    for f in rest:
        for pattern in regexps:
            found = pattern.match(f.parts[-1])
            if found and found.groupdict().get("student_id"):
                f.student_id = found.group("student_id")
                f.timestamp = found.groupdict().get("timestamp") or ""
                f.name = found.groupdict().get("file_id") or f.parts[-1]
                break
        else:
            if fmt and (known := ids.match(f.parts, fmt, id_from)):
                f.student_id, f.name, f.timestamp = known.student_id, known.name, known.timestamp
                f.receipt, f.late = known.receipt, known.late
            elif len(f.parts) > 1:
                f.student_id, f.name = f.parts[0], f.parts[-1]
            elif f.parts[0].lower().endswith(".ipynb"):
                f.student_id = str(PurePosixPath(f.parts[0]).with_suffix(""))
    return [f for f in files if f.student_id]


def _handed_in(files: list[_File]) -> str:
    """When the files were handed in: the exchange's timestamp.txt, else the platform's time."""
    for f in files:
        if f.parts[-1] == "timestamp.txt" and f.size < 1000:
            if stamp := ids.parse_time(f.read().decode("utf-8", errors="replace")):
                return stamp
    return ids.parse_time(max((f.timestamp for f in files if f.timestamp), default=""))


def _choose(student: str, files: list[_File], assignment: str) -> Submission:
    submission = _choose_notebook(student, files, assignment)
    beside = ("timestamp.txt", "submission_secret.txt")
    chosen = [f for f in files if f.parts[-1] in beside or "/".join(f.parts) == submission.source]
    submission.timestamp = _handed_in(chosen or files)
    submission.lms_late = any(f.late for f in files)
    secrets = [f for f in chosen if f.parts[-1] == "submission_secret.txt" and f.size < 1000]
    if secrets and submission.source:
        submission.secret = secrets[0].read().decode("ascii", errors="replace").strip()
    return submission


def _choose_notebook(student: str, files: list[_File], assignment: str) -> Submission:
    files = [f for f in files if not f.receipt and f.parts[-1] not in ("timestamp.txt", "submission_secret.txt")]
    notebooks = [f for f in files if f.parts[-1].lower().endswith(".ipynb")]
    if not notebooks and len(files) == 1 and PurePosixPath(files[0].parts[-1]).suffix.lower() in ("", ".json", ".txt"):
        notebooks = files
    if not notebooks:
        return Submission(student, None, "", "no_notebook", notes=["no notebook found"])
    newest = max(f.timestamp for f in notebooks)
    notebooks = [f for f in notebooks if f.timestamp == newest]
    flags, notes = [], []
    if len(notebooks) > 1:
        flags.append("multiple_notebooks")
        exact = [f for f in notebooks if (f.name or f.parts[-1]) == f"{assignment}.ipynb"]
        named = [f for f in notebooks if assignment in f.parts[-1]]
        chosen = exact[:1] or (named if len(named) == 1 else []) or _by_content(notebooks, assignment)
        if len(chosen) != 1:
            names = ", ".join("/".join(f.parts) for f in notebooks)
            return Submission(student, None, names, "ambiguous", flags, [f"several notebooks: {names}"])
        notebooks = chosen
    chosen = notebooks[0]
    source = "/".join(chosen.parts)
    if chosen.name is not None and chosen.name != f"{assignment}.ipynb":
        flags.append("renamed")
        notes.append(f"graded {source}")
    if chosen.size > MAX_BYTES:
        return Submission(student, None, source, "too_large", flags, notes)
    data = chosen.read()
    if len(data) > MAX_BYTES:
        return Submission(student, None, source, "too_large", flags, notes)
    return Submission(student, data, source, "graded", flags, notes)


def _by_content(notebooks: list[_File], assignment: str) -> list[_File]:
    """The notebooks that hold the most nbgrader cells of this assignment (if exactly one does)."""
    from autograder.grading.template import load_template

    ids = load_template(assignment).grade_ids
    counts = []
    for f in notebooks:
        text = f.read()[:MAX_BYTES].decode("utf-8", errors="replace") if f.size <= MAX_BYTES else ""
        counts.append(sum(f'"{grade_id}"' in text for grade_id in ids))
    best = max(counts)
    winners = [f for f, n in zip(notebooks, counts) if n == best]
    return winners if best > 0 and len(winners) == 1 else []


def collect(path: Path, assignment: str, lms: str = "auto", id_from: str = "name") -> list[Submission]:
    """One Submission per student found under ``path`` (a folder or a zip file), by student id.

    ``lms``: the platform whose file names to read (ids.py), ``auto`` to detect it, ``none``."""
    path = Path(path)
    root_name = path.parent.name if path.name == assignment else path.stem
    archive = None
    if path.is_file():
        if not zipfile.is_zipfile(path):
            raise ValueError(f"{path} is neither a folder nor a zip file")
        archive = zipfile.ZipFile(path)
        files = _zip_files(archive)
    elif path.is_dir():
        files = _folder_files(path)
    else:
        raise FileNotFoundError(f"{path} does not exist")
    if path.name == assignment:  # the student's folder of nbgrader's layout, one level down
        for f in files:
            f.parts = (assignment, *f.parts)
    try:
        fmt = ids.detect([f.parts for f in files], lms)
        files = _assign_students(files, _named_regexps(), fmt, id_from, assignment, safe_student_id(root_name))
        by_student: dict[str, list[_File]] = {}
        for f in files:
            by_student.setdefault(safe_student_id(f.student_id), []).append(f)
        return [_choose(student, group, assignment) for student, group in sorted(by_student.items())]
    finally:
        if archive is not None:
            archive.close()
