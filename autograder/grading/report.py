"""What the instructor uploads and what each student reads: two CSV files and feedback pages.

- ``OUT/grades.csv``: one row per student (student_id, assignment, score, max_score, status,
  flags); the score counts the manual grades entered in formgrader for written answers.
- ``OUT/details.csv``: one row per student and graded cell (student_id, grade_id, score,
  max_score, reason).
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
import json
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


def load_records(out: Path, assignment: str) -> list[dict]:
    """Every student's record of this assignment kept in OUT/results/."""
    records = []
    for path in sorted((Path(out) / "results").glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("assignment") == assignment:
            records.append(record)
    return sorted(records, key=lambda r: r["student_id"])


def save_record(out: Path, result) -> None:
    folder = Path(out) / "results"
    folder.mkdir(parents=True, exist_ok=True)
    record = asdict(result)
    record.pop("notebook", None)
    (folder / f"{result.student_id}.json").write_text(json.dumps(record, indent=1), encoding="utf-8")


def _with_manual(record: dict, manual: dict[str, float]) -> list[dict]:
    """The record's cells, with the manual scores of written answers filled in."""
    cells = []
    for cell in record["cells"]:
        cell = dict(cell)
        if cell["kind"] == "written" and cell["grade_id"] in manual:
            cell["score"], cell["reason"] = manual[cell["grade_id"]], "manual"
        cells.append(cell)
    return cells


def write_csvs(out: Path, records: list[dict], manual: dict[str, dict[str, float]]) -> None:
    out = Path(out)
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student_id", "assignment", "score", "max_score", "status", "flags"])
        for record in records:
            cells = _with_manual(record, manual.get(record["student_id"], {}))
            writer.writerow([record["student_id"], record["assignment"], _num(sum(c["score"] for c in cells)),
                             _num(sum(c["max_score"] for c in cells)), record["status"],
                             ";".join(record["flags"])])  # fmt: skip
    with open(out / "details.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student_id", "grade_id", "score", "max_score", "reason"])
        for record in records:
            for cell in _with_manual(record, manual.get(record["student_id"], {})):
                writer.writerow([record["student_id"], cell["grade_id"], _num(cell["score"]), _num(cell["max_score"]),
                                 cell["reason"]])  # fmt: skip


def feedback_html(record: dict, manual: dict[str, float], released: dict[str, str]) -> str:
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
        f'<p class="total">Score: {_num(score)} / {_num(total)}</p>',
    ]
    if record["status"] != "graded":
        parts.append(f"<p><strong>Not graded:</strong> {e(STATUS_TEXT.get(record['status'], record['status']))}.</p>")
    if record["flags"]:
        parts.append("<p>Notes from the grader:</p><ul>")
        parts += [f"<li>{e(FLAG_TEXT.get(flag, flag))}</li>" for flag in record["flags"]]
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


def write_feedback(out: Path, records: list[dict], manual: dict[str, dict[str, float]], released: dict) -> None:
    for record in records:
        folder = Path(out) / "feedback" / record["student_id"]
        folder.mkdir(parents=True, exist_ok=True)
        page = feedback_html(record, manual.get(record["student_id"], {}), released)
        (folder / f"{record['assignment']}.html").write_text(page, encoding="utf-8")
