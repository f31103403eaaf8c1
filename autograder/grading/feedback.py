"""What nbgrader's feedback shows a student, beyond nbgrader's own clean-up.

nbgrader's ``ClearHiddenTests`` removes the hidden part of a test cell's source, but a failing
hidden test's traceback quotes the lines around the failure, hidden ones included.
:class:`ClearHiddenTracebacks` keeps only the error's name and message in the outputs of test
cells that have hidden tests (the course's own grader, ``python -m autograder grade``, never
shows those tracebacks in the first place). It must run before ``ClearHiddenTests``, while the
hidden regions are still there to be recognised.
"""

from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor

from autograder.conventions import HIDDEN_TESTS, is_test_cell


class ClearHiddenTracebacks(NbGraderPreprocessor):
    """Error outputs of test cells with hidden tests keep ``ename: evalue`` and lose the traceback."""

    def preprocess_cell(self, cell, resources, index):
        if is_test_cell(cell) and HIDDEN_TESTS[0] in cell.source:
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources
