"""The Dask engine's guards, without a cluster (the quick tier): the grader refuses a plain-tcp scheduler,
the certificates are the course CA's and private, a worker with another grader grades nothing, and two
grading processes never share a sandbox slot. Grading through real scheduler and worker processes is
tests/test_grader_dask.py (root)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time

import pytest
from grader_zoo import BASE, _bytes, reference

from autograder import course
from autograder.grading import certs, collect, engine, slots
from autograder.grading.runner import Options


def _grade_command(tmp_path, *extra: str) -> subprocess.CompletedProcess:
    (tmp_path / "in" / "ada").mkdir(parents=True)
    (tmp_path / "in" / "ada" / f"{BASE}.ipynb").write_bytes(_bytes(reference()))
    command = [sys.executable, "-m", "autograder", "grade", BASE, str(tmp_path / "in"), "--out", str(tmp_path / "out"),
               "--work", str(tmp_path / "work"), "--roster", "none", *extra]  # fmt: skip
    return subprocess.run(command, cwd=course.ROOT, capture_output=True, text=True, timeout=300)


def test_a_plain_tcp_scheduler_is_refused(tmp_path):
    """A Dask scheduler runs whatever a connected client sends it: the grader talks to one over mutual TLS only,
    and says why before it collects or grades anything."""
    done = _grade_command(tmp_path, "--scheduler", "tcp://127.0.0.1:8786", "--tls", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "must be reached over mutual TLS (tls://HOST:PORT), not 'tcp://127.0.0.1:8786'" in done.stderr
    assert not (tmp_path / "out" / "results").exists(), "it graded something before refusing"
    assert engine.address_problem("tls://127.0.0.1:8786", None).startswith("--scheduler needs --tls DIR")
    missing = engine.address_problem("tls://127.0.0.1:8786", tmp_path)
    assert "missing TLS file(s)" in missing and "client-key.pem" in missing


def test_the_certificates_are_the_course_cas_and_only_root_reads_them(tmp_path):
    folder = tmp_path / "tls"
    written = certs.make(folder)
    assert sorted(p.name for p in written) == sorted(
        ["ca.pem", "ca-key.pem"] + [f"{p}{s}.pem" for p in certs.PARTIES for s in ("", "-key")]
    )
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in written} == {0o600}
    for party in certs.PARTIES:
        ca, cert, _ = engine.tls_files(folder, party)
        verify = subprocess.run(["openssl", "verify", "-CAfile", str(ca), str(cert)], capture_output=True, text=True)
        assert verify.returncode == 0, verify.stderr
    other = tmp_path / "other"  # negative control: another CA's certificate does not verify against ours
    certs.make(other)
    _, foreign, _ = engine.tls_files(other, "client")
    verify = subprocess.run(["openssl", "verify", "-CAfile", str(folder / "ca.pem"), str(foreign)], capture_output=True)
    assert verify.returncode != 0
    with pytest.raises(RuntimeError, match="holds a CA already"):
        certs.make(folder)


def test_a_worker_whose_grader_differs_grades_nothing():
    """The task carries the coordinator's digests; a worker with other files returns a grader_error saying so
    (and starts no grading process: this runs without root)."""
    submission = collect.Submission("ada", _bytes(reference()), "ada/x.ipynb")
    expected = engine._expected(BASE)
    stale = {**expected, "grader": "a grader of another version"}
    result = engine.grade_task(submission, BASE, Options(unsafe=True), 0, stale)
    assert result.status == "grader_error" and result.score == 0
    assert "has another grader than the coordinator" in result.notes[-1], result.notes
    assert engine._STATE is None, "it started a grading process for a task it must refuse"


_HOLD = """
import sys, time
from autograder.grading import slots
print(slots.claim(), flush=True)
time.sleep(600)
"""


def test_two_grading_processes_never_share_a_sandbox_slot(tmp_path, monkeypatch):
    """Each process holds the lowest free slot until it ends; a slot held by a process killed with SIGKILL is
    free again at once (the kernel drops its lock)."""
    monkeypatch.setenv("AUTOGRADER_SLOTS", str(tmp_path / "slots"))
    env = {**os.environ, "PYTHONPATH": str(course.ROOT)}

    def holder():
        process = subprocess.Popen([sys.executable, "-c", _HOLD], env=env, stdout=subprocess.PIPE, text=True)
        return process, int(process.stdout.readline())

    first, second = holder(), holder()
    try:
        assert (first[1], second[1]) == (0, 1)
        assert slots.claim() == 2  # this process: the next free one
        first[0].send_signal(signal.SIGKILL)
        first[0].wait(timeout=30)
        time.sleep(0.1)
        assert slots.claim() == 0, "the killed holder's slot was not freed"
    finally:
        for process, _ in (first, second):
            process.kill()
            process.wait(timeout=30)
        for slot in (0, 2):
            slots.release(slot)


def test_a_slot_folder_another_user_can_write_is_refused(tmp_path, monkeypatch):
    """A student who made the lock folder first (or can write it) could hold every slot: refused."""
    folder = tmp_path / "slots"
    folder.mkdir(mode=0o777)
    os.chmod(folder, 0o777)
    monkeypatch.setenv("AUTOGRADER_SLOTS", str(folder))
    with pytest.raises(RuntimeError, match="only it can write"):
        slots.claim()
