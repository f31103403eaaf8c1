"""What a grading run killed half-way (a reboot aside: SIGKILL, the OOM killer) leaves, cleaned at the next start.

Each run keeps its sandboxes' scratch folders (tmpfs mounts, Unix sockets) under a folder of its
own, ``/tmp/ag-run-*``, with an ``owner`` file naming the run's process (pid and start time, so a
reused pid is not mistaken for it). A worker whose run died exits within a second (batch.py
watches its parent). At the next start, for every such folder whose owner is gone:

- the processes that name it (a worker's zygote, ``/tmp/ag-run-zygote-*``, and what it forked:
  each sandbox's first process takes its whole pid namespace with it) are killed, the mounts
  under it unmounted and the folder removed (a zygote also ends by itself when its worker's
  socket closes);
- when there was such a folder and no other run is alive, the processes of the sandbox users
  (uid ``UID_BASE`` and up: kernels, whatever they started) are killed and the grader's empty
  cgroups (``autograder-*``) removed;
- whatever else runs, the empty cgroups of the sandbox slots no live worker holds (slots.py) are removed.

The sandbox users are the grader's alone (jail.py), so nothing else is touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from autograder.grading import slots
from autograder.grading.jail import UID_BASE

SCRATCH_PARENT = Path("/tmp")
PREFIX = "ag-run-"
OWNER = "owner"
USERS = range(UID_BASE, UID_BASE + 64)


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def claim(folder: Path) -> None:
    """Mark ``folder`` as this process's run."""
    (Path(folder) / OWNER).write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")


def _alive(folder: Path) -> bool:
    try:
        pid, started = (folder / OWNER).read_text().split()
    except (OSError, ValueError):  # no owner yet: a run starting this very moment
        return time.time() - folder.stat().st_mtime < 60
    return _start_time(int(pid)) == started


def _mounts_under(folder: Path) -> list[str]:
    points = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].replace("\\040", " ")
            if point == str(folder) or point.startswith(f"{folder}/"):
                points.append(point)
    return sorted(points, key=len, reverse=True)


def _processes_naming(folder: Path) -> list[int]:
    """Processes whose command line names ``folder`` (a sandbox's unshare and setup script)."""
    needle = f"{folder}/".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if needle in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
    return pids


def _sandbox_processes() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            uid = next(int(line.split()[1]) for line in (entry / "status").read_text().splitlines()
                       if line.startswith("Uid:"))  # fmt: skip
            if uid in USERS:
                pids.append(int(entry.name))
    return pids


def _cgroups() -> list[Path]:
    base = Path("/sys/fs/cgroup")
    found = list(base.glob("autograder-*"))
    for controller in ("memory", "pids", "cpu"):
        found += list((base / controller).glob("autograder-*"))
    return [path for path in found if path.is_dir()]


def _unheld_cgroups() -> list[str]:
    """Remove the empty cgroups of the slots no live worker holds (``autograder-<slot>-<n>``): a worker killed
    while others live (a Dask worker) leaves its sandboxes' there, which the sweep below would keep."""
    removed = []
    for path in _cgroups():
        slot = path.name.split("-")[1]
        if not slot.isdigit() or slots.held(int(slot)):
            continue
        for _ in range(20):  # a killed task leaves its cgroup a moment after it is gone from /proc
            try:
                path.rmdir()
                removed.append(f"removed cgroup {path}")
                break
            except OSError:
                time.sleep(0.05)
    return removed


def sweep() -> list[str]:
    """Clean what dead runs left; returns what was cleaned, for the log. Needs root."""
    cleaned = []
    live = False
    for folder in sorted(SCRATCH_PARENT.glob(f"{PREFIX}*")):
        if not folder.is_dir() or folder.is_symlink():
            continue
        if _alive(folder):
            live = True
            continue
        killed = _processes_naming(folder)
        for pid in killed:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if killed:
            cleaned.append(f"killed {len(killed)} process(es) of {folder}")
            time.sleep(0.2)
        for point in _mounts_under(folder):
            subprocess.run(["umount", "-l", point], check=False, capture_output=True)
            cleaned.append(f"unmounted {point}")
        shutil.rmtree(folder, ignore_errors=True)
        cleaned.append(f"removed {folder}")
    cleaned += _unheld_cgroups()
    if live or not cleaned:  # another run is alive, or no run was killed: nothing of a sandbox is stray
        return cleaned
    for attempt in range(50):
        pids = _sandbox_processes()
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if attempt == 0:
            cleaned.append(f"killed {len(pids)} process(es) of the sandbox users")
        time.sleep(0.05)
    for path in _cgroups():
        with contextlib.suppress(OSError):
            path.rmdir()
            cleaned.append(f"removed cgroup {path}")
    return cleaned
