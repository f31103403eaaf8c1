"""Machinery for tests/test_hub_end_to_end.py: what the machine needs, the hub's software (cached),
the processes it starts, local users. The hub itself and the HTTP calls that drive it are in
tests/hub_server.py; the browser's screenshots in tests/hub_screenshots.py.

Everything here is bounded in time, binds to 127.0.0.1 only, and undoes what it did: users
made here carry a GECOS marker with the pid of the pytest process that made them, so a later
run removes what a killed run left behind (and never what a live run is using).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from autograder import course

DEPLOY = course.ROOT / "deploy"
COURSE_ID = "attention-step-by-step"
INSTRUCTORS_GROUP = f"formgrade-{COURSE_ID}"
SYSTEM_PYTHON = Path("/usr/bin/python3")
CHROMIUM = Path("/usr/bin/chromium")
# World-readable: the user servers run the cached venv as the test's users.
CACHE_ROOT = Path("/var/cache/attention-step-by-step")
MARK = "attention-hub-e2e"  # GECOS comment of users made here, and prefix of work folders
WORK_PARENT = Path("/tmp")


class NotRunnable(Exception):
    """The machine cannot run the end-to-end test (reason in the message)."""


# --- prerequisites ------------------------------------------------------------------------------
def check_machine() -> None:
    """Raise NotRunnable unless this machine has what the test needs (installing python3-venv
    from Debian's archive when only that is missing)."""
    missing = [tool for tool in ("useradd", "userdel", "npm", "node") if shutil.which(tool) is None]
    if missing:
        raise NotRunnable(f"missing {', '.join(missing)} (useradd/userdel from passwd, node and npm from Debian)")
    if not SYSTEM_PYTHON.exists():
        raise NotRunnable(f"{SYSTEM_PYTHON} is missing: the user servers need a Python outside /root")
    if not _system_venv_works() and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, timeout=300)
        subprocess.run(["apt-get", "install", "-y", "-qq", "python3-venv"], env=env, capture_output=True, timeout=300)
    if not _system_venv_works():
        raise NotRunnable(f"{SYSTEM_PYTHON} cannot make a venv (apt-get install python3-venv)")
    if not CHROMIUM.exists():
        raise NotRunnable(f"{CHROMIUM} is missing for the screenshots (apt-get install chromium)")


def _system_venv_works() -> bool:
    done = subprocess.run([str(SYSTEM_PYTHON), "-c", "import ensurepip, venv"], capture_output=True, timeout=60)
    return done.returncode == 0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- the hub's software, cached by what it is made from ----------------------------------------
def software_digest() -> str:
    """What the cached prefix is made from: the pins (Python and npm) and the interpreter.
    (install.sh itself reinstalls the course package in place when only that changed.)"""
    digest = hashlib.sha256()
    for path in (DEPLOY / name for name in ("requirements-hub.txt", "package.json", "package-lock.json")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    version = subprocess.run([str(SYSTEM_PYTHON), "--version"], capture_output=True, text=True, timeout=60)
    digest.update(version.stdout.encode())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def hub_software(timeout: float = 900):
    """Yield (prefix, already_installed) for the current deploy/ pins: a prefix with venv/ and
    npm/ made by deploy/install.sh, kept in CACHE_ROOT for later runs. A shared lock is held
    while the prefix is in use, so that another run never rebuilds or prunes it meanwhile;
    prefixes of older pins that nobody uses are removed."""
    CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    CACHE_ROOT.chmod(0o755)
    prefix = CACHE_ROOT / f"hub-{software_digest()}"
    with open(CACHE_ROOT / f"{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cached = (prefix / ".complete").exists()
        if not cached:
            shutil.rmtree(prefix, ignore_errors=True)
        done = subprocess.run(
            ["bash", str(DEPLOY / "install.sh"), "--software-only", "--prefix", str(prefix)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise RuntimeError(f"deploy/install.sh failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        (prefix / ".complete").write_text(time.strftime("%Y-%m-%d %H:%M:%S\n"))
        fcntl.flock(lock, fcntl.LOCK_SH)
        _prune_cache(keep=prefix)
        yield prefix, cached


def _prune_cache(keep: Path) -> None:
    for other in CACHE_ROOT.glob("hub-*.lock"):
        folder = other.with_suffix("")
        if folder == keep:
            continue
        with open(other) as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # in use by another run
            shutil.rmtree(folder, ignore_errors=True)
            other.unlink(missing_ok=True)


# --- processes ----------------------------------------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _processes() -> list[tuple[int, int, int]]:
    """(pid, parent pid, uid) of every process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            uid = entry.stat().st_uid
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        found.append((int(entry.name), ppid, uid))
    return found


def descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, ppid, _ in _processes():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def kill_pids(pids, grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL whatever is left after ``grace`` seconds."""
    pids = {pid for pid in pids if pid != os.getpid()}
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.2)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def processes_of(uid: int) -> set[int]:
    return {pid for pid, _, owner in _processes() if owner == uid}


def processes_mentioning(text: str) -> set[int]:
    """Processes whose command line contains ``text`` (a work folder of this harness)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.add(int(entry.name))
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
    return found


# --- local users --------------------------------------------------------------------------------
def create_user(name: str) -> pwd.struct_passwd:
    """A local user with a private home (mode 700: useradd's default here is 755)."""
    subprocess.run(
        ["useradd", "--create-home", "--shell", "/bin/bash", "--comment", f"{MARK} pid={os.getpid()}", name],
        check=True,
        capture_output=True,
        timeout=60,
    )
    entry = pwd.getpwnam(name)
    os.chmod(entry.pw_dir, 0o700)
    return entry


def delete_user(name: str) -> None:
    """Kill the user's processes (by pid), then remove the user, their group and their home."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return
    for _ in range(3):
        kill_pids(processes_of(entry.pw_uid), grace=5)
        subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60)
        try:
            pwd.getpwnam(name)
        except KeyError:
            break
    shutil.rmtree(entry.pw_dir, ignore_errors=True)


def sweep_leftovers() -> list[str]:
    """Remove what runs of this harness left behind when their pytest process was killed
    before its cleanup: processes started from CACHE_ROOT whose parent is neither another such
    process nor a pytest process (those of a live run all descend from its pytest), users
    whose creating pytest process is gone, and their work folders. Returns what was removed."""
    removed = []
    for _ in range(3):  # a stopped hub's children are orphaned in turn
        ours = processes_mentioning(str(CACHE_ROOT))
        live_runs = processes_mentioning("pytest")
        orphans = {pid for pid, ppid, _ in _processes() if pid in ours and ppid not in ours | live_runs}
        if not orphans:
            break
        kill_pids(orphans)
        removed += [f"process {pid}" for pid in sorted(orphans)]
    for entry in pwd.getpwall():
        match = re.fullmatch(rf"{MARK} pid=(\d+)", entry.pw_gecos)
        if match and not _alive(int(match.group(1))):
            delete_user(entry.pw_name)
            removed.append(f"user {entry.pw_name}")
    for folder in WORK_PARENT.glob(f"{MARK}-*"):
        match = re.match(rf"{MARK}-(\d+)-", folder.name)
        if match and not _alive(int(match.group(1))):
            kill_pids(processes_mentioning(str(folder)))
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(f"folder {folder}")
    return removed


def work_folder() -> Path:
    """A fresh folder under /tmp that the test's users can traverse (mode 755)."""
    folder = Path(tempfile.mkdtemp(prefix=f"{MARK}-{os.getpid()}-", dir=WORK_PARENT))
    folder.chmod(0o755)
    return folder


def run_as(user: str, *command: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run a command as ``user`` (with their own groups), from their home."""
    entry = pwd.getpwnam(user)
    return subprocess.run(
        list(command),
        user=entry.pw_uid,
        group=entry.pw_gid,
        extra_groups=[],
        cwd=entry.pw_dir,
        env={"HOME": entry.pw_dir, "USER": user, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        capture_output=True,  # bytes: some of what is read is binary (the gradebook)
        timeout=timeout,
    )
