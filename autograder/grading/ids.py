"""Who handed in a file: student ids from the file names learning platforms write, and the roster.

Each platform names the files of its "download all submissions" archive in its own way:

- **Canvas**: ``<name>_<user id>_<attachment id>_<file>``, where ``<name>`` is the student's
  sortable name in lower case without spaces or punctuation (``lovelaceada``); a submission
  handed in after the due date has ``LATE`` after the name (``lovelaceada_LATE_12345_67890_<file>``);
  a resubmitted file may carry ``-1``, ``-2``... before its extension.
- **Moodle**: one folder per student and submission plugin,
  ``<Full Name>_<participant id>_assignsubmission_file_/<file>`` (or, without folders, the same
  prefix before the file name); online text goes to ``..._assignsubmission_onlinetext_/``.
- **Blackboard**: ``<Assignment>_<user name>_attempt_<yyyy-mm-dd-hh-mm-ss>_<file>`` for each file of
  an attempt, and the attempt's receipt ``<Assignment>_<user name>_attempt_<yyyy-mm-dd-hh-mm-ss>.txt``
  (the student's comments, which is not a notebook and never a student of its own).

:func:`detect` picks the format that names the most notebooks of a download (or the one named by
``--lms``); :func:`match` reads one file name with it. The id is the platform's name for the
student (``lovelaceada``, ``Ada Lovelace``, the user name), or its number with ``--lms-id number``.

The roster is the list of the course's students (one id a line, ``#`` starts a comment, or a CSV
file with a ``student_id``, ``id`` or ``username`` column): ``--roster FILE``, else the hub's
``students.txt`` (``$ATTENTION_HUB_ETC``, ``/etc/attention-hub``, as deploy/ installs it). A
student id that is not on it is flagged ``not_on_roster``.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

BLACKBOARD_TIME = r"\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d"
FORMATS = {
    "blackboard": re.compile(
        rf"^(?P<assignment>.+?)_(?P<student_id>[A-Za-z0-9.@+-]+)_attempt_(?P<timestamp>{BLACKBOARD_TIME})"
        r"(?:_(?P<file_id>.+)|(?P<receipt>\.txt))$"
    ),
    "canvas": re.compile(
        r"^(?P<student_id>[a-z0-9]+?)(?P<late>_LATE)?_(?P<number>\d+)_(?P<attachment>\d+)_(?P<file_id>.+)$"
    ),
    "moodle": re.compile(
        r"^(?P<student_id>[^_/]+(?:_[^_/]+)*?)_(?P<number>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file_id>.*)$"
    ),
}
LMS_CHOICES = ("auto", "none", *FORMATS)
ROSTER_PLACES = ("$ATTENTION_HUB_ETC/students.txt", "/etc/attention-hub/students.txt")


@dataclass
class Match:
    student_id: str
    name: str | None  # the file's own name (None when the platform's name is the whole path)
    timestamp: str = ""  # ISO 8601, UTC naive as nbgrader keeps it; "" when unknown
    receipt: bool = False  # an attempt's receipt: tells the time, never graded
    late: bool = False  # the platform itself marked it late
    parts_used: int = 1  # how many leading path components the platform's name took (Moodle folders: 1)


def match(parts: tuple[str, ...], fmt: str, id_from: str = "name") -> Match | None:
    """The student a file belongs to, by the platform's naming, or None."""
    if fmt not in FORMATS:
        return None
    pattern = FORMATS[fmt]
    if fmt == "moodle" and len(parts) > 1:
        found = pattern.match(parts[-2])
        if found and found.group("file_id") == "":
            return Match(_id(found, id_from), parts[-1])
    found = pattern.match(parts[-1])
    if found is None:
        return None
    groups = found.groupdict()
    if fmt == "blackboard":
        stamp = dt.datetime.strptime(groups["timestamp"], "%Y-%m-%d-%H-%M-%S").isoformat()
        return Match(_id(found, id_from), groups["file_id"], stamp, receipt=bool(groups["receipt"]))
    name = groups["file_id"]
    if fmt == "canvas":  # a resubmission's "-1" before the extension is Canvas's, not the student's
        name = re.sub(r"-\d+(\.ipynb)$", r"\1", name)
    return Match(_id(found, id_from), name or None, late=bool(groups.get("late")))


def _id(found: re.Match, id_from: str) -> str:
    number = found.groupdict().get("number")
    return number if id_from == "number" and number else found.group("student_id")


def detect(paths: list[tuple[str, ...]], wanted: str = "auto") -> str | None:
    """The platform whose naming fits the most notebooks of a download (``wanted`` when named)."""
    if wanted != "auto":
        return None if wanted == "none" else wanted
    notebooks = [p for p in paths if p[-1].lower().endswith(".ipynb")]
    counts = {fmt: sum(match(p, fmt) is not None for p in notebooks) for fmt in FORMATS}
    best = max(counts, key=counts.get)
    return best if counts[best] > 0 else None


def parse_time(text: str) -> str:
    """A timestamp as nbgrader writes it (``timestamp.txt``: ``2024-01-02 09:00:00.123456 UTC``), in
    ISO 8601, UTC without a zone; "" when it cannot be read."""
    from nbgrader.utils import parse_utc

    try:
        return parse_utc(text.strip()).isoformat() if text.strip() else ""
    except (ValueError, OverflowError, TypeError):
        return ""


# ---- the roster ---------------------------------------------------------------------------------


def roster_path(given: str | None) -> Path | None:
    """The roster file: ``given`` ("none": no roster), else the hub's students.txt where it exists."""
    if given:
        return None if given == "none" else Path(given)
    for place in ROSTER_PLACES:
        path = Path(os.path.expandvars(place))
        if "$" not in str(path) and path.is_file():
            return path
    return None


def read_roster(path: Path | None) -> set[str] | None:
    """The student ids of a roster file (None: no roster, nothing is flagged)."""
    if path is None:
        return None
    text = Path(path).read_text(encoding="utf-8-sig")
    first = text.splitlines()[0] if text.strip() else ""
    if "," in first:
        rows = list(csv.DictReader(io.StringIO(text)))
        column = next((c for c in ("student_id", "id", "username") if rows and c in rows[0]), None)
        if column is None:
            raise ValueError(f"{path}: a CSV roster needs a student_id, id or username column")
        return {row[column].strip() for row in rows if row[column].strip()}
    names = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return {name for name in names if name}
