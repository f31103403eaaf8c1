"""The records a resumed run trusts (records.py): what they were graded from, written whole or not at all.

No kernel runs here; the kill and the resume of a real run are in tests/test_grader_term.py (root).
"""

from __future__ import annotations

import json
import os

import pytest

from autograder.grading import records
from autograder.grading.jail import Limits
from autograder.grading.runner import Options

A = "03_attention_steps"


def test_a_record_is_up_to_date_only_for_the_same_notebook_assignment_grader_and_options():
    options = Options(timeout=100, call_timeout=10)
    key = records.graded_from(b"notebook", A, options)
    record = {"student_id": "ada", "status": "graded", "graded_from": key}
    assert records.up_to_date(record, records.graded_from(b"notebook", A, Options(timeout=100, call_timeout=10)))
    assert not records.up_to_date(record, records.graded_from(b"notebook!", A, options))  # other bytes
    assert not records.up_to_date(record, records.graded_from(b"notebook", A, Options(timeout=100, call_timeout=5)))
    more_memory = Options(timeout=100, call_timeout=10, limits=Limits(memory_mb=8192))
    assert not records.up_to_date(record, records.graded_from(b"notebook", A, more_memory))
    assert not records.up_to_date(record, records.graded_from(b"notebook", "04_qkv_variants", options))
    assert not records.up_to_date({**record, "graded_from": {**key, "grader": "an older grader"}}, key)
    assert not records.up_to_date(None, key)
    failed = {**record, "status": "grader_error"}
    assert records.up_to_date(failed, key) and not records.up_to_date(failed, key, retry_failed=True)


def test_reports_and_collecting_are_not_part_of_the_grader_version():
    """Changing how reports are written regrades nobody; changing how a test runs regrades everyone."""
    graded = set(records.grading_modules())
    assert {
        "runner",
        "sandbox",
        "sanitize",
        "template",
        "suspicious",
        "rpc",
        "codec",
        "kernel/__init__",
        "kernel/rpc",
        "kernel/codec",
    } <= graded
    assert not {"report", "batch", "collect", "gradebook"} & graded


def test_records_are_written_whole_and_a_broken_one_does_not_count(tmp_path, monkeypatch):
    records.save(tmp_path, {"student_id": "ada", "assignment": A, "status": "graded"})
    assert records.load(tmp_path, "ada")["status"] == "graded"
    (tmp_path / "results" / "bo.json").write_text('{"student_id": "bo", "assignment": "03_att')  # cut short
    assert records.load(tmp_path, "bo") is None
    assert [r["student_id"] for r in records.load_all(tmp_path, A)] == ["ada"]

    def killed(*args):  # the process dies between writing the temporary file and renaming it
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        records.save(tmp_path, {"student_id": "ada", "assignment": A, "status": "grader_error"})
    monkeypatch.undo()
    assert records.load(tmp_path, "ada")["status"] == "graded"  # the old record, whole
    (tmp_path / "results" / ".left-by-a-kill.part").write_text("{")
    records.clean_partial(tmp_path)
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["ada.json", "bo.json"]
    assert json.loads((tmp_path / "results" / "ada.json").read_text())["student_id"] == "ada"
