"""A term with the class grader, as a teaching assistant lives it: failures, lateness, hand grades, resume.

Chapter 03 submissions, sandboxed (root, like the grader). Each test reads what a TA reads:
grades.csv, details.csv, the records, nbgrader's gradebook and ``nbgrader export``, and the machine
after a grading run killed with SIGKILL half-way.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from grader_zoo import BASE, _bytes, reference, stub

from autograder import course
from autograder.grading import batch, gradebook, leftovers, rebuild
from autograder.grading.runner import Options
from autograder.grading.template import load_template

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="the grader's sandbox needs root (unshare, mount, setpriv): these tests run as root only",
)
OPTIONS = dict(timeout=120, call_timeout=10)
NB = f"{BASE}.ipynb"


def _rows(out: Path, name: str = "grades.csv") -> dict:
    with open(out / name, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return {r["student_id"]: r for r in rows} if name == "grades.csv" else rows


def _write(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def _mtimes(out: Path) -> dict[str, int]:
    return {p.stem: p.stat().st_mtime_ns for p in (out / "results").glob("*.json")}


def _export(work: Path, tmp_path: Path) -> dict:
    """What `nbgrader export` says, from the same gradebook."""
    from autograder.nbgrader_course import nbgrader_environment

    target = tmp_path / "export.csv"
    command = [sys.executable, "-m", "nbgrader", "export", "--to", str(target),
               f"--CourseDirectory.db_url=sqlite:///{work / 'gradebook.db'}"]  # fmt: skip
    env = {**nbgrader_environment(), "JUPYTER_CONFIG_PATH": str(course.AUTOGRADER)}
    done = subprocess.run(command, cwd=course.ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(target, newline="") as handle:
        return {r["student_id"]: r for r in csv.DictReader(handle) if r["assignment"] == BASE}


@pytest.fixture(scope="module")
def pool():
    with batch.worker_pool(1) as workers:
        yield workers


@pytest.fixture(scope="module")
def term(tmp_path_factory, pool):
    """One class: ada (the reference, handed in late), bo (the stub, on time), cy (an empty file),
    dee (two notebooks, neither clearly the one), and eve on the roster with nothing handed in."""
    root = tmp_path_factory.mktemp("term")
    stamp = "2024-03-0{} 12:00:00.000000 UTC"
    submitted = _write(root / "submitted", {
        f"ada/{BASE}/{NB}": _bytes(reference()), f"ada/{BASE}/timestamp.txt": stamp.format(3).encode(),
        f"bo/{BASE}/{NB}": _bytes(stub()), f"bo/{BASE}/timestamp.txt": stamp.format(1).encode(),
        f"cy/{BASE}/{NB}": b"", f"dee/{BASE}/a.ipynb": b"{}", f"dee/{BASE}/b.ipynb": b"{}",
    })  # fmt: skip
    work, out = root / "work", root / "out"
    roster = {"ada", "bo", "cy", "eve"}
    code = batch.grade_class(BASE, submitted, out, 1, Options(**OPTIONS), work, True, pool, roster=roster,
                             due="2024-03-02 12:00:00 UTC")  # fmt: skip
    return dict(code=code, submitted=submitted, work=work, out=out, roster=roster, root=root)


def test_a_submission_that_could_not_be_graded_gets_no_score(term):
    rows = _rows(term["out"])
    assert term["code"] == 0
    assert {s: r["status"] for s, r in rows.items()} == {"ada": "graded", "bo": "graded", "cy": "empty_file",
                                                       "dee": "ambiguous"}  # fmt: skip
    total = load_template(BASE).max_score
    assert rows["bo"]["score"] == "0" and float(rows["ada"]["raw_score"]) == _automatic()  # a 0 is a graded 0
    for student in ("cy", "dee"):
        assert rows[student]["score"] == "" and rows[student]["raw_score"] == "", rows[student]
        assert float(rows[student]["max_score"]) == total
        assert {d["score"] for d in _rows(term["out"], "details.csv") if d["student_id"] == student} == {""}
    assert "not_on_roster" in rows["dee"]["flags"] and "not_on_roster" not in rows["ada"]["flags"]
    assert rebuild.missing(list(rows.values()), term["roster"]) == ["eve"]


def test_submission_times_reach_the_gradebook_and_lateness_is_a_column(term):
    from nbgrader.api import Gradebook

    rows = _rows(term["out"])
    assert (rows["ada"]["timestamp"], rows["ada"]["seconds_late"], rows["ada"]["late"]) == (
        "2024-03-03T12:00:00", "86400", "yes")  # fmt: skip
    assert (rows["bo"]["seconds_late"], rows["bo"]["late"]) == ("0", "no")
    assert rows["ada"]["late_penalty"] == "0"  # the course's policy is nbgrader's default: none
    with Gradebook(gradebook.db_url(term["work"])) as gb:
        assert gb.find_submission(BASE, "ada").total_seconds_late == 86400


def test_the_late_policy_is_applied_as_nbgraders_plugin_applies_it(term, monkeypatch, tmp_path):
    """penalty_method = 'zero' (nbgrader's LateSubmissionPlugin): a late submission's score is 0, its raw
    score kept; grades.csv and `nbgrader export` agree."""
    from autograder import nbgrader_course

    real = nbgrader_course.nbgrader_config

    def zero(**sections):
        config = real(**sections)
        config.LateSubmissionPlugin.penalty_method = "zero"
        return config

    monkeypatch.setattr(nbgrader_course, "nbgrader_config", zero)
    rebuild.rebuild(term["out"], term["work"], BASE, term["roster"])
    rows, exported = _rows(term["out"]), _export(term["work"], tmp_path)
    raw = _automatic()
    assert (float(rows["ada"]["raw_score"]), rows["ada"]["late_penalty"], rows["ada"]["score"]) == (raw, _g(raw), "0")
    assert float(exported["ada"]["late_submission_penalty"]) == raw and float(exported["ada"]["score"]) == 0
    monkeypatch.setattr(nbgrader_course, "nbgrader_config", real)
    rebuild.rebuild(term["out"], term["work"], BASE, term["roster"])  # the course's policy again
    assert _rows(term["out"])["ada"]["late_penalty"] == "0"


def _g(value: float) -> str:
    return f"{value:g}"


def _automatic() -> float:
    """The points of the test cells (the written answers wait for a person)."""
    return sum(test.points for test in load_template(BASE).tests.values())


def test_hand_grades_count_and_agree_with_nbgrader_export(term, tmp_path):
    """A written answer graded and a test cell overridden in formgrader's gradebook: the reports,
    rebuilt without regrading anyone, count both, as `nbgrader export` does."""
    from nbgrader.api import Gradebook

    template = load_template(BASE)
    written = next(iter(template.written))
    test_cell = next(iter(template.tests))
    before = _mtimes(term["out"])
    with Gradebook(gradebook.db_url(term["work"])) as gb:
        gb.find_grade(written, BASE, BASE, "ada").manual_score = 1.5
        gb.find_grade(test_cell, BASE, BASE, "bo").manual_score = template.tests[test_cell].points  # an override
        gb.find_grade(test_cell, BASE, BASE, "bo").extra_credit = 0.5
        gb.find_comment(written, BASE, BASE, "ada").manual_comment = "a comment for ada alone"
        gb.db.commit()
    command = [sys.executable, "-m", "autograder", "grade", BASE, str(term["submitted"]), "--out", str(term["out"]),
               "--work", str(term["work"]), "--reports-only", "--roster", "none"]  # fmt: skip
    done = subprocess.run(command, cwd=course.ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _mtimes(term["out"]) == before, "--reports-only regraded someone"
    rows, exported = _rows(term["out"]), _export(term["work"], tmp_path)
    assert float(rows["bo"]["raw_score"]) == template.tests[test_cell].points + 0.5
    details = {(d["student_id"], d["grade_id"]): d for d in _rows(term["out"], "details.csv")}
    overridden = details[("bo", test_cell)]["reason"]
    assert overridden.startswith("manual (automatic: ") and "NotImplementedError" in overridden, overridden
    assert details[("ada", written)]["reason"] == "manual"
    page = (term["out"] / "feedback" / "ada" / f"{BASE}.html").read_text()
    assert "a comment for ada alone" in page
    assert "a comment for ada alone" not in (term["out"] / "feedback" / "bo" / f"{BASE}.html").read_text()
    for student in ("ada", "bo"):
        assert float(rows[student]["raw_score"]) == float(exported[student]["raw_score"]), student
        assert float(rows[student]["score"]) == float(exported[student]["score"]), student


def test_retry_failed_regrades_only_the_failed_ones(term, pool):
    """A submission the grader failed on (status grader_error, here written as the grader would after a
    sandbox that did not start) is skipped on a plain rerun, and regraded with retry_failed alone."""
    out = term["out"]
    record = json.loads((out / "results" / "bo.json").read_text())
    record["status"] = "grader_error"
    (out / "results" / "bo.json").write_text(json.dumps(record))
    before = _mtimes(out)
    run = dict(work=term["work"], quiet=True, pool=pool, roster=term["roster"])
    assert batch.grade_class(BASE, term["submitted"], out, 1, Options(**OPTIONS), **run) == 1  # still failed
    assert _mtimes(out) == before and _rows(out)["bo"]["score"] == ""
    assert batch.grade_class(BASE, term["submitted"], out, 1, Options(**OPTIONS), retry_failed=True, **run) == 0
    after = _mtimes(out)
    changed = sorted(s for s in after if after[s] != before[s])
    assert changed == ["bo", "cy", "dee"], changed  # the failed ones; ada untouched
    assert _rows(out)["bo"]["status"] == "graded"


def test_a_run_killed_half_way_resumes(tmp_path):
    """SIGKILL the grading command while it grades, then start it again: what was finished is kept, the
    rest is graded, nothing of the killed run is left on the machine, and --force regrades everyone."""
    names = [f"s{i}" for i in range(6)]
    folder = _write(
        tmp_path / "in", {f"{n}/{NB}": _bytes(reference() if i % 2 else stub()) for i, n in enumerate(names)}
    )
    out, work = tmp_path / "out", tmp_path / "work"
    command = [sys.executable, "-m", "autograder", "grade", BASE, str(folder), "--out", str(out), "--work", str(work),
               "--roster", "none", "--timeout", "120", "--call-timeout", "10"]  # fmt: skip
    first = subprocess.Popen(command, cwd=course.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 600
    while len(list((out / "results").glob("*.json"))) < 2 and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.2)
    assert first.poll() is None, f"the run ended before it could be killed: {first.stdout.read()[-2000:]}"
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
    kept = _mtimes(out)
    assert 2 <= len(kept) < len(names), kept
    time.sleep(2)  # the killed run's worker notices its parent is gone (within a second)
    dead = [p for p in Path(leftovers.SCRATCH_PARENT).glob(f"{leftovers.PREFIX}*") if not leftovers._alive(p)]
    assert dead, "the killed run left no scratch folder: nothing to check the clean-up on"
    second = subprocess.run(command, cwd=course.ROOT, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"graded {len(names) - len(kept)} submission(s)" in second.stdout, second.stdout
    assert f"skipped {len(kept)} graded already" in second.stdout, second.stdout
    assert all(f"cleaned up after a killed run: removed {p}" in second.stderr for p in dead), second.stderr[-2000:]
    assert {s: m for s, m in _mtimes(out).items() if s in kept} == kept, "a finished record was graded again"
    rows = _rows(out)
    expected = {n: _automatic() if i % 2 else 0.0 for i, n in enumerate(names)}
    assert {s: float(r["score"]) for s, r in rows.items()} == expected
    assert not list((out / "results").glob(".*.part"))
    assert not [p for p in dead if p.exists()], "the killed run's folder is still there"
    assert not leftovers._sandbox_processes(), "a sandbox process outlived both runs"
    forced = subprocess.run([*command, "--force"], cwd=course.ROOT, capture_output=True, text=True, timeout=900)
    assert forced.returncode == 0 and f"graded {len(names)} submission(s)" in forced.stdout, forced.stdout
    assert all(_mtimes(out)[s] != kept[s] for s in kept)
