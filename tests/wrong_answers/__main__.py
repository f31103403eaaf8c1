"""Print the closing table of wrong and valid answers: which visible and which hidden test catches each.

From the repository root: ``.venv/bin/python tests/wrong_answers [NN ...]`` (all chapters with a
file in tests/wrong_answers/, or only those whose number or name is given, e.g. ``02``), as
Markdown. Exit status 1 when a test passes a wrong answer or rejects a valid one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
for path in (TESTS.parent, TESTS):  # the repository (autograder) and tests/ (this package)
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from wrong_answers import HarnessError, Outcome, chapters_with_variants, run, variants, verdict  # noqa: E402

WIDTH = 150


def _cell(text: str) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= WIDTH else text[: WIDTH - 3] + "..."


def _caught(outcome: Outcome, which: str) -> str:
    result = getattr(outcome, which)
    if which == "visible" and not outcome.variant.visible and result.passed:
        return "(hidden only)"
    return "**NOT CAUGHT**" if result.passed else _cell(result.error)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="chapter numbers or names (default: every chapter with a file)")
    args = parser.parse_args(argv)
    chosen = [a for a in chapters_with_variants() if not args.chapters or any(a.startswith(c) for c in args.chapters)]
    failures = 0
    for assignment in chosen:
        start = time.perf_counter()
        wrong, valid = variants(assignment)
        print(f"\n### {assignment}\n")
        print("| exercise | wrong answer | visible test that catches it | hidden test that catches it |")
        print("|---|---|---|---|")
        for variant in wrong:
            try:
                outcome = run(assignment, variant)
            except HarnessError as error:
                failures += 1
                print(f"| {variant.exercise} | {_cell(variant.name)} | **HARNESS ERROR** {_cell(str(error))} | |")
                continue
            failures += bool(verdict("wrong", outcome))
            row = [variant.exercise, _cell(variant.name), _caught(outcome, "visible"), _caught(outcome, "hidden")]
            print("| " + " | ".join(row) + " |")
        print("\n| exercise | valid alternative | visible test | hidden test |")
        print("|---|---|---|---|")
        for variant in valid:
            try:
                outcome = run(assignment, variant)
            except HarnessError as error:
                failures += 1
                print(f"| {variant.exercise} | {_cell(variant.name)} | **HARNESS ERROR** {_cell(str(error))} | |")
                continue
            failures += bool(verdict("valid", outcome))
            cells = [_cell(r.headline) if not r.passed else "passes" for r in (outcome.visible, outcome.hidden)]
            print("| " + " | ".join([variant.exercise, _cell(variant.name), *cells]) + " |")
        print(f"\n{len(wrong)} wrong and {len(valid)} valid answers in {time.perf_counter() - start:.1f} s")
    if failures:
        print(f"\n{failures} variant(s) not judged as they should be", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
