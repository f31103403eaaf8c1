"""The course's command line: ``python -m autograder COMMAND``.

authoring (autograder/authoring/):
  generate   write chapters/ (student notebooks) and autograder/reference/ from solutions/
  check      grade instructor and student notebooks with the class grader (no sandbox): the
             reference must pass every test cell and the untouched student notebook fail every one
  book       build the student and instructor editions of the book (warnings are errors)
grading (autograder/grading/):
  grade      grade a class's submissions in sandboxes: grades.csv, details.csv, feedback
             (see autograder/GRADING.md)
  dask-certs make the certificates of a Dask grading cluster (grade --scheduler --tls DIR)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder import course


def _assignments(selected: list[str] | None) -> list[str]:
    known = course.assignments()
    unknown = sorted(set(selected or []) - set(known))
    if unknown:
        sys.exit(f"unknown assignment(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return selected or known


def cmd_generate(args) -> int:
    from autograder.authoring.generate import generate_student_notebooks
    from autograder.authoring.reference_export import write_reference

    assignments = _assignments(args.assignment)
    for assignment in assignments:
        write_reference(assignment)
        print(f"wrote {course.reference_module_path(assignment).relative_to(course.ROOT)}")
    generate_student_notebooks(assignments, course.CHAPTERS)
    for assignment in assignments:
        print(f"wrote {course.student_notebook(assignment).relative_to(course.ROOT)}")
    return 0


def cmd_check(args) -> int:
    from autograder.authoring.check import errors_outside_tests, grade_all, grade_through_boundary

    failures = 0
    assignments = _assignments(args.assignment)
    grade_all(
        [(path, a) for a in assignments for path in (course.solution_notebook(a), course.student_notebook(a))
         if path.exists()]
    )  # fmt: skip
    for assignment in assignments:
        for label, path, want_full in (
            ("reference", course.solution_notebook(assignment), True),
            ("student stub", course.student_notebook(assignment), False),
        ):
            print(f"{assignment} ({label}, through the grader's boundary):")
            if not path.exists() or not course.student_notebook(assignment).exists():
                failures += 1
                print(f"  FAIL missing: {path.relative_to(course.ROOT)} (run generate)")
                continue
            graded = grade_through_boundary(path, assignment)
            if not graded.cells or graded.status != "graded":
                failures += 1
                print(f"  FAIL not graded: {graded.status}")
            for result in graded.cells:
                ok = result.score == result.max_score if want_full else result.score == 0
                failures += not ok
                mark = "ok  " if ok else "FAIL"
                print(f"  {mark} {result.grade_id:<32} {result.score:g}/{result.max_score:g} {result.reason}")
            if want_full:
                for problem in errors_outside_tests(graded):
                    failures += 1
                    print(f"  FAIL {problem}")
    print("all checks passed" if not failures else f"{failures} check(s) failed")
    return 1 if failures else 0


def cmd_book(args) -> int:
    from concurrent.futures import ThreadPoolExecutor

    from autograder.authoring.book import build
    from autograder.authoring.check import grade_all

    # the outputs of both editions come from the instructor notebooks' graded runs: all at once first
    grade_all([(course.solution_notebook(a), a) for a in course.assignments()])
    editions = args.edition or ["student", "instructor"]
    with ThreadPoolExecutor(len(editions)) as builds:  # each build is a jupyter-book process of its own
        for edition, html in zip(editions, builds.map(build, editions)):
            print(f"built the {edition} edition: {html.relative_to(course.ROOT)}/index.html")
    return 0


def cmd_dask_certs(args) -> int:
    from autograder.grading import certs

    try:
        written = certs.make(args.folder)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {', '.join(p.name for p in written)} in {args.folder} (keep ca-key.pem off the cluster)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    generate = commands.add_parser("generate", help="write chapters/ and autograder/reference/ from solutions/")
    generate.add_argument("assignment", nargs="*", help="assignment ids (default: all)")
    generate.set_defaults(run=cmd_generate)
    check = commands.add_parser("check", help="validate every notebook both ways")
    check.add_argument("assignment", nargs="*", help="assignment ids (default: all)")
    check.set_defaults(run=cmd_check)
    book = commands.add_parser("book", help="build the books")
    book.add_argument("--edition", action="append", choices=["student", "instructor"], help="default: both")
    book.set_defaults(run=cmd_book)
    grade = commands.add_parser("grade", help="grade a class's submissions (see autograder/GRADING.md)")
    from autograder.grading import cli

    cli.add_arguments(grade)
    grade.set_defaults(run=cli.main)
    dask_certs = commands.add_parser("dask-certs", help="make the TLS files of a Dask grading cluster")
    dask_certs.add_argument("folder", type=Path, help="where ca.pem and the parties' certificates go (new)")
    dask_certs.set_defaults(run=cmd_dask_certs)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
