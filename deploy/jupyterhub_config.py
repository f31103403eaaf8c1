"""JupyterHub for the course "Attention, Step by Step" on one machine.

Local Unix users log in (PAM), each gets a JupyterLab server running as themselves
(LocalProcessSpawner), configurable-http-proxy from npm sits in front, and nbgrader's
exchange is a shared directory. Two groups carry the course roles:

    formgrade-attention-step-by-step   instructors: formgrader, course folder, grading kernel
    nbgrader-attention-step-by-step    students: assignment list, validate, submit

(these are the group names nbgrader's JupyterHubAuthPlugin expects, should the hub ever
carry several courses). Membership comes from two roster files, one user name a line:
``instructors.txt`` and ``students.txt`` in ATTENTION_HUB_ETC.

``deploy/install.sh`` installs everything this file refers to; deploy/README.md explains
each piece. Site-specific settings (TLS, another authenticator, ports) belong in
``jupyterhub_config_local.py`` beside this file, loaded last, so this file stays as shipped.

Paths, from the environment (the systemd unit sets them):
    ATTENTION_HUB_PREFIX    software: venv/ (hub and user servers) and npm/ (the proxy)
                            default /opt/attention-hub
    ATTENTION_HUB_ETC       this configuration, the per-role Jupyter config, the rosters
                            default: the folder holding this file
    ATTENTION_HUB_STATE     the hub's database, cookie secret and proxy pid file (root only)
                            default /srv/jupyterhub
    NBGRADER_EXCHANGE_ROOT  nbgrader's exchange, writable by everyone (mode 1777)
                            default /srv/nbgrader/exchange
"""

import os
import pwd
from pathlib import Path

c = get_config()  # noqa: F821  (injected by traitlets when JupyterHub loads this file)

COURSE_ID = "attention-step-by-step"
INSTRUCTORS_GROUP = f"formgrade-{COURSE_ID}"
STUDENTS_GROUP = f"nbgrader-{COURSE_ID}"
# Where each instructor keeps their clone of the course repository, relative to their home.
COURSE_FOLDER = "attention-step-by-step"

PREFIX = Path(os.environ.get("ATTENTION_HUB_PREFIX", "/opt/attention-hub"))
ETC = Path(os.environ.get("ATTENTION_HUB_ETC", Path(__file__).resolve().parent))
STATE = Path(os.environ.get("ATTENTION_HUB_STATE", "/srv/jupyterhub"))
EXCHANGE_ROOT = os.environ.get("NBGRADER_EXCHANGE_ROOT", "/srv/nbgrader/exchange")

VENV_BIN = PREFIX / "venv" / "bin"
JUPYTER_ETC = ETC / "jupyter"  # common/, students/, instructors/ (copied there by install.sh)


def _roster(name: str) -> list[str]:
    """User names listed in ETC/<name>, one a line; '#' starts a comment."""
    path = ETC / name
    if not path.exists():
        return []
    names = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return sorted({n for n in names if n})


INSTRUCTORS = _roster("instructors.txt")
STUDENTS = _roster("students.txt")
ADMINS = _roster("admins.txt")  # hub administrators (optional; instructors need not be admins)

# --- the hub and its proxy -------------------------------------------------------------------
# Public address: loopback by default, behind a TLS reverse proxy (see deploy/README.md).
# Put another bind_url (and ssl_cert/ssl_key) in jupyterhub_config_local.py to serve directly.
c.JupyterHub.bind_url = "http://127.0.0.1:8000"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:8081"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:8001"
c.ConfigurableHTTPProxy.command = [str(PREFIX / "npm" / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")

# --- who may log in ---------------------------------------------------------------------------
# Local Unix accounts and their passwords (PAM). Accounts are created by the administrator
# (useradd), never by the hub, and only users on a roster are let in.
c.JupyterHub.authenticator_class = "pam"
c.LocalAuthenticator.create_system_users = False
c.Authenticator.allowed_users = set(INSTRUCTORS) | set(STUDENTS) | set(ADMINS)
c.Authenticator.admin_users = set(ADMINS)

c.JupyterHub.load_groups = {
    INSTRUCTORS_GROUP: {"users": INSTRUCTORS},
    STUDENTS_GROUP: {"users": STUDENTS},
}
c.JupyterHub.load_roles = [
    {
        # Instructors see who is enrolled and when students were last active; they cannot open
        # students' servers (nothing in the cycle needs it: work arrives through the exchange).
        "name": "course-instructor",
        "description": f"Instructor of {COURSE_ID}: list the enrolled students and their activity",
        "scopes": [
            "list:users",
            f"read:users:name!group={STUDENTS_GROUP}",
            f"read:users:activity!group={STUDENTS_GROUP}",
            f"read:groups!group={STUDENTS_GROUP}",
        ],
        "groups": [INSTRUCTORS_GROUP],
    },
    {
        "name": "idle-culler",
        "description": "Stop servers idle for an hour",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    },
]

# Servers idle for an hour are stopped (their files stay): hundreds of idle JupyterLabs with
# torch kernels would otherwise fill the machine's memory.
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [str(VENV_BIN / "python"), "-m", "jupyterhub_idle_culler", "--timeout=3600"],
    }
]

# --- the user servers -------------------------------------------------------------------------
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(VENV_BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 90
c.Spawner.environment = {
    # The venv first: kernels, `nbgrader` in a terminal, and `alembic` (which nbgrader runs
    # when it creates a gradebook) all come from it.
    "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
    "NBGRADER_EXCHANGE_ROOT": EXCHANGE_ROOT,
}


def _is_instructor(user) -> bool:
    return any(group.name == INSTRUCTORS_GROUP for group in user.groups)


def pre_spawn_hook(spawner):
    """Give each server the Jupyter configuration of its role.

    JUPYTER_CONFIG_PATH comes first in Jupyter's search order, above ~/.jupyter:
      students     students/ (formgrader, course list and assignment creator off),
                   common/ (the exchange; terminals keep the venv on PATH; no news pop-up)
      instructors  their course's autograder/ (nbgrader_config.py: course root, gradebook),
                   instructors/ (formgrader may be framed by JupyterLab), common/
    Instructors' servers also get their course folder on PYTHONPATH, so that the grading
    kernel (which inherits the server's environment) imports autograder.reference.
    """
    environment = dict(spawner.environment)
    common = str(JUPYTER_ETC / "common")
    if _is_instructor(spawner.user):
        course = Path(pwd.getpwnam(spawner.user.name).pw_dir) / COURSE_FOLDER
        environment["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
            [str(course / "autograder"), str(JUPYTER_ETC / "instructors"), common]
        )
        environment["PYTHONPATH"] = str(course)
    else:
        environment["JUPYTER_CONFIG_PATH"] = os.pathsep.join([str(JUPYTER_ETC / "students"), common])
    spawner.environment = environment


c.Spawner.pre_spawn_hook = pre_spawn_hook

# --- site-specific settings, kept out of this file -------------------------------------------
_local = ETC / "jupyterhub_config_local.py"
if _local.exists():
    load_subconfig(str(_local))  # noqa: F821  (injected by traitlets)
