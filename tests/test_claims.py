"""Numbers quoted in prose come from the results they describe (autograder/authoring/claims.py).

Every markdown cell's ``claims`` hold: each text occurs in the cell, each value computed from
its shipped result formats to the number in the text, and every number of a claim's text is
checked by one of its claims. Output claims (numbers a cell printed) are compared with the
outputs of the instructor notebook's one graded run (``executed_reference``: no extra run).
Coverage: every percentage, ratio, rate per second, BLEU score and decimal in a table of a
chapter's markdown lies in a claim's or a not-claim's text, so that a new quoted number cannot
slip in unchecked.
"""

from __future__ import annotations

import nbformat
import pytest

from autograder import course
from autograder.authoring import claims

# Chapters whose quoted figures are not all declared yet. The chapter's author removes the
# chapter from this set once its figures are claims or not-claims; the coordinator empties it.
NOT_YET_CHECKED: set[str] = set()


def _notebook(assignment: str):
    return nbformat.read(course.solution_notebook(assignment), as_version=4)


def _code_cells(nb) -> dict:
    return {c.get("id"): c for c in nb.cells if c.cell_type == "code"}


def test_claims_hold_against_the_shipped_results(assignment):
    nb = _notebook(assignment)
    code = _code_cells(nb)
    problems = [p for cell in nb.cells if cell.cell_type == "markdown" for p in claims.problems_with(cell, code)]
    assert not problems, f"{assignment}:\n" + "\n".join(problems)


def test_claims_metadata_only_on_markdown_cells(assignment):
    misplaced = [
        c.get("id")
        for c in _notebook(assignment).cells
        if c.cell_type != "markdown" and set(claims.KEYS) & set(c.metadata)
    ]
    assert not misplaced, (
        f"{assignment}: claims metadata belongs on the markdown cell that quotes the number: {misplaced}"
    )


def test_every_quoted_figure_is_declared(assignment):
    """Percentages, ratios, rates, BLEU scores and decimals in tables carry a claim or a not-claim."""
    nb = _notebook(assignment)
    missing = [f"cell {c.get('id')!r}: {m}" for c in nb.cells if c.cell_type == "markdown" for m in claims.uncovered(c)]
    if assignment in NOT_YET_CHECKED:
        if not missing:
            pytest.fail(f"every figure of {assignment} is declared: remove it from NOT_YET_CHECKED")
        pytest.skip(f"{assignment} is in NOT_YET_CHECKED ({len(missing)} figures to declare)")
    assert not missing, (
        f"{assignment}: figures quoted without a claim (bind each to its result, or list it under the cell's "
        "'not_claims' if it is not a result; solutions/README.md):\n" + "\n".join(missing)
    )


def test_output_claims_match_the_graded_run(assignment, executed_reference):
    nb = _notebook(assignment)
    if not any("output" in c for cell in nb.cells for c in cell.metadata.get("claims", [])):
        pytest.skip(f"{assignment} quotes no printed output")
    executed = _code_cells(executed_reference(assignment))
    problems = [p for cell in nb.cells if cell.cell_type == "markdown" for p in claims.output_problems(cell, executed)]
    assert not problems, f"{assignment}:\n" + "\n".join(problems)


def test_student_notebooks_carry_no_claims_metadata(assignment):
    """Generated without it (ClearClaims): a written answer's claims would quote the model answer."""
    nb = nbformat.read(course.student_notebook(assignment), as_version=4)
    carrying = [c.get("id") for c in nb.cells if set(claims.KEYS) & set(c.metadata)]
    assert not carrying, f"{assignment}: run `python -m autograder generate` ({carrying})"


# ---- the checker itself, on made-up cells ------------------------------------------------------------


def _cell(source: str, **metadata):
    return nbformat.v4.new_markdown_cell(source, metadata=metadata, id="made-up")


def test_numbers_compare_at_the_written_precision():
    (n,) = claims.numbers(r"$1.6 \times 10^{-5}$")
    assert n.matches(1.60e-05) and n.matches(1.649e-05) and not n.matches(1.7e-05)
    (n,) = claims.numbers("about 37")
    assert n.matches(37.1) and not n.matches(38)
    assert [m.literal for m in claims.numbers("94% and 92% at positions 10 and 11")] == ["94", "92", "10", "11"]


def test_figures_found_and_covered():
    cell = _cell(
        "Copying was 100% right, reversal 29% (chance: 10%); BLEU 92, 51 to 65 times faster, "
        "580 tokens per second, an entropy of 0.26 nats.\n\n| x | 0.96 |\n|---|---|\n\n`0.5` in code, $W_1 x$ in "
        "math and 8 bits (no decimal) are no figures.",
        not_claims=["10%"],
    )
    kinds = sorted(kind for kind, _, _ in claims.figures(cell.source))
    assert kinds == ["BLEU", "measurement", "percentage", "percentage", "percentage", "rate", "ratio", "table"], kinds
    left = claims.uncovered(cell)
    assert len(left) == 7 and not any("'10'" in m for m in left), left


def test_a_claim_with_an_unchecked_number_is_refused():
    cell = _cell(
        "in four runs, batching was 51 to 65 times faster",
        claims=[{"text": "51 to 65 times", "result": "bottleneck_results.json", "value": "seed + 65", "format": "d"}],
    )
    problems = claims.problems_with(cell, {})
    assert any("none of its claims checks" in p for p in problems), problems


def test_a_wrong_value_is_refused():
    cell = _cell(
        "seed 1", claims=[{"text": "seed 1", "result": "bottleneck_results.json", "value": "seed", "format": "d"}]
    )
    assert any("not in the text" in p for p in claims.problems_with(cell, {}))


def test_output_claims_read_the_named_cell():
    code = nbformat.v4.new_code_cell("print(...)", id="demo")
    code.outputs = [nbformat.v4.new_output("stream", text="rho = 0.9: norm after 10 steps 5.10e-01\nmean 29%\n")]
    good = _cell(
        "dropped to 0.51, averaged 29%",
        claims=[
            {"text": "0.51", "cell": "demo", "output": r"rho = 0\.9: norm after 10 steps (\S+)"},
            {"text": "29%", "cell": "demo", "output": True},
        ],
    )
    assert claims.problems_with(good, {"demo": code}) == []
    assert claims.output_problems(good, {"demo": code}) == []
    bad = _cell("dropped to 0.52", claims=[{"text": "0.52", "cell": "demo", "output": r"after 10 steps (\S+)"}])
    assert claims.output_problems(bad, {"demo": code}), "0.52 is not what the cell printed"


def test_bounds_are_tight_inequalities():
    """A bound in the prose ("at most 2.1", "above 90") is checked as the inequality at the text's precision,
    and a tight one: rounding alone would let 2.14 pass as "at most 2.1", or 89.6 as "above 90"."""

    def bounded(text, value, bound, spec):
        claim = {"text": text, "result": "bottleneck_results.json", "value": f"seed + {value}", "format": spec}
        return _cell(f"the two differ by {text} points", claims=[{**claim, "bound": bound}])

    assert claims.problems_with(bounded("at most 2.1", 2.07, "max", ".1f"), {}) == []
    assert claims.problems_with(bounded("at most 2.1", 2.14, "max", ".1f"), {}), "2.14 > 2.1"
    assert claims.problems_with(bounded("at most 3.0", 2.07, "max", ".1f"), {}), "true, but not the tight bound"
    assert claims.problems_with(bounded("above 90", 90.2, "min", ".0f"), {}) == []
    assert claims.problems_with(bounded("above 90", 89.6, "min", ".0f"), {}), "89.6 < 90"
    assert claims.problems_with(bounded("none (0 %)", 0.0, "max", ".0f"), {}) == []
    assert claims.problems_with(bounded("none (0 %)", 0.4, "max", ".0f"), {}), "0.4 % is not none"
    assert any("'max' or 'min'" in p for p in claims.problems_with(bounded("at most 2.1", 2.07, "most", ".1f"), {}))

    code = nbformat.v4.new_code_cell("print(...)", id="demo")
    code.outputs = [nbformat.v4.new_output("stream", text="largest difference 2.07\n")]
    text = {"text": "2.1", "cell": "demo", "output": r"largest difference (\S+)"}
    assert claims.output_problems(_cell("at most 2.1", claims=[{**text, "bound": "max"}]), {"demo": code}) == []
    code.outputs = [nbformat.v4.new_output("stream", text="largest difference 2.14\n")]
    assert claims.output_problems(_cell("at most 2.1", claims=[{**text, "bound": "max"}]), {"demo": code})
    assert claims.output_problems(_cell("at most 2.1", claims=[text]), {"demo": code}) == [], "2.14 rounds to 2.1"
