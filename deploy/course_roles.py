"""The course's roles on JupyterHub, for both deployments in deploy/.

Who may log in, the two groups that carry the course roles, what instructors may see in the
hub, and which Jupyter configuration each role's server gets. Two hub configurations use it:

    deploy/jupyterhub_config.py   one machine: imports this file from its own folder
    deploy/z2jh-values.yaml       Kubernetes: hub.extraFiles mounts an identical copy into the
                                  hub pod, and hub.extraConfig imports it
                                  (tests/test_z2jh.py checks that the copy is identical)

The groups are the names nbgrader's JupyterHubAuthPlugin expects, should the hub ever carry
several courses:

    formgrade-attention-step-by-step   instructors: formgrader, course folder, grading kernel
    nbgrader-attention-step-by-step    students: assignment list, validate, submit

Their members come from rosters (lists of hub user names), or, on an identity provider that
sends group memberships, from the authenticator itself (see ``configure_logins``).
Only the standard library: the hub imports this file.
"""

from __future__ import annotations

import os
from pathlib import Path

COURSE_ID = "attention-step-by-step"
INSTRUCTORS_GROUP = f"formgrade-{COURSE_ID}"
STUDENTS_GROUP = f"nbgrader-{COURSE_ID}"
# Where each instructor keeps their clone of the course repository, relative to their home.
COURSE_FOLDER = "attention-step-by-step"


def read_roster(path: str | os.PathLike) -> list[str]:
    """User names listed in the file at ``path``, one a line; '#' starts a comment. A missing
    file is an empty roster."""
    path = Path(path)
    if not path.exists():
        return []
    names = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return sorted({n for n in names if n})


def configure_logins(c, *, instructors, students, admins, groups_from_authenticator: bool = False) -> None:
    """Who may log in, who is a hub administrator, and who is in which course group.

    With rosters (``groups_from_authenticator=False``): the people on the three rosters may
    log in, and the hub fills the two groups from the rosters when it starts
    (``JupyterHub.load_groups``; it only ever adds members).

    With ``groups_from_authenticator=True`` the identity provider says who is in which group
    at each login (``Authenticator.manage_groups``): its groups must be named exactly
    INSTRUCTORS_GROUP and STUDENTS_GROUP. Members of either may log in (an OAuthenticator's
    ``allowed_groups``); the instructors' and students' rosters are not used, and no
    ``load_groups`` is set (JupyterHub refuses to start with both). Admins still come from
    their roster (an administrator may always log in); no ``allowed_users`` is set, so that
    someone the provider takes out of both groups can no longer log in.
    """
    c.Authenticator.admin_users = set(admins)
    if groups_from_authenticator:
        c.Authenticator.manage_groups = True
        c.OAuthenticator.allowed_groups = {INSTRUCTORS_GROUP, STUDENTS_GROUP}
    else:
        c.Authenticator.allowed_users = set(instructors) | set(students) | set(admins)
        c.JupyterHub.load_groups = {
            INSTRUCTORS_GROUP: {"users": sorted(instructors)},
            STUDENTS_GROUP: {"users": sorted(students)},
        }


def instructor_role() -> dict:
    """The hub role of the instructors' group: they see who is enrolled and when students were
    last active; they cannot open students' servers (nothing in the cycle needs it: work
    arrives through nbgrader's exchange)."""
    return {
        "name": "course-instructor",
        "description": f"Instructor of {COURSE_ID}: list the enrolled students and their activity",
        "scopes": [
            "list:users",
            f"read:users:name!group={STUDENTS_GROUP}",
            f"read:users:activity!group={STUDENTS_GROUP}",
            f"read:groups!group={STUDENTS_GROUP}",
        ],
        "groups": [INSTRUCTORS_GROUP],
    }


def is_instructor(user) -> bool:
    """Whether a hub user (JupyterHub's User, with .groups) is in the instructors' group."""
    return any(group.name == INSTRUCTORS_GROUP for group in user.groups)


def role_environment(jupyter_etc: str | os.PathLike, course: str | os.PathLike | None = None) -> dict[str, str]:
    """The environment variables that give a user's server the Jupyter configuration of its role.

    ``jupyter_etc`` is the folder holding deploy/jupyter/'s common/, students/ and
    instructors/; ``course`` is an instructor's clone of the course, as their server sees it
    (``<home>/COURSE_FOLDER``), or None for a student. JUPYTER_CONFIG_PATH comes first in
    Jupyter's search order, above ~/.jupyter:
      students     students/ (formgrader, course list and assignment creator off),
                   common/ (the exchange; terminals keep the venv on PATH; no news pop-up)
      instructors  their course's autograder/ (nbgrader_config.py: course root, gradebook),
                   instructors/ (formgrader may be framed by JupyterLab), common/
    Instructors' servers also get their course folder on PYTHONPATH, so that the grading
    kernel (which inherits the server's environment) imports autograder.reference.
    """
    jupyter_etc = Path(jupyter_etc)
    common = str(jupyter_etc / "common")
    if course is None:
        return {"JUPYTER_CONFIG_PATH": os.pathsep.join([str(jupyter_etc / "students"), common])}
    course = Path(course)
    return {
        "JUPYTER_CONFIG_PATH": os.pathsep.join([str(course / "autograder"), str(jupyter_etc / "instructors"), common]),
        "PYTHONPATH": str(course),
    }
