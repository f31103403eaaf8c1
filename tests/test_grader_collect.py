"""Finding each student's notebook (collect.py) and repairing it against the instructor's (sanitize.py).

No kernel runs here: these are the fast checks of the grader's front end.
"""

from __future__ import annotations

import copy
import json
import os
import zipfile

import nbformat
import pytest
from grader_zoo import BASE, _bytes, _index, reference, stub, zoo

from autograder.conventions import nbgrader
from autograder.grading.collect import collect, safe_student_id
from autograder.grading.sanitize import prepare
from autograder.grading.template import load_template


@pytest.fixture(scope="module")
def cases():
    return zoo()


def _plan(data: bytes):
    return prepare(data, load_template(BASE))


@pytest.mark.parametrize(
    "student, status",
    [("empty", "empty_file"), ("invalid_json", "invalid_json"), ("other_chapter", "wrong_assignment")],
)
def test_unreadable_or_foreign_files_get_a_status(cases, student, status):
    assert _plan(cases[student]).status == status


def test_json_that_is_not_a_notebook():
    assert _plan(json.dumps([1, 2]).encode()).status == "invalid_notebook"
    assert _plan(json.dumps({"cells": "nope"}).encode()).status == "invalid_notebook"


def test_tests_always_come_from_the_instructor(cases):
    template = load_template(BASE)
    for student in ("honest_reference", "honest_stub", "edited_tests", "deleted_and_duplicated_tests"):
        plan = _plan(cases[student])
        tests = [step for step in plan.steps if step.kind == "test"]
        assert [t.grade_id for t in tests] == sorted(template.tests, key=lambda g: template.tests[g].index)
        assert all(t.cell.source == template.tests[t.grade_id].source for t in tests)  # hidden parts included
    assert _plan(cases["honest_stub"]).flags == set()
    assert {"tests_restored"} <= _plan(cases["edited_tests"]).flags
    assert {"tests_restored", "duplicate_cells"} <= _plan(cases["deleted_and_duplicated_tests"]).flags


def test_restored_tests_go_back_where_the_instructor_had_them(cases):
    plan = _plan(cases["deleted_and_duplicated_tests"])
    order = [step.grade_id for step in plan.steps if step.grade_id]
    assert order.index("softmax") < order.index("softmax_visible") < order.index("softmax_hidden")
    assert order.index("softmax_hidden") < order.index("attention_vector")


def test_cells_without_metadata_are_recognised(cases):
    plan = _plan(cases["no_metadata"])
    template = load_template(BASE)
    assert "metadata_missing" in plan.flags and "cells_missing" not in plan.flags
    answers = {step.grade_id for step in plan.steps if step.kind == "code" and step.grade_id}
    written = {step.grade_id for step in plan.steps if step.kind == "written"}
    assert answers == set(template.answers) and written == set(template.written)


def test_a_students_cells_without_metadata_are_recognised():
    """A student's notebook (the released version: questions without their rubrics) whose cells lost
    their metadata: answers and written answers are still found (the written one by its question)."""
    fresh = nbformat.v4.new_notebook()
    maker = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
    fresh.cells = [maker[c.cell_type](c.source) for c in stub().cells]
    plan, template = _plan(_bytes(fresh)), load_template(BASE)
    written = {step.grade_id for step in plan.steps if step.kind == "written"}
    assert written == set(template.written), f"found {sorted(written)}, expected {sorted(template.written)}"
    assert "cells_missing" not in plan.flags, plan.notes


def test_a_deleted_answer_cell_is_reported():
    nb = stub()
    del nb.cells[_index(nb, "softmax")]
    plan = _plan(_bytes(nb))
    assert "cells_missing" in plan.flags and any("softmax" in note for note in plan.notes)


def test_encoding_kernel_and_suspicious_code_are_noted(cases):
    assert "non_utf8" in _plan(cases["not_utf8"]).flags
    assert "kernel_name" in _plan(cases["other_kernel"]).flags
    assert "suspicious_code" in _plan(cases["forger"]).flags
    assert "suspicious_code" not in _plan(cases["honest_reference"]).flags


def test_points_come_from_the_instructor_not_the_submission(cases):
    plan = _plan(cases["edited_tests"])  # its test cells claim 100 points each
    points = {s.grade_id: nbgrader(s.cell)["points"] for s in plan.steps if s.kind == "test"}
    assert max(points.values()) <= 2


# ---- collecting --------------------------------------------------------------------------------------


def test_folder_per_student_and_flat_files(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / f"{BASE}.ipynb").write_bytes(_bytes(stub()))
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "my homework (1).ipynb").write_bytes(_bytes(stub()))
    (tmp_path / "bob" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "bob" / ".ipynb_checkpoints" / "old.ipynb").write_bytes(b"{}")
    (tmp_path / "carol.ipynb").write_bytes(_bytes(stub()))
    (tmp_path / "dave").mkdir()
    (tmp_path / "dave" / "notes.txt").write_text("no notebook here, and one text file only... but not JSON")
    (tmp_path / "erin").mkdir()
    found = {s.student_id: s for s in collect(tmp_path, BASE)}
    assert set(found) == {"alice", "bob", "carol", "dave"}
    assert found["alice"].status == "graded" and not found["alice"].flags
    assert found["bob"].status == "graded" and found["bob"].flags == ["renamed"]
    assert found["carol"].status == "graded" and not found["carol"].flags  # flat: the name is the student id
    assert found["dave"].data is not None  # an odd file is still handed to the parser, which will say why


def test_several_notebooks_pick_the_right_one_or_say_ambiguous(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / f"{BASE}.ipynb").write_bytes(_bytes(reference()))
    (tmp_path / "alice" / "scratch.ipynb").write_bytes(b"{}")
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "draft.ipynb").write_bytes(json.dumps(nbformat.v4.new_notebook()).encode())
    (tmp_path / "bob" / "final.ipynb").write_bytes(_bytes(stub()))  # the only one with the assignment's cells
    (tmp_path / "carol").mkdir()
    (tmp_path / "carol" / "a.ipynb").write_bytes(b"{}")
    (tmp_path / "carol" / "b.ipynb").write_bytes(b"{}")
    found = {s.student_id: s for s in collect(tmp_path, BASE)}
    assert found["alice"].source == f"alice/{BASE}.ipynb" and "multiple_notebooks" in found["alice"].flags
    assert found["bob"].source == "bob/final.ipynb"
    assert found["carol"].status == "ambiguous" and found["carol"].data is None


def test_symbolic_links_are_not_followed(tmp_path):
    from autograder import course

    (tmp_path / "mallory").mkdir()
    os.symlink(course.solution_notebook(BASE), tmp_path / "mallory" / f"{BASE}.ipynb")
    found = {s.student_id: s for s in collect(tmp_path, BASE)}
    assert found.get("mallory") is None or found["mallory"].data is None


def test_learning_platform_zip(tmp_path):
    archive = tmp_path / "download.zip"
    older = copy.deepcopy(stub())
    older.cells[0].source = "an older attempt"
    with zipfile.ZipFile(archive, "w") as z:
        # Blackboard-style names (nbgrader zip_collect's example): the newest attempt wins
        z.writestr(f"Homework 3_alice_attempt_2024-01-01-10-00-00_{BASE}.ipynb", _bytes(older))
        z.writestr(f"Homework 3_alice_attempt_2024-01-02-09-00-00_{BASE}.ipynb", _bytes(stub()))
        z.writestr("Homework 3_bob_attempt_2024-01-01-10-00-00_homework.ipynb", b"")
        z.writestr(f"carol/{BASE}.ipynb", _bytes(stub()))
        z.writestr("../../etc/evil.ipynb", b"{}")  # zip slip: ignored
        z.writestr("__MACOSX/._junk.ipynb", b"junk")
    found = {s.student_id: s for s in collect(archive, BASE)}
    assert set(found) == {"alice", "bob", "carol"}
    assert b"an older attempt" not in found["alice"].data
    assert found["bob"].flags == ["renamed"] and found["bob"].data == b""


def test_student_ids_are_safe_file_names():
    assert safe_student_id("../../etc/passwd") == "etc_passwd"
    assert safe_student_id("Ana María López") == "Ana_Mar_a_L_pez"
    assert safe_student_id("") == "unknown"
