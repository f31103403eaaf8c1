"""A generated class of chapter-03 submissions, the input of the class-scale benchmark (scripts/benchmark_class.py).

The class is deterministic for a count and a seed: the same bytes, the same student ids, in the same order.
Its mix, as fractions of the class (:data:`RECIPES`; each recipe gets at least one submission when the
class has at least as many submissions as there are recipes, the counts are rounded by largest remainder):

- **honest, 55%**: finished exercises hold the reference answers, the others the untouched stub; which
  ones as ``scripts/benchmark_grader.submissions`` chooses (the first honest student finished all, the
  second none, the others a mix);
- **wrong, 25%**: every exercise finished, one or two of them (on different exercises, drawn with the seed)
  with a typical wrong answer from chapter 03's table, ``tests/wrong_answers/ch03_attention_steps.py``
  (its ``WRONG`` list, applied to the reference answer through :meth:`wrong_answers.Variant.apply`);
- **broken, 10%**: ``invalid_json`` 2.5% (a notebook cut after 5,000 bytes), ``empty`` 1% (a file of no
  bytes), ``cells_deleted`` 2.5% (an honest notebook with two exercises' answer and visible test cells
  deleted), ``exits`` 2% and ``segfault`` 1% (a cell that kills the kernel, ``os._exit`` or a null pointer
  read, after the second exercise), ``loop_ignores_interrupt`` 1% (an infinite loop that ignores the
  interrupt: it costs the whole call timeout, so there are few);
- **hostile, 10%**: eight of the hostile submissions of the grader's tests, ``tests/grader_zoo.py``
  (``forger``, ``claims_equality``, ``escape``, ``memory_bomb``, ``fork_bomb``, ``huge_output``,
  ``edited_tests``, ``deleted_and_duplicated_tests``), 1.25% each.

The broken ones named after a zoo case (``invalid_json``, ``empty``, ``exits``, ``segfault``,
``loop_ignores_interrupt``) are the zoo's notebooks too. The cells the zoo adds get random ids
(nbformat's): here they are numbered instead (``zoo-NNN``), so that the class is the same bytes every time.
"""

from __future__ import annotations

import json
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "tests", ROOT / "scripts"):  # autograder; the zoo and wrong_answers; benchmark_grader
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import grader_zoo  # noqa: E402  (its notebook helpers: stub, _answers, _bytes)

from autograder import conventions  # noqa: E402

ASSIGNMENT = "03_attention_steps"  # the zoo's chapter
HOSTILE = ("forger", "claims_equality", "escape", "memory_bomb", "fork_bomb", "huge_output", "edited_tests",
           "deleted_and_duplicated_tests")  # fmt: skip
BROKEN_FROM_ZOO = ("invalid_json", "empty", "exits", "segfault", "loop_ignores_interrupt")

# (kind, recipe) -> fraction of the class
RECIPES: dict[tuple[str, str], float] = {
    ("honest", "honest"): 0.55,
    ("wrong", "wrong"): 0.25,
    ("broken", "invalid_json"): 0.025,
    ("broken", "empty"): 0.01,
    ("broken", "cells_deleted"): 0.025,
    ("broken", "exits"): 0.02,
    ("broken", "segfault"): 0.01,
    ("broken", "loop_ignores_interrupt"): 0.01,
    **{("hostile", name): 0.0125 for name in HOSTILE},
}
KINDS = ("honest", "wrong", "broken", "hostile")


@dataclass(frozen=True)
class Submission:
    student: str
    kind: str  # one of KINDS
    recipe: str  # a key of RECIPES' second part
    data: bytes  # the notebook file
    note: str = ""  # what was done (the wrong answers' names, the deleted exercises, the finished exercises)


def allocate(count: int, fractions: dict) -> dict:
    """How many submissions each recipe gets: ``fractions`` (summing to 1) times ``count``, rounded by largest
    remainder (ties: the recipe listed first), each recipe at least one when ``count`` allows it."""
    if count < 1:
        raise ValueError("a class has at least one submission")
    names = list(fractions)
    least = 1 if count >= len(names) else 0
    exact = {n: fractions[n] * count for n in names}
    counts = {n: max(least, math.floor(exact[n])) for n in names}
    while sum(counts.values()) < count:
        counts[max(names, key=lambda n: (exact[n] - counts[n], -names.index(n)))] += 1
    while sum(counts.values()) > count:  # the minimum of one pushed the total over: take from the largest surplus
        counts[max((n for n in names if counts[n] > least), key=lambda n: (counts[n] - exact[n], counts[n]))] -= 1
    return counts


def plan(count: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """(student id, kind, recipe) of every submission, in a seeded order."""
    counts = allocate(count, RECIPES)
    items = [key for key, n in counts.items() for _ in range(n)]
    random.Random(seed).shuffle(items)
    return [(f"s{i:04d}", kind, recipe) for i, (kind, recipe) in enumerate(items)]


def wrong_choices(rng: random.Random) -> list:
    """One or two WRONG variants of chapter 03's table, on different exercises."""
    import wrong_answers

    wrong, _ = wrong_answers.variants(ASSIGNMENT)
    first = rng.choice(wrong)
    if rng.random() < 0.5:
        return [first]
    return [first, rng.choice([v for v in wrong if v.exercise != first.exercise])]


def wrong_notebook(chosen: list) -> bytes:
    """Every exercise finished with the reference answer, the chosen variants swapped in for theirs."""
    import wrong_answers

    answers = dict(wrong_answers.chapter(ASSIGNMENT).answers)  # markers removed, as a student's cell reads
    for variant in chosen:
        answers[variant.exercise] = variant.apply(answers[variant.exercise])
    return grader_zoo._bytes(grader_zoo._answers(grader_zoo.stub(ASSIGNMENT), answers))


def cells_deleted(rng: random.Random) -> tuple[bytes, list[str]]:
    """The full reference answers, with two exercises' answer cells and visible test cells deleted."""
    exercises = list(conventions.instructor(ASSIGNMENT).exercises)
    answers = {g: c.source for g, c in conventions.instructor(ASSIGNMENT).answers.items()}
    nb = grader_zoo._answers(grader_zoo.stub(ASSIGNMENT), answers)
    gone = sorted(rng.sample(exercises, 2), key=exercises.index)
    ids = {*gone, *(f"{g}_visible" for g in gone)}
    nb.cells = [cell for cell in nb.cells if conventions.grade_id(cell) not in ids]
    return grader_zoo._bytes(nb), gone


def generate(count: int, seed: int = 0) -> list[Submission]:
    """The class: :func:`plan`'s submissions with their notebooks."""
    import benchmark_grader

    if grader_zoo.BASE != ASSIGNMENT:
        raise RuntimeError(f"the zoo's chapter is {grader_zoo.BASE}, this class is {ASSIGNMENT}")
    planned = plan(count, seed)
    zoo = grader_zoo.zoo()
    n_honest = sum(kind == "honest" for _, kind, _ in planned)
    honest = iter(benchmark_grader.submissions(ASSIGNMENT, n_honest).values())
    exercises = sorted(conventions.instructor(ASSIGNMENT).answers)  # benchmark_grader's bit order
    rng = random.Random(f"class-{seed}")
    stub_cells = grader_zoo.stub(ASSIGNMENT).cells
    stub = {conventions.grade_id(c): c.source for c in stub_cells}
    known_ids = {c.id for c in stub_cells} | {c.id for c in conventions.instructor(ASSIGNMENT).cells}
    result = []
    for student, kind, recipe in planned:
        note = ""
        if kind == "honest":
            nb = next(honest)
            data = grader_zoo._bytes(nb)
            done = [g for g in exercises if any(conventions.grade_id(c) == g and c.source != stub[g] for c in nb.cells)]
            note = f"finished {len(done)} of {len(exercises)}"
        elif kind == "wrong":
            chosen = wrong_choices(rng)
            data, note = wrong_notebook(chosen), "; ".join(f"{v.exercise}: {v.name}" for v in chosen)
        elif recipe == "cells_deleted":
            data, gone = cells_deleted(rng)
            note = f"deleted {', '.join(gone)}"
        else:
            data = _numbered_ids(zoo[recipe], known_ids)
        result.append(Submission(student, kind, recipe, data, note))
    return result


def _numbered_ids(data: bytes, known: set[str]) -> bytes:
    """The zoo's notebook with the ids of the cells it added (random) replaced by their position."""
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception:  # the broken ones: left as they are (they hold no new cell)
        return data
    for i, cell in enumerate(nb.cells):
        if cell.get("id") not in known:
            cell.id = f"zoo-{i:03d}"
    return grader_zoo._bytes(nb)


def write(folder: Path, submissions: list[Submission]) -> None:
    """One folder per student, the notebook under the assignment's name."""
    for submission in submissions:
        (folder / submission.student).mkdir(parents=True, exist_ok=True)
        (folder / submission.student / f"{ASSIGNMENT}.ipynb").write_bytes(submission.data)


def summary(submissions: list[Submission]) -> dict:
    """The mix as the result file records it: fractions asked for, counts got, per kind and per recipe."""
    by_recipe = {f"{k}/{r}": sum((s.kind, s.recipe) == (k, r) for s in submissions) for k, r in RECIPES}
    return {
        "fractions": {f"{k}/{r}": f for (k, r), f in RECIPES.items()},
        "kind_fractions": {k: round(sum(f for (kk, _), f in RECIPES.items() if kk == k), 6) for k in KINDS},
        "counts": by_recipe,
        "kind_counts": {k: sum(s.kind == k for s in submissions) for k in KINDS},
    }


if __name__ == "__main__":  # print the plan of a class: python scripts/class_mix.py [COUNT] [SEED]
    arguments = [int(a) for a in sys.argv[1:3]]
    print(json.dumps(summary(generate(*arguments or [30])), indent=1))
