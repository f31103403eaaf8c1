"""Where the CPU of grading one submission goes (a script, not a test; run as root, cgroup v1).

Grades ``--count`` honest submissions (scripts/benchmark_grader.py's) one after another in this
process, as one ``--jobs 1`` worker does (its spare sandboxes included), and counts CPU per process
rather than machine-wide, so that other work on the machine does not enter the figures:

- each sandbox's CPU from a ``cpuacct`` cgroup of its own (the kernel and everything it ran), read
  when the sandbox is ready (its start: kernel, agent, the notebook's imports) and when it closes;
  a spare that no submission took is counted as wasted;
- the zygote's own CPU (``/proc/<pid>/stat``), where sandboxes are forked from one (``zygote.py``);
- this process (the worker's share: the plan, the tests, the proxies, the notebook written) from
  ``getrusage``, threads included, and the short-lived helpers it ran (``mount``, ``unshare``...).

    sudo .venv/bin/python scripts/grader_cpu.py [--assignment 03_attention_steps] [--count 10]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.grading import jail, runner, spares, startup  # noqa: E402
from scripts.benchmark_grader import submissions  # noqa: E402
from scripts.cpu_usage import CPUACCT, group_seconds, process_cpu, stat_fields  # noqa: E402

SANDBOXES: dict[str, dict] = {}  # cgroup name -> {"start": s, "total": s, "used": bool}


def _instrument() -> None:
    """Give every sandbox a cpuacct cgroup of its own, and note its CPU when ready and when closed."""
    init, remove, ready = jail.CGroups.__init__, jail.CGroups.kill_and_remove, startup.ready_sandbox

    def __init__(self, name, limits):
        init(self, name, limits)
        self.name, path = name, CPUACCT / name
        path.mkdir(exist_ok=True)
        self.dirs.append(path)
        SANDBOXES[name] = {"start": 0.0, "total": 0.0, "used": False}

    def kill_and_remove(self):
        if hasattr(self, "name"):
            SANDBOXES[self.name]["total"] = group_seconds(CPUACCT / self.name)
        remove(self)

    def ready_sandbox(*args, **kwargs):
        box = ready(*args, **kwargs)
        if box.cgroups is not None and hasattr(box.cgroups, "name"):
            SANDBOXES[box.cgroups.name]["start"] = group_seconds(CPUACCT / box.cgroups.name)
        return box

    jail.CGroups.__init__, jail.CGroups.kill_and_remove = __init__, kill_and_remove
    startup.ready_sandbox = runner.ready_sandbox = ready_sandbox
    run = runner._Grader.run

    def grader_run(self, plan, pool=None, prestart=0):
        take = pool.take

        def taken(key):
            box = take(key)
            if box is not None and box.cgroups is not None:
                SANDBOXES[box.cgroups.name]["used"] = True
            return box

        if pool is not None:
            pool.take = taken
        try:
            return run(self, plan, pool, prestart)
        finally:
            if self.sandbox is not None and self.sandbox.cgroups is not None:
                SANDBOXES[self.sandbox.cgroups.name]["used"] = True

    runner._Grader.run = grader_run


def _zygote_cpu() -> float:
    from autograder.grading import zygote

    return sum(process_cpu(fields) for pid in zygote.running_pids() if (fields := stat_fields(pid)))


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignment", default="03_attention_steps")
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--slot", type=int, default=20, help="sandbox slot (uid 62000 + slot): one no test uses")
    args = parser.parse_args()
    if os.geteuid() != 0 or not CPUACCT.is_dir():
        sys.exit("needs root and the cgroup v1 cpuacct hierarchy")
    _instrument()
    import numpy  # noqa: F401  (a worker imports these once, before its first submission)
    import torch

    torch.set_num_threads(1)
    notebooks = [(s, nb) for s, nb in submissions(args.assignment, args.count).items()]
    import nbformat

    options = runner.Options(timeout=600, workdir=Path(tempfile.mkdtemp(prefix="ag-cpu-", dir="/tmp")))
    pool = spares.SparePool()
    self_before, children_before = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    scores = []
    for i, (student, nb) in enumerate(notebooks):
        ahead = max(0, min(2, len(notebooks) - 1 - i))  # batch.spares_ahead for --jobs 1 on 2 cores
        result = runner.grade(student, nbformat.writes(nb).encode(), args.assignment, options, args.slot,
                              prestart=ahead, spares=pool)  # fmt: skip
        scores.append(result.score)
    wall = time.monotonic() - started
    zygote_cpu = _zygote_cpu()
    pool.close()
    time.sleep(0.5)
    n = len(notebooks)
    grader, helpers = _cpu(resource.RUSAGE_SELF) - self_before, _cpu(resource.RUSAGE_CHILDREN) - children_before
    used = [s for s in SANDBOXES.values() if s["used"]]
    wasted = [s for s in SANDBOXES.values() if not s["used"]]
    start = sum(s["start"] for s in used)
    after = sum(s["total"] - s["start"] for s in used)
    waste = sum(s["total"] for s in wasted)
    total = grader + helpers + start + after + waste + zygote_cpu
    print(f"{n} submissions of {args.assignment}, scores {scores}; wall {wall:.1f} s; "
          f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    rows = [
        ("sandbox start (kernel, agent, imports)", start),
        ("the student's cells and the calls, in the kernel", after),
        (f"spares started and never used ({len(wasted)})", waste),
        ("the zygote (its imports, its forks)", zygote_cpu),
        ("grader process (plan, tests, proxies, notebook)", grader),
        ("helper processes (mount, umount, unshare, sh)", helpers),
        ("total", total),
    ]
    for label, seconds in rows:
        print(f"  {label:<52} {seconds:7.2f} CPU-s  {seconds / n:6.2f} per submission")
    os.rmdir(options.workdir) if not any(options.workdir.iterdir()) else None
    return 0


if __name__ == "__main__":
    sys.exit(main())
