"""Who handed in what: nbgrader's layouts, the learning platforms' file names, receipts, the roster.

The file names are the platforms' documented download formats (Canvas "Download Submissions",
Moodle "Download all submissions", Blackboard "Download Assignment"), written by hand here, not
taken from the code: each case says which student a file belongs to and when it was handed in.
No kernel runs here.
"""

from __future__ import annotations

import zipfile

from grader_zoo import BASE, _bytes, reference, stub

from autograder.grading import ids
from autograder.grading.collect import collect

NB = f"{BASE}.ipynb"
RECEIPT = b"Name: ...\nDate Submitted: ...\nSubmission Field: There is no student submission text data."


def _found(path, **kwargs):
    return {s.student_id: s for s in collect(path, BASE, **kwargs)}


def _write(root, files: dict[str, bytes]):
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def test_nbgraders_layouts_for_one_student_give_that_student(tmp_path):
    """Regrading one late student from nbgrader's own folders: late/ada/<assignment>/, or the folder
    submitted/ada, or submitted/ada/<assignment> itself."""
    stamp = b"2024-03-01 17:30:00.000000 UTC"
    _write(tmp_path / "late", {f"ada/{BASE}/{NB}": _bytes(stub()), f"ada/{BASE}/timestamp.txt": stamp})
    _write(tmp_path / "submitted", {f"bo/{BASE}/{NB}": _bytes(reference()), f"bo/{BASE}/timestamp.txt": stamp})
    for path, student in [
        (tmp_path / "late", "ada"),
        (tmp_path / "late" / "ada", "ada"),
        (tmp_path / "submitted" / "bo", "bo"),
        (tmp_path / "submitted" / "bo" / BASE, "bo"),
    ]:
        found = _found(path)
        assert list(found) == [student], f"{path.relative_to(tmp_path)}: {list(found)}"
        assert found[student].status == "graded" and "renamed" not in found[student].flags
        assert found[student].timestamp == "2024-03-01T17:30:00", found[student].timestamp


def test_the_exchanges_timestamp_in_a_zone_is_kept_in_utc(tmp_path):
    """As nbgrader reads it (nbgrader.utils.parse_utc): Paris is one hour ahead of UTC in March."""
    stamp = b"2024-03-01 18:30:00.000000 Europe/Paris"
    _write(tmp_path, {f"ada/{BASE}/{NB}": _bytes(stub()), f"ada/{BASE}/timestamp.txt": stamp})
    assert _found(tmp_path)["ada"].timestamp == "2024-03-01T17:30:00"


def test_canvas_download(tmp_path):
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"lovelaceada_12345_67890_{NB}", _bytes(reference()))
        z.writestr(f"turingalan_LATE_23456_78901_{BASE}-1.ipynb", _bytes(stub()))  # late, and a resubmission
        z.writestr("hopper_34567_89012_answers.ipynb", _bytes(stub()))
        z.writestr("readme.txt", b"Canvas does not write this, a TA might")
    found = _found(archive)
    assert set(found) == {"lovelaceada", "turingalan", "hopper"}
    assert found["turingalan"].lms_late and not found["lovelaceada"].lms_late
    assert "renamed" not in found["turingalan"].flags  # "-1" is Canvas's, not the student's
    assert "renamed" in found["hopper"].flags
    assert set(_found(archive, id_from="number")) == {"12345", "23456", "34567"}


def test_moodle_download(tmp_path):
    archive = tmp_path / "moodle.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"Ada Lovelace_12345_assignsubmission_file_/{NB}", _bytes(reference()))
        z.writestr("Alan Turing_23456_assignsubmission_file_/homework 3.ipynb", _bytes(stub()))
        z.writestr("Alan Turing_23456_assignsubmission_onlinetext_/onlinetext.html", b"<p>see notebook</p>")
        z.writestr("Grace_Hopper_34567_assignsubmission_onlinetext_/onlinetext.html", b"<p>forgot it</p>")
    found = _found(archive)
    assert set(found) == {"Ada_Lovelace", "Alan_Turing", "Grace_Hopper"}
    assert found["Ada_Lovelace"].status == "graded" and "multiple_notebooks" not in found["Alan_Turing"].flags
    assert found["Grace_Hopper"].status == "no_notebook"  # a student who handed in text only
    assert set(_found(archive, id_from="number")) == {"12345", "23456", "34567"}
    # a download holding one student's folder only is still that student (not a wrapping folder)
    single = tmp_path / "one.zip"
    with zipfile.ZipFile(single, "w") as z:
        z.writestr(f"Ada Lovelace_12345_assignsubmission_file_/{NB}", _bytes(reference()))
        z.writestr("Ada Lovelace_12345_assignsubmission_file_/scratch.ipynb", b"{}")
    assert list(_found(single)) == ["Ada_Lovelace"]


def test_blackboard_download_with_receipts(tmp_path):
    archive = tmp_path / "gradebook.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for student, attempt in (("ada", "2024-01-02-09-00-00"), ("bo", "2024-01-01-10-00-00")):
            prefix = f"Homework 3_{student}_attempt_{attempt}"
            z.writestr(f"{prefix}_{NB}", _bytes(stub()))
            z.writestr(f"{prefix}.txt", RECEIPT)
        z.writestr("Homework 3_cy_attempt_2024-01-03-08-00-00.txt", b"Comments: my notebook would not upload")
    found = _found(archive)
    assert set(found) == {"ada", "bo", "cy"}, "a receipt made a student of its own"
    assert found["ada"].timestamp == "2024-01-02T09:00:00" and found["ada"].status == "graded"
    assert found["cy"].status == "no_notebook"  # a receipt alone: the student tried, nothing to grade


def test_files_that_are_not_notebooks_never_become_students(tmp_path):
    _write(tmp_path, {"ada.ipynb": _bytes(stub()), "notes.txt": b"x", "grades.csv": b"a,b", "bo.ipynb": b"{}"})
    assert set(_found(tmp_path)) == {"ada", "bo"}


def test_the_platform_can_be_named_or_switched_off(tmp_path):
    _write(tmp_path, {f"lovelaceada_12345_67890_{NB}": _bytes(stub())})
    assert list(_found(tmp_path, lms="canvas")) == ["lovelaceada"]
    assert list(_found(tmp_path, lms="none")) == [f"lovelaceada_12345_67890_{BASE}"]


def test_rosters(tmp_path):
    plain = tmp_path / "students.txt"
    plain.write_text("# the hub's roster\nada\nbo  # a comment\n\n")
    assert ids.read_roster(plain) == {"ada", "bo"}
    table = tmp_path / "roster.csv"
    table.write_text("username,name\nada,Ada Lovelace\ncy,Cy\n")
    assert ids.read_roster(table) == {"ada", "cy"}
    assert ids.roster_path("none") is None and ids.read_roster(None) is None
    assert ids.roster_path(str(plain)) == plain
