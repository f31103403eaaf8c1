"""The exercises' tests against plausible wrong answers and valid alternative answers.

Each chapter's file in tests/wrong_answers/ lists the likeliest mistakes (``WRONG``) and other
correct ways to write each answer (``VALID``); the harness (tests/wrong_answers/__init__.py)
runs every one in this process, without a kernel, against the exercise's visible and hidden
test cells. A wrong answer must fail the hidden test, and the visible test too unless it is
marked ``visible=False``; a valid answer must pass both. ``python tests/wrong_answers`` prints
the same runs as a table.
"""

from __future__ import annotations

import re

import pytest
from wrong_answers import (
    chapters_with_variants,
    exercises,
    no_valid_alternative,
    reference_outcomes,
    run,
    unresolved_names,
    variants,
    verdict,
)

from autograder import course

# Chapters whose file in tests/wrong_answers/ is not written yet. Each chapter's author removes
# the chapter from this set when its file lands; the coordinator empties it.
NOT_YET_WRITTEN: set[str] = set()
MIN_WRONG = 3  # per exercise: the likeliest mistakes


def _id(assignment: str, kind: str, name: str, exercise: str) -> str:
    return f"{assignment[:2]}-{exercise}-{kind}-" + re.sub(r"\s+", "_", name.strip())


CASES = [
    pytest.param(assignment, kind, variant, id=_id(assignment, kind, variant.name, variant.exercise))
    for assignment in chapters_with_variants()
    for kind, listed in zip(("wrong", "valid"), variants(assignment))
    for variant in listed
]


# The items that run test cells are in the slow tier (about 3 s of CPU per exercise; the authors'
# quick loop leaves them out, `python tests/wrong_answers NN` runs a chapter's); the checks of the
# files themselves are quick.
@pytest.mark.slow
@pytest.mark.parametrize(("chapter", "kind", "variant"), CASES)
def test_answer(chapter, kind, variant):
    outcome = run(chapter, variant)
    problems = verdict(kind, outcome)
    assert not problems, (
        "\n".join(problems) + f"\n  visible test: {outcome.visible.headline}\n  hidden test: {outcome.hidden.headline}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("chapter", chapters_with_variants())
def test_the_reference_passes_here(chapter):
    """Positive control: run in this process as the harness runs the variants, the reference answers
    pass every test cell (otherwise every wrong answer would be 'caught' for nothing)."""
    failing = {
        exercise: (o.visible.headline, o.hidden.headline)
        for exercise, o in reference_outcomes(chapter).items()
        if not (o.visible.passed and o.hidden.passed)
    }
    assert not failing, f"{chapter}: the reference fails its own tests in the harness: {failing}"


@pytest.mark.parametrize("chapter", chapters_with_variants())
def test_every_exercise_has_wrong_and_valid_answers(chapter):
    wrong, valid = variants(chapter)
    names = exercises(chapter)
    unknown = sorted({v.exercise for v in wrong + valid} - set(names))
    assert not unknown, f"{chapter}: variants of exercises that do not exist: {unknown} (exercises: {names})"
    few = {e: n for e in names if (n := sum(v.exercise == e for v in wrong)) < MIN_WRONG}
    assert not few, f"{chapter}: at least {MIN_WRONG} wrong answers per exercise; these have fewer: {few}"
    excused = no_valid_alternative(chapter)
    without = [e for e in names if e not in excused and not any(v.exercise == e for v in valid)]
    assert not without, (
        f"{chapter}: no valid alternative answer for {without}: add one to VALID, or say why none exists in "
        "the chapter file's NO_VALID_ALTERNATIVE = {exercise: reason}"
    )
    for listed in (wrong, valid):
        seen = [(v.exercise, v.name) for v in listed]
        assert len(seen) == len(set(seen)), f"{chapter}: two variants share a name: {seen}"


def test_every_chapter_has_a_wrong_answers_file():
    missing = sorted(set(course.assignments()) - set(chapters_with_variants()) - NOT_YET_WRITTEN)
    assert not missing, (
        f"no tests/wrong_answers/chNN_*.py for {missing}: list each exercise's likeliest wrong answers and a valid "
        "alternative (solutions/README.md)"
    )
    stale = sorted(NOT_YET_WRITTEN & set(chapters_with_variants()))
    assert not stale, f"{stale} now have a wrong-answers file: remove them from NOT_YET_WRITTEN"


def test_test_cells_read_only_what_the_harness_provides(assignment):
    """A test cell may read the imports, the answers and what its exercise's earlier test cell defined;
    a name that only a demo cell defines would make the harness (which runs no demo) fail."""
    problems = [p for exercise in exercises(assignment) for p in unresolved_names(assignment, exercise)]
    assert not problems, "\n".join(problems)
