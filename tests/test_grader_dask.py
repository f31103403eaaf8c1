"""A class graded through Dask distributed: a scheduler and two workers started as processes of their own on
the loopback interface (engine.local_cluster), each worker grading in the sandbox as root, the coordinator
(batch.grade_class, or ``python -m autograder grade --scheduler``) writing everything.

The class: eight chapter-03 submissions of tests/grader_zoo.py (the reference, the stub, wrong answers, a
forger, a kernel that exits, a correct answer that warns, an object that claims equality, and an empty file
that no worker sees). Every run below must give the rows of ``--jobs 1`` on the same class: grades.csv and
details.csv compared whole (no column of theirs holds a time or a machine's name, so none is dropped).
Needs root, like the sandbox.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from grader_zoo import BASE, WRONG_ANSWERS, _answers, _bytes, reference, write_folder, zoo

from autograder import course
from autograder.grading import batch, certs, engine, gradebook, leftovers
from autograder.grading.runner import Options

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="the grader's sandbox needs root (unshare, mount, setpriv): these tests run as root only",
)
OPTIONS = dict(timeout=120, call_timeout=10)
CLASS = ("honest_reference", "honest_stub", "forger", "exits", "noisy_but_right", "claims_equality", "empty")


def _files(out: Path) -> dict[str, str]:
    return {name: (out / name).read_text(encoding="utf-8") for name in ("grades.csv", "details.csv")}


def _students(out: Path) -> list[str]:
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return [row["student_id"] for row in csv.DictReader(handle)]


def _submissions_in_gradebook(work: Path) -> list[str]:
    from nbgrader.api import Gradebook

    with Gradebook(gradebook.db_url(work)) as gb:
        return sorted(s.student.id for s in gb.find_assignment(BASE).submissions)


def _mtimes(out: Path) -> dict[str, int]:
    return {p.stem: p.stat().st_mtime_ns for p in (out / "results").glob("*.json")}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    cases = {name: data for name, data in zoo().items() if name in CLASS}
    cases["wrong_answers"] = _bytes(_answers(reference(), WRONG_ANSWERS))
    folder = tmp_path_factory.mktemp("class")
    write_folder(folder, cases)
    return folder


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> Path:
    return certs.make(tmp_path_factory.mktemp("dask") / "tls")[0].parent


@pytest.fixture(scope="module")
def local(folder, tmp_path_factory) -> dict:
    """The class graded by two local workers (``--jobs 1``): what every Dask run must match."""
    out, work = tmp_path_factory.mktemp("out-jobs1"), tmp_path_factory.mktemp("work-jobs1")
    assert batch.grade_class(BASE, folder, out, 1, Options(**OPTIONS), work, True) == 0
    return _files(out)


@pytest.fixture(scope="module")
def cluster(tls):
    with engine.local_cluster(2, tls) as address:
        yield address


def test_a_class_graded_on_dask_workers_gets_the_rows_of_jobs_1(folder, local, cluster, tls, tmp_path):
    """A broken engine shows here as a missing or doubled row, a grader_error, or a score that differs from the
    local workers' (a worker grading with another slot's user, other options, or none of the sandbox)."""
    out, work = tmp_path / "out", tmp_path / "work"
    started = time.monotonic()
    code = batch.grade_class(BASE, folder, out, 1, Options(**OPTIONS), work, True, scheduler=cluster, tls=tls)
    print(f"graded {len(CLASS) + 1} submissions on 2 Dask workers in {time.monotonic() - started:.1f} s")
    assert code == 0
    assert _files(out) == local
    assert _submissions_in_gradebook(work) == sorted(_students(out))


def _executing(dask_worker):
    """Run on a worker by Client.run (sent by value: the workers cannot import the tests): its process id and
    the keys of the tasks it is running now."""
    return os.getpid(), [str(task.key) for task in dask_worker.state.executing]


def _kill_a_worker_mid_run(folder: Path, tls: Path, out: Path, work: Path, allowed_failures: int):
    """Grade the class on two workers and SIGKILL the first worker seen grading a submission; the run's exit
    status, the students whose task the killed worker was running, and those of every task the scheduler had
    given it (running or queued there: the tasks a dead worker costs a failure)."""
    import cloudpickle
    from distributed import Client

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    outcome: dict = {}
    before = set(leftovers._cgroups())
    with engine.local_cluster(2, tls, allowed_failures=allowed_failures) as address:

        def grade():
            options = Options(**OPTIONS)
            outcome["code"] = batch.grade_class(BASE, folder, out, 1, options, work, True, scheduler=address, tls=tls)

        run = threading.Thread(target=grade)
        run.start()
        killed = None
        with Client(address, security=engine.security(tls), set_as_default=False) as client:
            deadline = time.monotonic() + 600
            while killed is None and run.is_alive() and time.monotonic() < deadline:
                time.sleep(0.2)
                if len(_mtimes(out)) < 2:  # the empty file's row, then a worker's first: the run is under way
                    continue
                for worker, (pid, keys) in client.run(_executing).items():
                    if keys:
                        assigned = client.processing([worker]).get(worker, [])  # running, or queued there
                        os.kill(pid, signal.SIGKILL)
                        killed = keys, [*keys, *assigned]
                        break
        run.join(timeout=900)
        assert killed, "no worker was caught grading: nothing was killed"
    assert not leftovers._sandbox_processes(), "the killed worker's sandbox outlived the cluster"
    swept = leftovers.sweep()  # what the next run does first, while this test process's own run still lives
    assert not set(leftovers._cgroups()) - before, f"the killed worker's cgroups outlived the next sweep: {swept}"
    students = _students(out)
    assert len(students) == len(set(students)) == len(CLASS) + 1, students
    assert _submissions_in_gradebook(work) == sorted(students)
    running, assigned = ({str(key).split("-", 2)[2] for key in keys} for keys in killed)  # grade-<run>-<student>
    return outcome["code"], running, assigned


def test_a_worker_killed_mid_run_loses_nothing_and_doubles_nothing(folder, local, tls, tmp_path):
    """SIGKILL a worker while it grades a submission: the scheduler hands its tasks to the other worker, every
    student gets exactly one row (and one gradebook submission), the rows are those of --jobs 1, and the killed
    worker's sandbox is gone after the cluster stops. A broken engine shows a missing or doubled row, a
    grader_error for the killed task, or a run that never ends."""
    out = tmp_path / "out"
    code, running, _ = _kill_a_worker_mid_run(folder, tls, out, tmp_path / "work", engine.ALLOWED_FAILURES)
    assert code == 0
    assert running and running <= set(_students(out))
    assert _files(out) == local


def test_a_task_whose_workers_all_died_is_a_grader_error_not_a_crash(folder, local, tls, tmp_path):
    """With no failure allowed, the killed worker's tasks are KilledWorker: their students get a grader_error row
    that says so (exit status 1, --retry-failed grades it again), every other row is that of --jobs 1. A broken
    engine crashes the run or drops the row."""
    out = tmp_path / "out"
    code, running, assigned = _kill_a_worker_mid_run(folder, tls, out, tmp_path / "work", 0)
    assert code == 1
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    lost = {s for s, row in rows.items() if row["status"] == "grader_error"}
    assert running <= lost <= assigned, (running, lost, assigned)
    for student in lost:
        assert "KilledWorker" in " ".join(json.loads((out / "results" / f"{student}.json").read_text())["notes"])
    expected = list(csv.DictReader(io.StringIO(local["grades.csv"])))
    assert [row for row in expected if row["student_id"] not in lost] == [r for s, r in rows.items() if s not in lost]


def test_a_coordinator_killed_mid_run_resumes(folder, local, cluster, tls, tmp_path):
    """SIGKILL the grade command while the workers grade, then start it again: the records it finished are kept
    (not graded again), the rest are graded, and the rows are those of --jobs 1. A broken engine shows records
    graded twice, a row missing, or a rerun that waits forever for the dead coordinator's tasks."""
    out, work = tmp_path / "out", tmp_path / "work"
    command = [sys.executable, "-m", "autograder", "grade", BASE, str(folder), "--out", str(out), "--work", str(work),
               "--roster", "none", "--timeout", "120", "--call-timeout", "10",
               "--scheduler", cluster, "--tls", str(tls)]  # fmt: skip
    first = subprocess.Popen(command, cwd=course.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 600
    while len(_mtimes(out)) < 3 and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.2)
    assert first.poll() is None, f"the run ended before it could be killed: {first.stdout.read()[-2000:]}"
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
    kept = _mtimes(out)
    assert 3 <= len(kept) < len(CLASS) + 1, kept
    second = subprocess.run(command, cwd=course.ROOT, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-3000:]
    assert f"skipped {len(kept)} graded already" in second.stdout, second.stdout
    assert {s: m for s, m in _mtimes(out).items() if s in kept} == kept, "a finished record was graded again"
    assert _files(out) == local


def _handshake(port: int, ca: Path, client: Path | None) -> str:
    """Speak TLS to the scheduler's port, trusting ``ca``, with the client certificate of the folder ``client``
    (or none); what happened: "open" (the scheduler waits for a message) or the error that ended it."""
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False
    if client is not None:
        _, cert, key = engine.tls_files(client, "client")
        context.load_cert_chain(cert, key)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.settimeout(3)
        try:
            with context.wrap_socket(raw) as connection:
                data = connection.recv(1)  # TLS 1.3: a refused client certificate shows at the first read
                return "open" if data else "closed"
        except TimeoutError:
            return "open"
        except (ssl.SSLError, OSError) as exc:
            return type(exc).__name__


def test_a_client_without_the_courses_certificate_cannot_submit_work(cluster, tls, tmp_path):
    """On a hub, a student can reach 127.0.0.1 (or the scheduler's service): without a certificate of the course's
    CA they get no connection, so no task of theirs runs as root on a worker. Positive control: the course's
    client certificate gets one and runs a task."""
    from distributed import Client

    port, ca = int(cluster.rsplit(":", 1)[1]), tls / engine.CA
    assert _handshake(port, ca, tls) == "open"
    assert _handshake(port, ca, None) != "open"  # no client certificate: refused in the handshake
    foreign = certs.make(tmp_path / "other-ca")[0].parent  # a certificate of another CA, of the right shape
    assert _handshake(port, ca, foreign) != "open"
    with pytest.raises((OSError, TimeoutError)):
        Client(cluster, security=engine.security(foreign), timeout=5, set_as_default=False)
    with pytest.raises((OSError, TimeoutError)):
        Client(cluster.replace("tls://", "tcp://"), timeout=5, set_as_default=False)
    with Client(cluster, security=engine.security(tls), timeout=30, set_as_default=False) as client:
        assert client.submit(os.getuid, pure=False).result(timeout=60) == 0  # what a certificate holder gets: root
