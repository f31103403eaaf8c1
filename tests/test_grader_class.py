"""The instructor's command end to end: a class of honest and hostile submissions of every chapter.

``grade_class`` (what ``python -m autograder grade`` runs) grades, with two parallel jobs, the
zoo of tests/grader_zoo.py for chapter 03 and, for each other released chapter this run takes,
its reference, its stub, a crash and a forger: the representative chapters of
tests/chapter_matrix.py (why each, there), or every chapter with ``COURSE_FULL_MATRIX=1``. (Every
chapter's reference earns every point and its stub none through the same runner, without the
sandbox, on every run: test_both_ways.py.) The tests then read what an instructor would:
grades.csv, details.csv, the feedback pages, nbgrader's gradebook, and the machine itself
(no process, file or mount left behind). Needs root, like the sandbox.
"""

from __future__ import annotations

import csv
import html
import json
import os
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from chapter_matrix import params as representative_params
from chapter_matrix import runs
from grader_zoo import BASE, EXPECTED, _bytes, chapter_cases, released_assignments, stub, zoo

from autograder import course
from autograder.grading import batch, gradebook
from autograder.grading.jail import UID_BASE
from autograder.grading.runner import Options
from autograder.grading.spares import SparePool
from autograder.grading.template import load_template

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="the grader's sandbox needs root (unshare, mount, setpriv): these tests run as root only",
)
JOBS = 2
OPTIONS = dict(timeout=120, call_timeout=10)  # generous: CI machines are slow and shared
HIDDEN = re.compile(r"### BEGIN (HIDDEN TESTS|SOLUTION)(.*?)### END \1", re.DOTALL)


def _rows(out: Path, name: str) -> list[dict]:
    with open(out / name, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _graded(tmp_path_factory, work, pool, assignment, cases, **options):
    folder = tmp_path_factory.mktemp(f"submissions-{assignment}")
    for student, data in cases.items():
        (folder / student).mkdir()
        (folder / student / f"{assignment}.ipynb").write_bytes(data)
    out = tmp_path_factory.mktemp(f"out-{assignment}")
    started = time.monotonic()
    code = batch.grade_class(assignment, folder, out, JOBS, Options(**{**OPTIONS, **options}), work, True, pool)
    return {
        "code": code,
        "out": out,
        "seconds": time.monotonic() - started,
        "rows": {r["student_id"]: r for r in _rows(out, "grades.csv")},
        "details": _rows(out, "details.csv"),
    }


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("grader-work")


@pytest.fixture(scope="session")
def pool():
    with batch.worker_pool(JOBS) as workers:  # shared by the runs below: workers start once
        yield workers


@pytest.fixture(scope="session")
def zoo_run(tmp_path_factory, work, pool):
    return _graded(tmp_path_factory, work, pool, BASE, zoo())


OTHER_CHAPTERS = [a for a in released_assignments() if a != BASE]


@pytest.fixture(scope="session")
def chapter_runs(tmp_path_factory, work, pool):
    """The four submissions of every other chapter this run takes (tests/chapter_matrix.py); the chapters
    are graded concurrently over the shared workers."""
    from concurrent.futures import ThreadPoolExecutor

    chapters = [a for a in OTHER_CHAPTERS if runs(a)]
    for assignment in chapters:  # the gradebook learns the assignments one at a time
        gradebook.ensure_assignment(work, assignment)
    with ThreadPoolExecutor(len(chapters) or 1) as threads:
        graded = {
            a: threads.submit(_graded, tmp_path_factory, work, pool, a, chapter_cases(a), call_timeout=60)
            for a in chapters
        }
        return {a: future.result() for a, future in graded.items()}


def _cells(run, student):
    return {d["grade_id"]: d for d in run["details"] if d["student_id"] == student}


def _flags(row) -> set[str]:
    return set(filter(None, row["flags"].split(";")))


# ---- rows ---------------------------------------------------------------------------------------------


def test_every_submission_gets_its_row(zoo_run):
    assert zoo_run["code"] == 0
    assert set(zoo_run["rows"]) == set(EXPECTED)
    wrong = []
    for student, (status, score, flags) in EXPECTED.items():
        row = zoo_run["rows"][student]
        if row["status"] != status or (score is not None and float(row["score"]) != score) or not flags <= _flags(row):
            wrong.append(
                f"{student}: got {row['status']} {row['score']} {row['flags']}, expected {status} {score} {flags}"
            )
        if (row["status"] == "graded") != (row["score"] != ""):
            wrong.append(f"{student}: {row['status']} with score {row['score']!r} (a score exactly when graded)")
    assert not wrong, "\n".join(wrong)
    template = load_template(BASE)
    for row in zoo_run["rows"].values():
        assert row["assignment"] == BASE and float(row["max_score"]) == template.max_score
    assert len(zoo_run["details"]) == len(EXPECTED) * (len(template.tests) + len(template.written))


def test_points_before_a_crash_are_kept(zoo_run):
    """The tests that passed before the kernel died or hung keep their points; the rest score 0."""
    for student in ("exits", "segfault", "loop_ignores_interrupt"):
        cells = _cells(zoo_run, student)
        reason = "timeout" if student.startswith("loop") else "kernel_died"
        for grade_id, cell in cells.items():
            if grade_id.startswith(("attention_scores", "softmax")):
                assert cell["reason"] == "passed", (student, grade_id, cell)
            elif not grade_id.startswith("written"):
                assert cell["reason"] == reason and cell["score"] == "0", (student, grade_id, cell)


def test_a_call_that_never_returns_fails_only_its_test(zoo_run):
    cells = _cells(zoo_run, "loop_in_function")
    assert cells["attention_scores_visible"]["reason"] == "timeout"
    assert all(c["reason"] == "passed" for g, c in cells.items() if g.endswith("_hidden") or g.startswith("batched"))


def test_forged_passes_do_not_count(zoo_run):
    for student in ("forger", "claims_equality", "edited_tests"):
        assert float(zoo_run["rows"][student]["score"]) == 0
        cells = _cells(zoo_run, student)
        assert cells["attention_scores_visible"]["reason"] != "passed"
        assert cells["attention_scores_hidden"]["reason"] != "passed"


def test_warnings_do_not_cost_a_correct_answer_its_points(zoo_run):
    cells = _cells(zoo_run, "noisy_but_right")
    assert cells["attention_scores_visible"]["reason"] == "passed"
    assert cells["attention_scores_hidden"]["reason"] == "passed"


def test_the_untouched_stub_fails_loudly(zoo_run):
    for grade_id, cell in _cells(zoo_run, "honest_stub").items():
        if not grade_id.startswith("written"):
            assert cell["score"] == "0" and "NotImplementedError" in cell["reason"], (grade_id, cell)


@pytest.mark.parametrize("chapter", representative_params(OTHER_CHAPTERS))
def test_every_chapter_both_ways_and_hostile(chapter_runs, chapter):
    """As `python -m autograder check`, but through the sandbox and the call protocol: the reference passes
    every test cell of the chapter, the untouched stub none (each with NotImplementedError); a crash after
    the first hidden test keeps the points before it, a forger that crashes earns nothing."""
    run, template = chapter_runs[chapter], load_template(chapter)
    reference, stub_cells = _cells(run, f"{chapter}-reference"), _cells(run, f"{chapter}-stub")
    first = min((t for t in template.tests.values() if t.hidden), key=lambda t: t.index)
    assert run["code"] == 0, chapter
    for grade_id in template.tests:
        assert stub_cells[grade_id]["score"] == "0", (chapter, grade_id, stub_cells[grade_id])
        assert reference[grade_id]["reason"] == "passed", (chapter, grade_id, reference[grade_id])
        assert "NotImplementedError" in stub_cells[grade_id]["reason"], (chapter, grade_id, stub_cells[grade_id])
    kept = sum(float(reference[g]["score"]) for g, t in template.tests.items() if t.index <= first.index)
    rows = run["rows"]
    crash, forger = rows[f"{chapter}-crash"], rows[f"{chapter}-forger"]
    assert float(crash["score"]) == kept and "kernel_died" in _flags(crash), (chapter, crash)
    assert float(forger["score"]) == 0 and {"suspicious_code", "kernel_died"} <= _flags(forger), (chapter, forger)
    assert not _flags(rows[f"{chapter}-stub"]) - {"timeout"}, rows[f"{chapter}-stub"]
    assert not _flags(rows[f"{chapter}-reference"]) - {"timeout"}, rows[f"{chapter}-reference"]


# ---- safety -------------------------------------------------------------------------------------------


def test_escape_attempts_fail(zoo_run, work):
    nb = nbformat.read(work / "autograded" / "escape" / BASE / f"{BASE}.ipynb", as_version=4)
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "blocked" in printed and "uid 6200" in printed
    for word in ("READ", "WROTE", "CONNECTED"):
        assert word not in printed, printed
    assert "roots" in printed and str(course.ROOT) in printed  # it looked where the course really is
    for path in (course.GRADING_WORK / "pwned", course.ROOT / "pwned", course.ROOT / ".venv" / "pwned",
                 "/etc/pwned", "/usr/pwned", "/root/pwned", "/tmp/inside-scratch"):  # fmt: skip
        assert not Path(path).exists(), path


def test_nothing_is_left_running_or_mounted(zoo_run, chapter_runs):
    # a spare sandbox that no submission took is closed when its worker idles (once it has started)
    for _ in range(int(60 / SparePool.IDLE_S)):
        if all(subprocess.run(["pgrep", "-u", str(UID_BASE + s)], capture_output=True).returncode for s in range(JOBS)):
            break
        time.sleep(SparePool.IDLE_S)
    for slot in range(JOBS):
        assert subprocess.run(["pgrep", "-u", str(UID_BASE + slot)], capture_output=True).returncode == 1
    mounts = Path("/proc/mounts").read_text()
    assert "/tmp/ag-" not in mounts
    for controller in ("pids", "memory", "cpu", ""):
        assert not list(Path("/sys/fs/cgroup", controller).glob("autograder-*"))


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.urls = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.urls += [value for name, value in attrs if name in ("src", "href", "action", "data") and value]


def _secrets(assignment: str) -> set[str]:
    """Lines of the hidden tests that students never see (12 characters or more; lines that also
    appear in a solution are left out: a submission built from the solution may show its own code)."""
    nb = nbformat.read(course.solution_notebook(assignment), as_version=4)
    released = nbformat.read(course.student_notebook(assignment), as_version=4)
    public = {" ".join(line.split()) for cell in released.cells for line in cell.source.splitlines()}
    hidden, solutions = set(), set()
    for cell in nb.cells:
        for kind, body in HIDDEN.findall(cell.source):
            lines = {" ".join(line.split()) for line in body.splitlines()}
            (hidden if kind == "HIDDEN TESTS" else solutions).update(lines)
    secrets = {line for line in hidden - public - solutions if len(line) >= 12}
    return {line for line in secrets if not any(line in shown for shown in public)}


def test_feedback_is_self_contained_and_hides_hidden_tests(zoo_run, chapter_runs):
    for assignment, run in [(BASE, zoo_run), *chapter_runs.items()]:
        secrets = _secrets(assignment)
        assert secrets
        for student in run["rows"]:
            page = run["out"] / "feedback" / student / f"{assignment}.html"
            text = page.read_text(encoding="utf-8")
            parser = _Tags()
            parser.feed(text)
            assert not {"script", "link", "img", "iframe", "object"} & set(parser.tags), student
            assert not parser.urls and "Content-Security-Policy" in text
            readable = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())
            leaked = [secret for secret in secrets if secret in readable]
            assert not leaked, f"{assignment}/{student} feedback shows hidden lines: {leaked[:3]}"
        csv_text = (run["out"] / "details.csv").read_text()
        assert not [secret for secret in secrets if secret in " ".join(csv_text.split())]


def test_the_gradebook_agrees(zoo_run, work):
    from nbgrader.api import Gradebook

    with Gradebook(gradebook.db_url(work)) as gb:
        for student, row in zoo_run["rows"].items():
            submission = gb.find_submission(BASE, student)
            if row["status"] == "graded":
                assert submission.code_score == float(row["score"]), student
                assert (work / "autograded" / student / BASE / f"{BASE}.ipynb").exists()
            else:  # no automatic score: formgrader lists it for a person
                assert submission.needs_manual_grade and row["score"] == "", student


# ---- layouts, re-runs, manual grades, the command line ------------------------------------------------------


def test_zip_rerun_one_more_student_and_manual_grades(tmp_path, work, pool):
    import zipfile

    from nbgrader.api import Gradebook

    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"Homework_ann_attempt_2024-05-01-10-00-00_{BASE}.ipynb", _bytes(stub()))
        z.writestr(f"Homework_ben_attempt_2024-05-01-10-00-00_{BASE}.ipynb", b"{ not json")
    out = tmp_path / "out"
    assert batch.grade_class(BASE, archive, out, 1, Options(**OPTIONS), work, True, pool) == 0
    first = _rows(out, "grades.csv")
    assert [(r["student_id"], r["status"], r["score"]) for r in first] == [
        ("ann", "graded", "0"),
        ("ben", "invalid_json", ""),
    ]

    with Gradebook(gradebook.db_url(work)) as gb:  # a grader marks a written answer in formgrader
        written = next(iter(load_template(BASE).written))  # the chapter's first written question
        grade = gb.find_grade(written, BASE, BASE, "ann")
        grade.manual_score = 1.5
        gb.db.commit()
    later = tmp_path / "later"
    later.mkdir()
    (later / "cat.ipynb").write_bytes(b"")  # one more student, graded later into the same OUT
    assert batch.grade_class(BASE, later, out, 1, Options(**OPTIONS), work, True, pool) == 0
    rows = {r["student_id"]: r for r in _rows(out, "grades.csv")}
    assert set(rows) == {"ann", "ben", "cat"}
    assert rows["ann"]["score"] == "1.5" and rows["ben"] == {**first[1]}
    assert "manual" in {d["reason"] for d in _rows(out, "details.csv") if d["student_id"] == "ann"}

    assert batch.grade_class(BASE, archive, out, 1, Options(**OPTIONS), work, True, pool) == 0  # same input again
    again = {r["student_id"]: r for r in _rows(out, "grades.csv")}
    assert again == rows  # same grades; the manual grade survives re-grading


def test_refuses_to_run_without_a_sandbox(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(batch, "sandbox_problem", lambda: "the sandbox needs root")
    assert batch.grade_class(BASE, tmp_path, tmp_path / "out", 1, Options(**OPTIONS), tmp_path, quiet=True) == 2
    assert "error: the sandbox needs root" in capsys.readouterr().err


def test_command_line(tmp_path, work):
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "dee.ipynb").write_bytes(b"")
    (folder / "eve.ipynb").write_bytes(b"\xff\xfe not json")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "autograder", "grade", BASE, str(folder), "--out", str(out), "--jobs", "2",
               "--timeout", "60", "--memory", "2048", "--work", str(work)]  # fmt: skip
    completed = subprocess.run(command, cwd=course.ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "graded 2 submission(s)" in completed.stdout
    assert [r["status"] for r in _rows(out, "grades.csv")] == ["empty_file", "invalid_json"]
    record = json.loads((out / "results" / "dee.json").read_text())
    assert record["status"] == "empty_file"
    bad = subprocess.run([sys.executable, "-m", "autograder", "grade", "99_nothing", str(folder), "--out", str(out)],
                         cwd=course.ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert bad.returncode == 2 and "unknown assignment" in bad.stderr


def test_without_the_sandbox_the_verdicts_still_cannot_be_forged(tmp_path, work, pool):
    """--unsafe-no-sandbox drops the isolation, not the trust boundary: the tests still run in the grader."""
    folder = tmp_path / "submissions"
    (folder / "forger").mkdir(parents=True)
    (folder / "forger" / f"{BASE}.ipynb").write_bytes(zoo()["forger"])
    options = Options(**OPTIONS, unsafe=True)
    assert batch.grade_class(BASE, folder, tmp_path / "out", 1, options, work, True, pool) == 0
    (row,) = _rows(tmp_path / "out", "grades.csv")
    assert (row["status"], row["score"]) == ("graded", "0")
