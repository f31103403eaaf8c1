"""The sandbox itself (autograder/grading/sandbox.py): what code in the student's kernel can and cannot do.

One kernel is started for the module and probed from inside; a second checks that killing a
sandbox leaves nothing behind. These tests need root (namespaces, mounts, other uids).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from autograder import course
from autograder.grading import startup
from autograder.grading.jail import SANDBOXES_PER_UID, UID_BASE, Limits
from autograder.grading.sandbox import CallTimeout, KernelDied, NotebookTimeout, Sandbox
from autograder.grading.spares import SparePool

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="the grader's sandbox needs root (unshare, mount, setpriv): these tests run as root only",
)
SLOT = 7  # a slot of its own: uid UID_BASE + 7


def run(sandbox, code: str, limit: float = 60) -> str:
    out = sandbox.run(code, time.monotonic() + limit, limit)
    parts = []
    for o in out.outputs:
        parts.append(o.get("text") or f"{o.get('ename')}: {o.get('evalue')}")
    return "".join(parts)


@pytest.fixture(scope="module")
def sandbox():
    workdir = Path(tempfile.mkdtemp(prefix="ag-t", dir="/tmp"))
    box = Sandbox(workdir, SLOT, Limits(memory_mb=3072, processes=48, file_mb=8, scratch_mb=64))
    box.start(time.monotonic() + 120)
    yield box
    box.close()
    workdir.rmdir()


def test_runs_unprivileged_with_limits(sandbox):
    report = run(sandbox, """
import os, resource
status = open('/proc/self/status').read()
print(os.getuid(), os.getgid(), os.getgroups())
print([line.split()[1] for line in status.splitlines() if line.startswith(('CapEff', 'CapBnd', 'NoNewPrivs'))])
print(resource.getrlimit(resource.RLIMIT_AS)[0] >> 20, resource.getrlimit(resource.RLIMIT_NPROC)[0],
      resource.getrlimit(resource.RLIMIT_FSIZE)[0] >> 20)
print(sorted(p for p in os.listdir('/proc') if p.isdigit()))
""")  # fmt: skip
    lines = report.splitlines()
    assert lines[0] == f"{UID_BASE + SLOT} {UID_BASE + SLOT} []"
    assert lines[1] == "['0000000000000000', '0000000000000000', '1']"  # no capability, no_new_privs
    pids = [path / "pids.max" for path in sandbox.cgroups.dirs if (path / "pids.max").is_file()]
    if pids:  # the cgroup holds this sandbox to 48; the uid's limit is what the slot's sandboxes share
        assert [path.read_text().strip() for path in pids] == ["48"]
        assert lines[2] == f"3072 {48 * SANDBOXES_PER_UID} 8", f"rlimits (address space MB, nproc, file MB): {lines[2]}"
    else:
        assert lines[2] == "3072 48 8", f"rlimits (address space MB, nproc, file MB): {lines[2]}"
    assert len(eval(lines[3])) <= 3  # only the namespace's own processes: pid 1, the kernel


def test_the_repository_is_not_there(sandbox):
    secret = course.solution_notebook("03_attention_steps")
    report = run(sandbox, f"""
import os
for path in [{str(secret)!r}, {str(course.REFERENCE)!r}, {str(course.ROOT / 'autograder')!r},
             {str(course.ROOT / '_build')!r}, '/root/.ssh', '/home']:
    print(path, os.path.exists(path))
print(sorted(os.listdir({str(course.ROOT)!r})))
""")  # fmt: skip
    assert "True" not in report.replace(str(course.ROOT) + "'", "")
    assert report.splitlines()[-1] == str(sorted([".venv", "attention_course"]))


def test_writes_stay_in_the_scratch_folder(sandbox):
    targets = ["/etc/pwned", str(course.ROOT / ".venv" / "pwned"), "/usr/pwned", "/pwned", "/root/pwned"]
    report = run(sandbox, f"""
import os
for path in {targets!r}:
    try:
        open(path, 'w').write('x')
        print('WROTE', path)
    except OSError as exc:
        print('blocked', path, exc.errno)
open('/tmp/mine', 'w').write('fine')
print(os.getcwd(), os.listdir('/tmp').count('mine'))
""")  # fmt: skip
    assert "WROTE" not in report and report.count("blocked") == len(targets)
    assert report.splitlines()[-1] == "/tmp 1"
    assert not any(Path(t).exists() for t in targets)


def test_a_file_larger_than_the_limit_cannot_be_written(sandbox):
    report = run(sandbox, """
try:
    with open('/tmp/big', 'wb') as f:
        f.write(b'x' * (9 << 20))
    print('WROTE')
except OSError as exc:
    print('blocked', exc.errno)
""")  # fmt: skip
    assert "blocked 27" in report  # EFBIG


def test_no_network(sandbox):
    report = run(sandbox, """
import socket
for address in [('127.0.0.1', 22), ('10.0.0.1', 80), ('8.8.8.8', 53)]:
    s = socket.socket()
    s.settimeout(2)
    print(s.connect_ex(address))
""")  # fmt: skip
    assert all(code != "0" for code in report.split())


def test_interrupt_then_continue(sandbox):
    with pytest.raises(CallTimeout):
        sandbox.run("import time\nwhile True:\n    time.sleep(0.01)", time.monotonic() + 60, 1.0)
    assert run(sandbox, "print('still here')") == "still here\n"


def test_memory_limit_raises_memory_error(sandbox):
    assert "MemoryError" in run(sandbox, "import numpy as np\nx = np.empty(2**30)  # 8 GB")


def test_death_and_deadline_leave_nothing_behind():
    workdir = Path(tempfile.mkdtemp(prefix="ag-t", dir="/tmp"))
    uid = UID_BASE + SLOT + 1
    with Sandbox(workdir, SLOT + 1, Limits()) as box:
        box.start(time.monotonic() + 120)
        run(box, "import subprocess, os\nsubprocess.Popen(['sleep', '1000'])\nif os.fork() == 0:\n"
                 "    os.setsid()\n    import time\n    time.sleep(1000)")  # fmt: skip
        assert subprocess.run(["pgrep", "-u", str(uid)], capture_output=True).stdout.count(b"\n") >= 3
        with pytest.raises(KernelDied):
            box.run("import os\nos._exit(1)", time.monotonic() + 60, 60)
    assert subprocess.run(["pgrep", "-u", str(uid)], capture_output=True).returncode == 1  # no process left
    with Sandbox(workdir, SLOT + 1, Limits()) as box:
        box.start(time.monotonic() + 120)
        with pytest.raises(NotebookTimeout):
            box.run("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
                    time.monotonic() + 3, None)  # fmt: skip
    assert subprocess.run(["pgrep", "-u", str(uid)], capture_output=True).returncode == 1
    assert not list(workdir.iterdir())
    workdir.rmdir()


FORK_BOMB = """
import os, time
children = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        children += 1
except OSError as exc:
    print(children, exc.errno)
"""


def test_a_fork_bomb_leaves_the_next_sandbox_of_its_slot_its_processes():
    """A sandbox that holds every process its limit allows does not starve the next sandbox of the same slot
    (same uid: a worker's spare starts while the current submission runs). The spare starts, runs threads
    and answers at once; before, the uid's RLIMIT_NPROC was one sandbox's, shared by both."""
    assert SANDBOXES_PER_UID >= SparePool.DEPTH + 2, "the grading sandbox, its spares and one being killed"
    workdir = Path(tempfile.mkdtemp(prefix="ag-t", dir="/tmp"))
    limits = Limits(processes=48)
    with Sandbox(workdir, SLOT + 2, limits, name="bomb") as bomb:
        bomb.start(time.monotonic() + 120)
        children = int(run(bomb, FORK_BOMB).split()[0])
        assert children >= 30, f"the fork bomb made only {children} processes: it did not reach the limit"
        with Sandbox(workdir, SLOT + 2, limits, name="next") as spare:
            started = time.monotonic()
            spare.start(time.monotonic() + 60)
            report = run(
                spare,
                "import threading\nts = [threading.Thread(target=sum, args=([1],)) for _ in range(8)]\n"
                "[t.start() for t in ts]; [t.join() for t in ts]\nprint('threads ran')",
                limit=30,
            )
            seconds = time.monotonic() - started
    assert report.strip() == "threads ran", f"the spare beside a fork bomb could not run threads: {report!r}"
    assert seconds < 30, f"the spare beside a fork bomb took {seconds:.0f} s to start and run a cell"
    shutil.rmtree(workdir, ignore_errors=True)


ONE_COPY = """
import os, time
child = os.fork()
if child:
    for _ in range(300):
        if os.waitpid(child, os.WNOHANG)[0]:
            print("the copy ended with its cell")
            break
        time.sleep(0.1)
    else:
        print("the copy is still alive after 30 s")
"""


def processes_of(uid: int) -> int:
    """The live processes of ``uid`` (a copy that ended stays a zombie until the kernel waits for it)."""
    states = subprocess.run(["ps", "-o", "stat=", "-u", str(uid)], capture_output=True, text=True).stdout.split()
    return sum(not state.startswith("Z") for state in states)


def test_a_fork_bombs_copies_end_with_their_cell():
    """With the grader's agent installed, every copy a fork bomb makes of the kernel ends once its fork fails
    (its traceback ends it) instead of staying in IPython until the sandbox closes: the live processes of
    the slot fall back to the kernel's own, the kernel answers the next cell, and a copy forked during one of
    the grader's calls does not answer it. Before, about 50 copies stayed, and how long the bomb's cell
    took depended on the machine's load (its grade too)."""
    workdir = Path(tempfile.mkdtemp(prefix="ag-t", dir="/tmp"))
    uid = UID_BASE + SLOT + 3
    with Sandbox(workdir, SLOT + 3, Limits(processes=48), name="forks") as box:
        box.start(time.monotonic() + 120)
        installed = box.run(startup.INSTALL_AGENT, time.monotonic() + 60, 60, silent=True)
        assert (installed.reply or {}).get("status") == "ok", f"the agent was not installed: {installed.outputs}"
        alone = processes_of(uid)
        report = run(box, "import os\nwhile True:\n    os.fork()")
        assert "BlockingIOError" in report, f"the fork bomb did not reach the sandbox's limit: {report!r}"
        deadline = time.monotonic() + 60  # not a speed target: the copies end as soon as they get the CPU
        while processes_of(uid) > alone and time.monotonic() < deadline:
            time.sleep(0.2)
        left = processes_of(uid)
        assert left <= alone, f"{left - alone} copies of the kernel are still alive after its fork bomb (expected 0)"
        assert run(box, "print('alive')") == "alive\n"
        assert run(box, ONE_COPY) == "the copy ended with its cell\n", "a forked copy of the kernel outlived its cell"
    shutil.rmtree(workdir, ignore_errors=True)


def test_no_way_back_to_the_host_file_system(sandbox):
    """No capability to chroot, no user namespace to get one, and the host's root is not even mounted."""
    report = run(sandbox, """
import os, subprocess
try:
    os.chroot('/tmp')
    print('CHROOTED')
except OSError as exc:
    print('chroot', exc.errno)
r = subprocess.run(['unshare', '--user', '--map-root-user', 'true'], capture_output=True, text=True)
print('userns', r.returncode)
mounts = open('/proc/self/mountinfo').read().splitlines()
print('host root mounted', any(line.split()[3] == '/' and line.split()[4] == '/' and 'tmpfs' not in line
                               for line in mounts))
""")  # fmt: skip
    assert "CHROOTED" not in report and "chroot 1" in report
    assert "userns 0" not in report
    assert "host root mounted False" in report, report


@pytest.mark.skipif(
    not Path("/usr/bin/python3").exists() or not shutil.which("runuser"), reason="needs runuser and Debian's python3"
)
def test_a_real_unprivileged_user_is_refused_with_the_reason():
    """As the user nobody (Debian's own python3: the venv's interpreter lives under /root), the grader's
    pre-flight check refuses to grade without root and says how to proceed."""
    code = (
        f"import sys; sys.path.insert(0, {str(course.ROOT)!r}); "
        "from autograder.grading.jail import sandbox_problem; print(sandbox_problem())"
    )
    result = subprocess.run(
        ["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "needs root" in result.stdout and "--unsafe-no-sandbox" in result.stdout, result.stdout
