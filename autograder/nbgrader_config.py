"""nbgrader configuration for the course.

nbgrader finds this file when it runs with ``autograder/`` as the working directory or with
``JUPYTER_CONFIG_PATH`` pointing here; ``python -m autograder`` does the latter for you.

The course root is the repository root: instructor notebooks live in ``solutions/`` (the
nbgrader source), the student notebooks that ``generate_assignment`` writes go to
``chapters/`` (committed), and everything produced while grading a class goes to the ignored
working folder ``_grading/``.
"""

import sys
from pathlib import Path

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme, GetGrades

c = get_config()  # noqa: F821  (injected by traitlets when nbgrader loads this file)

_root = Path(__file__).resolve().parent.parent
_work = _root / "_grading"

c.CourseDirectory.course_id = "attention-step-by-step"
c.CourseDirectory.root = str(_root)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "chapters"
c.CourseDirectory.submitted_directory = "_grading/submitted"
c.CourseDirectory.autograded_directory = "_grading/autograded"
c.CourseDirectory.feedback_directory = "_grading/feedback"
c.CourseDirectory.solution_directory = "_grading/released_solutions"
c.CourseDirectory.db_url = f"sqlite:///{_work / 'gradebook.db'}"

# Only notebooks are released; the instructor's execution artefacts never are.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "_build"]

# Every student notebook begins with the course's setup cell (autograder/authoring/setup_cell.py),
# added after nbgrader's own steps, and carries no claims metadata (autograder/authoring/claims.py:
# a written answer's claims would quote its model answer); the course root goes on sys.path for
# those imports.
if str(_root) not in sys.path:
    sys.path.insert(0, str(_root))
from autograder.authoring.claims import ClearClaims  # noqa: E402
from autograder.authoring.setup_cell import InsertSetupCell  # noqa: E402
from autograder.course import CELL_TIMEOUT  # noqa: E402
from autograder.grading.feedback import ClearHiddenTracebacks  # noqa: E402

# A cell may train a small model for a figure: the course's limit per cell (the class grader's too).
c.Execute.timeout = CELL_TIMEOUT

c.GenerateAssignment.preprocessors = [
    *GenerateAssignment.class_traits()["preprocessors"].default(),
    ClearClaims,
    InsertSetupCell,
]

# Feedback must not show the hidden tests' source (nor the tracebacks that quote it), nor the
# rubrics: autograde restores the locked question cells with their mark schemes (so that
# formgrader shows them), feedback strips them again.
c.GenerateFeedback.preprocessors = [
    GetGrades,
    ClearHiddenTracebacks,
    ClearHiddenTests,
    ClearMarkScheme,
    CSSHTMLHeaderPreprocessor,
]
