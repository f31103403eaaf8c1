"""Benchmark the class grader against plain nbgrader (a script, not a test).

Grades the same set of submissions of one chapter three ways and checks that the scores agree:

1. ``nbgrader autograde`` in a scratch course (as tests/test_nbgrader_end_to_end.py sets one up);
2. ``python -m autograder grade ... --jobs 1``;
3. ``python -m autograder grade ... --jobs 2``.

The submissions are honest: every combination of finished and unfinished exercises that the
count asks for (the reference answers for some exercises, the stub for the others). Setup
(generating the assignment, creating the gradebooks) is not timed; each timed step is the one
command an instructor would run. Targets on a 2-core machine: --jobs 1 at most 0.4x of
nbgrader's time, --jobs 2 at least 1.8x faster than --jobs 1.

    .venv/bin/python scripts/benchmark_grader.py [--assignment 03_attention_steps] [--count 40]
"""

from __future__ import annotations

import argparse
import copy
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))  # cpu_usage, imported also as scripts.benchmark_grader

from cpu_usage import CpuGroup, busy_seconds  # noqa: E402

from autograder import conventions, course  # noqa: E402
from autograder.grading import gradebook  # noqa: E402
from autograder.nbgrader_course import nbgrader_environment, scratch_course  # noqa: E402


def submissions(assignment: str, count: int) -> dict[str, nbformat.NotebookNode]:
    """``count`` honest notebooks: student i finished the exercises whose bit is set in i (reference answers)."""
    stub = nbformat.read(course.student_notebook(assignment), as_version=4)
    answers = {grade_id: cell.source for grade_id, cell in conventions.instructor(assignment).answers.items()}
    exercises = sorted(answers)
    result = {}
    for i in range(count):  # student 0 finished everything, student 1 nothing, the others a mix
        mask = (1 << len(exercises)) - 1 if i == 0 else 0 if i == 1 else (i * 2654435761) >> 7
        nb = copy.deepcopy(stub)
        for cell in nb.cells:
            grade_id = conventions.grade_id(cell)
            if grade_id in answers and (mask >> exercises.index(grade_id)) & 1:
                cell.source = answers[grade_id]
        result[f"student{i:03d}"] = nb
    return result


def env() -> dict:
    return nbgrader_environment()


BUSY: list[float] = []  # machine-wide busy CPU seconds during each timed command
OWN: list[float | None] = []  # CPU seconds of the command's own processes (a cpuacct cgroup), where measurable


def run(command: list[str], cwd: Path) -> float:
    group = CpuGroup(f"benchmark-{os.getpid()}-{len(OWN)}")  # the command and everything it starts
    join = (lambda: group.add(0)) if group.path else None
    busy = busy_seconds()
    started = time.monotonic()
    completed = subprocess.run(command, cwd=cwd, env=env(), capture_output=True, text=True, preexec_fn=join)
    seconds = time.monotonic() - started
    for _ in range(200):  # what the command started may take a moment to end (a zygote, kernels)
        if group.empty():
            break
        time.sleep(0.05)
    BUSY.append(busy_seconds() - busy)
    OWN.append(group.seconds())
    group.remove()
    if completed.returncode != 0:
        sys.exit(f"{' '.join(command[:4])} failed:\n{completed.stdout[-2000:]}\n{completed.stderr[-2000:]}")
    return seconds


def plain_nbgrader(assignment: str, notebooks: dict, scratch: Path) -> tuple[float, dict[str, float]]:
    course_dir = scratch_course(assignment, scratch / "course")
    nbgrader = str(Path(sys.executable).parent / "nbgrader")
    run([nbgrader, "generate_assignment", assignment, "--force"], course_dir)  # setup: not timed
    for student, nb in notebooks.items():
        target = course_dir / "submitted" / student / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(nb, target)
    seconds = run([nbgrader, "autograde", assignment, "--create"], course_dir)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        scores = {s: gb.find_submission(assignment, s).code_score for s in notebooks}
    return seconds, scores


def ours(assignment: str, folder: Path, scratch: Path, jobs: int) -> tuple[float, dict[str, float]]:
    work, out = scratch / f"work-{jobs}", scratch / f"out-{jobs}"
    gradebook.ensure_assignment(work, assignment)  # setup: not timed
    command = [sys.executable, "-m", "autograder", "grade", assignment, str(folder), "--out", str(out),
               "--jobs", str(jobs), "--work", str(work)]  # fmt: skip
    seconds = run(command, ROOT)
    with open(out / "grades.csv", newline="") as handle:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    return seconds, scores


def _report(label: str, seconds: float, count: int) -> tuple[float, float | None]:
    """Print one command's time and CPU per submission; returns (machine-wide, its own processes') CPU-s each."""
    busy, own = BUSY[-1] / count, OWN[-1] / count if OWN[-1] is not None else None
    mine = f", its own processes {own:.2f}" if own is not None else ""
    print(f"  {label:<22} {seconds:7.1f} s  (machine busy {BUSY[-1] / seconds:.2f} of {os.cpu_count()} cores); "
          f"CPU-s per submission: machine-wide {busy:.2f}{mine}", flush=True)  # fmt: skip
    return busy, own


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignment", default="03_attention_steps")
    parser.add_argument("--count", type=int, default=40)
    args = parser.parse_args()
    notebooks = submissions(args.assignment, args.count)
    with tempfile.TemporaryDirectory(prefix="benchmark-") as tmp:
        scratch = Path(tmp)
        folder = scratch / "submissions"
        for student, nb in notebooks.items():
            (folder / student).mkdir(parents=True)
            nbformat.write(nb, folder / student / f"{args.assignment}.ipynb")
        print(f"{len(notebooks)} submissions of {args.assignment} on {os.cpu_count()} cores; "
              f"load average before {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
        n = len(notebooks)
        t_nb, s_nb = plain_nbgrader(args.assignment, notebooks, scratch)
        cpu_nb = _report("nbgrader autograde", t_nb, n)
        t_1, s_1 = ours(args.assignment, folder, scratch, 1)
        cpu_1 = _report("autograder --jobs 1", t_1, n)
        t_2, s_2 = ours(args.assignment, folder, scratch, 2)
        cpu_2 = _report("autograder --jobs 2", t_2, n)
    disagree = [s for s in notebooks if not (s_nb[s] == s_1[s] == s_2[s])]
    print(f"scores: {len(notebooks) - len(disagree)}/{len(notebooks)} agree across the three "
          f"(distinct totals: {sorted(set(s_nb.values()))})")  # fmt: skip
    for student in disagree:
        print(f"  DISAGREE {student}: nbgrader {s_nb[student]}, jobs 1 {s_1[student]}, jobs 2 {s_2[student]}")
    ratio_1, ratio_2 = t_1 / t_nb, t_1 / t_2
    print(f"--jobs 1 / nbgrader = {ratio_1:.2f} (target <= 0.4): {'ok' if ratio_1 <= 0.4 else 'MISSED'}")
    print(f"--jobs 1 / --jobs 2 = {ratio_2:.2f} (target >= 1.8): {'ok' if ratio_2 >= 1.8 else 'MISSED'}")
    for label, ours_cpu in (("--jobs 1", cpu_1), ("--jobs 2", cpu_2)):
        ratio = ours_cpu[0] / cpu_nb[0]
        own = f"; its own processes' {ours_cpu[1] / cpu_nb[1]:.2f}" if cpu_nb[1] and ours_cpu[1] else ""
        print(f"CPU per submission {label} / nbgrader = {ratio:.2f} machine-wide (target <= 0.5): "
              f"{'ok' if ratio <= 0.5 else 'MISSED'}{own}")  # fmt: skip
    print(f"load average after {os.getloadavg()[0]:.2f} (other work on the machine skews the ratios)")
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
