"""What the instructor uploads and what each student reads: two CSV files and feedback pages.

- ``OUT/grades.csv``: one row per student (student_id, assignment, score, max_score, status,
  flags, timestamp, seconds_late, late, late_penalty, raw_score). The scores count every grade a
  person entered in formgrader (written answers, overridden test cells, extra credit) as
  ``nbgrader export`` does, and ``score`` is ``raw_score`` less the late penalty (lateness.py).
  A submission that could not be graded has no score: an empty cell, and its status says why.
- ``OUT/details.csv``: one row per student and graded cell (student_id, grade_id, score,
  max_score, reason); empty scores likewise.
- ``OUT/feedback/<student_id>/<assignment>.html``: one self-contained page (inline CSS, a
  Content-Security-Policy that forbids loading anything, no script, no math renderer) with
  each test's result and message. The messages were filtered of hidden-test lines when the
  tests ran (runner.py); a hidden test's source, output and the student-side traceback of
  its calls are never shown.

Every row comes from the per-student records kept in ``OUT/results/`` (so grading one more
student later adds a row and leaves the others as they were).
"""

from __future__ import annotations

import csv
import html
from dataclasses import asdict
from pathlib import Path

FLAG_TEXT = {
    "timeout": "your notebook ran past its time limit, or a call to your code did",
    "kernel_died": "the Python process running your notebook stopped (a crash, os._exit, a signal or the memory limit)",
    "memory": "your code ran out of the memory it is allowed",
    "tests_restored": "test cells were missing or edited; the original tests were used",
    "cells_missing": "some answer cells could not be found in your notebook",
    "metadata_missing": "some cells had lost their grading metadata and were recognised by their content",
    "duplicate_cells": "some cells appeared twice; only the first copy counted",
    "suspicious_code": "your notebook contains code that a grader will look at",
    "wrong_assignment": "this notebook belongs to another assignment",
    "kernel_name": "the notebook asked for another kernel; it was run with the course's Python kernel",
    "output_truncated": "your notebook printed too much; the rest of the output was dropped",
    "non_utf8": "the file was not saved as UTF-8",
    "renamed": "the notebook had another name than expected",
    "multiple_notebooks": "several notebooks were handed in",
    "invalid_cells": "some cells of the notebook were malformed and skipped",
}
STATUS_TEXT = {
    "graded": "graded",
    "empty_file": "the file is empty",
    "invalid_json": "the file is not valid JSON: it cannot be opened as a notebook",
    "invalid_notebook": "the file is JSON but not a notebook",
    "wrong_assignment": "this is the notebook of another assignment",
    "no_notebook": "no notebook was found",
    "ambiguous": "several notebooks were handed in and none is clearly the one to grade",
    "too_large": "the file is too large",
    "grader_error": "the grader failed on this submission (not your fault): ask your instructor",
}
STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.1rem; margin: 0 0 .4rem; }
.total { font-size: 1.3rem; font-weight: bold; }
table { border-collapse: collapse; margin: 1rem 0; } td, th { padding: .25rem .75rem; border-bottom: 1px solid #ddd; }
section { border-left: 6px solid #999; padding: .5rem 1rem; margin: 1rem 0; background: #fafafa; }
section.pass { border-color: #2a7; } section.fail { border-color: #c33; } section.manual { border-color: #47c; }
pre { white-space: pre-wrap; background: #f0f0f0; padding: .5rem; overflow-x: auto; }
.note { color: #555; }
"""


def _num(value: float) -> str:
    return f"{value:g}"


def record_of(result) -> dict:
    """A grading result as the record kept in OUT/results/ (without the autograded notebook)."""
    record = asdict(result)
    record.pop("notebook", None)
    return record


def _with_manual(record: dict, grades: dict[str, tuple]) -> list[dict]:
    """The record's cells with the grades a person entered (gradebook.hand_grades), counted as
    nbgrader's ``Grade.score`` counts them: the manual score over the automatic one, plus extra credit."""
    cells = []
    for cell in record["cells"]:
        cell = dict(cell)
        manual, extra = grades.get(cell["grade_id"], (None, None))
        if manual is not None:
            cell["score"] = manual
            cell["reason"] = "manual" if cell["kind"] == "written" else f"manual (automatic: {cell['reason']})"
        if extra:
            cell["score"] += extra
            cell["reason"] += f" (extra credit {_num(extra)})"
        cells.append(cell)
    return cells


def _score(record: dict, value: float) -> str:
    """A score for the CSVs: empty when the submission could not be graded (never a silent 0)."""
    return _num(value) if record["status"] == "graded" else ""


GRADES_COLUMNS = ["student_id", "assignment", "score", "max_score", "status", "flags", "timestamp", "seconds_late",
                  "late", "late_penalty", "raw_score"]  # fmt: skip


def write_csvs(out: Path, records: list[dict], manual: dict[str, dict], lateness: dict | None = None) -> None:
    out, lateness = Path(out), lateness or {}
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(GRADES_COLUMNS)
        for record in records:
            cells = _with_manual(record, manual.get(record["student_id"], {}))
            raw = sum(c["score"] for c in cells)
            late = lateness.get(record["student_id"])
            penalty = late.penalty if late else 0.0
            seconds = "" if late is None or late.seconds_late is None else _num(late.seconds_late)
            writer.writerow([record["student_id"], record["assignment"], _score(record, max(0.0, raw - penalty)),
                             _num(sum(c["max_score"] for c in cells)), record["status"], ";".join(record["flags"]),
                             record.get("timestamp", ""), seconds, late.late if late else "",
                             _score(record, penalty), _score(record, raw)])  # fmt: skip
    with open(out / "details.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student_id", "grade_id", "score", "max_score", "reason"])
        for record in records:
            for cell in _with_manual(record, manual.get(record["student_id"], {})):
                writer.writerow([record["student_id"], cell["grade_id"], _score(record, cell["score"]),
                                 _num(cell["max_score"]), cell["reason"]])  # fmt: skip


def feedback_html(record: dict, manual: dict, released: dict[str, str], late=None, notes=None) -> str:
    """``notes``: cell name -> the comment a person wrote in formgrader (gradebook.comments)."""
    """The feedback page of one student. ``released``: grade_id -> the test's source as students see it."""
    e = html.escape
    cells = _with_manual(record, manual)
    score, total = sum(c["score"] for c in cells), sum(c["max_score"] for c in cells)
    title = f"{record['assignment']}: feedback for {record['student_id']}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>{e(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{e(title)}</h1>",
    ]
    if record["status"] != "graded":
        parts.append(f'<p class="total">Score: not graded (out of {_num(total)})</p>')
    elif late is not None and late.penalty:
        parts.append(f'<p class="total">Score: {_num(max(0.0, score - late.penalty))} / {_num(total)}</p>'
                     f"<p>{_num(score)} points, less {_num(late.penalty)} for handing in late.</p>")  # fmt: skip
    else:
        parts.append(f'<p class="total">Score: {_num(score)} / {_num(total)}</p>')
    if record["status"] != "graded":
        parts.append(f"<p><strong>Not graded:</strong> {e(STATUS_TEXT.get(record['status'], record['status']))}.</p>")
    if record["flags"]:
        parts.append("<p>Notes from the grader:</p><ul>")
        parts += [f"<li>{e(FLAG_TEXT.get(flag, flag))}</li>" for flag in record["flags"]]
        parts.append("</ul>")
    notes = notes or {}
    shown = {cell["grade_id"] for cell in cells}
    if others := [(name, text) for name, text in sorted(notes.items()) if name not in shown]:
        parts.append("<h2>Comments on your answers</h2><ul>")
        parts += [f"<li><strong>{e(name)}</strong>: {e(text)}</li>" for name, text in others]
        parts.append("</ul>")
    parts.append("<table><tr><th>cell</th><th>points</th><th>result</th></tr>")
    for cell in cells:
        parts.append(f"<tr><td>{e(cell['grade_id'])}</td><td>{_num(cell['score'])} / {_num(cell['max_score'])}</td>"
                     f"<td>{e(_result_word(cell))}</td></tr>")  # fmt: skip
    parts.append("</table>")
    for cell in cells:
        kind = "manual" if cell["kind"] == "written" else ("pass" if cell["reason"] == "passed" else "fail")
        label = "hidden tests" if cell.get("hidden") else ("tests" if cell["kind"] == "test" else "written answer")
        parts.append(f'<section class="{kind}"><h2>{e(cell["grade_id"])} ({label}): '
                     f"{_num(cell['score'])} / {_num(cell['max_score'])}</h2>")  # fmt: skip
        if cell["kind"] == "written":
            parts.append(f'<p class="note">{"graded by hand" if cell["reason"] == "manual" else "not graded yet"}</p>')
        elif cell["reason"] == "passed":
            parts.append("<p>All checks passed.</p>")
        else:
            parts.append(f"<pre>{e(cell.get('message') or cell['reason'])}</pre>")
        if cell["grade_id"] in notes:
            parts.append(f"<p><strong>Comment:</strong> {e(notes[cell['grade_id']])}</p>")
        if cell["kind"] == "test" and not cell.get("hidden"):
            if cell.get("output"):
                parts.append(f'<p class="note">Output:</p><pre>{e(cell["output"])}</pre>')
            if cell["grade_id"] in released:
                parts.append(
                    f"<details><summary>the test</summary><pre>{e(released[cell['grade_id']])}</pre></details>"
                )
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _result_word(cell: dict) -> str:
    if cell["kind"] == "written":
        return "graded by hand" if cell["reason"] == "manual" else "to be graded by hand"
    return "passed" if cell["reason"] == "passed" else cell["reason"].split(":")[0][:60] or "failed"


def write_feedback(out: Path, records: list[dict], manual: dict[str, dict], released: dict, lateness=None,
                   notes=None) -> None:  # fmt: skip
    for record in records:
        folder = Path(out) / "feedback" / record["student_id"]
        folder.mkdir(parents=True, exist_ok=True)
        late = (lateness or {}).get(record["student_id"])
        page = feedback_html(record, manual.get(record["student_id"], {}), released, late,
                             (notes or {}).get(record["student_id"]))  # fmt: skip
        (folder / f"{record['assignment']}.html").write_text(page, encoding="utf-8")
