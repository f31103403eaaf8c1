"""nbgrader settings of the student's own JupyterLab (``bash scripts/student_lab.sh``).

Validate runs the notebook with the course's limits, the ones grading uses: each cell may run
for ``autograder.course.CELL_TIMEOUT`` seconds (nbgrader's default, 30 s, would interrupt a
longer demo cell and still report success). nbgrader's Validate reads this file because
student_lab.sh puts this folder first on ``JUPYTER_CONFIG_PATH``.
"""

import sys
from pathlib import Path

c = get_config()  # noqa: F821  (injected by traitlets when nbgrader loads this file)

_root = Path(__file__).resolve().parent.parent.parent  # the course's repository
if str(_root) not in sys.path:
    sys.path.insert(0, str(_root))
from autograder.course import CELL_TIMEOUT  # noqa: E402

c.Execute.timeout = CELL_TIMEOUT
