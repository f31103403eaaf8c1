"""The class-scale benchmark's pure parts, and the guides' figures taken from its result file.

- the generated class (scripts/class_mix.py): the counts per kind, the same class for the same seed,
  and each submission what its kind says (an honest one holds the reference or the stub; a wrong one
  a wrong answer of chapter 03's table, which its hidden test rejects; a broken one does not parse,
  lost its cells, kills its kernel or loops; a hostile one is the grader zoo's);
- the projection to a larger class (scripts/benchmark_class.py), against a hand-worked example;
- the figures SPEED.md (and README.md) quote (autograder/authoring/document_claims.py), with
  negative controls: a wrong figure and a figure typed in beside the checked ones are refused.
"""

from __future__ import annotations

import json
import sys

import nbformat
import pytest

from autograder import conventions, course
from autograder.authoring import document_claims

SCRIPTS = course.ROOT / "scripts"
RESULT = "autograder/benchmarks/class_03.json"
GUIDES = ("autograder/SPEED.md", "README.md")


@pytest.fixture(scope="module")
def scripts():
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    import benchmark_class
    import class_mix

    return class_mix, benchmark_class


@pytest.fixture(scope="module")
def klass(scripts):
    return scripts[0].generate(30, seed=0)


def test_the_mix_is_what_the_docstring_says(scripts):
    class_mix = scripts[0]
    counts = class_mix.allocate(1000, class_mix.RECIPES)
    by_kind = {k: sum(n for (kind, _), n in counts.items() if kind == k) for k in class_mix.KINDS}
    assert by_kind == {"honest": 550, "wrong": 250, "broken": 100, "hostile": 100}
    assert counts[("broken", "loop_ignores_interrupt")] == 10 and counts[("broken", "invalid_json")] == 25
    assert sum(class_mix.RECIPES.values()) == pytest.approx(1.0)
    small = class_mix.allocate(30, class_mix.RECIPES)
    assert sum(small.values()) == 30 and min(small.values()) == 1, "every recipe at least once in a class of 30"
    assert sum(class_mix.allocate(5, class_mix.RECIPES).values()) == 5


def test_the_same_seed_gives_the_same_class(scripts, klass):
    class_mix = scripts[0]
    again = class_mix.generate(30, seed=0)
    assert again == klass  # the same students, kinds, recipes and bytes
    assert class_mix.plan(30, seed=1) != class_mix.plan(30, seed=0)
    assert len({s.student for s in klass}) == 30


def _answers(data: bytes) -> dict[str, str]:
    nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    return {conventions.grade_id(c): c.source for c in nb.cells if conventions.grade_id(c)}


def test_each_submission_is_what_its_kind_says(scripts, klass):
    import grader_zoo
    import wrong_answers

    class_mix = scripts[0]
    zoo = grader_zoo.zoo()
    instructor = conventions.instructor(class_mix.ASSIGNMENT)
    exercises = list(instructor.exercises)
    stub = _answers(course.student_notebook(class_mix.ASSIGNMENT).read_bytes())
    reference = {g: instructor.answers[g].source for g in exercises}
    plain = wrong_answers.chapter(class_mix.ASSIGNMENT).answers  # the reference without solution markers
    wrong, _ = wrong_answers.variants(class_mix.ASSIGNMENT)
    assert {s.kind for s in klass} == set(class_mix.KINDS)
    for s in klass:
        if s.kind == "honest":
            answers = _answers(s.data)
            assert all(answers[g] in (stub[g], reference[g]) for g in exercises), s.student
        elif s.kind == "wrong":
            answers = _answers(s.data)
            used = [v for v in wrong if answers[v.exercise] == v.apply(plain[v.exercise])]
            assert 1 <= len(used) <= 2, f"{s.student}: {s.note}"
            assert all(answers[g] == plain[g] for g in exercises if g not in {v.exercise for v in used})
            for variant in used:  # really wrong: the exercise's hidden test rejects it
                assert not wrong_answers.run(class_mix.ASSIGNMENT, variant).hidden.passed, variant.name
        elif s.recipe == "invalid_json":
            with pytest.raises(json.JSONDecodeError):
                json.loads(s.data)
        elif s.recipe == "empty":
            assert s.data == b""
        elif s.recipe == "cells_deleted":
            answers = _answers(s.data)
            assert len([g for g in exercises if g not in answers]) == 2
            assert all(answers[g] == reference[g] for g in exercises if g in answers)
        elif s.kind == "broken":
            nb = nbformat.reads(s.data.decode(), as_version=4)
            code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
            assert {"exits": "os._exit(", "segfault": "string_at(0)", "loop_ignores_interrupt": "while True"}[
                s.recipe
            ] in code
        if s.kind == "hostile" or s.recipe in class_mix.BROKEN_FROM_ZOO:
            assert _without_ids(s.data) == _without_ids(zoo[s.recipe]), s.student


def _without_ids(data: bytes):
    """The notebook's JSON with its cells' ids dropped (the zoo gives the cells it adds random ones), or the bytes
    when they are no JSON."""
    try:
        nb = json.loads(data)
    except ValueError:
        return data
    for cell in nb["cells"]:
        cell.pop("id", None)
    return nb


def test_the_projection_against_a_hand_worked_example(scripts):
    """4 CPU-s per submission on the workers, 0.05 on the coordinator, 2 cores per worker: one worker grades a
    submission every 2 s (10,000 in 20,000 s); from 40 workers on (4 / (0.05 * 2)) the coordinator's 0.05 s
    per submission sets the pace (10,000 in 500 s), however many workers are added."""
    benchmark_class = scripts[1]
    one = benchmark_class.project(10_000, 4.0, 0.05, 1, 2)
    assert one == {"workers": 1, "hours": pytest.approx(20_000 / 3600), "limit": "workers"}
    assert benchmark_class.project(10_000, 4.0, 0.05, 10, 2)["hours"] == pytest.approx(2_000 / 3600)
    assert benchmark_class.crossover(4.0, 0.05, 2) == pytest.approx(40)
    for workers in (40, 100):
        assert benchmark_class.project(10_000, 4.0, 0.05, workers, 2) == {
            "workers": workers, "hours": pytest.approx(500 / 3600), "limit": "coordinator"}  # fmt: skip


@pytest.mark.parametrize("guide", GUIDES)
def test_the_guides_quote_their_figures_from_the_result_files(guide):
    assert document_claims.problems(course.ROOT / guide) == []


def test_grading_quotes_the_class_benchmark(scripts):
    """Not vacuous: SPEED.md's "Measured at scale" is declared, reads the shipped result file (of the three
    runs, with the same grades), and is the passage scripts/class_passage.py writes from it."""
    grading = course.ROOT / "autograder" / "SPEED.md"
    found, problems = document_claims.passages(grading)
    assert not problems
    results = {c["result"] for p in found for c in p.metadata["claims"]}
    assert RESULT in results, f"SPEED.md quotes nothing from {RESULT}"
    data = json.loads((course.ROOT / RESULT).read_text())
    assert all("wall_s" in data["runs"][run] for run in ("jobs1", "jobs2", "distributed"))
    assert data["grades_identical"], f"the runs disagree: {data['differences']}"
    import class_passage

    assert class_passage.passage(data, RESULT) in grading.read_text(), "run scripts/class_passage.py and paste it"


def test_a_wrong_or_unbound_figure_is_refused(tmp_path):
    data = json.loads((course.ROOT / RESULT).read_text())
    claim = {"text": f"{data['count']} submissions", "value": "count", "format": "d"}
    guide = tmp_path / "guide.md"

    def write(text: str, claims=(claim,)) -> list[str]:
        comment = json.dumps({"result": RESULT, "claims": list(claims), "not_claims": ["chapter 03"]})
        guide.write_text(f"# Guide\n\n<!-- claims {comment} -->\n{text}\n\n## Next\n\n42 is outside the passage.\n")
        return document_claims.problems(guide)

    assert write(f"A class of {data['count']} submissions of chapter 03 (`--jobs 2`).") == []
    assert write(f"A class of {data['count'] + 1} submissions.", [dict(claim, text=f"{data['count'] + 1} submissions")])
    assert any("unbound number" in p for p in write(f"A class of {data['count']} submissions, in 12.5 s."))
    assert any("not JSON" in p for p in document_claims.passages(_broken(tmp_path))[1])


def _broken(tmp_path):
    path = tmp_path / "broken.md"
    path.write_text("<!-- claims {not json} -->\ntext\n")
    return path
