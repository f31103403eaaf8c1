"""nbgrader's exchange for the course, for every user of the hub (students and instructors).

deploy/install.sh copies this file to ``$ATTENTION_HUB_ETC/jupyter/common/nbgrader_config.py``;
every user server has that folder on JUPYTER_CONFIG_PATH (see jupyterhub_config.py), so
JupyterLab's assignment list and ``nbgrader`` in a terminal both read it.

The exchange is one directory shared by all users (mode 1777: everyone may create entries,
only their owner may remove them). nbgrader lays it out as::

    <root>/attention-step-by-step/outbound/<assignment>/   released notebooks (readable by all)
    <root>/attention-step-by-step/inbound/                 submissions (mode 733: students can
                                                           write but not list it)
    <root>/attention-step-by-step/feedback/                feedback files, one per submission,
                                                           named by a hash of that submission (711)

The instructor's own settings (course root, source and release folders, gradebook) are not
here: they are the course repository's ``autograder/nbgrader_config.py``, which comes first
on an instructor's JUPYTER_CONFIG_PATH and sets the same course id.
"""

import os

c = get_config()  # noqa: F821  (injected by traitlets when nbgrader loads this file)

c.CourseDirectory.course_id = "attention-step-by-step"
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE_ROOT", "/srv/nbgrader/exchange")
# Fetched assignments land in <home>/<assignment>/ (one course per hub, so no course folder).
c.Exchange.path_includes_course = False
