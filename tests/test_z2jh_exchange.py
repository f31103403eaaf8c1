"""nbgrader's exchange on Kubernetes: deploy/exchange-permissions.sh, which the user image runs as
root at every start (deploy/singleuser.Dockerfile), gives a fresh exchange volume mode 1777, and
that mode lets every user add entries while nobody moves or removes another's.

As root (skipped otherwise), on a folder under /tmp, with two unprivileged uids that have no
account (as in the pods, where only jovyan has one). Run under the shared lock
(`flock /tmp/attention-root.lock ...`): the uids are fixed.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from autograder import course

SCRIPT = course.ROOT / "deploy" / "exchange-permissions.sh"
DOCKERFILE = course.ROOT / "deploy" / "singleuser.Dockerfile"
INSTRUCTOR_UID, STUDENT_UID = 64201, 64202  # no accounts: like users' uids inside a pod

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a root-owned folder, two other uids)")


@pytest.fixture
def volume():
    """A fresh volume's root folder as a provisioner leaves it: owned by root, mode 755, in a
    folder every uid may enter."""
    parent = Path(tempfile.mkdtemp(prefix="attention-exchange-", dir="/tmp"))
    parent.chmod(0o755)
    exchange = parent / "exchange"
    exchange.mkdir(mode=0o755)
    yield exchange
    shutil.rmtree(parent)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _run(argv, uid: int | None = None, **kwargs) -> subprocess.CompletedProcess:
    """``argv`` as root, or as ``uid`` (group ``uid``, no supplementary groups)."""
    who = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, **who, **kwargs)


def _arrange(exchange: Path, uid: int | None = None) -> subprocess.CompletedProcess:
    return _run(["bash", str(SCRIPT), str(exchange)], uid)


def test_a_fresh_volume_gets_mode_1777_once(volume):
    """Root makes it 1777 and says so; the next start changes nothing and says nothing."""
    done = _arrange(volume)
    assert done.returncode == 0, done.stderr
    assert _mode(volume) == 0o1777, oct(_mode(volume))
    assert "was mode 755" in done.stdout
    changed = volume.stat().st_ctime_ns
    again = _arrange(volume)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    assert volume.stat().st_ctime_ns == changed


def test_everyone_adds_entries_and_nobody_moves_anothers(volume):
    """After the script: the instructor and a student each create their folder; the student
    can neither move nor delete the instructor's (a fake course folder in its place would
    "release" the student's notebooks), nor change the exchange's mode; owners can move
    their own. Without the sticky bit (mode 777) the student could: the control."""
    assert _arrange(volume).returncode == 0
    course_dir, own = volume / "attention-step-by-step", volume / "student-folder"
    assert _run(["mkdir", str(course_dir)], INSTRUCTOR_UID).returncode == 0
    assert _run(["mkdir", str(own)], STUDENT_UID).returncode == 0
    for attempt in (
        ["mv", str(course_dir), str(volume / "moved")],
        ["rmdir", str(course_dir)],
        ["chmod", "777", str(volume)],
    ):
        done = _run(attempt, STUDENT_UID)
        assert done.returncode != 0 and "not permitted" in done.stderr, (attempt, done.stderr)
    assert course_dir.is_dir() and _mode(volume) == 0o1777
    assert _run(["mv", str(own), str(volume / "renamed")], STUDENT_UID).returncode == 0

    volume.chmod(0o777)  # the control: world-writable without the sticky bit
    assert _run(["mv", str(course_dir), str(volume / "moved")], STUDENT_UID).returncode == 0


def test_what_it_cannot_fix_stops_the_start(volume, tmp_path):
    """Run as a user who does not own the folder (as on NFS with root_squash), it fails with
    the mode and the command that fixes it, and changes nothing; a missing folder (no volume
    mounted) is an error too, never created. Sourced as the image's hook, the failure ends
    the start script."""
    done = _arrange(volume, STUDENT_UID)
    assert done.returncode == 1
    assert "has mode 755" in done.stderr and "chmod 1777" in done.stderr
    assert _mode(volume) == 0o755

    missing = volume.parent / "not-mounted"
    done = _arrange(missing)
    assert done.returncode == 1 and "is the exchange volume mounted" in done.stderr
    assert not missing.exists()

    hook_line = re.search(r"echo '([^']*attention-exchange-permissions[^']*)'", DOCKERFILE.read_text()).group(1)
    assert "before-notebook.d/" in DOCKERFILE.read_text() and hook_line.endswith("|| exit 1")
    hook = tmp_path / "50-attention-exchange.sh"
    hook.write_text(hook_line.replace("/usr/local/bin/attention-exchange-permissions", f"bash {SCRIPT}") + "\n")
    start = _run(
        ["bash", "-c", f'source "{hook}"; echo server started'],
        env={**os.environ, "NBGRADER_EXCHANGE_ROOT": str(missing)},
    )
    assert start.returncode == 1 and "server started" not in start.stdout


def test_other_bits_are_kept(volume):
    """A folder an administrator made 3777 (setgid too) already qualifies: left as it is."""
    volume.chmod(0o3777)
    done = _arrange(volume)
    assert (done.returncode, done.stdout) == (0, "")
    assert _mode(volume) == 0o3777
