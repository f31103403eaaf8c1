"""Sandboxes forked from the zygote (autograder/grading/zygote.py): no state of one kernel reaches another.

Each submission's kernel is a fresh child of a process that imported torch once and never runs a
submission's code. These tests leave every kind of state in one kernel (module globals, patches to
torch and numpy, files, threads, processes, the environment) and check that the next kernel, forked
from the same zygote, sees none of it, while the kernel that made it does (the probe can fail);
that two sandboxes alive at once do not see each other; that no kernel holds the zygote's channel;
that the sandboxes die with their zygote; and that a course under /tmp stays visible, read-only. They need
root (namespaces, mounts, other uids).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from autograder.grading import jail, zygote
from autograder.grading.jail import UID_BASE, Limits
from autograder.grading.sandbox import Sandbox

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="the grader's sandbox needs root (unshare, mount, setpriv): these tests run as root only",
)
SLOT = 9  # slots of their own: uids UID_BASE + 9 and + 10
PRELOAD = ("numpy", "torch")

LEAVE = """
import os, subprocess, sys, threading, time, json, numpy, torch
torch.leaked = numpy.leaked = json.leaked = 'from the last student'
torch.allclose = lambda *args, **kwargs: True
numpy.testing.assert_allclose = lambda *args, **kwargs: None
sys.modules['leaked_module'] = json
os.environ['LEAKED'] = '1'
torch.manual_seed(1234)
open('/tmp/leaked', 'w').write('x')
open('/dev/shm/leaked', 'w').write('x')
threading.Thread(target=time.sleep, args=(1000,), daemon=True, name='leaked-thread').start()
sleeper = subprocess.Popen(['sleep', '1000'], start_new_session=True)
"""
PROBE = """
import json, os, sys, threading, numpy, torch
print(json.dumps({
    "globals": [m.__name__ for m in (torch, numpy, json) if hasattr(m, 'leaked')],
    "patched": [n for n, f in (('torch.allclose', torch.allclose), ('assert_allclose', numpy.testing.assert_allclose))
                if getattr(f, '__name__', '') == '<lambda>'],
    "module": 'leaked_module' in sys.modules,
    "environ": 'LEAKED' in os.environ,
    "seed": torch.initial_seed() == 1234,
    "files": [p for p in ('/tmp/leaked', '/dev/shm/leaked') if os.path.exists(p)],
    "threads": [t.name for t in threading.enumerate() if t.name == 'leaked-thread'],
    "sleepers": [p for p in os.listdir('/proc') if p.isdigit() and open(f'/proc/{p}/comm').read().strip() == 'sleep'],
}))
"""
CLEAN = {"globals": [], "patched": [], "module": False, "environ": False, "seed": False, "files": [], "threads": [],
         "sleepers": []}  # fmt: skip


def run(box: Sandbox, code: str) -> str:
    out = box.run(code, time.monotonic() + 60, 60)
    text = "".join(o.get("text") or f"{o.get('ename')}: {o.get('evalue')}\n" for o in out.outputs)
    return text


def probe(box: Sandbox) -> dict:
    return json.loads(run(box, PROBE).splitlines()[-1])


def started(workdir: Path, slot: int = SLOT, name: str = "") -> Sandbox:
    box = Sandbox(workdir, slot, Limits(), name=name or str(slot), preload=PRELOAD)
    box.start(time.monotonic() + 180)
    return box


def processes(uid: int) -> list[str]:
    return subprocess.run(["pgrep", "-u", str(uid)], capture_output=True, text=True).stdout.split()


@pytest.fixture
def workdir():
    folder = Path(tempfile.mkdtemp(prefix="ag-z", dir="/tmp"))
    yield folder
    zygote.close_all()
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


def test_what_one_kernel_leaves_the_next_does_not_see(workdir):
    with started(workdir) as first:
        assert run(first, LEAVE) == ""
        left = probe(first)  # the probe sees all of it where it was left: it can fail
        assert all(left[key] for key in CLEAN), left
        pid = zygote.running_pids()
    assert not processes(UID_BASE + SLOT)  # the sleeper went with its sandbox
    with started(workdir) as second:
        assert zygote.running_pids() == pid  # the same zygote forked both
        assert probe(second) == CLEAN


def test_two_sandboxes_alive_at_once_do_not_see_each_other(workdir):
    with started(workdir) as first, started(workdir, SLOT + 1) as second:
        assert run(first, "open('/tmp/mine', 'w').write('first')\nimport os\nprint(os.getpid())") == "2\n"
        report = run(second, """
import os
import shutil
print(os.path.exists('/tmp/mine'), sorted(p for p in os.listdir('/proc') if p.isdigit()), os.getuid())
""")  # fmt: skip
        assert report == f"False ['1', '2'] {UID_BASE + SLOT + 1}\n"


def test_no_kernel_holds_the_zygotes_channel(workdir):
    with started(workdir) as box:
        (z,) = zygote.running_pids()
        channel = {os.readlink(f"/proc/{z}/fd/{fd}") for fd in os.listdir(f"/proc/{z}/fd")}
        channel = {link for link in channel if link.startswith(("socket:", "pipe:"))}
        assert channel  # the zygote's socket to the grader
        kernels = processes(UID_BASE + SLOT)
        assert kernels
        held = {os.readlink(f"/proc/{pid}/fd/{fd}") for pid in kernels for fd in os.listdir(f"/proc/{pid}/fd")}
        assert not channel & held
        assert run(box, "print(1)") == "1\n"


def test_sandboxes_die_with_their_zygote(workdir):
    box = started(workdir)
    try:
        assert processes(UID_BASE + SLOT)
        zygote.close_all()  # as when the grading worker ends, or dies (the zygote reads the end of its socket)
        for _ in range(100):
            if not box.alive and not processes(UID_BASE + SLOT):
                break
            time.sleep(0.05)
        assert not box.alive and not processes(UID_BASE + SLOT)
    finally:
        box.close()


def test_a_course_under_tmp_stays_visible_and_read_only(workdir, monkeypatch):
    """A venv or checkout under the host's /tmp (a clone there, as CI may make) is bound into the jail below its
    /tmp; each sandbox's fresh scratch tmpfs on /tmp must not hide it: the kernel reads it and cannot write it."""
    course = Path(tempfile.mkdtemp(prefix="ag-course", dir="/tmp"))
    (course / "pkg").mkdir()
    (course / "pkg" / "data.txt").write_text("course file")
    binds = [*jail.read_only_binds(), str(course / "pkg")]
    monkeypatch.setattr(jail, "read_only_binds", lambda: binds)  # the zygote's jail binds it
    monkeypatch.setattr(zygote, "read_only_binds", lambda: binds)  # each sandbox keeps it under its /tmp
    zygote.close_all()
    try:
        box = started(workdir, name="course-under-tmp")
        report = run(box, f"print(open('{course}/pkg/data.txt').read())\ntry:\n    open('{course}/pkg/new', 'w')\n"
                          "except OSError as exc:\n    print('blocked', exc.errno)")  # fmt: skip
        box.close()
    finally:
        zygote.close_all()
        shutil.rmtree(course)
    assert report.split() == ["course", "file", "blocked", "30"], f"expected the file read and EROFS (30): {report!r}"
