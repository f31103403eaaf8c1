"""The ``grade`` subcommand of ``python -m autograder``: its arguments, and a lazy entry point.

This module stays light (no nbformat, no torch) so that ``python -m autograder --help`` and
the other subcommands start fast; the grader itself (batch.py) is imported when it runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder import course

DEFAULT_WORK = course.GRADING_WORK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("assignment", help="assignment id, e.g. 03_attention_steps")
    parser.add_argument("submissions", type=Path, help="a folder (one folder or one .ipynb per student) or a zip file")
    parser.add_argument("--out", type=Path, required=True, help="where grades.csv, details.csv and feedback/ go")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded in parallel (default 1)")
    parser.add_argument("--timeout", type=float, default=600, help="wall-clock seconds per notebook (default 600)")
    parser.add_argument("--memory", type=int, default=4096, help="memory limit per notebook in MB (default 4096)")
    parser.add_argument("--call-timeout", type=float, default=course.CELL_TIMEOUT,
                        help="seconds per cell or call before it is interrupted (default %(default)g)")  # fmt: skip
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK,
                        help="gradebook and autograded notebooks (default: _grading)")  # fmt: skip
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="run student code unsandboxed (trusted code only)")  # fmt: skip
    parser.add_argument(
        "--force",
        action="store_true",
        help="regrade every submission (by default one graded already from the same input is skipped)",
    )
    parser.add_argument(
        "--retry-failed",
        action="store_true",
        help="regrade the submissions that could not be graded (grader_error, no_notebook, ...)",
    )
    parser.add_argument(
        "--reports-only",
        action="store_true",
        help="grade nobody: write the reports again from OUT/results and the gradebook",
    )
    parser.add_argument(
        "--lms",
        choices=("auto", "none", "canvas", "moodle", "blackboard"),
        default="auto",
        help="whose download file names to read (default: detected)",
    )
    parser.add_argument(
        "--lms-id",
        choices=("name", "number"),
        default="name",
        help="a platform's student name (default) or its number as the student id",
    )
    parser.add_argument("--roster", help="the course's student ids, one a line or a CSV (default: the hub's "
                        "students.txt where installed; 'none': no roster)")  # fmt: skip
    parser.add_argument("--due", help="the due date, e.g. '2024-03-01 17:00:00 Europe/London' (default: the "
                        "gradebook's)")  # fmt: skip
    parser.add_argument("--scheduler", help="grade on the workers of this Dask scheduler, tls://HOST:PORT, instead "
                        "of --jobs local ones (autograder/GRADING.md: a class on several machines)")  # fmt: skip
    parser.add_argument("--tls", type=Path, help="with --scheduler: the folder of ca.pem, client.pem and "
                        "client-key.pem (python -m autograder dask-certs DIR)")  # fmt: skip


def main(args) -> int:
    from autograder.grading import ids
    from autograder.grading.batch import grade_class
    from autograder.grading.jail import Limits
    from autograder.grading.runner import Options

    if args.assignment not in course.assignments():
        print(f"error: unknown assignment {args.assignment}; known: {', '.join(course.assignments())}", file=sys.stderr)
        return 2
    try:
        roster = ids.read_roster(ids.roster_path(args.roster))
        if args.due:
            from autograder.grading.lateness import parse_due

            parse_due(args.due)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.reports_only:
        from autograder.grading import gradebook, rebuild

        if not (args.out / "results").is_dir():
            print(f"error: {args.out / 'results'} holds no records to make reports from", file=sys.stderr)
            return 2
        gradebook.ensure_assignment(args.work, args.assignment)
        found = rebuild.rebuild(args.out, args.work, args.assignment, roster, args.due)
        print(f"reports of {len(found)} submission(s) written again in {args.out}")
        return 0
    if not args.submissions.exists():
        print(f"error: {args.submissions} does not exist", file=sys.stderr)
        return 2
    if args.jobs < 1 or args.timeout <= 0 or args.memory < 256:
        print("error: --jobs must be >= 1, --timeout > 0 and --memory >= 256", file=sys.stderr)
        return 2
    limits = Limits(memory_mb=args.memory, cpu_s=int(args.timeout) + 60)
    options = Options(timeout=args.timeout, call_timeout=min(args.call_timeout, args.timeout), limits=limits,
                      unsafe=args.unsafe_no_sandbox)  # fmt: skip
    if args.tls is not None and args.scheduler is None:
        print("error: --tls goes with --scheduler", file=sys.stderr)
        return 2
    return grade_class(args.assignment, args.submissions, args.out, args.jobs, options, args.work, force=args.force,
                       retry_failed=args.retry_failed, lms=args.lms, id_from=args.lms_id, roster=roster,
                       due=args.due, scheduler=args.scheduler, tls=args.tls)  # fmt: skip
