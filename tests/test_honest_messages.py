"""Nothing a student sees claims a result that did not happen.

The course's convention (the book's introduction, "How to work through a chapter"): a test that
passes prints nothing; a failing one says what it expected and what it got. So in every student
notebook (chapters/):

- no test cell prints, displays or writes anything on its own: a "tests passed" line would be
  shown whether or not the tests that matter ran (the hidden part of a test cell is stripped
  from the student's copy, so its "hidden tests passed" would be printed by a cell that ran
  none);
- no code cell carries a string that announces a verdict ("tests passed", "all tests pass",
  "correct!", "well done"): only the tests, by failing, and nbgrader's Validate give verdicts.
"""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from autograder import course
from autograder.conventions import grade_id, is_test_cell

# Chapters known to break the rule, each fixed by its chapter's author, who then removes it here
# (the test is a strict xfail for them: it fails as soon as the chapter is fixed, as a reminder).
KNOWN_VIOLATIONS = {}

OUTPUT_CALLS = {"print", "display", "pprint", "write", "writelines"}  # print, IPython's display, sys.stdout.write
VERDICT = re.compile(
    r"\b(?:tests?|checks?)\s+(?:have\s+|all\s+)?(?:passed|pass(?:es)?\b|succeeded|ok\b)|\bcorrect\s*!|\bwell done\b"
    r"|\bsuccess(?:ful)?\s*!|\ball good\b",
    re.IGNORECASE,
)


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def printing_calls(source: str) -> list[str]:
    """The calls in a cell that write output (print, display, sys.stdout.write)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [
        ast.unparse(node)[:100]
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _call_name(node) in OUTPUT_CALLS
    ]


def verdict_strings(source: str) -> list[str]:
    """String literals of a cell that announce a verdict."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    docstring = ast.get_docstring(tree, clean=False) if tree.body else None
    return [t.strip()[:100] for t in texts if VERDICT.search(t) and t != docstring]


def violations(nb) -> list[str]:
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        where = grade_id(cell) or cell.get("id")
        if is_test_cell(cell):
            found += [f"test cell {where} prints on success: {call}" for call in printing_calls(cell.source)]
        found += [f"cell {where} announces a verdict: {text!r}" for text in verdict_strings(cell.source)]
    return found


@pytest.mark.parametrize(
    "chapter",
    [
        pytest.param(a, marks=pytest.mark.xfail(strict=True, reason=KNOWN_VIOLATIONS[a]))
        if a in KNOWN_VIOLATIONS
        else a
        for a in course.assignments()
    ],
)
def test_no_student_cell_claims_a_result(chapter):
    found = violations(nbformat.read(course.student_notebook(chapter), as_version=4))
    assert not found, (
        f"{chapter} (chapters/): a passing test prints nothing, and no cell announces a verdict (the book's "
        "introduction):\n" + "\n".join(found)
    )


def test_the_check_sees_a_printed_verdict():
    """Positive control: the pattern chapter 07 used, a test cell that prints its verdict after the asserts."""
    nb = nbformat.v4.new_notebook()
    test = nbformat.v4.new_code_cell(
        '"""sinusoidal_positions, hidden tests."""\nassert True\nprint("sinusoidal_positions: hidden tests passed")',
        metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "x_hidden", "points": 1, "locked": True}},
    )
    demo = nbformat.v4.new_code_cell('message = "Correct! All tests pass."')
    quiet = nbformat.v4.new_code_cell('"""a docstring that says the tests passed is not shown"""\nx = 1')
    nb.cells = [test, demo, quiet]
    found = violations(nb)
    assert any("prints on success" in f for f in found), found
    assert any("x_hidden announces" in f for f in found) and any("Correct! All tests pass." in f for f in found), found
    assert len(found) == 3, found  # nothing from the cell whose docstring merely mentions passed tests
