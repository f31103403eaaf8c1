"""The grader's feedback back to the students (release.py), through nbgrader's own exchange code.

A student submits through nbgrader's exchange (a folder here, as on the hub), the instructor
collects; the class grader's collect reads the submission (its time and secret), the grader's
page goes to the course's feedback folder, nbgrader's ``release_feedback`` publishes it and the
student's ``fetch_feedback`` finds it: the student gets the grader's page, not nbgrader's. No
kernel runs (the record is written by hand); the whole cycle on a hub is tests/test_hub_end_to_end.py.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from grader_zoo import BASE, _bytes, stub
from traitlets.config import Config

from autograder.grading import release
from autograder.grading.collect import collect

PAGE = b"<!DOCTYPE html><html><body><p>the class grader's page for you</p></body></html>"


def _config(tmp_path: Path) -> Config:
    config = Config()
    config.CourseDirectory.course_id = "course"
    config.CourseDirectory.root = str(tmp_path / "work")  # the grader's WORK: submitted/, feedback/
    config.CourseDirectory.assignment_id = BASE
    config.CourseDirectory.submitted_directory = "submitted"
    config.CourseDirectory.feedback_directory = "feedback"
    config.Exchange.root = str(tmp_path / "exchange")
    config.Exchange.cache = str(tmp_path / "cache")
    config.Exchange.assignment_dir = str(tmp_path / "home")
    config.Exchange.path_includes_course = False
    return config


def _run(kind, config):
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory

    exchange = kind(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config), config=config)
    exchange.start()
    return exchange


def test_feedback_goes_back_through_nbgraders_exchange(tmp_path, monkeypatch):
    from nbgrader.exchange.default import (
        ExchangeCollect,
        ExchangeFetchFeedback,
        ExchangeReleaseFeedback,
        ExchangeSubmit,
    )
    from nbgrader.utils import get_username

    from autograder.nbgrader_course import venv_on_path

    venv_on_path()  # (nbgrader's collect makes the gradebook with alembic)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = _config(tmp_path)
    (tmp_path / "work").mkdir()
    for folder in ("outbound/" + BASE, "inbound", "feedback"):
        (tmp_path / "exchange" / "course" / folder).mkdir(parents=True)
    (tmp_path / "exchange" / "course" / "outbound" / BASE / f"{BASE}.ipynb").write_bytes(_bytes(stub()))
    (tmp_path / "home" / BASE).mkdir(parents=True)
    (tmp_path / "home" / BASE / f"{BASE}.ipynb").write_bytes(_bytes(stub()))
    _run(ExchangeSubmit, config)
    _run(ExchangeCollect, config)

    student = get_username()
    (found,) = collect(tmp_path / "work" / "submitted", BASE)
    assert found.student_id == student and found.secret and found.timestamp
    out = tmp_path / "out"
    (out / "feedback" / student).mkdir(parents=True)
    (out / "feedback" / student / f"{BASE}.html").write_bytes(PAGE)
    record = dict(student_id=student, assignment=BASE, status="graded", source=found.source,
                  timestamp=found.timestamp, secret=found.secret)  # fmt: skip
    assert release.course_feedback(out, tmp_path / "work", BASE, [record]) == [student]

    _run(ExchangeReleaseFeedback, config)
    fetched = _run(ExchangeFetchFeedback, config)
    assert len(fetched.feedback_files) == 1, fetched.feedback_files
    pages = list((tmp_path / "home" / BASE / "feedback").rglob("*.html"))
    assert [p.read_bytes() for p in pages] == [PAGE]


def test_one_zip_a_student_for_a_learning_platform(tmp_path):
    for student in ("ada", "bo"):
        (tmp_path / "feedback" / student).mkdir(parents=True)
        (tmp_path / "feedback" / student / f"{BASE}.html").write_text(f"page of {student}")
    records = [dict(student_id=s, assignment=BASE) for s in ("ada", "bo")]
    folder = release.pack(tmp_path, BASE, records)
    first = (folder / "ada.zip").read_bytes()
    with zipfile.ZipFile(folder / "ada.zip") as archive:
        assert archive.namelist() == [f"{BASE}-feedback.html"]
        assert archive.read(f"{BASE}-feedback.html") == b"page of ada"
    release.pack(tmp_path, BASE, records)
    assert (folder / "ada.zip").read_bytes() == first  # a rerun writes the same bytes
    assert sorted(os.listdir(folder)) == ["ada.zip", "bo.zip"]
