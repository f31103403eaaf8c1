"""When each submission was handed in, how late, and the course's late policy, as nbgrader applies it.

The submission time comes from the exchange's ``timestamp.txt`` (nbgrader's ``collect``) or the
learning platform's attempt time (Blackboard), and goes into the gradebook
(``SubmittedAssignment.timestamp``); the due date is the gradebook's (``nbgrader db assignment add
--duedate``, or formgrader), or ``--due``, which is written there. nbgrader itself then knows how
late it was (``total_seconds_late``, extensions included) and the penalty is what nbgrader's
``AssignLatePenalties`` would give: the plugin of the course's nbgrader config
(``c.AssignLatePenalties.plugin_class``, by default ``LateSubmissionPlugin`` with
``c.LateSubmissionPlugin.penalty_method`` ``none`` or ``zero``) is asked with the notebook's score
(manual grades included), the answer is kept between 0 and that score, and it is stored as the
notebook's ``late_submission_penalty``, which ``nbgrader export`` subtracts. So the penalty is
computed again each time the reports are made: a manual grade entered later counts.
"""

from __future__ import annotations

import datetime as dt
import warnings
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Lateness:
    timestamp: str = ""  # ISO 8601, UTC
    seconds_late: float | None = None  # None: unknown (no time, or no due date)
    penalty: float = 0.0
    late: str = ""  # "yes", "no", or "" when unknown


def parse_due(text: str) -> dt.datetime:
    """A due date as nbgrader reads one (``2024-03-01 17:00:00 Europe/London``, ISO 8601; UTC if no zone)."""
    from nbgrader.utils import parse_utc

    return parse_utc(text)


def _penalties(config):
    from nbgrader.preprocessors import AssignLatePenalties

    assigner = AssignLatePenalties(config=config)
    assigner.init_plugin()
    return assigner


def apply(work: Path, assignment: str, records: list[dict], due: str | None = None) -> dict[str, Lateness]:
    """Put each submission's time in the gradebook, set the late penalties; student -> Lateness."""
    from nbgrader.api import Gradebook, MissingEntry

    from autograder.grading.gradebook import db_url
    from autograder.nbgrader_course import nbgrader_config

    found: dict[str, Lateness] = {}
    if not (Path(work) / "gradebook.db").exists():
        return found
    assigner = _penalties(nbgrader_config())
    with Gradebook(db_url(work)) as gradebook, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        entry = gradebook.find_assignment(assignment)
        if due:
            entry.duedate = parse_due(due)
            gradebook.db.commit()
        for record in records:
            student = record["student_id"]
            lateness = Lateness(record.get("timestamp", ""))
            try:
                submission = gradebook.find_submission(assignment, student)
                notebook = gradebook.find_submission_notebook(assignment, assignment, student)
            except MissingEntry:
                found[student] = lateness
                continue
            if lateness.timestamp:
                submission.timestamp = dt.datetime.fromisoformat(lateness.timestamp)
            gradebook.db.commit()
            notebook.late_submission_penalty = None
            if submission.timestamp is not None and submission.duedate is not None:
                lateness.seconds_late = submission.total_seconds_late
                lateness.late = "yes" if lateness.seconds_late > 0 else "no"
            if record.get("lms_late"):
                lateness.late = "yes"
            if lateness.seconds_late and record["status"] == "graded":
                penalty = assigner.plugin_inst.late_submission_penalty(student, notebook.score, lateness.seconds_late)
                if penalty is not None:
                    notebook.late_submission_penalty = assigner._check_late_penalty(notebook, penalty)
                    lateness.penalty = float(notebook.late_submission_penalty)
            gradebook.db.commit()
            found[student] = lateness
    return found
