"""Jupyter Server settings of the student's own JupyterLab (``bash scripts/student_lab.sh``).

nbgrader's server extensions: Validate stays, served by student_validate.py (nbgrader's handler
and Validator, with messages that name an unanswered written question and say when the code
passes; nbgrader's Validate reads its limits from nbgrader_config.py here); what needs an
instructor's course folder or a course's exchange (formgrader, course list, assignment list) is
switched off, so that JupyterLab neither offers it nor reports errors about a missing exchange.
(The matching JupyterLab plugins are switched off in labconfig/page_config.json.)

(scripts/student_lab.sh opens JupyterLab on the student's copies of the chapters, in work/.)
"""

import sys
from pathlib import Path

c = get_config()  # noqa: F821  (injected by traitlets when Jupyter Server loads this file)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # student_validate.py, for the server only
c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.course_list": False,
    "nbgrader.server_extensions.assignment_list": False,
    "nbgrader.server_extensions.validate_assignment": False,
    "student_validate": True,
}
