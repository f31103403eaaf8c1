"""The representative chapters of tests/chapter_matrix.py bring everything any chapter brings to
the costly grading paths, so that taking only them by default leaves no kind of chapter untried."""

from __future__ import annotations

from chapter_matrix import REPRESENTATIVES, features, features_of, representatives
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import course


def test_the_representatives_bring_what_every_chapter_brings():
    chosen = representatives()
    assert chosen, f"none of the representative chapters {sorted(REPRESENTATIVES)} exists"
    covered = set().union(*(features(a) for a in chosen))
    new = {a: sorted(features(a) - covered) for a in course.assignments() if features(a) - covered}
    assert not new, (
        f"these chapters bring what no representative chapter ({', '.join(chosen)}) has: {new}. Add one of them "
        "to REPRESENTATIVES in tests/chapter_matrix.py, with the reason, so that the default run tries it"
    )


def _cell(kind: str, source: str, **nbgrader):
    cell = new_markdown_cell(source) if kind == "markdown" else new_code_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = {"schema_version": 3, "locked": False, "solution": False, "grade": False,
                                     **nbgrader}  # fmt: skip
    return cell


def test_features_are_read_from_the_cells():
    """Positive and negative controls of the detector on small notebooks."""
    plain = new_notebook(
        cells=[
            _cell(
                "code", "import math, json\nfrom os import path\nimport numpy as np\nfrom IPython.display import HTML"
            )
        ]
    )
    assert features_of(plain) == {"imports numpy"}
    rich = new_notebook(
        cells=[
            _cell("code", "%matplotlib inline\nimport torch.nn.functional as F\nfrom autograder.reference import x"),
            _cell(
                "markdown", "### BEGIN SOLUTION\nBecause.\n### END SOLUTION", grade_id="w", solution=True, grade=True
            ),
            _cell(
                "code",
                "from attention_course.profiling import record_ops\nrecord = record_ops(f, x)",
                grade_id="t",
                grade=True,
            ),
        ]
    )
    assert features_of(rich) == {
        "imports torch",
        "imports attention_course",
        "written answers",
        "test cells that record operations (record_ops)",
    }
    demo_only = new_notebook(cells=[_cell("code", "record_ops  # a demo cell, not a test")])
    assert features_of(demo_only) == set()


def test_each_representative_still_brings_what_its_reason_says():
    stale = {
        a: sorted(claimed - features(a)) for a in representatives() if (claimed := REPRESENTATIVES[a][1]) - features(a)
    }
    assert not stale, f"representative chapters that no longer bring what tests/chapter_matrix.py says: {stale}"


def test_a_release_runs_the_full_matrix():
    """The workflow's test job sets the full matrix's variable for a version tag (so a release waits for every
    chapter through every path) and for a run started by hand."""
    import yaml
    from chapter_matrix import FULL_MATRIX_VARIABLE

    workflow = yaml.safe_load((course.ROOT / ".github" / "workflows" / "course.yml").read_text())
    steps = [step for step in workflow["jobs"]["test"]["steps"] if step.get("run", "").strip().endswith("-m pytest")]
    assert len(steps) == 1, f"the test job runs pytest in {len(steps)} steps"
    expression = steps[0].get("env", {}).get(FULL_MATRIX_VARIABLE, "")
    assert "refs/tags/v" in expression and "workflow_dispatch" in expression and "'1'" in expression, expression
