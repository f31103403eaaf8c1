"""The class grader at scale: a generated class of chapter-03 submissions graded three ways (a script, not a test).

The class (scripts/class_mix.py, deterministic for ``--count`` and ``--seed``): 55% honest, 25% with
typical wrong answers (chapter 03's table in tests/wrong_answers/), 10% broken (invalid JSON, empty
files, cells deleted, a kernel killed, an infinite loop that ignores the interrupt), 10% hostile (the
grader's tests' zoo, tests/grader_zoo.py). It is graded by

1. ``python -m autograder grade ... --jobs 1``;
2. ``python -m autograder grade ... --jobs 2``;
3. ``python -m autograder grade ... --scheduler ADDRESS --tls DIR`` through a Dask cluster on this
   machine (``autograder.grading.engine.local_cluster``: a scheduler and ``--workers`` workers as
   processes of their own on 127.0.0.1, mutual TLS), started before and not timed;

each with a gradebook and OUT of its own, the same ``--timeout``, ``--call-timeout`` and ``--memory``.
It prints, and writes to ``--out`` (JSON, with the command, the date, the machine's cores and load):

- each run's wall time, the machine's busy CPU meanwhile (/proc/stat, other work included, as
  scripts/benchmark_grader.py measures it), the grader's own CPU (the coordinator's rusage and its
  descendants', the Dask cluster's processes; scripts/class_measure.py) and submissions per CPU-minute
  on both;
- peak memory: the coordinator's, the largest grading worker's, a sandboxed kernel's, a sandbox's
  memory cgroup's;
- the projection for ``--project`` submissions on N workers (:func:`project`: CPU-seconds per submission
  on the workers over their cores, against the coordinator's share, measured apart: its CPU in the run
  less its start on an empty class);
- whether grades.csv and details.csv are identical across the runs (exit status 1 when they are not);
- with ``--nbgrader N``: scripts/benchmark_grader.py's comparison on N honest submissions, plain
  ``nbgrader autograde`` against ``--jobs 1``, as machine-wide busy CPU per submission and its ratio
  (the target: at most 0.5).

Run it as root (the sandbox), where nothing else uses the sandbox's uids meanwhile; then write SPEED.md's
passage from the result file (scripts/class_passage.py):

    .venv/bin/python scripts/benchmark_class.py --count 1000 --nbgrader 40 --out autograder/benchmarks/class_03.json
    .venv/bin/python scripts/class_passage.py autograder/benchmarks/class_03.json
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import class_mix
from class_measure import (
    PeakMemory,
    children_cpu,
    descendants,
    live_tree_cpu,
    load,
    peaks,
    run_coordinator,
)
from cpu_usage import CpuGroup

ROOT = class_mix.ROOT
ASSIGNMENT = class_mix.ASSIGNMENT
RUNS = ("jobs1", "jobs2", "distributed")
# columns that may differ between runs of the same grades: none so far (every column is compared)
IGNORED_COLUMNS: dict[str, set[str]] = {"grades.csv": set(), "details.csv": set()}


def project(submissions: int, worker_cpu_s: float, coordinator_cpu_s: float, workers: int,
            cores_per_worker: int) -> dict:  # fmt: skip
    """Hours to grade ``submissions`` on ``workers`` machines of ``cores_per_worker`` cores (one grading job a core).

    The model: the workers grade in parallel, each submission costing ``worker_cpu_s`` CPU-seconds there (its
    sandbox, its cells, its tests), so they finish one every ``worker_cpu_s / (workers * cores)`` seconds; the
    coordinator handles every result on one core (the gradebook, the record, the reports), ``coordinator_cpu_s``
    each. The slower of the two sets the pace: past ``worker_cpu_s / (coordinator_cpu_s * cores)`` workers the
    coordinator is the limit and more workers do not help. Start-up, waiting and other work are left out."""
    per_worker_side = worker_cpu_s / (workers * cores_per_worker)
    pace = max(per_worker_side, coordinator_cpu_s)
    return {
        "workers": workers,
        "hours": submissions * pace / 3600,
        "limit": "coordinator" if coordinator_cpu_s >= per_worker_side else "workers",
    }


def crossover(worker_cpu_s: float, coordinator_cpu_s: float, cores_per_worker: int) -> float:
    """The number of workers past which the coordinator, not the workers, sets the pace (:func:`project`)."""
    return worker_cpu_s / (coordinator_cpu_s * cores_per_worker)


def _grade_arguments(args, folder: Path, out: Path, work: Path) -> list[str]:
    limits = ["--timeout", str(args.timeout), "--call-timeout", str(args.call_timeout), "--memory", str(args.memory)]
    return ["grade", ASSIGNMENT, str(folder), "--out", str(out), "--work", str(work), "--roster", "none", *limits]


def _per_run(figures: dict, count: int) -> dict:
    """The run's figures per submission. The grader's CPU is its cpuacct cgroup's where there is one; otherwise
    the coordinator's rusage and its reaped descendants' (and the Dask cluster's, reaped after it), which miss
    the kernels killed with their sandbox before being reaped (scripts/class_measure.py)."""
    rusage = figures["coordinator_cpu_s"] + figures["descendants_cpu_s"] + figures.get("cluster_rusage_cpu_s", 0.0)
    figures["rusage_cpu_s"] = round(rusage, 2)
    grader = figures["cgroup_cpu_s"] if figures.get("cgroup_cpu_s") is not None else rusage
    figures["grader_cpu_method"] = "cpuacct cgroup" if figures.get("cgroup_cpu_s") is not None else "rusage"
    figures["grader_cpu_s"] = round(grader, 2)
    figures["submissions_per_grader_cpu_minute"] = round(60 * count / grader, 2) if grader else None
    figures["submissions_per_busy_cpu_minute"] = round(60 * count / figures["busy_cpu_s"], 2)
    figures["grader_cpu_s_per_submission"] = round(grader / count, 3)
    figures["coordinator_cpu_s_per_submission"] = round(figures["coordinator_cpu_s"] / count, 4)
    return figures


def run_jobs(args, folder: Path, scratch: Path, jobs: int) -> dict:
    from autograder.grading import gradebook

    work, out = scratch / f"work-jobs{jobs}", scratch / f"out-jobs{jobs}"
    gradebook.ensure_assignment(work, ASSIGNMENT)  # setup: not timed
    group = CpuGroup(f"benchmark-class-{os.getpid()}-jobs{jobs}")
    try:
        with PeakMemory() as monitor:
            arguments = [*_grade_arguments(args, folder, out, work), "--jobs", str(jobs)]
            files = scratch / f"usage-jobs{jobs}.json", scratch / f"log-jobs{jobs}.txt"
            figures = run_coordinator(arguments, ROOT, *files, group)
        figures["cgroup_cpu_s"] = group.seconds()
    finally:
        group.remove()
    return _per_run({"jobs": jobs, **figures, **peaks(monitor)}, args.count) | {"out": out}


def coordinator_start(args, scratch: Path) -> float:
    """The coordinator's CPU-seconds on an empty class (its imports, the gradebook opened, empty reports): what
    each run's coordinator spends whatever the class's size, left out of its share per submission."""
    from autograder.grading import gradebook

    work, out, empty = scratch / "work-empty", scratch / "out-empty", scratch / "empty"
    empty.mkdir()
    gradebook.ensure_assignment(work, ASSIGNMENT)
    group = CpuGroup(f"benchmark-class-{os.getpid()}-empty")
    try:
        arguments = _grade_arguments(args, empty, out, work)
        figures = run_coordinator(arguments, ROOT, scratch / "usage-empty.json", scratch / "log-empty.txt", group)
    finally:
        group.remove()
    return figures["coordinator_cpu_s"]


def run_distributed(args, folder: Path, scratch: Path) -> dict:
    """The class through a Dask cluster on this machine, started first (its start not timed, not counted)."""
    from autograder.grading import gradebook
    from autograder.grading.engine import local_cluster

    work, out, tls = scratch / "work-distributed", scratch / "out-distributed", scratch / "tls"
    gradebook.ensure_assignment(work, ASSIGNMENT)  # setup: not timed
    made = subprocess.run([sys.executable, "-m", "autograder", "dask-certs", str(tls)], cwd=ROOT, capture_output=True,
                          text=True)  # fmt: skip
    if made.returncode != 0:
        sys.exit(f"python -m autograder dask-certs failed:\n{made.stdout[-2000:]}\n{made.stderr[-2000:]}")
    group = CpuGroup(f"benchmark-class-{os.getpid()}-distributed")
    reaped_before = children_cpu()
    try:
        with PeakMemory() as monitor:
            started = time.monotonic()
            with local_cluster(args.workers, tls) as address:
                start_s = time.monotonic() - started
                start_cpu = live_tree_cpu(os.getpid()) + children_cpu() - reaped_before
                for pid in descendants(os.getpid()):  # the cluster's processes: what they do from now on counts
                    group.add(pid)
                arguments = [*_grade_arguments(args, folder, out, work), "--scheduler", str(address), "--tls", str(tls)]
                figures = run_coordinator(arguments, ROOT, scratch / "usage-distributed.json",
                                          scratch / "log-distributed.txt", group)  # fmt: skip
                figures["cgroup_cpu_s"] = group.seconds()  # before the cluster's shutdown
            total = children_cpu() - reaped_before  # the cluster is down: its processes were reaped
    finally:
        group.remove()
    coordinator = figures["coordinator_cpu_s"] + figures["descendants_cpu_s"]
    figures.update(workers=args.workers, cluster_start_s=round(start_s, 2), cluster_start_cpu_s=round(start_cpu, 2),
                   cluster_rusage_cpu_s=round(max(0.0, total - start_cpu - coordinator), 2))  # fmt: skip
    return _per_run({**figures, **peaks(monitor)}, args.count) | {"out": out}


def slowest(out: Path, submissions: list, count: int = 3) -> list[dict]:
    """The submissions that took longest in a run (their records' seconds: sandbox, cells and tests, and the
    wait for a spare sandbox), with what they are: where a run's wall time went beyond its CPU."""
    kinds = {s.student: (s.kind, s.recipe) for s in submissions}
    timed = []
    for path in (out / "results").glob("*.json"):
        record = json.loads(path.read_text())
        kind, recipe = kinds.get(record["student_id"], ("?", "?"))
        timed.append({"student": record["student_id"], "kind": kind, "recipe": recipe,
                      "seconds": round(record.get("seconds") or 0.0, 2), "flags": record.get("flags", [])})  # fmt: skip
    return sorted(timed, key=lambda t: (-t["seconds"], t["student"]))[:count]


def read_rows(out: Path, name: str) -> list[dict]:
    with open(out / name, newline="", encoding="utf-8") as handle:
        rows = [{k: v for k, v in row.items() if k not in IGNORED_COLUMNS[name]} for row in csv.DictReader(handle)]
    return sorted(rows, key=lambda r: (r["student_id"], r.get("grade_id", "")))


def differences(outs: dict[str, Path]) -> list[str]:
    """Every row of grades.csv and details.csv that is not the same in all the runs' OUT folders."""
    found = []
    (first, first_out), *others = outs.items()
    for name in ("grades.csv", "details.csv"):
        expected = read_rows(first_out, name)
        for label, out in others:
            got = read_rows(out, name)
            if len(got) != len(expected):
                found.append(f"{name}: {first} has {len(expected)} rows, {label} {len(got)}")
            for a, b in zip(expected, got):
                if a != b:
                    changed = {k: (a.get(k), b.get(k)) for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
                    found.append(f"{name} {a['student_id']} {a.get('grade_id', '')}: {first} vs {label}: {changed}")
    return found


def compare_with_nbgrader(count: int, scratch: Path) -> dict:
    """scripts/benchmark_grader.py's comparison (nbgrader autograde and --jobs 1) on ``count`` honest submissions."""
    import benchmark_grader
    import nbformat

    notebooks = benchmark_grader.submissions(ASSIGNMENT, count)
    folder = scratch / "honest"
    for student, nb in notebooks.items():
        (folder / student).mkdir(parents=True)
        nbformat.write(nb, folder / student / f"{ASSIGNMENT}.ipynb")
    load_before = load()
    nb_s, nb_scores = benchmark_grader.plain_nbgrader(ASSIGNMENT, notebooks, scratch / "nbgrader")
    ours_s, our_scores = benchmark_grader.ours(ASSIGNMENT, folder, scratch / "nbgrader", 1)
    nb_busy, ours_busy = benchmark_grader.BUSY[-2:]
    own = getattr(benchmark_grader, "OWN", [None, None])[-2:]  # each command's own processes' CPU, where measured
    mine = {}
    if None not in own:
        mine = {"nbgrader_own_cpu_s_per_submission": round(own[0] / count, 2),
                "jobs1_own_cpu_s_per_submission": round(own[1] / count, 2),
                "own_cpu_ratio": round(own[1] / own[0], 3)}  # fmt: skip
    return {
        **mine,
        "count": count,
        "nbgrader_wall_s": round(nb_s, 2),
        "jobs1_wall_s": round(ours_s, 2),
        "nbgrader_busy_cpu_s_per_submission": round(nb_busy / count, 2),
        "jobs1_busy_cpu_s_per_submission": round(ours_busy / count, 2),
        "cpu_ratio": round(ours_busy / nb_busy, 3),
        "wall_ratio": round(ours_s / nb_s, 3),
        "scores_agree": all(nb_scores[s] == our_scores[s] for s in notebooks),
        "load_before": load_before,
        "load_after": load(),
    }


def projection(runs: dict, submissions: int, workers: list[int], cores: int, coordinator_start_s: float) -> dict:
    """:func:`project` from the distributed run (else --jobs 2, else --jobs 1): the workers' CPU per submission is
    the grader's less the coordinator's; the coordinator's is its CPU less its start on an empty class."""
    basis = "distributed" if "wall_s" in runs.get("distributed", {}) else "jobs2" if "jobs2" in runs else "jobs1"
    run = runs[basis]
    count = run["count"]
    worker_cpu = (run["grader_cpu_s"] - run["coordinator_cpu_s"]) / count
    coordinator_cpu = max(0.0, run["coordinator_cpu_s"] - coordinator_start_s) / count
    return {
        "basis": basis,
        "coordinator_start_cpu_s": coordinator_start_s,
        "submissions": submissions,
        "cores_per_worker": cores,
        "worker_cpu_s_per_submission": round(worker_cpu, 3),
        "coordinator_cpu_s_per_submission": round(coordinator_cpu, 4),
        "coordinator_limit_workers": round(crossover(worker_cpu, coordinator_cpu, cores), 1),
        "by_workers": [
            {**p, "hours": round(p["hours"], 3)}
            for p in (project(submissions, worker_cpu, coordinator_cpu, n, cores) for n in workers)
        ],
    }


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _mb(value) -> str:
    return "-" if value is None else f"{value:.0f}"


def show(result: dict) -> None:
    mix = result["mix"]["kind_counts"]
    print(f"\n{result['count']} submissions of {ASSIGNMENT} ({', '.join(f'{n} {k}' for k, n in mix.items())}), "
          f"seed {result['seed']}, on {result['machine']['cores']} cores")  # fmt: skip
    print(f"{'run':<13}{'wall s':>8}{'busy CPU s':>11}{'grader CPU s':>13}{'coord. CPU s':>13}{'subs/CPU-min':>13}"
          f"{'subs/busy-min':>14}   peak MB: coord. worker kernel cgroup")  # fmt: skip
    for label, run in result["runs"].items():
        print(f"{label:<13}{run['wall_s']:>8.1f}{run['busy_cpu_s']:>11.1f}{run['grader_cpu_s']:>13.1f}"
              f"{run['coordinator_cpu_s']:>13.1f}{run['submissions_per_grader_cpu_minute']:>13.2f}"
              f"{run['submissions_per_busy_cpu_minute']:>14.2f}   {_mb(run['coordinator_peak_rss_mb']):>13} "
              f"{_mb(run['worker_peak_rss_mb']):>6} {_mb(run['kernel_peak_rss_mb']):>6} "
              f"{_mb(run['sandbox_cgroup_peak_mb']):>6}")  # fmt: skip
        print(f"{'':<13}slowest: " + ", ".join(f"{t['student']} ({t['recipe']}) {t['seconds']:.1f} s"
                                                 for t in run["slowest"]))  # fmt: skip
        if "cluster_start_s" in run:
            print(
                f"{'':<13}(cluster of {run['workers']} workers started in {run['cluster_start_s']:.1f} s, "
                f"{run['cluster_start_cpu_s']:.1f} CPU-s, not timed nor counted)"
            )
    p = result["projection"]
    print(f"\nprojection for {p['submissions']:,} submissions ({p['basis']} run: {p['worker_cpu_s_per_submission']} "
          f"CPU-s per submission on the workers, {p['coordinator_cpu_s_per_submission']} on the coordinator "
          f"after its start, {p['coordinator_start_cpu_s']} CPU-s; "
          f"{p['cores_per_worker']} cores per worker; the coordinator is the limit past "
          f"{p['coordinator_limit_workers']} workers):")  # fmt: skip
    for row in p["by_workers"]:
        print(f"  {row['workers']:>4} workers: {row['hours']:8.2f} h  ({row['limit']} the limit)")
    if "versus_nbgrader" in result:
        n = result["versus_nbgrader"]
        verdict = "ok" if n["cpu_ratio"] <= 0.5 else "MISSED"
        print(f"\nnbgrader on {n['count']} honest submissions: {n['nbgrader_busy_cpu_s_per_submission']} busy "
              f"CPU-s per submission, --jobs 1 {n['jobs1_busy_cpu_s_per_submission']}: ratio {n['cpu_ratio']} "
              f"(target <= 0.5: {verdict}); scores agree: {n['scores_agree']}")  # fmt: skip
    print(
        f"\ngrades.csv and details.csv identical across {', '.join(result['compared'])}: {result['grades_identical']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000, help="submissions in the class (default 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", default=",".join(RUNS), help=f"which runs, of {','.join(RUNS)} (default: all)")
    parser.add_argument("--workers", type=int, default=2, help="Dask workers of the distributed run (default 2)")
    parser.add_argument("--timeout", type=float, default=300, help="--timeout of every run (default 300)")
    parser.add_argument("--call-timeout", type=float, default=10, help="--call-timeout of every run (default 10)")
    parser.add_argument("--memory", type=int, default=4096, help="--memory of every run (default 4096)")
    parser.add_argument("--nbgrader", type=int, default=0, help="also compare with nbgrader on N honest submissions")
    parser.add_argument("--project", type=int, default=10_000, help="submissions to project for (default 10000)")
    parser.add_argument("--project-workers", default="1,2,4,8,16,32,64,128")
    parser.add_argument("--cores-per-worker", type=int, default=2, help="for the projection (default 2)")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "benchmark_class.json", help="the result file")
    args = parser.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    runs = [r for r in args.runs.split(",") if r]
    if set(runs) - set(RUNS) or not runs:
        parser.error(f"--runs takes some of {','.join(RUNS)}")
    submissions = class_mix.generate(args.count, args.seed)
    mix = class_mix.summary(submissions)
    result = {
        "made_by": shlex.join([_relative(Path(sys.executable)), _relative(Path(__file__)), *given]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cores": os.cpu_count(), "platform": platform.platform(), "load_before": load()},
        "assignment": ASSIGNMENT, "count": args.count, "seed": args.seed, "mix": mix,
        "options": {"timeout": args.timeout, "call_timeout": args.call_timeout, "memory_mb": args.memory},
        "runs": {},
    }  # fmt: skip
    print(f"{args.count} submissions ({mix['kind_counts']}) on {os.cpu_count()} cores, load {load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="benchmark-class-") as tmp:
        scratch = Path(tmp)
        folder = scratch / "submissions"
        class_mix.write(folder, submissions)
        result["coordinator_start_cpu_s"] = coordinator_start(args, scratch)
        outs = {}
        for label in runs:
            jobs = {"jobs1": 1, "jobs2": 2}.get(label)
            run = run_jobs(args, folder, scratch, jobs) if jobs else run_distributed(args, folder, scratch)
            run["count"] = args.count
            outs[label] = run.pop("out")
            run["slowest"] = slowest(outs[label], submissions)
            result["runs"][label] = run
            print(f"{label}: {run['wall_s']:.1f} s, grader {run['grader_cpu_s']:.1f} CPU-s "
                  f"(exit status {run['exit_status']})", flush=True)  # fmt: skip
        if not outs:
            sys.exit("no run graded the class")
        problems = differences(outs) if len(outs) > 1 else []
        statuses = [row["status"] for row in read_rows(next(iter(outs.values())), "grades.csv")]
        result["statuses"] = {s: statuses.count(s) for s in sorted(set(statuses))}
        if args.nbgrader:
            result["versus_nbgrader"] = compare_with_nbgrader(args.nbgrader, scratch)
    result["compared"] = list(outs)
    result["grades_identical"] = not problems
    result["differences"] = problems[:50]
    result["machine"]["load_after"] = load()
    workers = [int(n) for n in args.project_workers.split(",")]
    start = result["coordinator_start_cpu_s"]
    result["projection"] = projection(result["runs"], args.project, workers, args.cores_per_worker, start)
    show(result)
    for line in problems[:20]:
        print(f"  DIFFERS {line}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0 if result["grades_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
