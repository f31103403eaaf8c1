"""The feedback pages back to the students, and the files handed back to the instructor who owns them.

- **Through nbgrader's exchange** (the hub): for each submission collected from the exchange (its
  folder held nbgrader's ``submission_secret.txt``), the grader's page goes where nbgrader's
  ``generate_feedback`` would put its own, ``WORK/feedback/<student>/<assignment>/<notebook>.html``
  (``c.CourseDirectory.feedback_directory``, ``_grading/feedback``), beside the submission's
  ``timestamp.txt`` and ``submission_secret.txt``. nbgrader's ``release_feedback`` (formgrader's
  "release feedback", or ``nbgrader release_feedback ASSIGNMENT``) then copies it to the exchange
  under the hash of that secret and the notebook's name, which is what the student's
  ``fetch_feedback`` looks for (it keeps the secret of each submission it made).
- **For a learning platform**: ``OUT/feedback-zips/<student>.zip``, one zip a student holding their
  page, to upload as feedback files (Canvas, Moodle and Blackboard take one file per student).
- **Ownership**: run as root beside a hub, the grader writes into the instructor's course folder;
  what it wrote there is handed to the owner of WORK (and of OUT), so that formgrader, ``nbgrader
  export`` and ``release_feedback``, which run as the instructor, can use (and write) it.
"""

from __future__ import annotations

import datetime as dt
import os
import zipfile
from pathlib import Path, PurePosixPath

ZIP_TIME = (2000, 1, 1, 0, 0, 0)  # the same bytes for the same page: no churn for a rerun


def _nbgrader_time(iso: str) -> str:
    return f"{dt.datetime.fromisoformat(iso):%Y-%m-%d %H:%M:%S.%f} UTC" if iso else ""


def course_feedback(out: Path, work: Path, assignment: str, records: list[dict]) -> list[str]:
    """Put the pages of the exchange's submissions in the course's feedback folder; returns the students."""
    placed = []
    for record in records:
        student, secret = record["student_id"], record.get("secret", "")
        page = Path(out) / "feedback" / student / f"{assignment}.html"
        if not secret or not page.exists() or not record.get("source"):
            continue
        folder = Path(work) / "feedback" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.html"):  # (a page of an earlier, differently named, notebook)
            old.unlink()
        notebook_id = PurePosixPath(record["source"]).stem  # the name the student submitted it under
        (folder / f"{notebook_id}.html").write_bytes(page.read_bytes())
        (folder / "timestamp.txt").write_text(_nbgrader_time(record.get("timestamp", "")))
        (folder / "submission_secret.txt").write_text(secret)
        placed.append(student)
    return placed


def pack(out: Path, assignment: str, records: list[dict]) -> Path:
    """One zip a student, with their feedback page, in OUT/feedback-zips/."""
    folder = Path(out) / "feedback-zips"
    folder.mkdir(parents=True, exist_ok=True)
    for record in records:
        page = Path(out) / "feedback" / record["student_id"] / f"{assignment}.html"
        if not page.exists():
            continue
        with zipfile.ZipFile(folder / f"{record['student_id']}.zip", "w", zipfile.ZIP_DEFLATED) as archive:
            info = zipfile.ZipInfo(f"{assignment}-feedback.html", ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, page.read_bytes())
    return folder


def hand_over(*folders: Path) -> None:
    """Run as root: give what root wrote under each folder to the folder's owner (links not followed)."""
    if os.geteuid() != 0:
        return
    for folder in folders:
        folder = Path(folder)
        if not folder.is_dir() or folder.is_symlink():
            continue
        owner = folder.stat()
        if owner.st_uid == 0:
            continue
        for base, dirs, files in os.walk(folder, followlinks=False):
            for name in [*dirs, *files]:
                path = os.path.join(base, name)
                info = os.lstat(path)
                if info.st_uid == 0 and (info.st_nlink == 1 or os.path.isdir(path)):  # (no hard link to elsewhere)
                    os.chown(path, owner.st_uid, owner.st_gid, follow_symlinks=False)
